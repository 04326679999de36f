/** The sync tests' sandbox, client, customers and the membership they compare. */
import { join } from 'node:path';
import { expect } from 'vitest';
import type { ClientOptions } from '../../src/api/index.js';
import type { RawRecord } from '../../src/hashing/pipeline.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { syncAudience, uploadAudience, type SyncAudienceOptions } from '../../src/upload/index.js';
import { openSandboxClient } from './sandbox-client.js';
import { tempDir } from './temp.js';

export async function setup(opts: SandboxOptions = {}, clientOptions: Partial<ClientOptions> = {}) {
  const { sandbox, client } = await openSandboxClient({ seed: 11, ...opts }, { maxAttempts: 6, ...clientOptions });
  const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'sync').id;
  return { sandbox, client, audienceId, stateDir: tempDir('ak-sync-') };
}

/** Customer i as a CRM row; `phoneVersion` changes the phone (same email). */
export function customer(i: number, phoneVersion = 0): RawRecord {
  return {
    email: `customer.${i}@example.com`,
    phone: `+1 415 555 ${String(1000 + i + phoneVersion * 5000).padStart(4, '0')}`,
  };
}
export const customers = (ids: number[]): RawRecord[] => ids.map((i) => customer(i));
export const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);

/** The user keys the sandbox holds for an audience (its internal set, read for the comparison). */
export function members(sandbox: Sandbox, audienceId: string): number[] {
  const store = sandbox.state as unknown as { audiences: Map<string, { users: { slots: Float64Array } }> };
  const slots = store.audiences.get(audienceId)?.users.slots ?? new Float64Array();
  return [...slots].filter((k) => k >= 0).sort((a, b) => a - b);
}

/** What a plain upload of `rows` to a fresh audience holds: what the synced audience must equal. */
export async function expected(t: Awaited<ReturnType<typeof setup>>, rows: RawRecord[]): Promise<number[]> {
  const id = t.sandbox.state.createCustomAudience(t.sandbox.accounts.primary, 'reference').id;
  const r = await uploadAudience({
    client: t.client,
    accountId: t.sandbox.accounts.primary,
    target: { customAudienceId: id },
    users: rows,
    records: { defaultCountry: 'US' },
  });
  expect(r.status).toBe('completed');
  return members(t.sandbox, id);
}

export function userPosts(sandbox: Sandbox, audienceId: string): number {
  return sandbox.state.requests.filter((r) => r.method === 'POST' && r.path.endsWith(`/${audienceId}/users`)).length;
}

export function syncOf(
  t: Awaited<ReturnType<typeof setup>>,
  rows: RawRecord[],
  extra: Partial<SyncAudienceOptions> = {},
) {
  return syncAudience({
    client: t.client,
    accountId: t.sandbox.accounts.primary,
    target: { customAudienceId: t.audienceId },
    users: rows,
    records: { defaultCountry: 'US' },
    stateDir: t.stateDir,
    auditLog: join(t.stateDir, 'audit.jsonl'),
    limits: { maxBodyBytes: 20_000 },
    retryBaseMs: 1,
    ...extra,
  });
}

export type SyncSetup = Awaited<ReturnType<typeof setup>>;
