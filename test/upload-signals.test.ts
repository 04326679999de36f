import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyAuditLog } from '../src/state/audit.js';
import { CALLING_THREAD, runCli, startCliProcess, type ProcessRun } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import {
  confirmedIndices,
  journalLines,
  newAudience,
  rawValues,
  scanFor,
  settledUserRequests,
  target,
  uploadArgs,
  userRequests,
  useSlowSandbox,
  waitFor,
} from './helpers/upload-cli.js';

// The upload command as a real process, for what only a process shows: SIGKILL at any point,
// and a real SIGINT reaching the command. Its own file so that it runs beside upload-cli.test.ts.
useSlowSandbox();

function spawnCli(args: string[], cwd: string): ProcessRun {
  return startCliProcess(args, { cwd, env: target.env, input: '' });
}

describe('audience-kit upload (process)', { timeout: 90_000 }, () => {
  it('survives SIGKILL at several points: resumed runs confirm every user and never re-send a confirmed batch', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    const outputs: string[] = [];
    const confirmedAtKill: number[][] = [];
    // Hashed on the calling thread: the kills are about the journal, whoever hashes.
    const args = [...uploadArgs(audienceId), ...CALLING_THREAD];
    for (const killAfter of [2, 9, 16]) {
      const resume = confirmedAtKill.length > 0 ? ['--resume'] : [];
      const { child, done } = spawnCli([...args, ...resume], cwd);
      await waitFor(() => confirmedIndices(join(cwd, '.audience-kit')).length >= killAfter);
      child.kill('SIGKILL');
      const r = await done;
      expect(r.signal).toBe('SIGKILL');
      outputs.push(r.stdout, r.stderr);
      confirmedAtKill.push(confirmedIndices(join(cwd, '.audience-kit')));
    }
    // Without --resume a re-run refuses to start over (stdin is not a terminal).
    const refused = await runCli(args, { cwd, env: target.env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--resume/);

    const before = await settledUserRequests(audienceId);
    const last = await runCli([...args, '--resume', '--json'], { cwd, env: target.env });
    expect(last.code, last.stderr).toBe(0);
    outputs.push(last.stdout, last.stderr);
    const report = JSON.parse(last.stdout) as {
      status: string;
      batches: number;
      batches_skipped: number;
      batches_confirmed: number;
      users: number;
      retries: number;
    };
    const confirmedBefore = confirmedAtKill.at(-1) as number[];
    expect(report.status).toBe('completed');
    expect(report.batches_skipped).toBe(confirmedBefore.length);
    expect(report.retries).toBe(0);
    // The final run sent exactly the batches not confirmed before: none twice.
    expect(userRequests(audienceId) - before).toBe(report.batches - confirmedBefore.length);
    const all = confirmedIndices(join(cwd, '.audience-kit'));
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(report.batches);
    expect(target.sandbox.state.audienceSize(audienceId)).toBe(report.users);
    expect(journalLines(join(cwd, '.audience-kit')).at(-1)?.type).toBe('complete');

    // Nothing raw and no secret in anything the runs wrote.
    const stateDir = join(cwd, '.audience-kit');
    const [keyDir] = readdirSync(join(stateDir, 'runs'));
    const texts: Record<string, string> = {
      audit: readFileSync(join(stateDir, 'audit.jsonl'), 'utf8'),
      journal: readFileSync(join(stateDir, 'runs', keyDir as string, 'journal.jsonl'), 'utf8'),
      output: outputs.join('\n'),
    };
    expect(scanFor(texts, rawValues())).toEqual([]);
    expect(
      scanFor(texts, [target.sandbox.credentials.consumerSecret, target.sandbox.credentials.accessTokenSecret]),
    ).toEqual([]);
    // The killed runs left start records without end records; the chain is intact.
    expect(verifyAuditLog(join(stateDir, 'audit.jsonl'))).toMatchObject({ ok: true, records: 5 });
  }, 120_000);

  it('SIGINT finishes in-flight requests, saves the journal, exits 130; --resume completes', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    const stateDir = join(cwd, '.audience-kit');
    const { child, done } = spawnCli([...uploadArgs(audienceId), '--debug'], cwd);
    await waitFor(() => confirmedIndices(stateDir).length >= 3);
    child.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/interrupted/);
    const confirmed = confirmedIndices(stateDir);
    // Requests in flight at the interrupt were let finish and recorded.
    expect(userRequests(audienceId)).toBe(confirmed.length);
    expect(journalLines(stateDir).some((l) => l.type === 'complete')).toBe(false);
    const audit = readFileSync(join(stateDir, 'audit.jsonl'), 'utf8');
    expect(audit).toContain('"outcome":"interrupted"');

    const resumed = await runCli([...uploadArgs(audienceId), '--resume', '--json', '--debug'], {
      cwd,
      env: target.env,
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    const report = JSON.parse(resumed.stdout) as { users: number; batches_skipped: number };
    expect(report.batches_skipped).toBe(confirmed.length);
    expect(target.sandbox.state.audienceSize(audienceId)).toBe(report.users);
    const texts = { stderr: r.stderr + resumed.stderr, stdout: r.stdout + resumed.stdout, audit };
    expect(scanFor(texts, rawValues())).toEqual([]);
    expect(
      scanFor(texts, [target.sandbox.credentials.consumerSecret, target.sandbox.credentials.accessTokenSecret]),
    ).toEqual([]);
  });
});
