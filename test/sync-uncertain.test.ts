import { createHash } from 'node:crypto';
import { cpSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { stateFs } from '../src/state/fs.js';
import { snapshotDir } from '../src/state/snapshot.js';
import type { SyncReport } from '../src/upload/sync-report.js';
import {
  customers,
  expected,
  members,
  range,
  setup,
  STORES,
  syncOf,
  usePostgres,
  userPosts,
  type StoreKind,
  type SyncSetup,
} from './helpers/sync.js';
import { waitFor } from './helpers/upload-cli.js';

// Every unclean end of a sync (a batch whose outcome is unknown) is followed by a sync of a
// DIFFERENT file, which must leave the sandbox holding exactly that file's users: the
// write-ahead record makes the users of such batches uncertain, and the next sync sends them as
// its file dictates (Delete or Update, both idempotent). The first series runs against both stores.
usePostgres();

const realWrite = stateFs.writeSync;
afterEach(() => {
  stateFs.writeSync = realWrite;
});

const A = customers(range(0, 120));
/** Removes 0..12, adds 120..160. */
const B = customers(range(12, 160));
/** Takes back half of B's removals and drops most of B's adds: what a wrong snapshot gets wrong. */
const C = customers([...range(0, 6), ...range(20, 130)]);
/** ~13 users per request: several batches per phase. */
const small = { limits: { maxBodyBytes: 2000 }, concurrency: 1, maxRetries: 1 } as const;

const dirOf = (t: SyncSetup): string =>
  snapshotDir(t.stateDir, { accountId: t.sandbox.accounts.primary, kind: 'custom_audience', id: t.audienceId });

/** The next sync, of another file, ends completed with the audience equal to that file. */
async function convergesOn(t: SyncSetup, rows = C): Promise<SyncReport> {
  const next = await syncOf(t, rows, { ...small, maxRemovals: '100%' });
  expect(next.status).toBe('completed');
  expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
  return next;
}

/** A target synced with A, then a sync of B during which the disk is full once its first batch reached the platform. */
async function diskFullAfterFirstBatch(store: StoreKind): Promise<{ t: SyncSetup; sent: number; b: unknown }> {
  const t = await setup({}, {}, store);
  expect((await syncOf(t, A, small)).status).toBe('completed');
  const sent = userPosts(t.sandbox, t.audienceId);
  stateFs.writeSync = (...args) => {
    if (userPosts(t.sandbox, t.audienceId) > sent) throw Object.assign(new Error('no space'), { code: 'ENOSPC' });
    return realWrite(...args);
  };
  const b = await syncOf(t, B, small).catch((error: unknown) => error);
  return { t, sent, b };
}

describe.each(STORES)('sync after a batch whose outcome is unknown (%s store)', { timeout: 60_000 }, (store) => {
  it.each([
    ['a Delete', 'mismatch@1+2'],
    ['an Update', 'mismatch@3+4'],
  ])(
    '%s answered with a count mismatch the platform applied: the next sync of another file converges',
    async (_, faults) => {
      const t = await setup({}, {}, store);
      expect((await syncOf(t, A, small)).status).toBe('completed');
      t.sandbox.setFaults(faults);
      const b = await syncOf(t, B, small);
      expect(b.status).not.toBe('completed');
      // The snapshot does not claim what the platform may not hold.
      t.sandbox.setFaults('');
      await convergesOn(t);
    },
  );

  it('a request that timed out but was applied: the next sync of another file converges', async () => {
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const t = await setup({ sleep: () => gate }, { maxAttempts: 1, headersTimeoutMs: 300 }, store);
    expect((await syncOf(t, A, small)).status).toBe('completed');
    const before = t.sandbox.state.requests.length;
    // The 3rd request (an Update) is held by the sandbox until the client has given up on it.
    t.sandbox.setFaults('slow@3');
    const b = await syncOf(t, B, small);
    expect(b.status).not.toBe('completed');
    release();
    await waitFor(() => t.sandbox.state.requests.slice(before).some((r) => r.fault === 'slow'));
    await convergesOn(t);
  });

  it('a snapshot write that fails after a batch was sent: the next sync of another file converges', async () => {
    const { t, sent, b } = await diskFullAfterFirstBatch(store);
    if (b instanceof Error) expect(b).toMatchObject({ code: 'disk_full' });
    else expect((b as SyncReport).status).not.toBe('completed');
    expect(userPosts(t.sandbox, t.audienceId)).toBe(sent + 1);
    stateFs.writeSync = realWrite;
    await convergesOn(t);
  });
});

/** A synced target (A then B), its snapshot directory and the request count so far. */
async function synced(): Promise<{ t: SyncSetup; dir: string; posts: number }> {
  const t = await setup();
  expect((await syncOf(t, A, small)).status).toBe('completed');
  expect((await syncOf(t, B, small)).status).toBe('completed');
  return { t, dir: dirOf(t), posts: userPosts(t.sandbox, t.audienceId) };
}

/** Flip one byte of a file. */
function flip(path: string, at: number): void {
  const buf = readFileSync(path);
  buf[at] = (buf[at] as number) ^ 0xff;
  writeFileSync(path, buf);
}

const dataFile = (dir: string): string => join(dir, readdirSync(dir).find((f) => f.startsWith('data.')) ?? 'data.0');

/** A target synced with A then B whose snapshot was replaced by the copy taken after A. */
async function rolledBack(): Promise<{ t: SyncSetup; dir: string; posts: number }> {
  const t = await setup();
  expect((await syncOf(t, A, small)).status).toBe('completed');
  const dir = dirOf(t);
  cpSync(dir, `${dir}.old`, { recursive: true });
  expect((await syncOf(t, B, small)).status).toBe('completed');
  const posts = userPosts(t.sandbox, t.audienceId);
  rmSync(dir, { recursive: true });
  cpSync(`${dir}.old`, dir, { recursive: true });
  return { t, dir, posts };
}

describe('a damaged snapshot is refused before anything is sent', { timeout: 60_000 }, () => {
  it.each([
    ['the index header', 'snapshot_corrupt', (dir: string) => flip(join(dir, 'index'), 60)],
    ['an entry fingerprint', 'snapshot_corrupt', (dir: string) => flip(join(dir, 'index'), 128 + 24 * 5 + 3)],
    [
      'a truncated data file',
      'snapshot_corrupt',
      (dir: string) => truncateSync(dataFile(dir), statSync(dataFile(dir)).size - 500),
    ],
    ['a deleted index', 'snapshot_index_missing', (dir: string) => rmSync(join(dir, 'index'))],
    ['a deleted data file', 'snapshot_data_missing', (dir: string) => rmSync(dataFile(dir))],
    ['a newer format', 'snapshot_newer_format', (dir: string) => flip(join(dir, 'index'), 11)],
  ])('%s (%s)', async (_, code, damage) => {
    const { t, dir, posts } = await synced();
    damage(dir);
    await expect(syncOf(t, C, small)).rejects.toMatchObject({ code });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);
  });

  it("a record that is not its user's (an index offset pointing at another record) is refused before its Delete", async () => {
    const { t, dir, posts } = await synced();
    const index = readFileSync(join(dir, 'index'));
    // Entry 0 takes entry 1's frame: the digest (fingerprints only) still checks.
    index.copy(index, 128 + 8, 128 + 24 + 8, 128 + 24 + 24 - 4);
    writeFileSync(join(dir, 'index'), index);
    await expect(syncOf(t, [], { ...small, allowEmpty: true, maxRemovals: '100%' })).rejects.toMatchObject({
      code: 'snapshot_corrupt',
    });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);
  });

  it('an older copy restored (rollback) and another target copied in are refused', async () => {
    const { t, dir, posts } = await rolledBack();
    await expect(syncOf(t, C, small)).rejects.toMatchObject({
      code: 'snapshot_rolled_back',
      fix: expect.stringMatching(/recover: true/) as unknown,
    });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);

    const other = t.sandbox.state.createCustomAudience(t.sandbox.accounts.primary, 'other').id;
    const otherDir = snapshotDir(t.stateDir, {
      accountId: t.sandbox.accounts.primary,
      kind: 'custom_audience',
      id: other,
    });
    cpSync(dir, otherDir, { recursive: true });
    await expect(syncOf(t, C, { ...small, target: { customAudienceId: other } })).rejects.toMatchObject({
      code: 'snapshot_wrong_target',
    });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);
    // The printed way out, followed: --recover rebuilds the snapshot and never claims the users the
    // restored copy does not know (B's): partial, naming them and the re-anchoring (a new audience).
    const recovered = await syncOf(t, C, { ...small, recover: true, maxRemovals: '100%' });
    expect(recovered).toMatchObject({
      status: 'partial',
      error: { code: 'snapshot_users_unrecovered', fix: expect.stringMatching(/new audience/) as unknown },
    });
  });
});

/** A target synced with A whose sync of B stopped (disk full) after its first batch: a `pending` is left. */
async function leftPending(): Promise<{ t: SyncSetup; pending: string }> {
  const { t } = await diskFullAfterFirstBatch('directory');
  stateFs.writeSync = realWrite;
  const pending = join(dirOf(t), 'pending');
  expect(statSync(pending).size).toBeGreaterThan(24 + 8);
  return { t, pending };
}

describe('a damaged write-ahead record is refused before anything is sent', { timeout: 60_000 }, () => {
  it.each([
    ['a byte flipped inside its first record', (buf: Buffer) => 24 + 8 + Math.floor(buf.readUInt32BE(24) / 2)],
    ['a wrong magic number', () => 0],
  ])('%s (snapshot_corrupt)', async (_, at) => {
    const { t, pending } = await leftPending();
    flip(pending, at(readFileSync(pending)));
    const posts = userPosts(t.sandbox, t.audienceId);
    await expect(syncOf(t, C, small)).rejects.toMatchObject({ code: 'snapshot_corrupt' });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);
    // The documented fix leads to the file.
    const r = await syncOf(t, C, { ...small, recover: true, maxRemovals: '100%' });
    expect(r.status).toBe('completed');
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, C));
  });
});

describe('recovery', { timeout: 60_000 }, () => {
  it('a deleted index: every user is salvaged from the data file; removals included, the audience equals the file', async () => {
    const { t, dir } = await synced();
    rmSync(join(dir, 'index'));
    const r = await syncOf(t, C, { ...small, recover: true, maxRemovals: '100%' });
    expect(r).toMatchObject({ status: 'completed', first_sync: false, removes: 38, refreshes: 110, adds: 6 });
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, C));
    // The recovered snapshot is the audit log's from now on: a plain sync is accepted.
    expect((await syncOf(t, C, small)).status).toBe('completed');
  });

  it('a truncated data file: the users that cannot be read are counted, and the sync is not completed', async () => {
    const { t, dir } = await synced();
    const frames = statSync(dataFile(dir)).size;
    truncateSync(dataFile(dir), frames - 1000);
    const r = await syncOf(t, C, { ...small, recover: true, maxRemovals: '100%' });
    expect(r.status).toBe('partial');
    expect(r.error).toMatchObject({ code: 'snapshot_users_unrecovered' });
    const lost = Number(/^(\d+) users/.exec(r.error?.message ?? '')?.[1]);
    expect(lost).toBeGreaterThan(0);
    // The file's users are all there; only lost users the file lacks may remain.
    const want = await expected(t, C);
    const have = members(t.sandbox, t.audienceId);
    expect(want.every((k) => have.includes(k))).toBe(true);
    expect(have.length - want.length).toBeLessThanOrEqual(lost);
  });
});

describe('users a recovery could not read back', { timeout: 60_000 }, () => {
  it('every later sync ends partial (snapshot_users_unrecovered) until acceptUnrecovered acknowledges them', async () => {
    const { t, dir } = await synced();
    truncateSync(dataFile(dir), statSync(dataFile(dir)).size - 1000);
    const r = await syncOf(t, C, { ...small, recover: true, maxRemovals: '100%' });
    expect(r.error).toMatchObject({ code: 'snapshot_users_unrecovered' });
    const lost = /^(\d+) users/.exec(r.error?.message ?? '')?.[1];
    for (const rows of [C, B]) {
      const next = await syncOf(t, rows, { ...small, maxRemovals: '100%' });
      expect(next.status).toBe('partial');
      expect(next.error).toMatchObject({
        code: 'snapshot_users_unrecovered',
        fix: expect.stringMatching(/acceptUnrecovered/),
      });
      expect(next.error?.message).toMatch(new RegExp(`^${lost} users`));
    }
    const accepted = await syncOf(t, C, { ...small, maxRemovals: '100%', acceptUnrecovered: true });
    expect(accepted.status).toBe('completed');
    expect((await syncOf(t, C, small)).status).toBe('completed');
  });
});

describe('recovery of an older copy restored (rollback)', { timeout: 60_000 }, () => {
  it('cannot prove it has every user: partial with snapshot_users_unrecovered, not completed', async () => {
    const { t } = await rolledBack();
    const r = await syncOf(t, C, { ...small, recover: true, maxRemovals: '100%' });
    expect(r.status).toBe('partial');
    expect(r.error).toMatchObject({ code: 'snapshot_users_unrecovered' });
    expect(r.error?.message).toMatch(/^at least 28 users/);
    expect((await syncOf(t, C, small)).status).toBe('partial');
  });
});

/** Every stored byte of the target's snapshot: its directory's files, or the database's rows of them. */
async function storedSnapshot(t: SyncSetup): Promise<Buffer[]> {
  if (!('state' in t.state)) return readdirSync(dirOf(t)).map((f) => readFileSync(join(dirOf(t), f)));
  const client = new pg.Client({ connectionString: t.state.state });
  await client.connect();
  try {
    const r = await client.query<{ data: Buffer }>(
      'SELECT data FROM audience_kit_snapshot_patches UNION ALL SELECT data FROM audience_kit_snapshot_wal',
    );
    return r.rows.map((row) => row.data);
  } finally {
    await client.end();
  }
}

describe.each(STORES)('retention (%s store)', (store) => {
  it("a removed user's digests leave the snapshot's stored files within the sync that removed it", async () => {
    const t = await setup({}, {}, store);
    await syncOf(t, A, small);
    await syncOf(t, B, small);
    const files = await storedSnapshot(t);
    const digest = (i: number): Buffer => createHash('sha256').update(`customer.${i}@example.com`).digest();
    const held = (i: number): boolean => files.some((f) => f.includes(digest(i)));
    expect(range(0, 12).filter(held)).toEqual([]);
    expect(range(12, 160).every(held)).toBe(true);
  });
});
