import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';

/**
 * Chooses the suite's PostgreSQL server, once per run, in the vitest main process, when a test
 * first asks for it (test/helpers/postgres.ts asks this broker over HTTP on 127.0.0.1), so a run
 * without a store test neither probes nor starts anything. In order: AUDIENCE_KIT_TEST_PG_URL
 * (an admin URL, set by .ci/run), else the local server on 127.0.0.1:5432 if it answers within
 * a second, else an embedded server started for the run. AUDIENCE_KIT_TEST_PG=embedded forces the
 * embedded server. Details: docs/testing.md.
 */

export const LOCAL_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
/** Prefixes of what test/helpers/postgres.ts creates; the run's id follows, then `_`. */
export const DATABASE_PREFIX = 'ak_test_';
export const ROLE_PREFIX = 'ak_role_';

interface Choice {
  readonly url: string;
  readonly embedded?: EmbeddedPostgres;
}

/** The URL without its password, for logs and errors. */
export function redact(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  return parsed.toString();
}

/** The server's version if it answers a query within `timeoutMs`, else the reason it did not. */
async function probe(url: string, timeoutMs: number): Promise<{ version: string } | { error: string }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  try {
    await client.connect();
    const { rows } = await client.query<{ server_version: string }>('SHOW server_version');
    return { version: rows[0]?.server_version ?? '?' };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function choose(env: NodeJS.ProcessEnv): Promise<Choice> {
  const mode = env['AUDIENCE_KIT_TEST_PG'] ?? '';
  if (mode !== '' && mode !== 'embedded') {
    throw new Error(`AUDIENCE_KIT_TEST_PG is "${mode}": its only value is "embedded" (docs/testing.md)`);
  }
  const given = env['AUDIENCE_KIT_TEST_PG_URL'] ?? '';
  if (mode !== 'embedded' && given !== '') {
    const answer = await probe(given, 10_000);
    // A server named on purpose that does not answer is an error, never a silent fallback.
    if ('error' in answer)
      throw new Error(`AUDIENCE_KIT_TEST_PG_URL (${redact(given)}) does not answer: ${answer.error}`);
    console.log(`PostgreSQL for the tests: ${redact(given)} (AUDIENCE_KIT_TEST_PG_URL), version ${answer.version}`);
    return { url: given };
  }
  if (mode !== 'embedded') {
    const answer = await probe(LOCAL_URL, 1_000);
    if ('version' in answer) {
      console.log(`PostgreSQL for the tests: the local server ${LOCAL_URL}, version ${answer.version}`);
      return { url: LOCAL_URL };
    }
  }
  const started = Date.now();
  const embedded = await startEmbeddedPostgres();
  const answer = await probe(embedded.url, 10_000);
  const version = 'version' in answer ? answer.version : '?';
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`PostgreSQL for the tests: embedded server ${embedded.url}, version ${version}, started in ${seconds} s`);
  return { url: embedded.url, embedded };
}

/** Drops what the run's tests left on the server and names it (the run then fails, as for files). */
async function leftBehind(url: string, run: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const databases = await client.query<{ name: string }>(
      `SELECT datname AS name FROM pg_database WHERE starts_with(datname, $1)`,
      [`${DATABASE_PREFIX}${run}_`],
    );
    const roles = await client.query<{ name: string }>(
      `SELECT rolname AS name FROM pg_roles WHERE starts_with(rolname, $1)`,
      [`${ROLE_PREFIX}${run}_`],
    );
    for (const { name } of databases.rows)
      await client.query(`DROP DATABASE ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    for (const { name } of roles.rows) await client.query(`DROP ROLE ${pg.escapeIdentifier(name)}`);
    return [...databases.rows, ...roles.rows].map((row) => row.name);
  } finally {
    await client.end();
  }
}

export interface PostgresBroker {
  /** What test files GET to learn the server: `{ url, run }`, or `{ error }` with status 500. */
  readonly url: string;
  /** Stops the embedded server if one was started; rejects naming the databases and roles left behind. */
  close(): Promise<void>;
}

export async function startPostgresBroker(env: NodeJS.ProcessEnv): Promise<PostgresBroker> {
  const run = randomBytes(3).toString('hex');
  const path = `/${randomBytes(16).toString('hex')}`;
  let choice: Promise<Choice> | undefined;
  const server = createServer((request, response) => {
    if (request.url !== path) return void response.writeHead(404).end();
    choice ??= choose(env);
    const reply = (status: number, body: object): void =>
      void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    choice.then(
      ({ url }) => reply(200, { url, run }),
      (error: unknown) => reply(500, { error: error instanceof Error ? error.message : String(error) }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the PostgreSQL broker has no port');
  return {
    url: `http://127.0.0.1:${address.port}${path}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      const chosen = await choice?.catch(() => undefined);
      if (chosen === undefined) return;
      try {
        const left = await leftBehind(chosen.url, run);
        if (left.length > 0)
          throw new Error(`test files left PostgreSQL databases or roles behind: ${left.join(', ')}`);
      } finally {
        await chosen.embedded?.stop();
      }
    },
  };
}
