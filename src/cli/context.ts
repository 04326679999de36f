import type { Readable, Writable } from 'node:stream';

/**
 * What a command handler may touch of the outside world. `main()` builds it from the real
 * process; keeping it explicit lets handlers stay thin and testable.
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
  /** Set by handlers; `main()` returns it. */
  exitCode: number;
}

export function processContext(): CliContext {
  // A reader that went away (`audience-kit sandbox | head -1`) ends the process quietly, not
  // with an uncaught EPIPE stack trace. A command that listens itself (hash writing to stdout)
  // stops on its own, cleaning up its other outputs first.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    if (process.stdout.listenerCount('error') === 1) process.exit(0);
  });
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    stderrIsTTY: Boolean(process.stderr.isTTY),
    stdinIsTTY: Boolean(process.stdin.isTTY),
    cwd: process.cwd(),
    exitCode: 0,
  };
}
