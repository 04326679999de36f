import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { DirectoryStore } from '../src/state/directory-store.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import { snapshotName } from '../src/state/snapshot.js';
import { runCli, startCliProcess } from './helpers/cli.js';
import { postgresStateUrl, range, usePostgres } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';
import { newAudience, target, useHeldSandbox } from './helpers/upload-cli.js';

// `state move` as a real process SIGKILLed mid-copy (issue #32). The kill point is held by the
// test, not by timing: before the move starts, the test inserts (and does not commit) the
// destination's row of the second target, so the move's own insert of that row waits on the
// test's transaction, after the first target was copied and checked. The test kills the move
// once PostgreSQL shows it waiting, then rolls its insert back.
useHeldSandbox();
usePostgres();

const email = (i: number): string => `person.${i}@example.org`;
function writeExport(path: string, ids: number[]): void {
  writeFileSync(path, `Email\n${ids.map(email).join('\n')}\n`);
}

const syncArgs = (audienceId: string, file: string, state: string[] = []): string[] => [
  'sync',
  file,
  '--account',
  target.sandbox.accounts.primary,
  '--audience',
  audienceId,
  ...state,
  '--json',
];

/** Sessions of the database waiting for a lock (the move's insert, behind the test's transaction). */
async function waiting(client: pg.Client): Promise<number> {
  const r = await client.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE NOT l.granted AND a.datname = current_database() AND a.pid <> pg_backend_pid()`,
  );
  return Number(r.rows[0]?.n ?? 0);
}

describe('audience-kit state move (process) killed mid-copy', { timeout: 60_000 }, () => {
  it('directory into PostgreSQL: syncs there are refused with nothing sent; the same move run again completes and the next day ends exact', async () => {
    const cwd = tempDir('ak-move-kill-');
    const stateDir = join(cwd, '.audience-kit');
    const audiences = [newAudience(), newAudience(), newAudience()];
    // Each target synced once from the directory: 300 users each.
    for (const [k, id] of audiences.entries()) {
      const file = join(cwd, `day1-${k}.csv`);
      writeExport(file, range(k * 1000, k * 1000 + 300));
      const r = await runCli(syncArgs(id, file), { cwd, env: target.env });
      expect(r.code, r.stderr).toBe(0);
    }
    const source = new DirectoryStore(stateDir);
    const order = await source.targets();
    await source.close();
    expect(order).toHaveLength(3);
    const second = order[1];
    if (second === undefined) throw new Error('no second target');

    const url = await postgresStateUrl();
    await (await PostgresStore.open(url)).close(); // its tables, empty
    const blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(
        'INSERT INTO audience_kit_targets (target, account_id, kind, target_id) VALUES ($1, $2, $3, $4)',
        [snapshotName(second), second.accountId, second.kind, second.id],
      );
      const move = startCliProcess(['state', 'move', '--from', stateDir, '--to', url], { cwd, input: '' });
      let ended = false;
      void move.done.then(() => (ended = true));
      const watcher = new pg.Client({ connectionString: url });
      await watcher.connect();
      try {
        let blocked = 0;
        while (!ended && blocked === 0) {
          blocked = await waiting(watcher);
          if (blocked === 0) await new Promise((r) => setTimeout(r, 20));
        }
      } finally {
        await watcher.end();
      }
      expect(ended, 'the move ended before it reached the second target').toBe(false);
      move.child.kill('SIGKILL');
      expect((await move.done).signal).toBe('SIGKILL');
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
    const db = await PostgresStore.open(url);
    try {
      // Killed after the first target was copied: the rest are not there, the marker is.
      expect(await db.moveMarker()).toBe(stateDir);
      expect((await db.targets()).length).toBe(1);
    } finally {
      await db.close();
    }

    // The next day's file (20 left, 50 new) against the destination: refused for every target, nothing sent.
    const files = audiences.map((_, k) => {
      const file = join(cwd, `day2-${k}.csv`);
      writeExport(file, range(k * 1000 + 20, k * 1000 + 350));
      return file;
    });
    const requests = target.sandbox.state.requests.length;
    for (const [k, id] of audiences.entries()) {
      const r = await runCli(syncArgs(id, files[k] as string, ['--state', url]), { cwd, env: target.env });
      expect(r.code, r.stderr).toBe(2);
      expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'state_move_unfinished' } });
    }
    expect(target.sandbox.state.requests.length).toBe(requests);

    const again = await runCli(['state', 'move', '--from', stateDir, '--to', url, '--json'], { cwd });
    expect(again.code, again.stderr).toBe(0);
    for (const [k, id] of audiences.entries()) {
      const r = await runCli(syncArgs(id, files[k] as string, ['--state', url]), { cwd, env: target.env });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', first_sync: false, removes: 20, adds: 50 });
      expect(target.sandbox.state.audienceSize(id)).toBe(330);
    }
  });
});
