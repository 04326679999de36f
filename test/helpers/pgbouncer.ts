/**
 * A real PgBouncer in front of the suite's PostgreSQL, when one is installed (Debian's `pgbouncer`
 * package: /usr/sbin/pgbouncer): started on a free port with trust authentication, as the
 * `postgres` user when the tests run as root (PgBouncer refuses to run as root).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The pgbouncer binary, or undefined when none is installed (the tests that need it are skipped). */
export const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'].find((p) =>
  existsSync(p),
);

export interface PgBouncer {
  /** `url` with its host and port replaced by the pooler's. */
  through(url: string): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function listening(port: number, child: ChildProcess): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode})`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => resolve(true)).on('error', () => resolve(false));
      socket.unref();
      setTimeout(() => socket.destroy(), 200).unref();
    });
    if (up) return;
    await sleep(25);
  }
  throw new Error('pgbouncer did not listen within 5 s');
}

/** PgBouncer in `mode` (transaction, session) forwarding every database to `server` (a URL's host and port). */
export async function startPgBouncer(server: string, mode: 'transaction' | 'session'): Promise<PgBouncer> {
  if (PGBOUNCER === undefined) throw new Error('no pgbouncer installed');
  const target = new URL(server);
  const dir = mkdtempSync(join(tmpdir(), 'ak-pgbouncer-'));
  chmodSync(dir, 0o755); // readable by the user it runs as
  const port = await freePort();
  // Trust still looks the user up: the URL's, with no password.
  const users = join(dir, 'users.txt');
  writeFileSync(users, `"${decodeURIComponent(target.username) || 'postgres'}" ""\n`, { mode: 0o644 });
  const config = join(dir, 'pgbouncer.ini');
  writeFileSync(
    config,
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${users}`,
      `pool_mode = ${mode}`,
      // node-postgres sends these; PgBouncer refuses startup parameters it does not know.
      'ignore_startup_parameters = extra_float_digits,options',
    ].join('\n'),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status === 0;
  const child = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'postgres'] : []), config], { stdio: 'ignore' });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) {
      child.kill('SIGTERM'); // immediate shutdown (SIGINT waits for the clients)
      await new Promise((resolve) => child.once('exit', resolve));
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await listening(port, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    through: (url) => {
      const u = new URL(url);
      u.host = `127.0.0.1:${port}`;
      return u.toString();
    },
    stop,
  };
}
