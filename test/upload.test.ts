import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent } from 'undici';
import { describe, expect, it } from 'vitest';
import { createClient, type AdsClient, type ClientOptions } from '../src/api/client.js';
import { AuthError, ConfigError } from '../src/errors.js';
import { hashRecords } from '../src/hashing/pipeline.js';
import type { RawRecord } from '../src/identifiers/rows.js';
import { findJournal, RunJournal, type JournalKey } from '../src/state/journal.js';
import { normalizePartnerUserId } from '../src/platform/identifiers/rules.js';
import { serializeUser, writeUserFingerprint } from '../src/identifiers/serialize.js';
import type { AudienceUser } from '../src/platform/users.js';
import type { Sandbox, SandboxOptions } from '../src/sandbox/index.js';
import { sleep } from '../src/util/clock.js';
import { formatUploadProgress, ProgressPrinter } from '../src/upload/progress.js';
import { maxDoNotReachExpiry } from '../src/platform/kinds/do-not-reach-list.js';
import { resolveUploadGroup } from '../src/upload/options.js';
import type { UploadProgress } from '../src/upload/types.js';
import { uploadAudience } from './helpers/small-audience.js';
import { openSandboxClient } from './helpers/sandbox-client.js';
import { tempDir } from './helpers/temp.js';

const USERS_PATH = /\/users$/;
const instantClock = { now: () => Date.now(), sleep: async () => {} };

async function setup(
  opts: SandboxOptions = {},
  maxAttempts = 4,
  clientOptions: Partial<ClientOptions> = {},
): Promise<{ sandbox: Sandbox; client: AdsClient; audienceId: string; dnrId: string }> {
  const { sandbox, client } = await openSandboxClient({ seed: 7, ...opts }, { maxAttempts, ...clientOptions });
  const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'test').id;
  const dnrId = sandbox.state.createDoNotReachList(sandbox.accounts.primary, 'dnr').id;
  return { sandbox, client, audienceId, dnrId };
}

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

/** n distinct users (i = 0..n-1), each with an email digest and every third with a phone. */
function users(n: number, from = 0): AudienceUser[] {
  return Array.from({ length: n }, (_, k) => {
    const i = from + k;
    const u: AudienceUser = { email: [sha(`user${i}@example.com`)] };
    if (i % 3 === 0) u.phone_number = [sha(`+1555${String(i).padStart(7, '0')}`)];
    return u;
  });
}

function userBatchRequests(sandbox: Sandbox): { status: number; users?: number }[] {
  return sandbox.state.requests.filter((r) => r.method === 'POST' && USERS_PATH.test(r.path));
}

const SMALL = { maxBodyBytes: 20_000 };

describe('uploadAudience', () => {
  it("waits for onConfirmed's promise before a batch frees its slot, and stops when it rejects", async () => {
    // Every user batch reaching the sandbox is counted as it arrives (the 'slow' fault's sleep).
    let arrived = 0;
    const { sandbox, client, audienceId } = await setup({
      faults: 'slow=1%1',
      sleep: () => {
        arrived++;
        return Promise.resolve();
      },
    });
    const base = {
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      limits: SMALL,
      concurrency: 1,
      clock: instantClock,
    };
    const seenWhileRecording: number[] = [];
    const report = await uploadAudience({
      ...base,
      users: users(400),
      onConfirmed: async (b) => {
        // A record that takes a while: with one slot, no other batch may reach the platform meanwhile.
        for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        await sleep(5);
        seenWhileRecording.push(arrived - (b.index + 1));
      },
    });
    expect(report.status).toBe('completed');
    expect(report.batches).toBeGreaterThan(2);
    expect(seenWhileRecording).toEqual(Array.from({ length: report.batches }, () => 0));

    const failing = await uploadAudience({
      ...base,
      users: users(400, 1000),
      onConfirmed: () => Promise.reject(new ConfigError('state_connection_lost', 'lost', { fix: 'retry' })),
    });
    expect(failing).toMatchObject({
      status: 'partial',
      batches_confirmed: 1,
      error: { code: 'state_connection_lost' },
    });
  });

  it('uploads every user in verified batches, deduplicating repeats', async () => {
    const { sandbox, client, audienceId } = await setup();
    const list = [...users(1000), ...users(50)];
    const seen: UploadProgress[] = [];
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: list,
      limits: SMALL,
      onProgress: (p) => seen.push(p),
      runId: 'r1',
      clock: instantClock,
    });
    expect(report).toMatchObject({
      run_id: 'r1',
      status: 'completed',
      rows: 1050,
      users: 1000,
      duplicates: 50,
      users_confirmed: 1000,
      success_count: 1000,
      total_count: 1000,
      batches_failed: 0,
      mismatches: 0,
    });
    expect(report.identifiers.email?.valid).toBe(1050);
    expect(sandbox.state.audienceSize(audienceId)).toBe(1000);
    const reqs = userBatchRequests(sandbox);
    expect(reqs.length).toBe(report.batches);
    expect(report.batches).toBeLessThanOrEqual(1 + report.bytes / SMALL.maxBodyBytes);
    expect(reqs.every((r) => (r.users ?? 0) > 0)).toBe(true);
    expect(seen.at(-1)?.done).toBe(true);
    expect(seen.at(-1)?.usersConfirmed).toBe(1000);
  });

  it("never reuses a body sent through the caller's dispatcher, which may keep it (a MockAgent's call history does)", async () => {
    const kept: Buffer[] = [];
    const agent = new Agent();
    const dispatcher = agent.compose((dispatch) => (opts, handler) => {
      if (USERS_PATH.test(opts.path) && Buffer.isBuffer(opts.body)) kept.push(opts.body);
      return dispatch(opts, handler);
    });
    const { sandbox, client, audienceId } = await setup({}, 4, { dispatcher });
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(1000),
      limits: SMALL,
      concurrency: 2,
    });
    await agent.close();
    expect(report).toMatchObject({ status: 'completed', users_confirmed: 1000 });
    expect(kept.length).toBeGreaterThan(4);
    // Each body the dispatcher kept still holds the users sent in it: none was filled again.
    const sent = kept.flatMap((body) =>
      (JSON.parse(body.toString('utf8')) as { params: { users: unknown[] } }[]).flatMap((op) => op.params.users),
    );
    expect(new Set(sent.map((u) => JSON.stringify(u))).size).toBe(1000);
    expect(sent).toHaveLength(1000);
  });

  it('hashes raw records through hashRecords and maps counts from its summary', async () => {
    const { sandbox, client, audienceId } = await setup();
    const rows = [
      { Email: 'A@Example.com', Phone: '+1 202 555 0143' },
      { Email: 'not-an-email', Phone: '' },
      { Email: 'a@example.com', Phone: '+1 (202) 555-0143' },
      { Email: '', Phone: '' },
    ];
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: hashRecords(rows, {}),
      clock: instantClock,
    });
    expect(report).toMatchObject({ status: 'completed', rows: 4, users: 1, duplicates: 1, rows_without_identifier: 2 });
    expect(report.invalid_by_reason.email_invalid).toEqual({ count: 1, lines: [2] });
    expect(sandbox.state.audienceSize(audienceId)).toBe(1);
  });

  it('takes packed chunks (serialized users, lines, fingerprints) and dedupes by fingerprint', async () => {
    const { sandbox, client, audienceId } = await setup();
    // The last 100 users repeat the first 100: sent once.
    const all = [...users(900), ...users(100)].map((u) => serializeUser(u));
    const chunks = [0, 500].map((from) => {
      const slice = all.slice(from, from + 500);
      const fingerprints = new Uint32Array(2 * slice.length);
      slice.forEach((json, i) => writeUserFingerprint(json, fingerprints, i));
      return {
        packed: {
          jsonLines: slice.map((j) => `${j}\n`).join(''),
          lines: Uint32Array.from(slice, (_, i) => from + i + 2),
          fingerprints,
        },
      };
    });
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: chunks,
      limits: SMALL,
      clock: instantClock,
    });
    expect(report).toMatchObject({ status: 'completed', users: 900, duplicates: 100, users_confirmed: 900 });
    expect(sandbox.state.audienceSize(audienceId)).toBe(900);
  });

  it('refuses bare user objects that are not hashed, without the value in the message', async () => {
    const base = { accountId: 'a', target: { customAudienceId: 'b' }, dryRun: true } as const;
    const raw = 'jane.doe@example.com';
    await expect(uploadAudience({ ...base, users: [{ email: [raw] }] })).rejects.toMatchObject({
      code: 'user_not_hashed',
    });
    await expect(uploadAudience({ ...base, users: [{ email: [raw] }] })).rejects.not.toThrow(raw);
    await expect(uploadAudience({ ...base, users: [{ phone: ['a'.repeat(64)] } as never] })).rejects.toThrow(
      /a key that is not an identifier type/,
    );
    await expect(uploadAudience({ ...base, users: [{ [raw]: ['a'.repeat(64)] } as never] })).rejects.not.toThrow(raw);
    await expect(uploadAudience({ ...base, users: [{ email: 'a'.repeat(64) } as never] })).rejects.toThrow(
      /array of strings/,
    );
    const ok = await uploadAudience({ ...base, users: [{ email: ['a'.repeat(64)], partner_user_id: ['crm-1'] }] });
    expect(ok).toMatchObject({ status: 'completed', users: 1 });
  });

  it('checks every user object a caller makes: bare ones in lists, built ones without their text; anything else is refused, never a TypeError', async () => {
    const base = { accountId: 'a', target: { customAudienceId: 'b' }, dryRun: true } as const;
    const raw = 'jane.doe@example.com';
    const digest = 'a'.repeat(64);
    // Bare hashed users in a list, or in a chunk's users, are users as they are alone.
    for (const users of [[[{ email: [digest] }]], [{ users: [{ email: [digest] }, { phone_number: [digest] }] }]])
      expect(await uploadAudience({ ...base, users: users as never })).toMatchObject({ status: 'completed' });
    // A user built by hand (no json: not from the hashing pipelines) with a raw value is refused by
    // its line, alone, in a list or in a chunk's users.
    const built = { line: 7, user: { email: [raw] }, rejects: [] };
    for (const users of [[built], [[built]], [{ users: [built] }]]) {
      await expect(uploadAudience({ ...base, users: users as never })).rejects.toMatchObject({
        code: 'user_not_hashed',
        message: expect.stringMatching(/^the user of line 7 of the input has a email value that is not a SHA-256/),
      });
      await expect(uploadAudience({ ...base, users: users as never })).rejects.not.toThrow(raw);
    }
    await expect(uploadAudience({ ...base, users: [[{ email: [raw] }]] as never })).rejects.toMatchObject({
      code: 'user_not_hashed',
    });
    for (const users of [[null], [[null]], [{ users: [42] }]])
      await expect(uploadAudience({ ...base, users: users as never })).rejects.toThrow(
        /^user 1 of the input is not a user object/,
      );
    await expect(uploadAudience({ ...base, users: [{ line: 1, user: null }] as never })).rejects.toThrow(
      /^user 1 of the input has a key that is not an identifier type/,
    );
  });

  it('takes a built user as it was built: partner_user_id is bounded in code points on both paths (256)', async () => {
    const base = { accountId: 'a', target: { customAudienceId: 'b' }, dryRun: true } as const;
    // 256 emoji are 512 UTF-16 units: the normalizer keeps them, and so does the hashed users' check.
    const id = '😀'.repeat(256);
    expect(normalizePartnerUserId(id)).toEqual({ ok: true, value: id });
    const ok = await uploadAudience({ ...base, users: [{ partner_user_id: [id] }] });
    expect(ok).toMatchObject({ status: 'completed', users: 1 });
    for (const bad of ['', '😀'.repeat(257), 'x'.repeat(257)]) {
      expect(normalizePartnerUserId(bad)).toEqual({ ok: false, reason: 'partner_user_id_invalid' });
      await expect(uploadAudience({ ...base, users: [{ partner_user_id: [bad] }] })).rejects.toMatchObject({
        code: 'user_not_hashed',
      });
    }
  });

  it('hashes raw records here with the records option (a pipeline feeding database rows)', async () => {
    const { sandbox, client, audienceId } = await setup();
    async function* rows(): AsyncGenerator<RawRecord> {
      yield { Email: ' Jane.Doe@Example.com ', Phone: '+1 415 555 2671' };
      yield { Email: 'not-an-email', Phone: null };
      // A key first seen here is mapped too (database rows often omit null columns).
      yield { Email: 'jane.doe@example.com', Phone: '+14155552671', Mobile: undefined };
    }
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: rows(),
      records: { defaultCountry: 'US' },
      clock: instantClock,
    });
    expect(report).toMatchObject({ status: 'completed', rows: 3, users: 1, duplicates: 1, rows_without_identifier: 1 });
    expect(report.invalid_by_reason.email_invalid).toEqual({ count: 1, lines: [2] });
    expect(sandbox.state.audienceSize(audienceId)).toBe(1);
  });

  it('maxRejectRate and requireUsers stop the input before its last batch is sent', async () => {
    const { sandbox, client, audienceId } = await setup();
    const base = {
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      records: {},
      clock: instantClock,
    };
    const rows = [{ email: 'a@example.com' }, { email: 'nope' }];
    await expect(uploadAudience({ ...base, users: rows, maxRejectRate: 0.25 })).rejects.toMatchObject({
      code: 'input_reject_rate_exceeded',
    });
    await expect(uploadAudience({ ...base, users: [{ email: 'nope' }], requireUsers: true })).rejects.toMatchObject({
      code: 'input_no_users',
    });
    expect(sandbox.state.audienceSize(audienceId)).toBe(0);
    await expect(uploadAudience({ ...base, users: rows, maxRejectRate: 50 })).rejects.toBeInstanceOf(ConfigError);
    const ok = await uploadAudience({ ...base, users: rows, maxRejectRate: 0.5, requireUsers: true });
    expect(ok).toMatchObject({ status: 'completed', users: 1 });
  });

  it('do-not-reach expiry must be under 13 months, clamped at month ends', () => {
    expect(maxDoNotReachExpiry(new Date('2030-01-31T10:00:00Z')).toISOString()).toBe('2031-02-28T10:00:00.000Z');
    const now = new Date('2030-03-15T00:00:00Z');
    const target = { doNotReachListId: 'x' };
    expect(() => resolveUploadGroup({ target, expiresAt: '2031-04-15T00:00:00Z', now })).toThrow(/13 months/);
    expect(resolveUploadGroup({ target, expiresAt: '2031-04-14T23:59:59Z', now })).toMatchObject({
      expiresAt: '2031-04-14T23:59:59Z',
    });
  });

  it('re-sends a batch whose counts do not match, at once, until confirmed', async () => {
    const { sandbox, client, audienceId } = await setup({ faults: 'mismatch@1+2+4' });
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
      clock: instantClock,
    });
    expect(report.status).toBe('completed');
    expect(report.mismatches).toBe(3);
    expect(report.requests).toBe(report.batches + 3);
    expect(sandbox.state.audienceSize(audienceId)).toBe(600);
  });

  it('counts every HTTP attempt in requests and bytes: the client retries (503, 500, 429, drop) and the mismatch re-sends', async () => {
    const { sandbox, client, audienceId } = await setup({ faults: '503=0@1,500@2,429@3,drop@5,mismatch@7+8' }, 4);
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
      concurrency: 1,
      clock: instantClock,
    });
    const sent = userBatchRequests(sandbox) as { bytes?: number }[];
    expect(report.status).toBe('completed');
    expect(report.requests).toBe(sent.length);
    expect(report.requests).toBe(report.batches + 6);
    expect(report.retries).toBe(6);
    expect(report.mismatches).toBe(2);
    expect(report.bytes).toBe(sent.reduce((n, r) => n + (r.bytes ?? 0), 0));
    expect(sandbox.state.audienceSize(audienceId)).toBe(600);
  });

  it('reports a batch that never verifies as failed after maxRetries re-sends, the rest confirmed', async () => {
    const { sandbox, client, audienceId } = await setup({ faults: 'mismatch@1+2+3' });
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
      concurrency: 1,
      maxRetries: 2,
      clock: instantClock,
    });
    expect(report).toMatchObject({ status: 'partial', batches_failed: 1, mismatches: 3, requests: report.batches + 2 });
    expect(report.failed_batches[0]).toMatchObject({ index: 0, code: 'batch_count_mismatch' });
    expect(report.users_confirmed + report.users_failed).toBe(600);
  });

  it("a batch that always gets a 500 costs exactly the client's maxAttempts requests (one retry owner)", async () => {
    const { sandbox, client, audienceId } = await setup({ faults: '500%1' }, 3);
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(100),
      maxRetries: 5,
      clock: instantClock,
    });
    expect(report).toMatchObject({ status: 'failed', batches: 1, batches_failed: 1, mismatches: 0 });
    const sent = userBatchRequests(sandbox);
    expect(sent.map((r) => r.status)).toEqual([500, 500, 500]);
  });

  it('an abort during the backoff between mismatch re-sends interrupts the run, the batch not failed', async () => {
    const { sandbox, client, audienceId } = await setup({ faults: 'mismatch@1+2+3' });
    const controller = new AbortController();
    let sleeps = 0;
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
      concurrency: 1,
      // The real sleep, which rejects when the signal aborts while it waits.
      clock: {
        now: () => Date.now(),
        sleep: (ms, signal) => {
          sleeps++;
          controller.abort();
          return sleep(ms, signal);
        },
      },
      signal: controller.signal,
    });
    expect(sleeps).toBe(1);
    expect(report).toMatchObject({ status: 'interrupted', batches_failed: 0, mismatches: 2, requests: 2 });
  });

  it('cancelSignal cuts the request on the wire (signal lets it finish): interrupted, the batch left for a resume', async () => {
    const cancel = new AbortController();
    let answer: () => void = () => undefined;
    // The sandbox holds the batch request (a slow fault) until the test lets it go: it is on the wire when cancelled.
    const { sandbox, client } = await openSandboxClient({
      seed: 7,
      faults: 'slow=60000@1',
      sleep: () =>
        new Promise<void>((resolve) => {
          answer = resolve;
          cancel.abort();
        }),
    });
    const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'test').id;
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
      concurrency: 1,
      clock: instantClock,
      cancelSignal: cancel.signal,
    });
    answer();
    expect(report).toMatchObject({ status: 'interrupted', batches_failed: 0, batches_confirmed: 0, requests: 1 });
  });

  for (const [faults, reason] of [
    ['429@1', 'server_reset'],
    ['500@1', 'retry'],
  ] as const) {
    it(`the run's signal cuts the client's wait after ${faults} (${reason}): interrupted, the batch left for a resume`, async () => {
      const controller = new AbortController();
      const waits: string[] = [];
      // A client clock whose sleep ends only when its signal aborts: a wait the run's signal does not reach never ends.
      const { sandbox, client } = await openSandboxClient(
        { seed: 7, faults },
        {
          maxAttempts: 4,
          onWait: (w) => waits.push(w.reason),
          clock: {
            now: () => Date.now(),
            sleep: (_ms, signal) =>
              new Promise<void>((_resolve, reject) => {
                signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
                controller.abort();
              }),
          },
        },
      );
      const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'test').id;
      const report = await uploadAudience({
        client,
        accountId: sandbox.accounts.primary,
        target: { customAudienceId: audienceId },
        users: users(600),
        limits: SMALL,
        concurrency: 1,
        clock: instantClock,
        signal: controller.signal,
      });
      expect(waits).toEqual([reason]);
      expect(report).toMatchObject({ status: 'interrupted', batches_failed: 0, batches_confirmed: 0, requests: 1 });
      expect(userBatchRequests(sandbox)).toHaveLength(1);
    });
  }

  for (const faults of [
    '500@1+3',
    '503=1@2',
    '429@1',
    'drop@2',
    'slow=50@1',
    'html@1+2',
    'mismatch%0.3',
    '500%0.2,drop%0.1,mismatch%0.1',
  ]) {
    it(`survives sandbox fault ${faults} with every user confirmed`, async () => {
      // Failed requests are the client's to retry: it gets the budget the uploader's re-sends had.
      const { sandbox, client, audienceId } = await setup({ faults }, 8);
      const report = await uploadAudience({
        client,
        accountId: sandbox.accounts.primary,
        target: { customAudienceId: audienceId },
        users: users(1500),
        limits: SMALL,
        maxRetries: 8,
        clock: instantClock,
      });
      expect(report.status).toBe('completed');
      expect(report.users_confirmed).toBe(1500);
      expect(sandbox.state.audienceSize(audienceId)).toBe(1500);
    });
  }

  it('uploads to a do-not-reach list and verifies the per-operation counts', async () => {
    const { sandbox, client, dnrId } = await setup({ faults: 'mismatch@2' });
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { doNotReachListId: dnrId },
      users: users(700),
      limits: { ...SMALL, maxUsersPerOperation: 50 },
      expiresAt: new Date(Date.now() + 30 * 86_400_000).toISOString(),
      clock: instantClock,
    });
    expect(report).toMatchObject({ status: 'completed', mismatches: 1, users_confirmed: 700 });
    expect(sandbox.state.dnrListSize(dnrId)).toBe(700);
  });

  it('never sends a do-not-reach list an identifier type it does not take: mapped out, or refused before sending', async () => {
    const { sandbox, client, dnrId } = await setup();
    const target = { doNotReachListId: dnrId };
    const base = { client, accountId: sandbox.accounts.primary, target, clock: instantClock };
    const partner = { email: ['a'.repeat(64)], partner_user_id: ['crm-1'] };
    await expect(uploadAudience({ ...base, users: [partner] })).rejects.toMatchObject({
      code: 'type_not_taken',
      // The fix names what the package exports (hashCsv, hashRecords, the option's value), nothing internal.
      fix: 'map only email and phone_number columns (hashCsv and hashRecords take them as the option types: ["email","phone_number"])',
    });
    const fingerprints = new Uint32Array(2);
    writeUserFingerprint(serializeUser(partner), fingerprints, 0);
    const packed = { packed: { jsonLines: `${serializeUser(partner)}\n`, lines: Uint32Array.of(7), fingerprints } };
    await expect(uploadAudience({ ...base, users: [packed] })).rejects.toThrow(/line 7 has partner_user_id/);
    expect(sandbox.state.requests.filter((q) => q.path.includes(dnrId))).toHaveLength(0);
    // Raw records: the columns of other types are left out of the mapping.
    const report = await uploadAudience({
      ...base,
      users: [{ email: 'jane@example.com', customer_id: 'crm-1' }],
      records: {},
    });
    expect(report).toMatchObject({ status: 'completed', users: 1 });
    expect(sandbox.state.dnrListSize(dnrId)).toBe(1);
  });

  it('refuses do-not-reach effective_at and expiries beyond 13 months before sending anything', async () => {
    const { sandbox, client, dnrId } = await setup();
    const base = { client, accountId: sandbox.accounts.primary, target: { doNotReachListId: dnrId }, users: users(10) };
    await expect(uploadAudience({ ...base, effectiveAt: '2030-01-01T00:00:00Z' })).rejects.toThrow(/effectiveAt/);
    const tooFar = new Date(maxDoNotReachExpiry(new Date()).getTime() + 86_400_000).toISOString();
    await expect(uploadAudience({ ...base, expiresAt: tooFar })).rejects.toMatchObject({ code: 'dnr_expiry_too_far' });
    await expect(uploadAudience({ ...base, expiresAt: 'tomorrow' })).rejects.toThrow(ConfigError);
    expect(userBatchRequests(sandbox)).toEqual([]);
    expect(
      resolveUploadGroup({
        target: { customAudienceId: 'x' },
        effectiveAt: '2030-01-01',
        expiresAt: '2030-02-01T00:00:00+01:00',
      }),
    ).toEqual({
      operationType: 'Update',
      effectiveAt: '2030-01-01T00:00:00Z',
      expiresAt: '2030-01-31T23:00:00Z',
    });
  });

  it('sends nothing on a dry run and still plans the batches', async () => {
    const { sandbox, audienceId } = await setup();
    const bodies: string[] = [];
    const report = await uploadAudience({
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(500),
      limits: SMALL,
      dryRun: true,
      onBatch: (b) => bodies.push(b.body.toString('utf8')),
    });
    expect(report).toMatchObject({ dry_run: true, requests: 0, users: 500 });
    expect(report.batches).toBe(bodies.length);
    expect(report.bytes).toBe(bodies.reduce((n, b) => n + Buffer.byteLength(b), 0));
    expect(userBatchRequests(sandbox)).toEqual([]);
  });

  it('stops reading on abort, lets in-flight requests finish, and resumes from the journal', async () => {
    const { sandbox, client, audienceId } = await setup({ faults: 'slow=30%1' });
    const stateDir = tempDir('ak-state-');
    const key: JournalKey = {
      input: { name: 'gen', size: 0, sha256: 'f'.repeat(64) },
      accountId: sandbox.accounts.primary,
      target: { kind: 'custom_audience', id: audienceId },
      options: { limits: SMALL },
    };
    const all = users(3000);
    const controller = new AbortController();
    let confirmed = 0;
    const j1 = await RunJournal.open(stateDir, key, { mode: 'new', runId: 'a' });
    const first = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: all,
      limits: SMALL,
      journal: j1,
      concurrency: 2,
      onProgress: (p) => {
        confirmed = p.batchesConfirmed;
        if (confirmed >= 3) controller.abort();
      },
      signal: controller.signal,
    });
    await j1.close();
    expect(first.status).toBe('interrupted');
    const summary = findJournal(stateDir, key);
    expect(summary).toMatchObject({ complete: false, confirmed: first.batches_confirmed });
    const sentBefore = userBatchRequests(sandbox).length;

    const j2 = await RunJournal.open(stateDir, key, { mode: 'resume', runId: 'b' });
    const second = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: all,
      limits: SMALL,
      journal: j2,
    });
    await j2.close();
    expect(second).toMatchObject({ status: 'completed', resumed: true, batches_skipped: first.batches_confirmed });
    expect(second.batches_confirmed + second.batches_skipped).toBe(second.batches);
    expect(userBatchRequests(sandbox).length - sentBefore).toBe(second.batches - first.batches_confirmed);
    expect(sandbox.state.audienceSize(audienceId)).toBe(3000);
    expect(findJournal(stateDir, key)?.complete).toBe(true);
  });

  it('a user too large for one request: partial with users_oversized, the journal not complete, a resume sends nothing again', async () => {
    const { sandbox, client, audienceId } = await setup();
    const stateDir = tempDir('ak-state-');
    const limits = { maxBodyBytes: 1024 };
    const key: JournalKey = {
      input: { name: 'gen', size: 0, sha256: 'e'.repeat(64) },
      accountId: sandbox.accounts.primary,
      target: { kind: 'custom_audience', id: audienceId },
      options: { limits },
    };
    // 16 addresses make one user object of about 1.1 KB: no 1024-byte request carries it.
    const big: AudienceUser = { email: Array.from({ length: 16 }, (_, i) => sha(`big.${i}@example.org`)) };
    const all = [...users(4), big, ...users(4, 4)];
    const send = async (mode: 'new' | 'resume', runId: string) => {
      const journal = await RunJournal.open(stateDir, key, { mode, runId });
      try {
        const base = { client, accountId: sandbox.accounts.primary, target: { customAudienceId: audienceId } };
        return await uploadAudience({ ...base, users: all, limits, journal });
      } finally {
        await journal.close();
      }
    };
    const first = await send('new', 'a');
    expect(first).toMatchObject({ status: 'partial', users: 8, users_confirmed: 8, oversized_users: 1 });
    expect(first.oversized_lines).toEqual([5]);
    expect(first.error).toMatchObject({ code: 'users_oversized' });
    expect(first.error?.message).toContain('1 user too large for one request (limits.maxBodyBytes 1024)');
    expect(first.error?.fix).toContain('raise limits.maxBodyBytes');
    expect(sandbox.state.audienceSize(audienceId)).toBe(8);
    // Not complete: a rerun resumes it instead of starting over, and claims nothing for that user.
    expect(findJournal(stateDir, key)).toMatchObject({ complete: false, confirmed: first.batches_confirmed });
    const posts = userBatchRequests(sandbox).length;
    const again = await send('resume', 'b');
    expect(again).toMatchObject({ status: 'partial', resumed: true, users_confirmed_earlier: 8, oversized_users: 1 });
    expect(again.batches_skipped).toBe(first.batches_confirmed);
    expect(userBatchRequests(sandbox).length).toBe(posts);
    expect(findJournal(stateDir, key)?.complete).toBe(false);
    // At the platform's limit it goes, and that run completes.
    const whole = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: all,
    });
    expect(whole).toMatchObject({ status: 'completed', oversized_users: 0 });
    expect(whole.error).toBeUndefined();
    expect(sandbox.state.audienceSize(audienceId)).toBe(9);
  });

  it('keeps failed batches in the state dir and re-sends them first on resume', async () => {
    // The client's 4 attempts at the first batch all get a 500: it fails, the others go through.
    const { sandbox, client, audienceId } = await setup({ faults: '500@1+2+3+4' });
    const stateDir = tempDir('ak-state-');
    const key: JournalKey = {
      input: { name: 'gen', size: 0, sha256: 'e'.repeat(64) },
      accountId: sandbox.accounts.primary,
      target: { kind: 'custom_audience', id: audienceId },
      options: {},
    };
    const j1 = await RunJournal.open(stateDir, key, { mode: 'new', runId: 'a' });
    const first = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
      concurrency: 1,
      maxRetries: 1,
      journal: j1,
      clock: instantClock,
    });
    await j1.close();
    expect(first.status).toBe('partial');
    expect(first.batches_failed).toBe(1);
    const failedDir = join(j1.dir, 'failed');
    const kept = readdirSync(failedDir);
    expect(kept.sort()).toEqual(['000000.body.json', '000000.lines.u32be']);
    const body = readFileSync(join(failedDir, '000000.body.json'), 'utf8');
    expect(body).not.toContain('@example.com');

    const j2 = await RunJournal.open(stateDir, key, { mode: 'resume', runId: 'b' });
    const second = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
      journal: j2,
      clock: instantClock,
    });
    await j2.close();
    expect(second).toMatchObject({
      status: 'completed',
      batches_confirmed: 1,
      batches_skipped: first.batches_confirmed,
    });
    expect(sandbox.state.audienceSize(audienceId)).toBe(600);
    expect(() => readdirSync(failedDir)).toThrow();
  });

  it('refuses to resume when a recomputed batch differs from the confirmed one', async () => {
    const { sandbox, client, audienceId } = await setup();
    const stateDir = tempDir('ak-state-');
    const key: JournalKey = {
      input: { name: 'gen', size: 0, sha256: 'd'.repeat(64) },
      accountId: sandbox.accounts.primary,
      target: { kind: 'custom_audience', id: audienceId },
      options: {},
    };
    const controller = new AbortController();
    const j1 = await RunJournal.open(stateDir, key, { mode: 'new', runId: 'a' });
    await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
      concurrency: 1,
      journal: j1,
      onProgress: (p) => {
        if (p.batchesConfirmed >= 1) controller.abort();
      },
      signal: controller.signal,
    });
    await j1.close();
    const j2 = await RunJournal.open(stateDir, key, { mode: 'resume', runId: 'b' });
    await expect(
      uploadAudience({
        client,
        accountId: sandbox.accounts.primary,
        target: { customAudienceId: audienceId },
        users: users(600, 1),
        limits: SMALL,
        journal: j2,
      }),
    ).rejects.toMatchObject({ code: 'journal_mismatch' });
    await j2.close();
  });

  it.each([400, 200])(
    'maps operation_errors (one array per operation) to the operation and its input lines (HTTP %i: counts beside errors confirm nothing)',
    async (status) => {
      const server = createServer((req, res) => {
        req.resume().on('end', () => {
          res.writeHead(status, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              // A 200 with counts that match the users sent: the errors beside them still fail the batch.
              ...(status === 200 ? { data: { success_count: 6, total_count: 6 } } : {}),
              errors: [{ code: 'INVALID_USER_DATA', message: 'bad users' }],
              operation_errors: [
                [],
                [{ code: 'INVALID_USER_DATA', message: 'bad email', user_index: 1 }],
                [{ message: 'bad' }],
              ],
            }),
          );
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const client = createClient({
        adsBaseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        credentials: { consumerKey: 'k', consumerSecret: 's', accessToken: 't', accessTokenSecret: 'u' },
        clock: instantClock,
        maxAttempts: 1,
      });
      try {
        const rows = Array.from({ length: 6 }, (_, i) => ({ Email: `u${i}@example.com` }));
        const report = await uploadAudience({
          client,
          accountId: 'a',
          target: { customAudienceId: 'b' },
          users: hashRecords(rows, {}),
          limits: { maxUsersPerOperation: 2 },
          maxRetries: 0,
          clock: instantClock,
        });
        expect(report).toMatchObject({ status: 'failed', users_confirmed: 0, users_failed: 6 });
        expect(report.operation_errors).toEqual([
          { line: 4, operation_lines: [3, 4], batch: 0, operation: 1, code: 'INVALID_USER_DATA' },
          { line: null, operation_lines: [5, 6], batch: 0, operation: 2, code: 'INVALID_USER_DATA' },
        ]);
        expect(report.operation_errors_total).toBe(2);
      } finally {
        await client.close();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  );

  it('stops at an authentication error and reports it (the CLI exits 4)', async () => {
    const { sandbox, audienceId } = await setup();
    const bad = createClient({
      adsBaseUrl: sandbox.adsBaseUrl,
      credentials: { ...sandbox.credentials, consumerSecret: 'wrong' },
      clock: instantClock,
    });
    const report = await uploadAudience({
      client: bad,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(600),
      limits: SMALL,
    });
    await bad.close();
    expect(report.status).toBe('failed');
    expect(report.error).toBeInstanceOf(AuthError);
    expect(report.error?.message).not.toContain('wrong');
  });
});

describe('progress output', () => {
  const p: UploadProgress = {
    rows: 500_000,
    users: 490_000,
    duplicates: 10,
    batchesPacked: 16,
    requestsSent: 15,
    batchesConfirmed: 14,
    batchesSkipped: 1,
    batchesFailed: 0,
    usersConfirmed: 450_000,
    bytesSent: 7e7,
    retries: 2,
    mismatches: 1,
    rateLimitWaits: 3,
    waitedMs: 4000,
    inFlight: 1,
    elapsedMs: 10_000,
    inputBytesRead: 25,
    inputTotalBytes: 100,
    done: false,
  };

  it('formats rows, requests, rate, waits and an ETA from the input bytes', () => {
    expect(formatUploadProgress(p)).toBe(
      'rows 500,000 · users 490,000 · requests 15 confirmed, 1 in flight · 50,000 rows/s · rate-limit waits 3 · retries 2 · waited 0:04 · 25% ETA 0:30 · elapsed 0:10',
    );
  });

  it('redraws one line on a terminal and prints plain lines at an interval otherwise', () => {
    const tty: string[] = [];
    const printer = new ProgressPrinter({ write: (t) => tty.push(t), tty: true });
    printer.update(p);
    printer.update({ ...p, done: true });
    printer.finish();
    expect(tty[0]?.startsWith('\r\x1b[2K')).toBe(true);
    expect(tty.at(-1)).toBe('\n');
    let now = 0;
    const plain: string[] = [];
    const lines = new ProgressPrinter({ write: (t) => plain.push(t), tty: false, intervalMs: 1000, now: () => now });
    lines.update(p);
    now = 500;
    lines.update(p);
    now = 1500;
    lines.update(p);
    lines.update({ ...p, done: true });
    expect(plain.length).toBe(3);
    expect(plain.every((l) => l.startsWith('progress: ') && l.endsWith('\n'))).toBe(true);
  });
});
