import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DirectoryStore } from '../src/state/directory-store.js';
import { moveState } from '../src/state/move.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import { snapshotName } from '../src/state/snapshot.js';
import type { StateStore } from '../src/state/store.js';
import { runCli } from './helpers/cli.js';
import {
  customers,
  members,
  postgresStateUrl,
  range,
  setup,
  syncOf,
  usePostgres,
  type SyncSetup,
} from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';

// `state move`: a directory's snapshots and audit log into PostgreSQL and back, byte for byte,
// so that the next sync against the destination is not a first sync.
usePostgres();

const opened: StateStore[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

function dirStore(dir = tempDir('ak-move-')): DirectoryStore {
  const s = new DirectoryStore(dir);
  opened.push(s);
  return s;
}

async function pgStore(url?: string): Promise<PostgresStore> {
  const s = await PostgresStore.open(url ?? (await postgresStateUrl()));
  opened.push(s);
  return s;
}

/** A target synced once into a state directory (with its audit log there). */
async function synced(): Promise<{ t: SyncSetup; dir: string; name: string }> {
  const t = await setup();
  const first = await syncOf(t, customers(range(0, 300)));
  expect(first.status).toBe('completed');
  const name = snapshotName({ accountId: t.sandbox.accounts.primary, kind: 'custom_audience', id: t.audienceId });
  return { t, dir: t.stateDir, name };
}

/** Every users POST the sandbox received, whichever audience. */
const userPostsOf = (t: SyncSetup): number =>
  t.sandbox.state.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/users')).length;

const files = (dir: string): Record<string, Buffer> =>
  Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))]));

describe('moveState', () => {
  it('a directory into PostgreSQL and back gives the same files and audit head; a sync against the database is not a first sync', async () => {
    const { t, dir, name } = await synced();
    const url = await postgresStateUrl();
    const db = await pgStore(url);
    const there = await moveState({ from: dirStore(dir), to: db });
    expect(there.targets).toEqual([expect.objectContaining({ users: 300, files: 2 })]);
    expect(there.audit.records).toBe(2);

    const back = tempDir('ak-move-back-');
    const again = await moveState({ from: db, to: dirStore(back) });
    expect(again.audit).toEqual(there.audit);
    expect(files(join(back, 'snapshots', name))).toEqual(files(join(dir, 'snapshots', name)));
    expect(readFileSync(join(back, 'audit.jsonl'))).toEqual(readFileSync(join(dir, 'audit.jsonl')));
    // The source is left as it was.
    expect(existsSync(join(dir, 'snapshots', name, 'index'))).toBe(true);

    // The next day's export against the database: the 20 who left are removed.
    const next = await syncOf({ ...t, state: { state: url } }, customers(range(20, 300)));
    expect(next).toMatchObject({ status: 'completed', first_sync: false, removes: 20, adds: 0, unchanged: 280 });
    expect(members(t.sandbox, t.audienceId)).toHaveLength(280);
    expect((await db.audit.verify()).ok).toBe(true);
  });

  it('refuses a destination holding state, an unfinished sync, a running sync and an unfinished upload', async () => {
    const { dir, name, t } = await synced();
    const db = await pgStore();
    await moveState({ from: dirStore(dir), to: db });
    await expect(moveState({ from: dirStore(dir), to: db })).rejects.toMatchObject({
      code: 'state_destination_not_empty',
    });

    const target = { accountId: t.sandbox.accounts.primary, kind: 'custom_audience' as const, id: t.audienceId };
    const source = dirStore(dir);
    const held = await source.lockTarget(target);
    await expect(moveState({ from: source, to: await pgStore() })).rejects.toMatchObject({ code: 'sync_in_progress' });
    await held.release();

    writeFileSync(join(dir, 'snapshots', name, 'pending'), 'x');
    await expect(moveState({ from: source, to: await pgStore() })).rejects.toMatchObject({ code: 'state_unfinished' });

    const journal = await source.journals.open(
      {
        input: { name: 'a.csv', size: 1, sha256: 'a'.repeat(64) },
        accountId: 'acc',
        target: { kind: 'custom_audience', id: 'x' },
        options: {},
      },
      { mode: 'new', runId: 'r1' },
    );
    await journal.close();
    const destination = await pgStore();
    await expect(moveState({ from: source, to: destination })).rejects.toMatchObject({ code: 'state_unfinished' });
    await expect(moveState({ from: join(dir, 'typo'), to: destination })).rejects.toMatchObject({
      code: 'state_source_empty',
    });
    // Nothing was written to the refused destinations.
    expect(await destination.targets()).toEqual([]);
    expect(await destination.audit.lines()).toEqual([]);
  });
});

/** `store`, whose `lockTarget` fails on the move's `n`th session (as a move killed there leaves it). */
function failingAt(store: StateStore, n: number): StateStore {
  const wrapped = Object.create(store) as StateStore;
  let sessions = 0;
  wrapped.lockTarget = (target, o) =>
    ++sessions === n ? Promise.reject(new Error('killed')) : store.lockTarget(target, o);
  return wrapped;
}

describe('moveState interrupted', () => {
  it.each(['directory into PostgreSQL', 'PostgreSQL into a directory'] as const)(
    '%s: the destination is marked from the first write; its syncs are refused; the same move run again starts over and verifies',
    async (direction) => {
      const { t, dir } = await synced();
      const other = t.sandbox.state.createCustomAudience(t.sandbox.accounts.primary, 'second').id;
      const t2 = { ...t, audienceId: other };
      expect((await syncOf(t2, customers(range(0, 100)))).status).toBe('completed');
      let source: StateStore = dirStore(dir);
      if (direction === 'PostgreSQL into a directory') {
        source = await pgStore();
        await moveState({ from: dirStore(dir), to: source });
      }
      const url = await postgresStateUrl();
      const destination = direction === 'directory into PostgreSQL' ? await pgStore(url) : dirStore();
      const state =
        destination instanceof PostgresStore
          ? { state: url }
          : { stateDir: destination.describe(), auditLog: join(destination.describe(), 'audit.jsonl') };
      // The first target copied and checked (sessions 1 and 2), the move stops at the second.
      await expect(moveState({ from: source, to: failingAt(destination, 3) })).rejects.toThrow('killed');
      expect(await destination.moveMarker()).toBe(source.describe());

      // Neither target is synced there (the second would have been a first sync: 100 users sent again, nobody removed).
      const posts = userPostsOf(t);
      for (const s of [t, t2])
        await expect(syncOf({ ...s, state }, customers(range(10, 120)))).rejects.toMatchObject({
          code: 'state_move_unfinished',
          fix: expect.stringMatching(/run the same state move again/) as unknown,
        });
      expect(userPostsOf(t)).toBe(posts);
      // Another source is refused with the one it holds named.
      await expect(moveState({ from: await pgStore(), to: destination })).rejects.toMatchObject({
        code: 'state_move_unfinished',
      });

      const again = await moveState({ from: source, to: destination });
      expect(again.targets.map((m) => m.users).sort()).toEqual([100, 300]);
      expect(await destination.moveMarker()).toBeUndefined();
      const next = await syncOf({ ...t2, state }, customers(range(10, 100)));
      expect(next).toMatchObject({ status: 'completed', first_sync: false, removes: 10, adds: 0 });
    },
  );
});

describe('audience-kit state move', () => {
  it('moves a directory into the database and prints what to check and remove', async () => {
    const { dir } = await synced();
    const url = await postgresStateUrl();
    const r = await runCli(['state', 'move', '--from', dir, '--to', url]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/custom_audience .* 300 /);
    expect(r.stdout).toMatch(/audit log\s+2 records, head [0-9a-f]{64}/);
    expect(r.stdout).toContain(`remove the source (${dir})`);
    const again = await runCli(['state', 'move', '--from', dir, '--to', url, '--json']);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds/);
  });
});
