/** The sync tests' sandbox, client, state store, customers and the membership they compare. */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect } from 'vitest';
import type { ClientOptions } from '../../src/api/client.js';
import type { RawRecord } from '../../src/identifiers/rows.js';
import type { Sandbox, SandboxOptions } from '../../src/sandbox/index.js';
import { UserKeySet } from '../../src/sandbox/state.js';
import type { SyncAudienceOptions } from '../../src/upload/sync.js';
import { syncAudience, uploadAudience } from './small-audience.js';
import { verifyAuditLog, type AuditVerification } from '../../src/state/audit.js';
import { PostgresStore } from '../../src/state/postgres/store.js';
import { createTestDatabase } from './postgres.js';
import { openSandboxClient } from './sandbox-client.js';
import { tempDir } from './temp.js';

export type StoreKind = 'directory' | 'postgres';
/** The stores a sync test series runs against. */
export const STORES: readonly StoreKind[] = ['directory', 'postgres'];

let fileDatabase: { url: string; drop: () => Promise<void> } | undefined;

/** One PostgreSQL database for the test file (createdb costs about a second); each test gets its own schema in it. */
export function usePostgres(): void {
  beforeAll(async () => {
    fileDatabase = await createTestDatabase();
  });
  afterAll(async () => {
    await fileDatabase?.drop();
    fileDatabase = undefined;
  });
}

/** A state URL whose tables live in a new schema of the file's database (search_path). */
export async function postgresStateUrl(): Promise<string> {
  if (fileDatabase === undefined) throw new Error('call usePostgres() at the top of the test file');
  const schema = `s_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: fileDatabase.url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await client.end();
  }
  const url = new URL(fileDatabase.url);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** The state options of a sync: a directory with its audit log file, or a PostgreSQL URL (its audit log in the database). */
async function stateOptions(store: StoreKind, stateDir: string) {
  if (store === 'postgres') return { state: await postgresStateUrl() };
  return { stateDir, auditLog: join(stateDir, 'audit.jsonl') };
}

export async function setup(
  opts: SandboxOptions = {},
  clientOptions: Partial<ClientOptions> = {},
  store: StoreKind = 'directory',
) {
  const { sandbox, client } = await openSandboxClient({ seed: 11, ...opts }, { maxAttempts: 6, ...clientOptions });
  const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'sync').id;
  const stateDir = tempDir('ak-sync-');
  return { sandbox, client, audienceId, stateDir, store, state: await stateOptions(store, stateDir) };
}

/** setup() with a sandbox that calls `hook.onSlow()` when a `slow` fault fires, then lets the request go on 30 ms later. */
export async function setupWithSlowHook(store: StoreKind = 'directory') {
  const hook = { onSlow: (): void => undefined };
  const sleep = async (): Promise<void> => {
    hook.onSlow();
    await new Promise((resolve) => setTimeout(resolve, 30));
  };
  return { t: await setup({ sleep }, {}, store), hook };
}

/** The audit log's lines, from its file or its table. */
export async function auditLines(t: SyncSetup): Promise<string[]> {
  if (!('state' in t.state)) return readFileSync(t.state.auditLog, 'utf8').trim().split('\n');
  const db = new pg.Client({ connectionString: t.state.state });
  await db.connect();
  try {
    const r = await db.query<{ line: string }>('SELECT line FROM audience_kit_audit ORDER BY seq');
    return r.rows.map((row) => row.line);
  } finally {
    await db.end();
  }
}

export async function verifyAudit(t: SyncSetup): Promise<AuditVerification> {
  if (!('state' in t.state)) return verifyAuditLog(t.state.auditLog);
  const store = await PostgresStore.open(t.state.state);
  try {
    return await store.audit.verify();
  } finally {
    await store.close();
  }
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

/** Puts back the user keys `members` read: an audience as an earlier moment left it. */
export function setMembers(sandbox: Sandbox, audienceId: string, keys: readonly number[]): void {
  const store = sandbox.state as unknown as { audiences: Map<string, { users: UserKeySet }> };
  const audience = store.audiences.get(audienceId);
  if (audience === undefined) throw new Error(`no audience ${audienceId} in the sandbox`);
  audience.users = new UserKeySet();
  for (const key of keys) audience.users.add(key);
}

/** `sync FILE` of a sandbox audience through the CLI, then `extra` (state, limits, --json). */
export function cliSyncArgs(account: string, audienceId: string, file: string, ...extra: string[]): string[] {
  return ['sync', file, '--account', account, '--audience', audienceId, ...extra];
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
    ...t.state,
    limits: { maxBodyBytes: 20_000 },
    retryBaseMs: 1,
    ...extra,
  });
}

export type SyncSetup = Awaited<ReturnType<typeof setup>>;
