import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { verifyAuditLog } from '../src/state/audit.js';
import { CALLING_THREAD, runCli, startCliProcess, type CliResult } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import { confirmedIndices, FIXTURE, journalLines, sandboxEnv, syncArgs, waitFor } from './helpers/upload-cli.js';

// SIGHUP (the terminal closed, the SSH connection dropped) stops upload and sync as SIGINT and
// SIGTERM do: the requests in flight finish and are recorded, the audit log says `interrupted`,
// the exit code is 130. The sandbox holds every user batch (a `slow` fault whose wait is a gate
// the test opens), so the signal arrives at a known point: while the first batches are in flight.

let sandbox: Sandbox;
let env: NodeJS.ProcessEnv;
/** User batches the sandbox has received (each waits at the gate). */
let received = 0;
let openGate: () => void = () => undefined;
let gate: Promise<void> = Promise.resolve();

function closeGate(): void {
  received = 0;
  gate = new Promise((resolve) => (openGate = resolve));
}

beforeAll(async () => {
  sandbox = await startSandbox({
    seed: 21,
    faults: 'slow=1%1',
    sleep: () => {
      received++;
      return gate;
    },
  });
  env = sandboxEnv(sandbox);
});
afterAll(async () => {
  openGate();
  await sandbox.close();
});

/** Start the CLI, send SIGHUP once the sandbox holds its first batch, let the batches in flight finish. */
async function hangUp(args: string[], cwd: string): Promise<CliResult> {
  closeGate();
  const { child, stderr, done } = startCliProcess(args, { cwd, env, input: '' });
  let exited = false;
  void done.then(() => (exited = true));
  await waitFor(() => received >= 1);
  child.kill('SIGHUP');
  // Unhandled, SIGHUP ends the process at once (the test then fails on its exit code).
  await waitFor(() => exited || stderr().includes('interrupted:'));
  openGate();
  return done;
}

const newAudience = (): string => sandbox.state.createCustomAudience(sandbox.accounts.primary, 'hup').id;

/** The user keys the sandbox holds for an audience (its internal set, read for the comparison). */
function members(audienceId: string): number[] {
  const store = sandbox.state as unknown as { audiences: Map<string, { users: { slots: Float64Array } }> };
  const slots = store.audiences.get(audienceId)?.users.slots ?? new Float64Array();
  return [...slots].filter((k) => k >= 0).sort((a, b) => a - b);
}

const email = (i: number): string => `hup.${i}@example.org`;
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);
function writeExport(path: string, ids: number[]): void {
  writeFileSync(path, `Email\n${ids.map(email).join('\n')}\n`);
}

describe('SIGHUP (process)', { timeout: 60_000 }, () => {
  it('upload: SIGHUP lets the batches in flight finish, saves the journal, exits 130; --resume completes', async () => {
    const cwd = tempDir('ak-hup-');
    const stateDir = join(cwd, 'state');
    const audienceId = newAudience();
    const args = ['upload', FIXTURE, '--account', sandbox.accounts.primary, '--audience', audienceId];
    const shape = ['--default-country', 'US', '--max-body-bytes', '20000', '--concurrency', '2'];
    const r = await hangUp([...args, ...shape, '--state-dir', stateDir], cwd);
    expect(r.signal, r.stderr).toBeNull();
    expect(r.code, r.stderr).toBe(130);
    const confirmed = confirmedIndices(stateDir);
    // Every batch the sandbox received was answered, confirmed and recorded; nothing more was sent.
    expect(confirmed.length).toBe(received);
    expect(journalLines(stateDir).some((l) => l.type === 'complete')).toBe(false);
    expect(readFileSync(join(stateDir, 'audit.jsonl'), 'utf8')).toContain('"outcome":"interrupted"');

    const resumed = await runCli([...args, ...shape, '--state-dir', stateDir, '--resume', '--json'], { cwd, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'completed', batches_skipped: confirmed.length });
  });

  it('sync: SIGHUP records what was confirmed, exits 130; a sync of another file leaves the audience equal to it', async () => {
    const cwd = tempDir('ak-hup-');
    const stateDir = join(cwd, 'state');
    const audienceId = newAudience();
    const target = { dir: cwd, account: sandbox.accounts.primary, audience: audienceId, stateDir };
    const args = (file: string): string[] => syncArgs(target, file, '--max-body-bytes', '2000', '--concurrency', '2');
    writeExport(join(cwd, 'a.csv'), range(0, 300));
    writeExport(join(cwd, 'b.csv'), range(100, 500));
    writeExport(join(cwd, 'c.csv'), range(50, 150).concat(range(400, 700)));
    openGate();
    // The runs around the signalled one hash on the calling thread (what they check follows the hashing).
    const first = await runCli([...args('a.csv'), ...CALLING_THREAD], { cwd, env });
    expect(first.code, first.stderr).toBe(0);

    const r = await hangUp([...args('b.csv'), '--json'], cwd);
    expect(r.code, r.stderr).toBe(130);
    const report = JSON.parse(r.stdout) as { status: string; delete: { batches_confirmed: number } };
    expect(report.status).toBe('interrupted');
    expect(report.delete.batches_confirmed).toBe(received);
    const audit = join(stateDir, 'audit.jsonl');
    expect(readFileSync(audit, 'utf8')).toContain('"outcome":"interrupted"');
    expect(verifyAuditLog(audit)).toMatchObject({ ok: true });

    openGate();
    const next = await runCli([...args('c.csv'), '--json', ...CALLING_THREAD], { cwd, env });
    expect(next.code, next.stderr).toBe(0);
    const reference = newAudience();
    const upload = ['upload', join(cwd, 'c.csv'), '--account', sandbox.accounts.primary, '--audience', reference];
    const ref = await runCli([...upload, '--state-dir', join(cwd, 'ref'), ...CALLING_THREAD], { cwd, env });
    expect(ref.code, ref.stderr).toBe(0);
    expect(members(audienceId)).toEqual(members(reference));
    expect(members(audienceId)).toHaveLength(400);
  });
});
