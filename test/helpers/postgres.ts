import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import pg from 'pg';
import { inject } from 'vitest';
import { DATABASE_PREFIX, ROLE_PREFIX } from './postgres-server.js';

/**
 * Databases and roles on the suite's PostgreSQL server (chosen once per run by the broker in
 * test/global-setup.ts: docs/testing.md). Every test drops what it creates; the run fails naming
 * whatever is left.
 */

interface Server {
  /** Admin URL: may create databases and roles. */
  readonly url: string;
  /** The run's id, part of every name, so the run's leftovers are found. */
  readonly run: string;
}

let server: Promise<Server> | undefined;
let counter = 0;

/** Asks the main process's broker (node:http, not fetch: tests may replace the global dispatcher). */
export function askBroker(broker: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    get(broker, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        const body = JSON.parse(text) as Partial<Server> & { error?: string };
        if (response.statusCode === 200 && body.url !== undefined && body.run !== undefined) {
          resolve({ url: body.url, run: body.run });
        } else reject(new Error(`no PostgreSQL server for the tests: ${body.error ?? `HTTP ${response.statusCode}`}`));
      });
    }).on('error', reject);
  });
}

async function suiteServer(): Promise<Server> {
  server ??= askBroker(inject('postgresBroker'));
  return server;
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

function uniqueName(prefix: string, run: string): string {
  counter += 1;
  return `${prefix}${run}_${process.pid}_${counter}_${randomBytes(4).toString('hex')}`;
}

function withPath(url: string, change: (parsed: URL) => void): string {
  const parsed = new URL(url);
  change(parsed);
  return parsed.toString();
}

/**
 * A fresh empty database on the suite's PostgreSQL server, or a copy of the test database at
 * `templateUrl` (nothing may be connected to it); drop() removes it.
 */
export async function createTestDatabase(templateUrl?: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const { url, run } = await suiteServer();
  const name = uniqueName(DATABASE_PREFIX, run);
  const template =
    templateUrl === undefined ? '' : ` TEMPLATE ${pg.escapeIdentifier(new URL(templateUrl).pathname.slice(1))}`;
  await withClient(url, (client) => client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${template}`));
  return {
    url: withPath(url, (parsed) => (parsed.pathname = `/${name}`)),
    drop: async () => {
      await withClient(url, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
      );
    },
  };
}

/**
 * A new LOGIN role (with a password, so the URL also works on a server that asks for one) that
 * may connect to `dbUrl`'s database but not create anything in it: no CREATE on schema public
 * (PostgreSQL 15's default; revoked explicitly for older servers). drop() removes it and what it
 * was granted or owns there.
 */
export async function createTestRole(dbUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const { url, run } = await suiteServer();
  const name = uniqueName(ROLE_PREFIX, run);
  const password = randomBytes(12).toString('hex');
  const role = pg.escapeIdentifier(name);
  await withClient(dbUrl, async (client) => {
    await client.query(`CREATE ROLE ${role} LOGIN PASSWORD ${pg.escapeLiteral(password)}`);
    await client.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
  });
  const drop = async (): Promise<void> => {
    const exists = await withClient(url, (client) => client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name]));
    if (exists.rowCount === 0) return;
    try {
      await withClient(dbUrl, (client) => client.query(`DROP OWNED BY ${role}`));
    } catch (error) {
      if ((error as { code?: unknown }).code !== '3D000') throw error; // the database is already gone
    }
    await withClient(url, (client) => client.query(`DROP ROLE ${role}`));
  };
  return {
    url: withPath(dbUrl, (parsed) => {
      parsed.username = name;
      parsed.password = password;
    }),
    drop,
  };
}
