import { spawnSync } from 'node:child_process';
import { closeSync, constants, existsSync, openSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { DirectoryStore } from '../src/state/directory-store.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import { snapshotName } from '../src/state/snapshot.js';
import type { SnapshotTarget } from '../src/state/snapshot-format.js';
import { runCli, startCliProcess } from './helpers/cli.js';
import { cliSyncArgs, postgresStateUrl, range, usePostgres } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';
import { newAudience, target, useHeldSandbox } from './helpers/upload-cli.js';

// `state move` as a real process SIGKILLed mid-copy (issue #32). The kill point is held by the
// test, not by timing: before the move starts, the test holds (in a transaction it does not
// commit) the database row of the second target that the move writes, so the move waits on it
// after the first target was copied and checked; the test kills the process once PostgreSQL shows
// it waiting, then rolls its transaction back. Into PostgreSQL the row is the destination's (an
// uncommitted insert); out of PostgreSQL it is the source's (a row lock: the move's session
// records itself as the holder there).
useHeldSandbox();
usePostgres();

const email = (i: number): string => `person.${i}@example.org`;
function writeExport(path: string, ids: number[]): void {
  writeFileSync(path, `Email\n${ids.map(email).join('\n')}\n`);
}

const syncArgs = (audienceId: string, file: string, state: string[] = []): string[] =>
  cliSyncArgs(target.sandbox.accounts.primary, audienceId, file, ...state, '--json');

/** Three targets synced once into `cwd`'s state directory (300 users each); their audiences. */
async function syncedTargets(cwd: string): Promise<string[]> {
  const audiences = [newAudience(), newAudience(), newAudience()];
  for (const [k, id] of audiences.entries()) {
    const file = join(cwd, `day1-${k}.csv`);
    writeExport(file, range(k * 1000, k * 1000 + 300));
    const r = await runCli(syncArgs(id, file), { cwd, env: target.env });
    expect(r.code, r.stderr).toBe(0);
  }
  return audiences;
}

/** Sessions of the database waiting for a lock (the move, behind the test's transaction). */
async function waiting(client: pg.Client): Promise<number> {
  const r = await client.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE NOT l.granted AND a.datname = current_database() AND a.pid <> pg_backend_pid()`,
  );
  return Number(r.rows[0]?.n ?? 0);
}

/** `state move --from --to` as a process, SIGKILLed once `reached()` says it waits where the test holds it. */
async function killMoveWhen(cwd: string, from: string, to: string, reached: () => Promise<boolean>): Promise<void> {
  const move = startCliProcess(['state', 'move', '--from', from, '--to', to], { cwd, input: '' });
  let ended = false;
  void move.done.then(() => (ended = true));
  while (!ended && !(await reached())) await new Promise((r) => setTimeout(r, 20));
  expect(ended, 'the move ended before it reached the second target').toBe(false);
  move.child.kill('SIGKILL');
  expect((await move.done).signal).toBe('SIGKILL');
}

/** The move SIGKILLed while it waits on `hold` (run in `url`'s database, rolled back after). */
async function killedMove(
  cwd: string,
  from: string,
  to: string,
  url: string,
  hold: (c: pg.Client) => Promise<unknown>,
) {
  const blocker = new pg.Client({ connectionString: url });
  await blocker.connect();
  const watcher = new pg.Client({ connectionString: url });
  await watcher.connect();
  try {
    await blocker.query('BEGIN');
    await hold(blocker);
    await killMoveWhen(cwd, from, to, async () => (await waiting(watcher)) > 0);
  } finally {
    await watcher.end();
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
}

/** Next day's files (20 left, 50 new) against the destination: refused with nothing sent; after the move run again, exact. */
async function nextDay(cwd: string, audiences: string[], state: string[], move: string[]): Promise<void> {
  const files = audiences.map((_, k) => {
    const file = join(cwd, `day2-${k}.csv`);
    writeExport(file, range(k * 1000 + 20, k * 1000 + 350));
    return file;
  });
  const requests = target.sandbox.state.requests.length;
  for (const [k, id] of audiences.entries()) {
    const r = await runCli(syncArgs(id, files[k] as string, state), { cwd, env: target.env });
    expect(r.code, r.stderr).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'state_move_unfinished' } });
  }
  expect(target.sandbox.state.requests.length).toBe(requests);

  const again = await runCli(['state', 'move', ...move, '--json'], { cwd });
  expect(again.code, again.stderr).toBe(0);
  for (const [k, id] of audiences.entries()) {
    const r = await runCli(syncArgs(id, files[k] as string, state), { cwd, env: target.env });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', first_sync: false, removes: 20, adds: 50 });
    expect(target.sandbox.state.audienceSize(id)).toBe(330);
  }
}

const second = (targets: SnapshotTarget[]): SnapshotTarget => {
  expect(targets).toHaveLength(3);
  return targets[1] as SnapshotTarget;
};

/** A state directory with three synced targets (syncedTargets): its audiences and the second target, where the moves are held. */
async function directorySource() {
  const cwd = tempDir('ak-move-kill-');
  const stateDir = join(cwd, '.audience-kit');
  const audiences = await syncedTargets(cwd);
  const source = new DirectoryStore(stateDir);
  const t = second(await source.targets());
  await source.close();
  return { cwd, stateDir, audiences, t };
}

describe('audience-kit state move (process) killed mid-copy', { timeout: 60_000 }, () => {
  it('directory into PostgreSQL: syncs there are refused with nothing sent; the same move run again completes and the next day ends exact', async () => {
    const { cwd, stateDir, audiences, t } = await directorySource();
    const url = await postgresStateUrl();
    await (await PostgresStore.open(url)).close(); // its tables, empty
    await killedMove(cwd, stateDir, url, url, (c) =>
      c.query('INSERT INTO audience_kit_targets (target, account_id, kind, target_id) VALUES ($1, $2, $3, $4)', [
        snapshotName(t),
        t.accountId,
        t.kind,
        t.id,
      ]),
    );
    const db = await PostgresStore.open(url);
    try {
      // Killed after the first target was copied: the rest are not there, the marker is.
      expect(await db.moveMarker()).toBe(stateDir);
      expect(await db.targets()).toHaveLength(1);
    } finally {
      await db.close();
    }
    await nextDay(cwd, audiences, ['--state', url], ['--from', stateDir, '--to', url]);
  });

  it('PostgreSQL into a directory: the same', async () => {
    const cwd = tempDir('ak-move-kill-');
    const audiences = await syncedTargets(cwd);
    const url = await postgresStateUrl();
    const first = await runCli(['state', 'move', '--from', join(cwd, '.audience-kit'), '--to', url], { cwd });
    expect(first.code, first.stderr).toBe(0);
    const db = await PostgresStore.open(url);
    const targets = await db.targets();
    await db.close();
    const [t0, t] = [targets[0] as SnapshotTarget, second(targets)];
    const to = join(cwd, 'moved');
    await killedMove(cwd, url, to, url, (c) =>
      c.query('SELECT 1 FROM audience_kit_targets WHERE target = $1 FOR UPDATE', [snapshotName(t)]),
    );
    const moved = new DirectoryStore(to);
    try {
      expect(await moved.moveMarker()).toBeDefined();
      // (targets() names them from the audit log, which is moved last: the snapshot directories instead)
      const copied = readdirSync(join(to, 'snapshots')).filter((d) => existsSync(join(to, 'snapshots', d, 'index')));
      expect(copied).toEqual([snapshotName(t0)]);
    } finally {
      await moved.close();
    }
    await nextDay(cwd, audiences, ['--state-dir', to], ['--from', url, '--to', to]);
  });

  it.runIf(spawnSync('mkfifo', ['--version']).status === 0)(
    'a directory into another directory: the same',
    async () => {
      const { cwd, stateDir, audiences, t } = await directorySource();
      // The hold: the second target's index is a FIFO while the move runs, so its copy waits on its
      // open until the test opens the other end (which it can, without blocking, only then).
      const index = join(stateDir, 'snapshots', snapshotName(t), 'index');
      renameSync(index, `${index}.held`);
      expect(spawnSync('mkfifo', [index]).status).toBe(0);
      const to = join(cwd, 'moved');
      let writer: number | undefined;
      try {
        await killMoveWhen(cwd, stateDir, to, () => {
          try {
            writer = openSync(index, constants.O_WRONLY | constants.O_NONBLOCK);
            return Promise.resolve(true);
          } catch {
            return Promise.resolve(false); // ENXIO: nobody reads it yet
          }
        });
      } finally {
        if (writer !== undefined) closeSync(writer);
        rmSync(index);
        renameSync(`${index}.held`, index);
      }
      const moved = new DirectoryStore(to);
      try {
        expect(await moved.moveMarker()).toBeDefined();
      } finally {
        await moved.close();
      }
      await nextDay(cwd, audiences, ['--state-dir', to], ['--from', stateDir, '--to', to]);
    },
  );
});
