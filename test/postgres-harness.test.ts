import pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { askBroker, createTestDatabase, createTestRole } from './helpers/postgres.js';
import { DATABASE_PREFIX, startPostgresBroker } from './helpers/postgres-server.js';

// The harness the PostgreSQL store tests stand on, checked against whichever server the run chose
// (docs/testing.md). Advisory locks seen across connections are what a single-session server
// (PGlite's socket server) gets wrong: the store's cross-machine lock rests on them.

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  cleanups.push(() => client.end());
  return client;
}

async function database(): Promise<string> {
  const db = await createTestDatabase();
  cleanups.push(db.drop);
  return db.url;
}

describe('the test PostgreSQL server', () => {
  it('creates an empty database of its own and drops it', async () => {
    const { url, drop } = await createTestDatabase();
    const name = new URL(url).pathname.slice(1);
    const client = await connect(url);
    client.on('error', () => undefined); // the forced drop below terminates this connection
    const current = await client.query<{ db: string; tables: string }>(
      `SELECT current_database() AS db, (SELECT count(*) FROM pg_tables WHERE schemaname = 'public') AS tables`,
    );
    expect(current.rows).toEqual([{ db: name, tables: '0' }]);
    await client.query('CREATE TABLE t (x int)'); // the suite's connection may create tables
    await drop(); // WITH (FORCE): the open connection does not keep it
    const admin = await connect(new URL('/postgres', url).toString());
    const left = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    expect(left.rowCount).toBe(0);
  });

  it('runs PostgreSQL 15 or later', async () => {
    const client = await connect(await database());
    const { rows } = await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`);
    expect(Number(rows[0]?.v)).toBeGreaterThanOrEqual(150000);
  });

  it("shows one connection's advisory lock to another, until it is released", async () => {
    const url = await database();
    const [a, b] = [await connect(url), await connect(url)];
    const tryLock = async (client: pg.Client): Promise<boolean> =>
      (await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(42) AS ok')).rows[0]?.ok === true;
    const pids = await Promise.all([a, b].map(async (c) => (await c.query('SELECT pg_backend_pid() AS p')).rows[0]));
    expect(pids[0]).not.toEqual(pids[1]); // two sessions, not one shared
    expect(await tryLock(a)).toBe(true);
    expect(await tryLock(b)).toBe(false);
    await a.query('SELECT pg_advisory_unlock(42)');
    expect(await tryLock(b)).toBe(true);
    expect(await tryLock(a)).toBe(false);
  });

  it('gives a role that may log in but not create a table (SQLSTATE 42501)', async () => {
    const url = await database();
    const role = await createTestRole(url);
    cleanups.push(role.drop);
    const client = await connect(role.url);
    const who = await client.query<{ user: string }>('SELECT current_user AS user');
    expect(who.rows[0]?.user).toBe(new URL(role.url).username);
    await expect(client.query('CREATE TABLE t (x int)')).rejects.toMatchObject({ code: '42501' });
  });
});

describe('choosing the server', () => {
  async function choice(env: NodeJS.ProcessEnv): Promise<string> {
    const broker = await startPostgresBroker(env);
    try {
      return await askBroker(broker.url).then(
        () => 'chosen',
        (error: unknown) => String(error),
      );
    } finally {
      await broker.close();
    }
  }

  it('refuses a value of AUDIENCE_KIT_TEST_PG other than "embedded"', async () => {
    expect(await choice({ AUDIENCE_KIT_TEST_PG: 'local' })).toContain(
      'AUDIENCE_KIT_TEST_PG is "local": its only value is "embedded"',
    );
  });

  it('refuses an AUDIENCE_KIT_TEST_PG_URL that does not answer, without falling back or printing its password', async () => {
    const message = await choice({ AUDIENCE_KIT_TEST_PG_URL: 'postgres://me:s3cret-pw@127.0.0.1:1/postgres' });
    expect(message).toContain('AUDIENCE_KIT_TEST_PG_URL (postgres://me@127.0.0.1:1/postgres) does not answer');
    expect(message).not.toContain('s3cret-pw');
  });

  it('uses AUDIENCE_KIT_TEST_PG_URL, and at the end drops and names what a run left behind', async () => {
    const suite = await askBroker(inject('postgresBroker'));
    const broker = await startPostgresBroker({ AUDIENCE_KIT_TEST_PG_URL: suite.url });
    cleanups.push(() => broker.close()); // a second close finds nothing left: a no-op
    const { url, run } = await askBroker(broker.url);
    expect(url).toBe(suite.url);
    const name = `${DATABASE_PREFIX}${run}_forgotten`;
    const admin = await connect(url);
    await admin.query(`CREATE DATABASE ${name}`);
    await expect(broker.close()).rejects.toThrow(`left PostgreSQL databases or roles behind: ${name}`);
    const left = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    expect(left.rowCount).toBe(0);
  });
});
