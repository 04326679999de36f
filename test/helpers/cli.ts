import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/audience-kit.js', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliRun {
  input?: string | Buffer;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
}

/**
 * Run the built CLI as a real process (`npm test` builds dist first). The environment is
 * scrubbed of AUDIENCE_KIT_* variables unless the test passes them, so a developer's own
 * credentials never leak into a test.
 */
export function runCli(args: readonly string[], run: CliRun = {}): Promise<CliResult> {
  const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AUDIENCE_KIT_')));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: run.cwd ?? process.cwd(),
      env: { ...baseEnv, NO_COLOR: '1', ...run.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), run.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.end(run.input ?? '');
  });
}
