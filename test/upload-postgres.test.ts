import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/state/postgres/store.js';
import { runCli, startCliProcess, type ProcessRun } from './helpers/cli.js';
import { postgresStateUrl, usePostgres } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';
import {
  newAudience,
  rawValues,
  scanFor,
  settledUserRequests,
  target,
  uploadArgs,
  userRequests,
  useSlowSandbox,
} from './helpers/upload-cli.js';

// `upload --state URL`: the run journal and the audit log in PostgreSQL. A process killed with
// SIGKILL is resumed by another process (another working directory, nothing on disk shared)
// from what the database recorded. Its own file: real processes and a slow sandbox.
useSlowSandbox();
usePostgres();

async function rows(url: string, sql: string): Promise<string[]> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<{ line: string }>(sql)).rows.map((r) => r.line);
  } catch (error) {
    // Polled before the process under test created the tables.
    if ((error as { code?: unknown }).code === '42P01') return [];
    throw error;
  } finally {
    await db.end();
  }
}

const journalLines = async (url: string): Promise<Array<{ type: string; index?: number }>> =>
  (await rows(url, 'SELECT line FROM audience_kit_journal_lines ORDER BY key, seq')).map(
    (l) => JSON.parse(l) as { type: string; index?: number },
  );

async function confirmed(url: string): Promise<number[]> {
  return (await journalLines(url)).filter((l) => l.type === 'confirmed').map((l) => l.index as number);
}

async function waitForConfirmed(url: string, n: number, run: ProcessRun): Promise<void> {
  const start = Date.now();
  while ((await confirmed(url)).length < n) {
    if (Date.now() - start > 60_000) throw new Error(`timed out waiting for confirmed batches: ${run.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('audience-kit upload --state postgres://…', { timeout: 120_000 }, () => {
  it('a run killed on one machine is resumed by another from the database: nothing confirmed is sent again', async () => {
    const url = await postgresStateUrl();
    const audienceId = newAudience();
    const env = { ...target.env, AUDIENCE_KIT_STATE_DIR: '', AUDIENCE_KIT_STATE_URL: url };
    const killed = startCliProcess(uploadArgs(audienceId), { cwd: tempDir('ak-pg-a-'), env, input: '' });
    await waitForConfirmed(url, 4, killed);
    killed.child.kill('SIGKILL');
    expect((await killed.done).signal).toBe('SIGKILL');
    const before = await settledUserRequests(audienceId);
    const confirmedBefore = await confirmed(url);

    // Another working directory and the flag instead of the variable: only the database is shared.
    const args = [...uploadArgs(audienceId), '--state', url, '--resume', '--json'];
    const last = await runCli(args, { cwd: tempDir('ak-pg-b-'), env: target.env });
    expect(last.code, last.stderr).toBe(0);
    const report = JSON.parse(last.stdout) as {
      status: string;
      batches: number;
      batches_skipped: number;
      users: number;
    };
    expect(report.status).toBe('completed');
    expect(report.batches_skipped).toBe(confirmedBefore.length);
    expect(userRequests(audienceId) - before).toBe(report.batches - confirmedBefore.length);
    const all = await confirmed(url);
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(report.batches);
    expect((await journalLines(url)).at(-1)?.type).toBe('complete');
    expect(await rows(url, 'SELECT batch::text AS line FROM audience_kit_journal_failed')).toEqual([]);
    expect(target.sandbox.state.audienceSize(audienceId)).toBe(report.users);

    // The audit log is the database's: the killed run's start, the resumed run's start and end.
    const store = await PostgresStore.open(url);
    try {
      expect(await store.audit.verify()).toMatchObject({ ok: true, records: 3 });
      const runs = await store.audit.runs();
      expect(runs.map((r) => [r.start?.resumed, r.end?.outcome])).toEqual([
        [false, undefined],
        [true, 'completed'],
      ]);
    } finally {
      await store.close();
    }
    const stored = {
      journal: (await rows(url, 'SELECT line FROM audience_kit_journal_lines')).join('\n'),
      audit: (await rows(url, 'SELECT line FROM audience_kit_audit')).join('\n'),
      output: last.stdout + last.stderr,
    };
    expect(scanFor(stored, rawValues())).toEqual([]);
  });

  it('a second process on the same upload is refused while the first holds the journal', async () => {
    const url = await postgresStateUrl();
    const audienceId = newAudience();
    const env = { ...target.env, AUDIENCE_KIT_STATE_DIR: '', AUDIENCE_KIT_STATE_URL: url };
    const first = startCliProcess(uploadArgs(audienceId), { cwd: tempDir('ak-pg-a-'), env, input: '' });
    await waitForConfirmed(url, 1, first);
    // Stopped, it keeps its connection and its lock, and cannot finish before the second one asks.
    first.child.kill('SIGSTOP');
    try {
      const second = await runCli([...uploadArgs(audienceId), '--resume'], { cwd: tempDir('ak-pg-b-'), env });
      expect(second.code).toBe(2);
      expect(second.stderr).toMatch(/another audience-kit process is uploading this file/);
    } finally {
      first.child.kill('SIGCONT');
    }
    expect((await first.done).code).toBe(0);
  });

  it('--state with --state-dir is a usage error, and the URL is never printed with its password', async () => {
    const r = await runCli([...uploadArgs('x'), '--state', 'postgres://u:s3cret@127.0.0.1/db', '--state-dir', 'd'], {
      cwd: tempDir('ak-pg-'),
      env: target.env,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--state and --state-dir/);
    const down = await runCli([...uploadArgs(newAudience()), '--state', 'postgres://u:s3cret@127.0.0.1:1/db'], {
      cwd: tempDir('ak-pg-'),
      env: target.env,
    });
    expect(down.code).toBe(8);
    expect(down.stderr + down.stdout).not.toContain('s3cret');
  });
});
