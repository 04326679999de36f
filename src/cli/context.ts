import { getEventListeners } from 'node:events';
import type { Readable, Writable } from 'node:stream';
import { EnvironmentError, environmentError } from '../errors.js';
import { EXIT_CODES } from './exit-codes.js';

/**
 * What a command handler may touch of the outside world. `main()` builds it from the real
 * process; keeping it explicit lets handlers stay thin and lets tests run the CLI in-process.
 */
export interface CliContext {
  stdout: Writable;
  stderr: Writable;
  stdin: Readable;
  env: NodeJS.ProcessEnv;
  /** Whether stderr is an interactive terminal (progress bars vs. plain lines). */
  stderrIsTTY: boolean;
  /** Whether stdin is an interactive terminal (prompts). */
  stdinIsTTY: boolean;
  cwd: string;
  /**
   * Aborted when the user asks the command to stop (SIGINT, SIGTERM or SIGHUP in a process). A command
   * that can wind down cleanly (upload, sandbox) listens to it; tests abort it instead of
   * sending a signal.
   */
  signal: AbortSignal;
  /** Set by handlers; `main()` returns it. */
  exitCode: number;
  /** The clock progress lines read (default Date.now); tests pass one that jumps. */
  now?: () => number;
}

export function processContext(): CliContext {
  // A reader that went away (`audience-kit sandbox | head -1`) ends the process quietly, not
  // with an uncaught EPIPE stack trace. A command that listens itself (hash writing to stdout)
  // stops on its own, cleaning up its other outputs first.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (process.stdout.listenerCount('error') > 1) return;
    if (error.code === 'EPIPE') process.exit(0);
    // A full disk under `> file` (or another failing device) is the machine's: exit 8 with the fix.
    const failure = environmentError(error, 'writing', 'stdout');
    if (!(failure instanceof EnvironmentError)) throw error;
    process.stderr.write(`error: ${failure.message}\n  fix: ${failure.fix ?? ''}\n`);
    process.exit(EXIT_CODES.environment);
  });
  // A closed stderr (`2>&1 | head -3`, or a terminal gone: SIGHUP, then EIO) only silences the
  // messages: the command goes on and ends as it would have (an upload writes its audit end
  // record and exits with its own code).
  process.stderr.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE' && error.code !== 'EIO') throw error;
  });
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    stderrIsTTY: Boolean(process.stderr.isTTY),
    stdinIsTTY: Boolean(process.stdin.isTTY),
    cwd: process.cwd(),
    signal: interruptSignal(),
    exitCode: 0,
  };
}

/**
 * The signals that ask a command to stop: Ctrl-C, `kill`, and SIGHUP (the terminal was closed or
 * the SSH connection dropped), which would otherwise end the process mid-batch.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const satisfies readonly NodeJS.Signals[];

/**
 * A stop signal as an abort signal. While no command listens, a signal keeps its default
 * effect (the process dies by it); a second signal after the abort quits at once with the
 * `interrupted` exit code, for a user who does not want to wait for the wind-down.
 */
function interruptSignal(): AbortSignal {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) process.exit(EXIT_CODES.interrupted);
    if (getEventListeners(controller.signal, 'abort').length === 0) {
      for (const s of STOP_SIGNALS) process.off(s, onSignal);
      process.kill(process.pid, signal);
      return;
    }
    controller.abort(signal);
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  return controller.signal;
}
