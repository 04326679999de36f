/**
 * Damaged state and a hostile environment: full disks (an injected writer: no small tmpfs to
 * fill here), state paths that are files or links, torn appends, forged journals, stale locks.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BIN, CALLING_THREAD, cliArgs, cliEnv, runCli } from './helpers/cli.js';
import { createClient, type AdsClient } from '../src/api/client.js';
import { AudienceKitError, EnvironmentError } from '../src/errors.js';
import { EXIT_CODES } from '../src/cli/exit-codes.js';
import { csvCell } from '../src/ingest/csv-text.js';
import type { AudienceUser } from '../src/platform/users.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { appendAuditRecord, verifyAuditLog, type AuditRunStart } from '../src/state/audit.js';
import { stateFs } from '../src/state/fs.js';
import { acquireFileLock } from '../src/state/lock.js';
import { findJournal, RunJournal, type JournalKey } from '../src/state/journal.js';
import { sha256Hex } from '../src/util/sha256.js';
import { uploadAudience } from './helpers/small-audience.js';

const tmp = mkdtempSync(join(tmpdir(), 'ak-hostile-state-'));
const realWrite = stateFs.writeSync;
afterEach(() => {
  stateFs.writeSync = realWrite;
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let dirs = 0;
const newDir = (): string => {
  const d = join(tmp, `d${dirs++}`);
  mkdirSync(d);
  return d;
};

/** Make writes to files whose path matches `target` fail with ENOSPC after `okWrites` succeeded (the first short). */
function fillDiskFor(target: RegExp, okWrites = 0): void {
  let left = okWrites;
  stateFs.writeSync = (fd, buffer, offset, length) => {
    if (!target.test(readlinkSync(`/proc/self/fd/${fd}`))) return realWrite(fd, buffer, offset, length);
    if (left-- > 0) return realWrite(fd, buffer, offset, length);
    // A short write first (half the record), then the disk is full.
    if (length > 1 && left === -1) return realWrite(fd, buffer, offset, Math.floor(length / 2));
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
  };
}

const startRecord = (runId: string): AuditRunStart => ({
  event: 'run_start',
  run_id: runId,
  at: '2026-01-01T00:00:00.000Z',
  tool_version: 'test',
  account_id: 'acc',
  target: { kind: 'custom_audience', id: 'aud' },
  operation: 'update',
  input: { name: 'x.csv', size: 1, sha256: null },
  options: {
    default_country: null,
    country_column: null,
    phone_format: 'digits',
    input_hashed: 'auto',
    mapping: {},
    effective_at: null,
    expires_at: null,
    max_body_bytes: 5_000_000,
    max_operations: 2500,
    max_users_per_operation: 10_000,
  },
  resumed: false,
  sandbox: false,
});

describe('full disk: appends are whole records or nothing', () => {
  it('a torn audit append is truncated back: the log still verifies and the next append links to it', async () => {
    const path = join(newDir(), 'audit.jsonl');
    await appendAuditRecord(path, startRecord('r1'));
    const before = readFileSync(path);
    fillDiskFor(/audit\.jsonl$/);
    const err = await appendAuditRecord(path, startRecord('r2')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect(err).toMatchObject({ code: 'disk_full', path });
    expect((err as Error).message).toMatch(/^disk full \(ENOSPC\) while appending to .*audit\.jsonl$/);
    expect(readFileSync(path)).toEqual(before);
    stateFs.writeSync = realWrite;
    await appendAuditRecord(path, startRecord('r3'));
    expect(verifyAuditLog(path)).toMatchObject({ ok: true, records: 2 });
  });

  it('a journal append that fails leaves no torn line', async () => {
    const dir = newDir();
    const key: JournalKey = {
      input: { name: 'crm.csv', size: 10, sha256: 'a'.repeat(64) },
      accountId: 'acc',
      target: { kind: 'custom_audience', id: 'aud' },
      options: {},
    };
    const journal = await RunJournal.open(dir, key, { mode: 'new', runId: 'r1' });
    const before = readFileSync(journal.path);
    fillDiskFor(/journal\.jsonl$/);
    await expect(journal.recordConfirmed(0, 'b'.repeat(64), 3)).rejects.toBeInstanceOf(EnvironmentError);
    expect(readFileSync(journal.path)).toEqual(before);
    await journal.close();
  });

  it('a state directory that is a file is an environment error (exit 8), not an internal one', async () => {
    const file = join(newDir(), 'state');
    writeFileSync(file, 'not a directory');
    const key: JournalKey = {
      input: { name: 'crm.csv', size: 10, sha256: 'a'.repeat(64) },
      accountId: 'acc',
      target: { kind: 'custom_audience', id: 'aud' },
      options: {},
    };
    const err = await RunJournal.open(file, key, { mode: 'new', runId: 'r1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect(err).toMatchObject({ code: 'path_not_directory' });
  });
});

describe('full disk during an upload', () => {
  let sandbox: Sandbox;
  let client: AdsClient;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 11 });
    client = createClient({
      adsBaseUrl: sandbox.adsBaseUrl,
      credentials: sandbox.credentials,
      clock: { now: () => Date.now(), sleep: async () => {} },
      retry: { baseMs: 1, maxMs: 2 },
    });
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
  const users = (n: number): AudienceUser[] => Array.from({ length: n }, (_, i) => ({ email: [sha(`u${i}@x.io`)] }));
  const batchPosts = (): number =>
    sandbox.state.requests.filter((r) => r.method === 'POST' && /\/users$/.test(r.path)).length;

  it('a confirmed batch the journal cannot record is not re-sent: the run stops, says so, exits 8', async () => {
    const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'full-disk').id;
    const key: JournalKey = {
      input: { name: 'crm.csv', size: 10, sha256: 'c'.repeat(64) },
      accountId: sandbox.accounts.primary,
      target: { kind: 'custom_audience', id: audienceId },
      options: {},
    };
    const journal = await RunJournal.open(newDir(), key, { mode: 'new', runId: 'r1' });
    const postsBefore = batchPosts();
    fillDiskFor(/journal\.jsonl$/, 2);
    const report = await uploadAudience({
      client,
      accountId: sandbox.accounts.primary,
      target: { customAudienceId: audienceId },
      users: users(2000),
      limits: { maxBodyBytes: 20_000 },
      concurrency: 1,
      journal,
      clock: { now: () => Date.now(), sleep: async () => {} },
    });
    await journal.close();
    expect(report.error).toBeInstanceOf(EnvironmentError);
    expect(report.error).toMatchObject({ code: 'disk_full' });
    expect(report.batches_confirmed).toBe(3);
    expect(report.unrecorded_batches).toEqual([2]);
    expect(report.status).toBe('partial');
    // Three requests, three batches: nothing was sent twice and nothing after the failure.
    expect(batchPosts() - postsBefore).toBe(3);
    expect(report.requests).toBe(3);
  });

  it('the end-of-input record failing with batches in flight: they settle, the report says why, a resume completes', async () => {
    const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'full-disk-end').id;
    const dir = newDir();
    const key: JournalKey = {
      input: { name: 'crm.csv', size: 10, sha256: '9'.repeat(64) },
      accountId: sandbox.accounts.primary,
      target: { kind: 'custom_audience', id: audienceId },
      options: {},
    };
    const run = async (mode: 'new' | 'resume'): Promise<Awaited<ReturnType<typeof uploadAudience>>> => {
      const journal = await RunJournal.open(dir, key, { mode, runId: mode });
      try {
        return await uploadAudience({
          client,
          accountId: sandbox.accounts.primary,
          target: { customAudienceId: audienceId },
          users: users(2000),
          limits: { maxBodyBytes: 20_000 },
          concurrency: 4,
          journal,
          clock: { now: () => Date.now(), sleep: async () => {} },
        });
      } finally {
        await journal.close();
      }
    };
    const postsBefore = batchPosts();
    stateFs.writeSync = (fd, buffer, offset, length) => {
      if (Buffer.from(buffer).includes('"input_end"')) throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' });
      return realWrite(fd, buffer, offset, length);
    };
    const first = await run('new');
    stateFs.writeSync = realWrite;
    expect(first.error).toMatchObject({ code: 'disk_full' });
    expect(first.status).toBe('partial');
    expect(first.unrecorded_batches).toEqual([]);
    // Every batch packed was sent once and confirmed (none was left in flight when the run returned).
    expect(first.batches_confirmed).toBe(batchPosts() - postsBefore);
    expect(first.users_confirmed).toBe(2000);
    const resumed = await run('resume');
    expect(resumed).toMatchObject({ status: 'completed', batches_skipped: first.batches_confirmed, requests: 0 });
    expect(sandbox.state.audienceSize(audienceId)).toBe(2000);
  });
});

async function cli(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; out: string; err: string }> {
  const r = await runCli([...args, ...CALLING_THREAD], { cwd, env });
  return { code: r.code ?? -1, out: r.stdout, err: r.stderr };
}

describe('full disk through the CLI', () => {
  let sandbox: Sandbox;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 12 });
    env = {
      AUDIENCE_KIT_CONFIG_DIR: newDir(),
      AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
      AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
      AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
      AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
      AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
    };
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('upload: journal full after a confirmed batch → report with unrecorded batches, audit end record, exit 8', async () => {
    const cwd = newDir();
    const csv = join(cwd, 'crm.csv');
    writeFileSync(csv, `email\n${Array.from({ length: 2000 }, (_, i) => `user${i}@example.com`).join('\n')}\n`);
    const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'cli-full').id;
    fillDiskFor(/journal\.jsonl$/, 3);
    const r = await cli(
      [
        'upload',
        csv,
        '--account',
        sandbox.accounts.primary,
        '--audience',
        audienceId,
        '--max-body-bytes',
        '20000',
        '--concurrency',
        '1',
        '--json',
      ],
      cwd,
      env,
    );
    stateFs.writeSync = realWrite;
    expect(r.code).toBe(EXIT_CODES.environment);
    const report = JSON.parse(r.out) as {
      unrecorded_batches: number[];
      exit_code: number;
      error: { code: string; fix: string };
    };
    expect(report.exit_code).toBe(8);
    expect(report.unrecorded_batches).toHaveLength(1);
    expect(report.error.code).toBe('disk_full');
    expect(report.error.fix).toMatch(/free space/);
    const audit = readFileSync(join(cwd, '.audience-kit', 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const end = JSON.parse(audit.at(-1) ?? '{}') as {
      event: string;
      error: string;
      counts: { unrecorded_batches: number };
    };
    expect(end).toMatchObject({ event: 'run_end', error: 'disk_full', counts: { unrecorded_batches: 1 } });
    expect(verifyAuditLog(join(cwd, '.audience-kit', 'audit.jsonl')).ok).toBe(true);
  });

  it('upload with --state-dir pointing at a file: exit 8 with the path and the fix', async () => {
    const cwd = newDir();
    const csv = join(cwd, 'crm.csv');
    writeFileSync(csv, 'email\na@example.com\n');
    writeFileSync(join(cwd, 'state'), '');
    const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'cli-state').id;
    const r = await cli(
      ['upload', csv, '--account', sandbox.accounts.primary, '--audience', audienceId, '--state-dir', 'state'],
      cwd,
      env,
    );
    expect(r.code).toBe(EXIT_CODES.environment);
    expect(r.err).toMatch(/error: .*state.* is not a directory/);
    expect(r.err).toMatch(/ {2}fix: pass a --state-dir that is a directory/);
  });

  // sysfs refuses every mkdir, to root too (chmod would not stop root, and nothing can be mounted here).
  it.runIf(process.platform === 'linux' && existsSync('/sys/kernel'))(
    'upload with a state directory that cannot be written: exit 8, the path and the fix, nothing sent',
    async () => {
      const cwd = newDir();
      writeFileSync(join(cwd, 'crm.csv'), 'email\na@example.com\n');
      const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'cli-ro').id;
      const args = ['upload', 'crm.csv', '--account', sandbox.accounts.primary, '--audience', audienceId];
      const r = await cli([...args, '--state-dir', '/sys/audience-kit-test'], cwd, env);
      expect(r.code).toBe(EXIT_CODES.environment);
      expect(r.err).toMatch(/error: state directory not writable: \/sys\/audience-kit-test.* \(E(PERM|ACCES|ROFS)\)/);
      expect(r.err).toMatch(/ {2}fix: .*writable --state-dir/);
      expect(r.err).not.toMatch(/report|internal/);
      expect(sandbox.state.audienceSize(audienceId)).toBe(0);
    },
  );

  it('upload whose audit lock path is a directory: exit 8 at once, naming it', async () => {
    const cwd = newDir();
    writeFileSync(join(cwd, 'crm.csv'), 'email\na@example.com\n');
    mkdirSync(join(cwd, '.audience-kit', 'audit.jsonl.lock'), { recursive: true });
    const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'cli-lockdir').id;
    const started = Date.now();
    const r = await cli(
      ['upload', 'crm.csv', '--account', sandbox.accounts.primary, '--audience', audienceId],
      cwd,
      env,
    );
    expect(r.code).toBe(EXIT_CODES.environment);
    expect(r.err).toMatch(/error: .*audit\.jsonl\.lock is a directory/);
    expect(r.err).toMatch(/ {2}fix: /);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(sandbox.state.audienceSize(audienceId)).toBe(0);
  });
});

/** bin/ run as a process whose stdout is `fd`. */
function onFullStdout(args: string[], cwd: string, fd: number): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...cliArgs(args)], {
      cwd,
      stdio: ['ignore', fd, 'pipe'],
      env: cliEnv(),
    });
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

describe('full disk under the outputs (/dev/full: every write fails with ENOSPC)', () => {
  const hasDevFull = process.platform === 'linux' && existsSync('/dev/full');

  it.runIf(hasDevFull)(
    'hash -o and --rejects on a full device: exit 8 naming the output, no stack, no output file',
    async () => {
      const dir = newDir();
      writeFileSync(join(dir, 'in.csv'), 'email\na@example.com\nnot-an-email\n');
      // The calling thread too: its last write fails only when the rejects are closed, after the data
      // output is complete; the data file must not be put in place before every output has ended.
      for (const args of [
        ['-o', '/dev/full'],
        ['-o', 'out.csv', '--rejects', '/dev/full'],
        ['-o', 'out.csv', '--rejects', '/dev/full', ...CALLING_THREAD],
      ]) {
        const r = await runCli(['hash', 'in.csv', ...args], { cwd: dir });
        expect(r.code).toBe(EXIT_CODES.environment);
        expect(r.stderr).toMatch(
          /error: disk full \(ENOSPC\) while writing --(output|rejects) \/dev\/full\n {2}fix: free space/,
        );
        expect(existsSync(join(dir, 'out.csv'))).toBe(false);
      }
    },
  );

  it.runIf(hasDevFull)(
    "stdout redirected onto a full disk: exit 8 with the fix (hash, upload's report, any other command)",
    async () => {
      const dir = newDir();
      writeFileSync(join(dir, 'in.csv'), 'email\na@example.com\n');
      // upload's report is its only stdout: losing it is exit 8 too, not a silent 0.
      const upload = ['upload', 'in.csv', ...CALLING_THREAD, '--dry-run', '--audience', 'x', '--json'];
      const full = openSync('/dev/full', 'w');
      try {
        // The three at once: each process is mostly Node starting.
        const runs = await Promise.all(
          [['hash', 'in.csv', ...CALLING_THREAD], ['--help'], upload].map((args) => onFullStdout(args, dir, full)),
        );
        for (const r of runs) {
          expect(r.status).toBe(EXIT_CODES.environment);
          expect(r.stderr).toMatch(/error: disk full \(ENOSPC\) while writing stdout\n {2}fix: free space/);
          expect(r.stderr).not.toMatch(/ at /);
        }
      } finally {
        closeSync(full);
      }
    },
  );
});

describe('locks', () => {
  const deadPid = (): number => {
    const child = spawnSync(process.execPath, ['-e', '']);
    return child.pid;
  };
  /** A clock that advances with every sleep, and counts them: no real waiting. */
  const fakeTime = (): { now: () => number; sleep: (ms: number) => Promise<void>; sleeps: number[] } => {
    let t = Date.now();
    const sleeps: number[] = [];
    return {
      now: () => t,
      sleep: async (ms) => {
        sleeps.push(ms);
        t += ms;
      },
      sleeps,
    };
  };

  it('writes pid, host and since into the lock, and removes it on release', async () => {
    const lock = join(newDir(), 'lock');
    const release = await acquireFileLock(lock);
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    release();
    expect(existsSync(lock)).toBe(false);
  });

  it('breaks a lock whose process is gone (same host) at once', async () => {
    const lock = join(newDir(), 'lock');
    writeFileSync(lock, JSON.stringify({ pid: deadPid(), host: hostname(), since: '2026-01-01T00:00:00Z' }));
    const time = fakeTime();
    const release = await acquireFileLock(lock, time);
    expect(time.sleeps).toEqual([]);
    release();
  });

  it('breaks an empty lock (a kill between creating and filling it) after a grace of seconds', async () => {
    const lock = join(newDir(), 'lock');
    writeFileSync(lock, '');
    const time = fakeTime();
    const release = await acquireFileLock(lock, time);
    expect(time.sleeps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2200);
    release();
  });

  it('removes a dangling symlink at the lock path (no spinning), never its target', async () => {
    const dir = newDir();
    const lock = join(dir, 'lock');
    symlinkSync(join(dir, 'nowhere'), lock);
    const time = fakeTime();
    const release = await acquireFileLock(lock, time);
    expect(lstatSync(lock).isSymbolicLink()).toBe(false);
    expect(existsSync(join(dir, 'nowhere'))).toBe(false);
    release();
  });

  it('waits for a live holder with sleeps, bounded, and names it', async () => {
    const lock = join(newDir(), 'lock');
    writeFileSync(lock, JSON.stringify({ pid: process.pid, host: hostname(), since: '2026-01-01T00:00:00Z' }));
    const time = fakeTime();
    const err = await acquireFileLock(lock, { ...time, timeoutMs: 3000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect(err).toMatchObject({ code: 'file_locked' });
    expect((err as Error).message).toContain(`pid ${process.pid} on host ${hostname()} since 2026-01-01T00:00:00Z`);
    expect(time.sleeps.length).toBeGreaterThan(10);
    expect(time.sleeps.every((ms) => ms > 0)).toBe(true);
  });

  it("keeps another host's lock (its pid cannot be checked here) until the timeout", async () => {
    const lock = join(newDir(), 'lock');
    writeFileSync(lock, JSON.stringify({ pid: deadPid(), host: 'elsewhere.example', since: 'x' }));
    const err = await acquireFileLock(lock, { ...fakeTime(), timeoutMs: 1000 }).catch((e: unknown) => e);
    expect((err as Error).message).toContain('on host elsewhere.example');
  });

  it('a lock path that is a directory is an environment error at once', async () => {
    const lock = join(newDir(), 'lock');
    mkdirSync(lock);
    await expect(acquireFileLock(lock, fakeTime())).rejects.toMatchObject({ code: 'path_not_file' });
  });

  it.runIf(process.platform !== 'win32')(
    'a FIFO at the lock path is an environment error at once, never read',
    async () => {
      const lock = join(newDir(), 'lock');
      expect(spawnSync('mkfifo', [lock]).status).toBe(0);
      const time = fakeTime();
      await expect(acquireFileLock(lock, time)).rejects.toMatchObject({ code: 'path_not_file' });
      expect(time.sleeps).toEqual([]);
    },
  );

  it('a lock of megabytes of junk is judged on its first bytes and broken after the grace', async () => {
    const lock = join(newDir(), 'lock');
    writeFileSync(lock, 'x'.repeat(8 * 1024 * 1024));
    const time = fakeTime();
    const release = await acquireFileLock(lock, time);
    expect(time.sleeps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2200);
    release();
  });

  it('the journal uses it: a second run of the same upload is refused, naming the holder', async () => {
    const dir = newDir();
    const key: JournalKey = {
      input: { name: 'crm.csv', size: 10, sha256: 'd'.repeat(64) },
      accountId: 'acc',
      target: { kind: 'custom_audience', id: 'aud' },
      options: {},
    };
    const first = await RunJournal.open(dir, key, { mode: 'new', runId: 'r1' });
    const err = await RunJournal.open(dir, key, { mode: 'resume', runId: 'r2' }).catch((e: unknown) => e);
    await first.close();
    expect(err).toMatchObject({ code: 'run_in_progress' });
    expect((err as Error).message).toContain(`pid ${process.pid} on host ${hostname()}`);
  });
});

describe('a damaged or forged journal', () => {
  const key: JournalKey = {
    input: { name: 'crm.csv', size: 10, sha256: 'e'.repeat(64) },
    accountId: 'acc',
    target: { kind: 'custom_audience', id: 'aud' },
    options: {},
  };
  async function journalWithOneBatch(): Promise<{ dir: string; path: string }> {
    const dir = newDir();
    const j = await RunJournal.open(dir, key, { mode: 'new', runId: 'r1' });
    await j.recordConfirmed(0, 'a'.repeat(64), 5);
    await j.recordFailed(
      {
        index: 1,
        body: Buffer.from('[]'),
        users: 5,
        operationUsers: [5],
        group: { operationType: 'Update' },
        lines: new Uint32Array(5),
      },
      sha256Hex('[]'),
      'x',
    );
    await j.close();
    return { dir, path: j.path };
  }

  it('refuses forged confirmed lines (journal_tampered, fix --restart)', async () => {
    const { dir, path } = await journalWithOneBatch();
    // What the attack did: real-looking confirmed lines appended by hand.
    for (let i = 1; i <= 10; i++)
      appendFileSync(
        path,
        `${JSON.stringify({ type: 'confirmed', index: i, sha256: 'b'.repeat(64), users: 1000, at: 'x' })}\n`,
      );
    const err = await RunJournal.open(dir, key, { mode: 'resume', runId: 'r2' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'journal_tampered' });
    expect((err as AudienceKitError).fix).toMatch(/unfinished: 'restart'/);
    expect(() => findJournal(dir, key)).toThrow(/was altered: line 5/);
  });

  it('refuses an edited line', async () => {
    const { dir, path } = await journalWithOneBatch();
    writeFileSync(path, readFileSync(path, 'utf8').replace('"users":5', '"users":9'));
    await expect(RunJournal.open(dir, key, { mode: 'resume', runId: 'r2' })).rejects.toMatchObject({
      code: 'journal_tampered',
    });
  });

  it('drops a torn last line (a kill mid-write) and keeps chaining after it', async () => {
    const { dir, path } = await journalWithOneBatch();
    appendFileSync(path, '{"type":"confirmed","ind');
    const j = await RunJournal.open(dir, key, { mode: 'resume', runId: 'r2' });
    expect(j.confirmed.size).toBe(1);
    await j.recordConfirmed(1, 'c'.repeat(64), 5);
    await j.close();
    expect(findJournal(dir, key)?.confirmed).toBe(2);
  });

  it('an old-format journal (no chain) is refused with the fix', async () => {
    const { dir, path } = await journalWithOneBatch();
    const old = readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const { prev: _prev, ...rest } = JSON.parse(l) as Record<string, unknown>;
        return JSON.stringify(rest.type === 'header' ? { ...rest, v: 1 } : rest);
      });
    writeFileSync(path, `${old.join('\n')}\n`);
    const err = await RunJournal.open(dir, key, { mode: 'resume', runId: 'r2' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'journal_old_format' });
    expect((err as AudienceKitError).fix).toMatch(/unfinished: 'restart'/);
    // --restart (mode new) replaces it.
    const fresh = await RunJournal.open(dir, key, { mode: 'new', runId: 'r3' });
    await fresh.close();
    expect(findJournal(dir, key)?.confirmed).toBe(0);
  });
});

describe('audit verify --head', () => {
  it('detects the removal or edit of the last record against a recorded head', async () => {
    const dir = newDir();
    const path = join(dir, 'audit.jsonl');
    await appendAuditRecord(path, startRecord('r1'));
    await appendAuditRecord(path, startRecord('r2'));
    const head = verifyAuditLog(path).head;
    await appendAuditRecord(path, startRecord('r3'));
    expect(verifyAuditLog(path, { head })).toMatchObject({ ok: true, records: 3, headLine: 2 });
    // Remove the last two records: the chain of what is left is intact, the recorded head is gone.
    const lines = readFileSync(path, 'utf8').split('\n');
    writeFileSync(path, `${lines[0]}\n`);
    expect(verifyAuditLog(path).ok).toBe(true);
    const v = verifyAuditLog(path, { head });
    expect(v.ok).toBe(false);
    expect(v.broken?.problem).toMatch(/no line has the recorded head/);

    const r = await runCli(['audit', 'verify', '--head', head, '--audit-log', path], { cwd: dir });
    expect(r.code).toBe(EXIT_CODES.input);
    expect(r.stdout).toMatch(/broken: .*no line has the recorded head/);
    const bad = await runCli(['audit', 'verify', '--head', 'nothex', '--audit-log', path], { cwd: dir });
    expect(bad.code).toBe(EXIT_CODES.usage);
  });
});

describe('files the tool writes: no symlinks followed, 0600, formula cells escaped', () => {
  const mode = (p: string): number => statSync(p).mode & 0o777;

  it('hash -o and --rejects are 0600; partner ids and column names that start a formula are escaped', async () => {
    const dir = newDir();
    const csv = join(dir, 'in.csv');
    writeFileSync(csv, 'id,+mail\n=HYPERLINK("http://x"),a@example.com\n+1,not-an-email\n');
    const r = await runCli(
      [
        'hash',
        csv,
        ...CALLING_THREAD,
        '--map',
        'partner_user_id=id',
        '--map',
        'email=+mail',
        '-o',
        'out.csv',
        '--rejects',
        'rej.csv',
      ],
      { cwd: dir },
    );
    expect(r.code).toBe(0);
    expect(mode(join(dir, 'out.csv'))).toBe(0o600);
    expect(mode(join(dir, 'rej.csv'))).toBe(0o600);
    const out = readFileSync(join(dir, 'out.csv'), 'utf8').split('\n');
    expect(out[1]).toMatch(/^[0-9a-f]{64},"'=HYPERLINK\(""http:\/\/x""\)"$/);
    expect(out[2]).toBe(",'+1");
    expect(readFileSync(join(dir, 'rej.csv'), 'utf8')).toBe("line,column,type,reason\n3,'+mail,email,email_invalid\n");
  });

  it('every cell a spreadsheet would read as a formula is prefixed (= + - @ tab CR), others kept', () => {
    expect(['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx'].map(csvCell)).toEqual([
      "'=1+1",
      "'+1",
      "'-1",
      "'@SUM(A1)",
      "'\tx",
      '"\'\rx"',
    ]);
    expect(['a@example.com', '1-2', 'x=1', ''].map(csvCell)).toEqual(['a@example.com', '1-2', 'x=1', '']);
  });

  it('hash -o onto a symbolic link to a file is refused (exit 8), the linked file untouched', async () => {
    const dir = newDir();
    writeFileSync(join(dir, 'victim'), 'precious');
    symlinkSync(join(dir, 'victim'), join(dir, 'out.csv'));
    writeFileSync(join(dir, 'in.csv'), 'email\na@example.com\n');
    const r = await runCli(['hash', 'in.csv', ...CALLING_THREAD, '-o', 'out.csv'], { cwd: dir });
    expect(r.code).toBe(EXIT_CODES.environment);
    expect(r.stderr).toMatch(/symbolic link/);
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('precious');
  });

  it('hash --rejects onto a symbolic link is refused too (exit 8), the linked file untouched', async () => {
    const dir = newDir();
    writeFileSync(join(dir, 'victim'), 'precious');
    symlinkSync(join(dir, 'victim'), join(dir, 'rej.csv'));
    writeFileSync(join(dir, 'in.csv'), 'email\nnot-an-email\n');
    const r = await runCli(['hash', 'in.csv', ...CALLING_THREAD, '-o', 'out.csv', '--rejects', 'rej.csv'], {
      cwd: dir,
    });
    expect(r.code).toBe(EXIT_CODES.environment);
    expect(r.stderr).toMatch(/rej\.csv.*symbolic link/);
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('precious');
    expect(lstatSync(join(dir, 'rej.csv')).isSymbolicLink()).toBe(true);
  });

  it('upload --preview onto a planted symlink is refused, the linked file untouched', async () => {
    const dir = newDir();
    writeFileSync(join(dir, 'victim'), 'precious');
    symlinkSync(join(dir, 'victim'), join(dir, 'preview.json'));
    writeFileSync(join(dir, 'in.csv'), 'email\na@example.com\n');
    const r = await runCli(
      ['upload', 'in.csv', ...CALLING_THREAD, '--dry-run', '--audience', 'x', '--preview', 'preview.json'],
      {
        cwd: dir,
      },
    );
    expect(r.code).toBe(EXIT_CODES.environment);
    expect(r.stderr + r.stdout).toMatch(/symbolic link/);
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('precious');
  });

  it('upload --preview is 0600, also over an existing 0644 file', async () => {
    const dir = newDir();
    writeFileSync(join(dir, 'in.csv'), 'email\na@example.com\n');
    writeFileSync(join(dir, 'old.json'), 'x', { mode: 0o644 });
    for (const preview of ['new.json', 'old.json']) {
      const r = await runCli(
        ['upload', 'in.csv', ...CALLING_THREAD, '--dry-run', '--audience', 'x', '--preview', preview],
        { cwd: dir },
      );
      expect(r.code).toBe(EXIT_CODES.ok);
      expect(mode(join(dir, preview))).toBe(0o600);
    }
  });

  it.runIf(process.platform !== 'win32')(
    'a FIFO or a link to /dev/zero planted as a state file or preview: refused at once, never waited on or read',
    async () => {
      const dir = newDir();
      const fifo = (path: string): void => void expect(spawnSync('mkfifo', [path]).status).toBe(0);
      fifo(join(dir, 'audit.jsonl'));
      await expect(appendAuditRecord(join(dir, 'audit.jsonl'), startRecord('r1'))).rejects.toMatchObject({
        code: 'path_not_file',
      });
      fifo(join(dir, 'preview.json'));
      writeFileSync(join(dir, 'in.csv'), 'email\na@example.com\n');
      const r = await runCli(
        ['upload', 'in.csv', ...CALLING_THREAD, '--dry-run', '--audience', 'x', '--preview', 'preview.json'],
        {
          cwd: dir,
        },
      );
      expect(r.code).toBe(EXIT_CODES.environment);
      expect(r.stderr).toMatch(/preview\.json is not a regular file/);
      const key: JournalKey = {
        input: { name: 'crm.csv', size: 10, sha256: '8'.repeat(64) },
        accountId: 'acc',
        target: { kind: 'custom_audience', id: 'aud' },
        options: {},
      };
      const journal = await RunJournal.open(dir, key, { mode: 'new', runId: 'r1' });
      await journal.close();
      rmSync(journal.path);
      fifo(journal.path);
      expect(() => findJournal(dir, key)).toThrow(expect.objectContaining({ code: 'path_not_file' }));
      rmSync(journal.path);
      symlinkSync('/dev/zero', journal.path);
      expect(() => findJournal(dir, key)).toThrow(expect.objectContaining({ code: 'path_is_symlink' }));
      await expect(RunJournal.open(dir, key, { mode: 'resume', runId: 'r2' })).rejects.toMatchObject({
        code: 'path_is_symlink',
      });
    },
  );

  it('an audit.jsonl symlink is refused, a journal.jsonl symlink moved aside: never written through', async () => {
    const dir = newDir();
    writeFileSync(join(dir, 'victim'), 'precious\n');
    symlinkSync(join(dir, 'victim'), join(dir, 'audit.jsonl'));
    await expect(appendAuditRecord(join(dir, 'audit.jsonl'), startRecord('r1'))).rejects.toMatchObject({
      code: 'path_is_symlink',
    });
    const key: JournalKey = {
      input: { name: 'crm.csv', size: 10, sha256: 'f'.repeat(64) },
      accountId: 'acc',
      target: { kind: 'custom_audience', id: 'aud' },
      options: {},
    };
    const first = await RunJournal.open(dir, key, { mode: 'new', runId: 'r1' });
    await first.close();
    rmSync(first.path);
    symlinkSync(join(dir, 'victim'), first.path);
    // A new run moves the link aside (rename does not follow it) and writes a file of its own.
    const second = await RunJournal.open(dir, key, { mode: 'new', runId: 'r2' });
    await second.close();
    expect(lstatSync(first.path).isSymbolicLink()).toBe(false);
    expect(mode(first.path)).toBe(0o600);
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('precious\n');
    expect(mode(first.path.replace('journal.jsonl', ''))).toBe(0o700);
  });
});
