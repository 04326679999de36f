import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { EnvironmentError } from '../src/errors.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { clientConfig } from '../src/state/postgres/connection.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import { CALLING_THREAD, runCli, type CliResult } from './helpers/cli.js';
import { createTestDatabase, createTestRole } from './helpers/postgres.js';
import { tempDir } from './helpers/temp.js';
import { sandboxEnv } from './helpers/upload-cli.js';

// Every database problem a newcomer meets with `sync --state URL`, against a real PostgreSQL
// (the suite's server): each ends in an `error:` naming the cause and a `fix:` that, followed
// literally (the SQL it gives run as the owner, the URL corrected), makes the next sync succeed.
// Causes a trust-authentication server cannot produce (a password refused, TLS required) are
// answered by a stand-in server speaking the protocol's error message.

let sandbox: Sandbox;
let env: NodeJS.ProcessEnv;
let cwd: string;
let db: { url: string; drop: () => Promise<void> };
/** The admin URL (the suite's server, its own database): for SQL on other databases and roles. */
let admin: string;

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 33 });
  env = sandboxEnv(sandbox);
  cwd = tempDir('ak-pg-errors-');
  writeFileSync(join(cwd, 'a.csv'), `Email\n${[1, 2, 3, 4, 5].map((i) => `pg.errors.${i}@example.org`).join('\n')}\n`);
  db = await createTestDatabase();
  admin = withUrl(db.url, (u) => (u.pathname = '/postgres'));
});

afterAll(async () => {
  await db?.drop();
  await sandbox?.close();
});

function withUrl(url: string, change: (u: URL) => void): string {
  const u = new URL(url);
  change(u);
  return u.toString();
}

async function sql(url: string, text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

/** A schema of its own in the test database, as the URL's search_path. */
async function inSchema(url: string, name: string): Promise<string> {
  await sql(db.url, `CREATE SCHEMA IF NOT EXISTS ${name}`);
  return withUrl(url, (u) => u.searchParams.set('options', `-c search_path=${name}`));
}

function sync(url: string): Promise<CliResult> {
  const audience = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'pg-errors').id;
  const args = ['sync', 'a.csv', '--account', sandbox.accounts.primary, '--audience', audience, ...CALLING_THREAD];
  return runCli([...args, '--state', url], { cwd, env });
}

async function expectSynced(url: string): Promise<void> {
  const r = await sync(url);
  expect(r.code, r.stderr).toBe(0);
}

/** The run failed with `cause` in its error line; returns its fix line. */
function failure(r: CliResult, exit: number, cause: RegExp): string {
  expect(r.code, r.stderr).toBe(exit);
  expect(r.stderr).toMatch(/^error: /m);
  expect(r.stderr.match(/^error: (.*)$/m)?.[1]).toMatch(cause);
  expect(r.stderr).not.toMatch(/unexpected failure|report it|SECURITY WARNING/);
  const fix = r.stderr.match(/^ {2}fix: (.*)$/m)?.[1];
  expect(fix, r.stderr).toBeDefined();
  return fix as string;
}

/** The SQL a fix quotes: `pattern`'s first group. */
function quoted(fix: string, pattern: RegExp): string {
  const found = pattern.exec(fix)?.[1];
  expect(found, fix).toBeDefined();
  return found as string;
}

describe('sync --state URL: each database problem is named, and its fix works', { timeout: 60_000 }, () => {
  it('server down or wrong port, unknown host: named; the corrected URL syncs', async () => {
    const url = await inSchema(db.url, 's_reach');
    const down = withUrl(url, (u) => (u.port = '1'));
    expect(failure(await sync(down), 8, /could not connect: nothing answered at [^ ]+:1 \(ECONNREFUSED\)/)).toMatch(
      /start the PostgreSQL server, or correct the host and port/,
    );
    const unknown = withUrl(url, (u) => (u.hostname = 'no-such-host.invalid'));
    expect(failure(await sync(unknown), 8, /names a host, no-such-host\.invalid, that does not resolve/)).toMatch(
      /correct the host in the URL/,
    );
    await expectSynced(url);
  });

  it('a URL without a database is refused before connecting; with the database named, it syncs', async () => {
    const bare = withUrl(db.url, (u) => (u.pathname = ''));
    const before = await sql(admin, `SELECT to_regclass('audience_kit_migrations') AS t`);
    const fix = failure(await sync(bare), 2, /names no database: .*never in the server's default one/);
    expect(fix).toMatch(/add the database's name after the host and port \(postgres:\/\/user@[^/]+\/DATABASE\)/);
    // pg ignores a ?database= parameter (it reads the path only): refused too, not sent to the default database.
    const query = withUrl(bare, (u) => u.searchParams.set('database', new URL(db.url).pathname.slice(1)));
    failure(await sync(query), 2, /names no database/);
    expect(await sql(admin, `SELECT to_regclass('audience_kit_migrations') AS t`)).toMatchObject({ rows: before.rows });
    await expectSynced(await inSchema(db.url, 's_named'));
  });

  it('database missing (a name holding a quote): the printed psql command, run by a shell as printed, makes the sync succeed', async () => {
    const name = `${new URL(db.url).pathname.slice(1)}_o'new`;
    const url = withUrl(db.url, (u) => (u.pathname = `/${encodeURIComponent(name)}`));
    const fix = failure(await sync(url), 8, new RegExp(`names a database, ${name}, that does not exist`));
    const command = quoted(fix, /\((psql .*)\), or correct the database name/);
    onTestFinished(async () => {
      await sql(admin, `DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
    });
    if (spawnSync('psql', ['--version']).status === 0) {
      const ran = spawnSync('sh', ['-c', command], { encoding: 'utf8' });
      expect(ran.status, ran.stderr).toBe(0);
    } else await sql(admin, quoted(fix, /-c '(CREATE DATABASE (?:[^']|'\\'')+)'/).replace(/'\\''/g, "'"));
    await expectSynced(url);
  });

  it("--debug: a refused login names the user of the URL's ?user= (the one pg logs in as), and prints no password, no URL with one", async () => {
    const secret = 'Pw-9c1e-secret';
    const url = withUrl(db.url, (u) => {
      u.username = 'postgres';
      u.password = secret;
      u.searchParams.set('user', 'ak_no_such_role');
    });
    const audience = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'pg-debug').id;
    const args = ['sync', 'a.csv', '--account', sandbox.accounts.primary, '--audience', audience, ...CALLING_THREAD];
    const r = await runCli([...args, '--state', url, '--debug', '--json'], { cwd, env });
    expect(failure(r, 8, /names a database user \(role\), ak_no_such_role, that does not exist/)).toMatch(
      /CREATE ROLE "ak_no_such_role" LOGIN/,
    );
    expect(r.stderr).toMatch(/^\s+at /m); // the stack, as --debug prints it
    expect(`${r.stdout}${r.stderr}`).not.toContain(secret);
  });

  it('a user name that is not valid %-encoding (a%ZZ, as pg takes it literally) is named as typed, not an unexpected failure', async () => {
    const url = withUrl(db.url, (u) => (u.username = 'a%ZZ'));
    expect(failure(await sync(url), 8, /names a database user \(role\), a%ZZ, that does not exist/)).toMatch(
      /CREATE ROLE "a%ZZ" LOGIN/,
    );
  });

  it('role missing, then no CREATE right: CREATE ROLE, then `state schema --role` run as the owner, and the sync succeeds', async () => {
    const existing = await createTestRole(db.url);
    onTestFinished(existing.drop);
    const parsed = new URL(existing.url);
    const name = `${parsed.username}_new`;
    const url = withUrl(existing.url, (u) => (u.username = name));
    let fix = failure(await sync(url), 8, new RegExp(`names a database user \\(role\\), ${name}, that does not exist`));
    const create = quoted(fix, /as a superuser \((CREATE ROLE .*) with the URL's password\)/);
    await sql(admin, create.replace('…', parsed.password));
    onTestFinished(async () => {
      await sql(db.url, `DROP OWNED BY "${name}"`);
      await sql(admin, `DROP ROLE "${name}"`);
    });
    // The role exists now, without the right to create tables (PostgreSQL 15's public schema).
    fix = failure(
      await sync(url),
      8,
      new RegExp(`tables do not exist and the database user ${name} may not create them`),
    );
    const command = quoted(fix, /`audience-kit (state schema --role \S+)`/);
    const printed = await runCli(command.split(' '));
    expect(printed.code, printed.stderr).toBe(0);
    await sql(db.url, printed.stdout);
    await expectSynced(url);
  });

  it('no grants (the tables made by the owner without --role): permission denied, fixed by `state schema --role`', async () => {
    const role = await createTestRole(db.url);
    onTestFinished(role.drop);
    const owner = await inSchema(db.url, 's_grants');
    const asRole = withUrl(role.url, (u) => u.searchParams.set('options', '-c search_path=s_grants'));
    const plain = await runCli(['state', 'schema']);
    await sql(owner, plain.stdout);
    const user = new URL(role.url).username;
    // The schema itself: first its USAGE is missing (PostgreSQL then skips it silently).
    let fix = failure(
      await sync(asRole),
      8,
      new RegExp(`has the schema s_grants of the search_path, but the user ${user} may not use it`),
    );
    expect(fix).toMatch(/audience-kit state schema --role/);
    await sql(owner, `GRANT USAGE ON SCHEMA s_grants TO "${user}"`);
    fix = failure(await sync(asRole), 8, new RegExp(`refused ${user} access to audience-kit's tables`));
    const command = quoted(fix, /`audience-kit (state schema --role \S+)`/);
    const printed = await runCli(command.split(' '));
    await sql(owner, printed.stdout);
    await expectSynced(asRole);
    // The library throws the same typed error, never the driver's.
    const other = await createTestRole(db.url);
    onTestFinished(other.drop);
    const refused = await PostgresStore.open(
      withUrl(other.url, (u) => u.searchParams.set('options', '-c search_path=s_grants')),
    ).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EnvironmentError);
    expect(refused).toMatchObject({ code: 'state_schema_missing' });
  });

  it('a search_path naming a missing schema: the CREATE SCHEMA of the fix makes the sync succeed', async () => {
    const url = withUrl(db.url, (u) => u.searchParams.set('options', '-c search_path=s_ghost'));
    const fix = failure(
      await sync(url),
      8,
      /has no schema s_ghost: the search_path \(s_ghost\) names none that exists/,
    );
    await sql(db.url, quoted(fix, /as the database's owner: (CREATE SCHEMA [^;]+);/));
    await expectSynced(url);
  });

  it("TLS refused by the server (sslmode=require): named, without the driver's warning; without sslmode it syncs", async () => {
    const url = await inSchema(db.url, 's_tls');
    const ssl = (await sql(db.url, 'SHOW ssl')).rows[0] as { ssl: string };
    const warned = vi.spyOn(process, 'emitWarning');
    onTestFinished(() => warned.mockRestore());
    const tls = withUrl(url, (u) => u.searchParams.set('sslmode', 'require'));
    const r = await sync(tls);
    expect(warned.mock.calls.filter((c) => String(c[0]).includes('sslmode'))).toEqual([]);
    if (ssl.ssl === 'on') {
      expect(r.code, r.stderr).toBe(0); // a server with TLS: require encrypts, as libpq does
      return;
    }
    expect(failure(r, 8, /does not accept TLS connections/)).toMatch(/remove sslmode from the URL/);
    await expectSynced(url);
    // libpq's reading for the modes pg reads otherwise; pg's own no-verify and the others as given.
    const given = (mode: string): string => `postgres://u@h/db?sslmode=${mode}`;
    for (const mode of ['prefer', 'require', 'verify-ca'])
      expect(clientConfig(given(mode)).connectionString).toBe(`${given(mode)}&uselibpqcompat=true`);
    for (const mode of ['disable', 'no-verify', 'verify-full'])
      expect(clientConfig(given(mode)).connectionString).toBe(given(mode));
  });

  it('read-only: ALTER ROLE … IN DATABASE … of the fix makes the sync succeed', async () => {
    const url = await inSchema(db.url, 's_readonly');
    const name = new URL(db.url).pathname.slice(1);
    await sql(admin, `ALTER DATABASE "${name}" SET default_transaction_read_only = on`);
    onTestFinished(async () => {
      await sql(admin, `ALTER DATABASE "${name}" RESET ALL`);
      await sql(admin, `ALTER ROLE "${new URL(db.url).username}" IN DATABASE "${name}" RESET ALL`);
    });
    const fix = failure(await sync(url), 8, /accepts only read-only transactions/);
    await sql(admin, quoted(fix, /\((ALTER ROLE .* = off)\)/));
    await expectSynced(url);
  });

  it('statement timeout and lock timeout: each named; the ALTER ROLE of the fix lets the next sync wait for the lock and succeed', async () => {
    const url = await inSchema(db.url, 's_timeouts');
    await expectSynced(url); // the tables exist
    const name = new URL(db.url).pathname.slice(1);
    const user = new URL(db.url).username;
    onTestFinished(async () => {
      await sql(admin, `ALTER DATABASE "${name}" RESET ALL`);
      await sql(admin, `ALTER ROLE "${user}" IN DATABASE "${name}" RESET ALL`);
    });
    for (const [setting, cause, pattern] of [
      [
        'statement_timeout',
        /cancelled a statement that ran longer than statement_timeout/,
        /\((ALTER ROLE .* SET statement_timeout = '10min')\)/,
      ],
      [
        'lock_timeout',
        /gave up waiting for a lock on its tables \(lock_timeout\)/,
        /\((ALTER ROLE .* SET lock_timeout = '1min')\)/,
      ],
    ] as const) {
      await sql(admin, `ALTER DATABASE "${name}" SET ${setting} = '200ms'`);
      // Another session holds the migrations table: every open waits for it.
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        await holder.query('BEGIN; LOCK TABLE audience_kit_migrations IN ACCESS EXCLUSIVE MODE');
        const fix = failure(await sync(url), 8, cause);
        await sql(admin, quoted(fix, pattern));
        const next = sync(url);
        await waitForLockWaiter(url);
        await holder.query('COMMIT');
        expect((await next).code).toBe(0);
      } finally {
        await holder.end();
      }
      await sql(admin, `ALTER DATABASE "${name}" RESET ALL`);
      await sql(admin, `ALTER ROLE "${user}" IN DATABASE "${name}" RESET ALL`);
    }
  });

  it('a duplicate key (the audit sequence left behind by a restore): the setval of the fix makes the sync succeed', async () => {
    const url = await inSchema(db.url, 's_restore');
    await expectSynced(url);
    await sql(url, `SELECT setval('audience_kit_audit_seq_seq', 1)`);
    const fix = failure(await sync(url), 8, /refused a row whose key already exists/);
    await sql(url, quoted(fix, /\((SELECT setval\(.*?\)\))\)/));
    await expectSynced(url);
  });

  it('a table dropped after its schema version was recorded: named, with the table list to restore it from', async () => {
    const url = await inSchema(db.url, 's_dropped');
    await expectSynced(url);
    await sql(url, 'DROP TABLE audience_kit_audit');
    const fix = failure(
      await sync(url),
      8,
      /lacks one of audience-kit's tables although its schema version is recorded/,
    );
    expect(fix).toMatch(/restore it from a backup/);
  });

  it('password refused, TLS required (a stand-in server answering as PostgreSQL does): each its own cause and fix', async () => {
    const cases = [
      [
        '28P01',
        'password authentication failed for user "app"',
        /refused the password of app/,
        /put the right password in the URL/,
      ],
      [
        '28000',
        'no pg_hba.conf entry for host "127.0.0.1", user "app", database "ads", no encryption',
        /refused a connection without TLS/,
        /add sslmode=require to the URL/,
      ],
      [
        '28000',
        'no pg_hba.conf entry for host "127.0.0.1", user "app", database "ads", SSL encryption',
        /refused app on database ads from this host/,
        /pg_hba\.conf/,
      ],
    ] as const;
    for (const [code, message, cause, fix] of cases) {
      const server = await refusingServer(errorResponse(code, message));
      try {
        const port = (server.address() as { port: number }).port;
        expect(failure(await sync(`postgres://app:s3cret@127.0.0.1:${port}/ads`), 8, cause)).toMatch(fix);
      } finally {
        server.close();
      }
    }
    // A server asking for a password (SCRAM) when the URL gives none.
    const scram = Buffer.from('SCRAM-SHA-256\0\0');
    const ask = Buffer.alloc(9);
    ask.write('R');
    ask.writeUInt32BE(8 + scram.length, 1);
    ask.writeUInt32BE(10, 5);
    // Its first SCRAM message, to which a client without a password has nothing to answer.
    const first = Buffer.from('r=nonce,s=c2FsdA==,i=4096');
    const serverFirst = Buffer.alloc(9);
    serverFirst.write('R');
    serverFirst.writeUInt32BE(8 + first.length, 1);
    serverFirst.writeUInt32BE(11, 5);
    const server = await refusingServer(Buffer.concat([ask, scram]), Buffer.concat([serverFirst, first]));
    try {
      const port = (server.address() as { port: number }).port;
      const r = await sync(`postgres://app@127.0.0.1:${port}/ads`);
      expect(failure(r, 8, /asks for a password for app and none was given/)).toMatch(/put the password in the URL/);
    } finally {
      server.close();
    }
  });
});

/** Until a session waits for a lock in the database (the sync started by the test). */
async function waitForLockWaiter(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const r = await sql(
      url,
      `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = 'audience_kit_migrations'::regclass`,
    );
    if ((r.rows[0] as { n: number }).n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no session waited for the lock');
}

/** A FATAL ErrorResponse of the protocol. */
function errorResponse(code: string, message: string): Buffer {
  const field = (type: string, value: string): Buffer => Buffer.concat([Buffer.from(type), Buffer.from(`${value}\0`)]);
  const body = Buffer.concat([
    field('S', 'FATAL'),
    field('V', 'FATAL'),
    field('C', code),
    field('M', message),
    Buffer.from([0]),
  ]);
  const error = Buffer.alloc(5);
  error.write('E');
  error.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([error, body]);
}

/** A server that answers the client's messages (after refusing TLS) with `answers`, in order. */
async function refusingServer(...answers: Buffer[]): Promise<Server> {
  const server = createServer((socket) => {
    let next = 0;
    socket.on('data', (data) => {
      // SSLRequest (8 bytes, code 80877103): no TLS here; else the startup message: refused.
      if (data.length === 8 && data.readUInt32BE(4) === 80877103) socket.write('N');
      else {
        // Each message of the client gets the next answer; an error ends the session.
        const answer = answers[next++] ?? errorResponse('08P01', 'protocol violation');
        if (answer.toString('latin1', 0, 1) === 'E') socket.end(answer);
        else socket.write(answer);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
