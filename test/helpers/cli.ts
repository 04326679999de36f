import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { CliContext } from '../../src/cli/context.js';
import { main } from '../../src/cli/main.js';

export const BIN = fileURLToPath(new URL('../../bin/audience-kit.js', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));

/**
 * `--workers 0`: hash on the calling thread, for runs whose subject is what follows the hashing.
 * A worker thread costs about 0.25 CPU-s to start (it loads the hashing modules and warms up
 * afresh), most of a small run; hash.test.ts holds the workers' output equal to the calling thread's.
 */
export const CALLING_THREAD: readonly string[] = ['--workers', '0'];

export interface CliResult {
  code: number | null;
  /** The signal that ended a real process; always null in-process. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliRun {
  input?: string | Buffer;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Real process only: SIGKILL after this long (default 60 s). */
  timeoutMs?: number;
  /** In-process only: stands for SIGINT/SIGTERM (ctx.signal). */
  signal?: AbortSignal;
  /** In-process only: a stdin the test keeps writing to (instead of `input`). */
  stdin?: Readable;
  /** In-process only: stdin and stderr are terminals (prompts are asked, progress drawn). */
  tty?: boolean;
  /** In-process only: the clock of progress lines. */
  now?: () => number;
  /**
   * Keep the CLI's own --min-audience-size (100) when the args name none; otherwise the helper
   * passes 0 to `upload` and `sync`, whose tests send audiences of a few users.
   */
  defaultMinimum?: boolean;
}

const SIZED_COMMANDS = new Set(['upload', 'sync']);

/** `args` with `--min-audience-size 0` after an upload or sync command that names no minimum. */
export function cliArgs(args: readonly string[], run: CliRun = {}): string[] {
  const [command, ...rest] = args;
  const named = rest.some((a) => a === '--min-audience-size' || a.startsWith('--min-audience-size='));
  if (command === undefined || !SIZED_COMMANDS.has(command) || named || run.defaultMinimum === true) return [...args];
  return [command, '--min-audience-size', '0', ...rest];
}

/**
 * The environment a CLI run sees: the test's own variables over the worker's, scrubbed of
 * AUDIENCE_KIT_* so that a developer's own credentials never leak into a test. The state
 * directory defaults to `.audience-kit` in the run's working directory (a test's temporary
 * directory), never the user's own: a test of the real default sets it to undefined and gives
 * HOME or XDG_STATE_HOME.
 */
export function cliEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AUDIENCE_KIT_')));
  return { ...base, NO_COLOR: '1', AUDIENCE_KIT_STATE_DIR: '.audience-kit', ...env };
}

/** A Writable that keeps what was written; `text()` decodes it. */
class Capture extends Writable {
  readonly chunks: Buffer[] = [];
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
    done();
    this.emit('written');
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

function contextFor(run: CliRun, signal: AbortSignal): { ctx: CliContext; stdout: Capture; stderr: Capture } {
  const stdout = new Capture();
  const stderr = new Capture();
  const input = run.input ?? '';
  const ctx: CliContext = {
    stdout,
    stderr,
    stdin: run.stdin ?? Readable.from(input.length === 0 ? [] : [Buffer.from(input)]),
    env: cliEnv(run.env),
    stderrIsTTY: run.tty === true,
    stdinIsTTY: run.tty === true,
    cwd: run.cwd ?? process.cwd(),
    signal,
    exitCode: 0,
    ...(run.now === undefined ? {} : { now: run.now }),
  };
  return { ctx, stdout, stderr };
}

/**
 * Run the CLI in-process through its entry function `main(argv, ctx)`, on the sources (no
 * build needed except for hashing workers, which global-setup builds). Same result shape as
 * `runCliProcess`, for tests that need no real process.
 */
export async function runCli(args: readonly string[], run: CliRun = {}): Promise<CliResult> {
  const { ctx, stdout, stderr } = contextFor(run, run.signal ?? new AbortController().signal);
  const code = await main(cliArgs(args, run), ctx);
  return { code, signal: null, stdout: stdout.text(), stderr: stderr.text() };
}

export interface StartedCli {
  /** What was written so far. */
  stdout: () => string;
  stderr: () => string;
  /** Stands for Ctrl-C: aborts ctx.signal. */
  interrupt: () => void;
  /** The run's end (after `interrupt()` for a command that runs until stopped). */
  done: Promise<CliResult>;
}

/**
 * Start a long-running command in-process (sandbox, a slow upload, an interactive login);
 * resolves once `ready(stdout, stderr)` holds, rejects if the command ends before.
 */
export async function startCli(
  args: readonly string[],
  ready: (stdout: string, stderr: string) => boolean,
  run: CliRun = {},
): Promise<StartedCli> {
  const controller = new AbortController();
  const { ctx, stdout, stderr } = contextFor(run, controller.signal);
  const done = main(cliArgs(args, run), ctx).then((code) => ({
    code,
    signal: null,
    stdout: stdout.text(),
    stderr: stderr.text(),
  }));
  await new Promise<void>((resolve, reject) => {
    const check = (): void => {
      if (!ready(stdout.text(), stderr.text())) return;
      stdout.off('written', check);
      stderr.off('written', check);
      resolve();
    };
    stdout.on('written', check);
    stderr.on('written', check);
    check();
    done.then((r) => reject(new Error(`ended before it was ready, exit ${r.code}: ${r.stderr}`)), reject);
  });
  return { stdout: () => stdout.text(), stderr: () => stderr.text(), interrupt: () => controller.abort(), done };
}

export interface ProcessRun {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  done: Promise<CliResult>;
}

/**
 * Start the built CLI (dist/, kept fresh by global-setup) as a real process, for what only a
 * process shows: signals, exit codes, closed pipes, SIGKILL. stdin stays open unless `input`
 * is given.
 */
export function startCliProcess(args: readonly string[], run: CliRun = {}): ProcessRun {
  const child = spawn(process.execPath, [BIN, ...cliArgs(args, run)], {
    cwd: run.cwd ?? process.cwd(),
    env: cliEnv(run.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  const stdout = (): string => Buffer.concat(out).toString('utf8');
  const stderr = (): string => Buffer.concat(err).toString('utf8');
  const timer = setTimeout(() => child.kill('SIGKILL'), run.timeoutMs ?? 60_000);
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: stdout(), stderr: stderr() });
    });
  });
  if (run.input !== undefined) child.stdin.end(run.input);
  return { child, stdout, stderr, done };
}

/** Run the built CLI as a real process to its end (stdin: `input`, or empty). */
export function runCliProcess(args: readonly string[], run: CliRun = {}): Promise<CliResult> {
  return startCliProcess(args, { ...run, input: run.input ?? '' }).done;
}
