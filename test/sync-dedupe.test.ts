import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { hashCsv } from '../src/hashing/pipeline.js';
import type { RawRecord } from '../src/identifiers/rows.js';
import { snapshotDir } from '../src/state/snapshot.js';
import { syncAudience } from './helpers/small-audience.js';
import { tempDir } from './helpers/temp.js';
import {
  customer,
  customers,
  expected,
  members,
  range,
  setup as setupWith,
  STORES,
  syncOf,
  usePostgres,
  userPosts,
  type StoreKind,
  type SyncSetup,
} from './helpers/sync.js';

/**
 * A first sync sends each distinct user exactly once, whether its repeats are found in memory or,
 * past the in-memory set's threshold, on disk once the input has ended (added-users.ts). The
 * threshold is 1M users in a sync: here it is 20, with blocks of 4 records, so these syncs cross it.
 */
vi.mock('../src/upload/added-users.js', async (importOriginal) => {
  const m = await importOriginal<typeof import('../src/upload/added-users.js')>();
  class SmallAddedUsers extends m.AddedUsers {
    constructor(path?: string) {
      super(path, { memoryUsers: 20, blockRecords: 4 });
    }
  }
  return { ...m, AddedUsers: SmallAddedUsers };
});

usePostgres();

/** 300 customers; repeats of users held in memory (0-19), and of users past the threshold, far and near. */
function rowsWithRepeats(): RawRecord[] {
  return [
    ...customers(range(0, 150)),
    ...customers([3, 150, 7, 120, 19]),
    ...customers(range(150, 300)),
    ...customers([299, 0, 200, 200, 149, 21]),
  ];
}
const DISTINCT = 300;
const REPEATS = 11;

const targetDir = (t: SyncSetup): string =>
  snapshotDir(t.stateDir, { accountId: t.sandbox.accounts.primary, kind: 'custom_audience', id: t.audienceId });
/** The spool and added-users files in the target's snapshot directory. */
const spoolFiles = (t: SyncSetup): string[] => {
  const dir = targetDir(t);
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('spool-')) : [];
};

describe.each(STORES)('a first sync past the in-memory set of added users (%s store)', (store: StoreKind) => {
  const setup = (): Promise<SyncSetup> => setupWith({}, {}, store);

  it('sends every distinct user once, counts the repeats, and leaves no file behind', async () => {
    const t = await setup();
    const rows = rowsWithRepeats();
    const first = await syncOf(t, rows);
    expect(first).toMatchObject({ status: 'completed', adds: DISTINCT, duplicates: REPEATS, users: DISTINCT });
    expect(first.update).toMatchObject({ users: DISTINCT, users_confirmed: DISTINCT });
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
    expect(spoolFiles(t)).toEqual([]);
    const posts = userPosts(t.sandbox, t.audienceId);
    const again = await syncOf(t, rows);
    expect(again).toMatchObject({ status: 'completed', adds: 0, unchanged: DISTINCT, duplicates: REPEATS });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);
  });

  it('a CSV file hashed by workers: the same users, once each', async () => {
    const t = await setup();
    const rows = rowsWithRepeats();
    const dir = tempDir('ak-sync-dedupe-');
    const path = join(dir, 'a.csv');
    writeFileSync(path, `email,phone\n${rows.map((r) => `${String(r.email)},"${String(r.phone)}"`).join('\n')}\n`);
    const run = await hashCsv(path, { emit: 'packed', workers: 2, chunkBytes: 2048 });
    const first = await syncAudience({
      client: t.client,
      accountId: t.sandbox.accounts.primary,
      target: { customAudienceId: t.audienceId },
      users: run,
      ...t.state,
      limits: { maxBodyBytes: 20_000 },
    });
    expect(first).toMatchObject({ status: 'completed', adds: DISTINCT, duplicates: REPEATS });
    expect(first.update.users_confirmed).toBe(DISTINCT);
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
  });

  it('a dry run plans the distinct users only; a later sync adds a repeated new user once', async () => {
    const t = await setup();
    const dry = await syncOf(t, rowsWithRepeats(), { dryRun: true });
    expect(dry).toMatchObject({ adds: DISTINCT, duplicates: REPEATS });
    expect(dry.update.users).toBe(DISTINCT);
    await syncOf(t, customers(range(0, 100)));
    // 60 new users past the threshold, three of them twice: refreshes and unchanged users interleaved.
    const next = [...customers(range(0, 100)), ...customers(range(100, 160)), ...customers([120, 159, 100])];
    const second = await syncOf(t, next);
    expect(second).toMatchObject({ status: 'completed', adds: 60, unchanged: 100, duplicates: 3 });
    expect(second.update.users_confirmed).toBe(60);
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, next));
  });
});

describe('what a sync stopped or killed while planning leaves (directory store)', () => {
  it('an input that fails past the threshold leaves no file; a killed sync’s files are removed by the next sync', async () => {
    const t = await setupWith();
    const dir = targetDir(t);
    async function* failing(): AsyncGenerator<RawRecord> {
      for (const i of range(0, 200)) yield customer(i);
      throw new Error('the export broke off');
    }
    await expect(syncOf(t, [], { users: failing() })).rejects.toThrow(/broke off/);
    expect(spoolFiles(t)).toEqual([]);
    // What a sync killed while planning leaves: its spool and its added users' partitions.
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'spool-killed'), 'x');
    writeFileSync(join(dir, 'spool-killed-added'), 'x');
    const rows = rowsWithRepeats();
    expect(await syncOf(t, rows)).toMatchObject({ status: 'completed', adds: DISTINCT });
    expect(spoolFiles(t)).toEqual([]);
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
  });
});
