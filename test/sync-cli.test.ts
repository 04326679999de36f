import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultStateDir } from '../src/cli/state-dir.js';
import { withFlagNames } from '../src/cli/flag-names.js';
import { AudienceKitError, ConfigError, EnvironmentError, StateError } from '../src/errors.js';
import { EXIT_CODES, exitCodeFor } from '../src/cli/exit-codes.js';
import { JournalError, runInProgress } from '../src/state/journal.js';
import { SnapshotError } from '../src/state/snapshot-format.js';
import { startSandbox, type Sandbox, type SandboxOptions } from '../src/sandbox/index.js';
import { ensureDir, stateFailure } from '../src/state/fs.js';
import { snapshotDir } from '../src/state/snapshot.js';
import { BIN, CALLING_THREAD, cliArgs, cliEnv, runCli, runCliProcess, type CliResult } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import { sandboxEnv, syncArgs } from './helpers/upload-cli.js';

// The sync command's own behaviour (in-process unless a process is what shows it): a failed sync
// says why, --json always prints a report, state fs errors are environment errors (exit 8).

let open: Sandbox[] = [];
afterEach(async () => {
  for (const s of open) await s.close();
  open = [];
});

async function setup(faults?: string, options: SandboxOptions = {}) {
  const sandbox = await startSandbox({ seed: 31, ...(faults === undefined ? {} : { faults }), ...options });
  open.push(sandbox);
  const env = sandboxEnv(sandbox);
  const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'sync-cli').id;
  const cwd = tempDir('ak-sync-cli-');
  const stateDir = join(cwd, 'state');
  const target = { dir: cwd, account: sandbox.accounts.primary, audience: audienceId, stateDir };
  // These tests are about what follows the hashing.
  const args = (file: string, ...extra: string[]): string[] => syncArgs(target, file, ...CALLING_THREAD, ...extra);
  const run = (argv: string[]): Promise<CliResult> => runCli(argv, { cwd, env });
  return { sandbox, env, audienceId, cwd, stateDir, args, run };
}

const email = (i: number): string => `sync.cli.${i}@example.org`;
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);
function writeExport(path: string, ids: number[]): void {
  writeFileSync(path, `Email\n${ids.map(email).join('\n')}\n`);
}

interface AuditEnd {
  event: string;
  outcome: string;
  error?: string;
}
const auditEnds = (stateDir: string): AuditEnd[] =>
  readFileSync(join(stateDir, 'audit.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AuditEnd)
    .filter((r) => r.event === 'run_end');

describe('sync: a failed sync says why', () => {
  it('a refused Delete batch: exit 6, an error line with a fix, the error in --json and the audit record; adds counted as withheld', async () => {
    // User batch 1 is the first sync's; 2 and 3 are the next syncs' first Delete.
    const t = await setup('500@2+3');
    writeExport(join(t.cwd, 'a.csv'), range(0, 300));
    writeExport(join(t.cwd, 'b.csv'), range(100, 1800));
    const first = await t.run(t.args('a.csv'));
    expect(first.code, first.stderr).toBe(0);

    const failed = await t.run(t.args('b.csv', '--max-attempts', '1', '--json'));
    expect(failed.code, failed.stderr).toBe(6);
    expect(failed.stderr).toMatch(
      /^error: 1 Delete batch \(100 users\) failed; 1500 users to add or refresh were withheld/m,
    );
    expect(failed.stderr).toMatch(/^ {2}fix: run the sync again/m);
    expect(failed.stderr).toMatch(/^failed: Delete batch 0 \(100 users\): api_server_error: /m);
    const report = JSON.parse(failed.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({
      status: 'failed',
      exit_code: 6,
      users_withheld: 1500,
      error: { code: 'api_server_error' },
      delete: { status: 'failed', users: 100, users_failed: 100, failed_batches: [{ index: 0, users: 100 }] },
      update: { status: 'not_sent', users: 1500, users_withheld: 1500 },
    });
    expect(auditEnds(t.stateDir).at(-1)).toMatchObject({ outcome: 'failed', error: 'api_server_error' });

    const text = await t.run(t.args('b.csv', '--max-attempts', '1'));
    expect(text.code).toBe(6);
    expect(text.stdout).toMatch(/added\/refreshed \(Update\) +1500 users withheld: not sent/);
    expect(text.stderr).toMatch(/^error: 1 Delete batch/m);

    const again = await t.run(t.args('b.csv', '--json'));
    expect(again.code, again.stderr).toBe(0);
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(1700);
  });

  it('the audit log refusing the end record: the report is still printed, with that error, exit 8', async () => {
    // The first user batch reaches the sandbox after the run_start record: the log is then
    // replaced by a directory, so the run_end append is refused.
    let auditLog = '';
    const t = await setup('slow=1@1', {
      sleep: () => {
        rmSync(auditLog);
        mkdirSync(auditLog);
        return Promise.resolve();
      },
    });
    auditLog = join(t.stateDir, 'audit.jsonl');
    writeExport(join(t.cwd, 'a.csv'), range(0, 20));
    const r = await t.run(t.args('a.csv', '--json'));
    expect(r.code, r.stderr).toBe(8);
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'completed',
      exit_code: 8,
      users: 20,
      error: { code: 'path_not_file' },
    });
    expect(r.stderr).toMatch(/^error: .*audit\.jsonl is a directory/m);
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(20);
  });

  it('--json prints a report when the sync stops before it has one (state directory not a directory: exit 8)', async () => {
    const t = await setup();
    writeExport(join(t.cwd, 'a.csv'), range(0, 10));
    writeFileSync(t.stateDir, 'not a directory');
    const r = await t.run(t.args('a.csv', '--json'));
    expect(r.code).toBe(8);
    expect(r.stderr).toMatch(/^error: .*state/m);
    expect(JSON.parse(r.stdout)).toMatchObject({
      status: 'failed',
      exit_code: 8,
      input: 'a.csv',
      error: { code: 'path_not_directory' },
    });
  });
});

/** The built CLI under a file-size limit (`ulimit -f`, 512-byte blocks): writes beyond it fail with EFBIG. */
function runLimited(args: string[], blocks: number, cwd: string, env: NodeJS.ProcessEnv): Promise<CliResult> {
  const child = spawn('sh', ['-c', `ulimit -f ${blocks} && exec "$0" "$@"`, process.execPath, BIN, ...cliArgs(args)], {
    cwd,
    env: cliEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
    );
  });
}

describe('sync: state file system errors are environment errors (process)', () => {
  it('a snapshot write refused after sending (EFBIG): exit 8, the snapshot directory named, a --json report', async () => {
    const t = await setup();
    writeExport(join(t.cwd, 'a.csv'), range(0, 300));
    writeExport(join(t.cwd, 'b.csv'), range(0, 280).concat(range(1000, 1060)));
    const first = await t.run(t.args('a.csv'));
    expect(first.code, first.stderr).toBe(0);
    const dir = snapshotDir(t.stateDir, {
      accountId: t.sandbox.accounts.primary,
      kind: 'custom_audience',
      id: t.audienceId,
    });
    const data = statSync(join(dir, 'data.0')).size;
    // The 60 added users' records (~2,700 bytes) cross the limit; every other file stays below it.
    const r = await runLimited(t.args('b.csv', '--json'), Math.ceil((data + 600) / 512), t.cwd, t.env);
    expect(r.code, r.stderr).toBe(8);
    expect(r.stderr).toMatch(/^error: file too large \(EFBIG\) while writing .*snapshots/m);
    expect(r.stderr).toMatch(/^ {2}fix: .*size limit/m);
    const report = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({ exit_code: 8, error: { code: 'io_error' } });
    expect(auditEnds(t.stateDir).at(-1)).toMatchObject({ error: 'io_error' });
  });
});

describe('sync: a state directory that cannot be created (process)', () => {
  // Node's recursive mkdir never returned there (ENOENT with the parent present): 100% CPU,
  // deaf to SIGTERM. A real process, killed after 20 s, so a regression fails instead of hanging the worker.
  it.runIf(existsSync('/proc/self'))('--state-dir /proc/nope fails in seconds: exit 8, the path named', async () => {
    const t = await setup();
    writeExport(join(t.cwd, 'a.csv'), range(0, 10));
    const args = syncArgs(
      { ...t, dir: t.cwd, account: t.sandbox.accounts.primary, audience: t.audienceId, stateDir: '/proc/nope' },
      'a.csv',
      ...CALLING_THREAD,
    );
    const r = await runCliProcess(args, { cwd: t.cwd, env: t.env, timeoutMs: 20_000 });
    expect(r.signal, r.stderr).toBeNull();
    expect(r.code, r.stderr).toBe(8);
    expect(r.stderr).toMatch(/^error: cannot create the directory \/proc\/nope: its file system refuses \(ENOENT\)/m);
    expect(r.stderr).toMatch(/^ {2}fix: pass a --state-dir/m);
    // Deeper: the first missing directory is named.
    expect(() => ensureDir('/proc/nope/deeper/still')).toThrow(
      expect.objectContaining({
        code: 'state_not_writable',
        message: expect.stringContaining('/proc/nope:') as unknown,
      }),
    );
    // An audit log's directory names the audit log's option (--audit-log to CLI users), not the state directory's.
    let auditLogError: unknown;
    try {
      ensureDir('/proc/nope/logs', 'auditLog');
    } catch (error) {
      auditLogError = withFlagNames(error);
    }
    expect(auditLogError).toMatchObject({ fix: expect.stringMatching(/^pass an --audit-log on a disk/) as unknown });
  });
});

describe('connection options apply with --sandbox', () => {
  const fixture = (cwd: string): string => {
    writeExport(join(cwd, 'a.csv'), range(0, 50));
    return join(cwd, 'a.csv');
  };

  it('--max-attempts: a batch answered 500 once is not retried (sync and upload exit 6)', async () => {
    const cwd = tempDir('ak-sandbox-opts-');
    const file = fixture(cwd);
    const common = ['--sandbox', '--sandbox-faults', '500@1', '--json', ...CALLING_THREAD];
    const retried = await runCli(['sync', file, ...common, '--state-dir', join(cwd, 'a')], { cwd });
    expect(retried.code, retried.stderr).toBe(0);
    const sync = await runCli(['sync', file, ...common, '--state-dir', join(cwd, 'b'), '--max-attempts', '1'], { cwd });
    expect(sync.code, sync.stderr).toBe(6);
    expect(JSON.parse(sync.stdout)).toMatchObject({ error: { code: 'api_server_error' } });
    const upload = await runCli(['upload', file, ...common, '--state-dir', join(cwd, 'c'), '--max-attempts', '1'], {
      cwd,
    });
    expect(upload.code, upload.stderr).toBe(6);
    expect(JSON.parse(upload.stdout)).toMatchObject({ failed_batches: [{ code: 'api_server_error' }] });
  });

  it('--request-timeout: a batch answered late times out', async () => {
    const cwd = tempDir('ak-sandbox-opts-');
    const file = fixture(cwd);
    const late = [
      '--sandbox-faults',
      'slow=5000@1',
      '--request-timeout',
      '100ms',
      '--max-attempts',
      '1',
      ...CALLING_THREAD,
    ];
    const r = await runCli(['sync', file, '--sandbox', ...late, '--state-dir', join(cwd, 'state'), '--json'], { cwd });
    expect(r.code, r.stderr).toBe(6);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'timeout_headers' } });
  });

  it('a flag that picks another platform or its credentials is refused, not ignored', async () => {
    const cwd = tempDir('ak-sandbox-opts-');
    const r = await runCli(['upload', fixture(cwd), '--sandbox', '--base-url', 'https://ads.example'], { cwd });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: --base-url cannot apply with --sandbox/m);
  });
});

describe('the default state directory does not depend on the working directory', () => {
  it('defaultStateDir: $AUDIENCE_KIT_STATE_DIR, else LOCALAPPDATA on Windows, XDG_STATE_HOME, ~/.local/state', () => {
    expect(defaultStateDir({ AUDIENCE_KIT_STATE_DIR: 'st', XDG_STATE_HOME: '/x' }, '/w')).toBe(join('/w', 'st'));
    expect(defaultStateDir({ XDG_STATE_HOME: '/x', HOME: '/h' }, '/w', 'linux')).toBe(join('/x', 'audience-kit'));
    expect(defaultStateDir({ XDG_STATE_HOME: ' ', HOME: '/h' }, '/w', 'linux')).toBe(
      join('/h', '.local', 'state', 'audience-kit'),
    );
    expect(defaultStateDir({ LOCALAPPDATA: 'C:\\L', HOME: '/h' }, '/w', 'win32')).toBe(join('C:\\L', 'audience-kit'));
  });

  /** The real default, kept under a temporary home. */
  async function homed() {
    const t = await setup();
    const home = tempDir('ak-home-');
    const env = { ...t.env, AUDIENCE_KIT_STATE_DIR: undefined, HOME: home, XDG_STATE_HOME: undefined };
    const args = (file: string, ...extra: string[]): string[] =>
      t.args(file, ...extra).filter((a, i, all) => a !== '--state-dir' && all[i - 1] !== '--state-dir');
    return { ...t, env, home, args, stateHome: join(home, '.local', 'state', 'audience-kit') };
  }

  it('the same target synced from two working directories shares one snapshot (nothing sent again)', async () => {
    const t = await homed();
    writeExport(join(t.cwd, 'a.csv'), range(0, 40));
    const first = await runCli(t.args('a.csv'), { cwd: t.cwd, env: t.env });
    expect(first.code, first.stderr).toBe(0);
    const elsewhere = tempDir('ak-elsewhere-');
    const again = await runCli([...t.args('a.csv'), '--json'], { cwd: elsewhere, env: t.env });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ first_sync: false, adds: 0, unchanged: 40, requests: 0 });
    expect(statSync(join(t.stateHome, 'audit.jsonl')).isFile()).toBe(true);
  });

  it("an earlier version's ./.audience-kit holding the target's snapshot is used with a notice; in both places, refused", async () => {
    const t = await homed();
    writeExport(join(t.cwd, 'a.csv'), range(0, 40));
    const legacy = await runCli([...t.args('a.csv'), '--state-dir', '.audience-kit'], { cwd: t.cwd, env: t.env });
    expect(legacy.code, legacy.stderr).toBe(0);
    const r = await runCli([...t.args('a.csv'), '--json'], { cwd: t.cwd, env: t.env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`notice: using ${join(t.cwd, '.audience-kit')}`);
    expect(JSON.parse(r.stdout)).toMatchObject({ first_sync: false, requests: 0 });

    const fresh = await runCli([...t.args('a.csv'), '--state-dir', t.stateHome], { cwd: t.cwd, env: t.env });
    expect(fresh.code, fresh.stderr).toBe(0);
    const both = await runCli([...t.args('a.csv'), '--json'], { cwd: t.cwd, env: t.env });
    expect(both.code).toBe(2);
    expect(JSON.parse(both.stdout)).toMatchObject({ status: 'failed', error: { code: 'state_dir_ambiguous' } });
    expect(both.stderr).toMatch(/^ {2}fix: pass --state-dir/m);
  });
});

describe('exit code of damaged state', () => {
  it('a damaged snapshot or journal exits 9 (state), not 2 (usage); a run in progress stays 2; codes unchanged', () => {
    const snapshot = new SnapshotError('snapshot_corrupt', 'the index is damaged');
    const journal = new JournalError('journal_tampered', 'the journal was altered');
    expect([snapshot, journal].map(exitCodeFor)).toEqual([EXIT_CODES.state, EXIT_CODES.state]);
    expect(EXIT_CODES.state).toBe(9);
    expect(snapshot).toBeInstanceOf(StateError);
    expect(snapshot).not.toBeInstanceOf(ConfigError);
    expect(runInProgress('pid 1 on host h')).toMatchObject({ code: 'run_in_progress' });
    expect(exitCodeFor(runInProgress('pid 1 on host h'))).toBe(EXIT_CODES.usage);
  });
});

describe('stateFailure: raw fs errors of the state as environment errors', () => {
  const errno = (code: string, syscall: string, path?: string): NodeJS.ErrnoException =>
    Object.assign(new Error(`${code}: ${syscall}`), { code, syscall, ...(path === undefined ? {} : { path }) });

  it('names the error own path, else the given one; unwraps an internal report error; leaves the rest alone', () => {
    const eacces = stateFailure(errno('EACCES', 'open', '/s/snapshots/x/pending'), '/s');
    expect(eacces).toBeInstanceOf(EnvironmentError);
    expect(eacces).toMatchObject({ code: 'state_not_writable', path: '/s/snapshots/x/pending' });
    const wrapped = new AudienceKitError('internal', 'ENOSPC', { cause: errno('ENOSPC', 'write') });
    expect(stateFailure(wrapped, '/s/snapshots/x')).toMatchObject({ code: 'disk_full', path: '/s/snapshots/x' });
    const efbig = stateFailure(errno('EFBIG', 'write'), '/s/snapshots/x') as EnvironmentError;
    expect(efbig.message).toBe('file too large (EFBIG) while writing /s/snapshots/x');
    expect(exitCodeFor(efbig)).toBe(8);
    const socket = errno('ECONNRESET', 'read_socket');
    expect(stateFailure(socket, '/s')).toBe(socket);
    const ours = new AudienceKitError('internal', 'a bug');
    expect(stateFailure(ours, '/s')).toBe(ours);
  });
});

describe('sync: a user too large for one request', () => {
  // 16 addresses in one row make a user object of about 1.1 KB: more than a 1024-byte body holds.
  const big = range(0, 16)
    .map((i) => `big.${i}@example.org`)
    .join('|');
  const rows = (ids: number[], withBig: boolean): string =>
    `Email\n${[...ids.map(email), ...(withBig ? [big] : [])].join('\n')}\n`;
  const small = ['--delimiter', ',', '--value-separator', '|', '--max-body-bytes', '1024', '--json'];
  interface Report {
    status: string;
    exit_code: number;
    oversized_users: number;
    oversized_lines: number[];
    adds: number;
    removes: number;
    snapshot: { after: { users: number } };
    error?: { code: string };
  }
  const counts = (stateDir: string): { outcome: string; counts: { oversized_users: number } } =>
    auditEnds(stateDir).at(-1) as unknown as { outcome: string; counts: { oversized_users: number } };

  it('is never recorded as a member: partial (exit 5), counted, and wanted again by the next sync; a Delete the same', async () => {
    const t = await setup();
    writeFileSync(join(t.cwd, 'a.csv'), rows([0, 1], true));
    const first = await t.run(t.args('a.csv', ...small));
    const r1 = JSON.parse(first.stdout) as Report;
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(2);
    expect(r1, first.stderr).toMatchObject({
      status: 'partial',
      exit_code: 5,
      adds: 3,
      oversized_users: 1,
      snapshot: { after: { users: 2 } },
      error: { code: 'users_oversized' },
    });
    expect(first.code).toBe(5);
    expect(first.stderr).toMatch(
      /^error: users too large for one request \(--max-body-bytes\) were not sent: 1 to add or refresh \(lines 4\)/m,
    );
    expect(counts(t.stateDir)).toMatchObject({ outcome: 'partial', counts: { oversized_users: 1 } });

    // A dry run says the same of the plan.
    const dry = JSON.parse((await t.run(t.args('a.csv', ...small, '--dry-run'))).stdout) as Report;
    expect(dry).toMatchObject({ status: 'partial', exit_code: 5, adds: 1, oversized_users: 1, oversized_lines: [4] });
    // Still wanted, still not a member: the next sync plans it again, and fails to send it again.
    const again = JSON.parse((await t.run(t.args('a.csv', ...small))).stdout) as Report;
    expect(again).toMatchObject({ status: 'partial', adds: 1, oversized_users: 1, snapshot: { after: { users: 2 } } });
    // With the platform's limit it goes.
    const whole = await t.run(t.args('a.csv', '--delimiter', ',', '--value-separator', '|', '--json'));
    expect(JSON.parse(whole.stdout)).toMatchObject({ status: 'completed', adds: 1, oversized_users: 0 });
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(3);

    // Its removal cannot be sent either: it stays in the snapshot (and the audience), the sync is partial.
    writeFileSync(join(t.cwd, 'b.csv'), rows([0, 1], false));
    const removal = await t.run(t.args('b.csv', ...small));
    expect(JSON.parse(removal.stdout), removal.stderr).toMatchObject({
      status: 'partial',
      exit_code: 5,
      removes: 1,
      oversized_users: 1,
      snapshot: { after: { users: 3 } },
      delete: { users_confirmed: 0 },
    });
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(3);
    const removed = await t.run(t.args('b.csv', '--json'));
    expect(JSON.parse(removed.stdout)).toMatchObject({
      status: 'completed',
      removes: 1,
      snapshot: { after: { users: 2 } },
    });
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(2);
  });
});
