/**
 * Connections to the PostgreSQL state store (`pg`). Every message names the database by its URL
 * without the password (`redactUrl`); connection failures are EnvironmentErrors with a fix.
 */
import pg from 'pg';
import { AudienceKitError, EnvironmentError } from '../../errors.js';

/** The URL without its password (and without a `password` query parameter): safe to print. */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'postgres://(an invalid URL)';
  }
  u.password = '';
  u.searchParams.delete('password');
  return u.toString();
}

/** Settings of every connection: keepalive so a dead peer is noticed, a name in pg_stat_activity. */
export function clientConfig(url: string): pg.ClientConfig {
  return {
    connectionString: url,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: 'audience-kit',
    connectionTimeoutMillis: 30_000,
  };
}

/** A pg error's SQLSTATE or errno code, for messages (never the server's text: it may quote values). */
function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.message.slice(0, 120) : 'unknown error';
}

export function unreachable(where: string, error: unknown): unknown {
  if (error instanceof AudienceKitError) return error;
  return new EnvironmentError(
    'state_unreachable',
    `could not connect to the state database ${where} (${codeOf(error)})`,
    {
      path: where,
      fix: 'check that the server runs and the URL (host, port, database, user; the password in the URL or PGPASSWORD / ~/.pgpass) is right',
      cause: error,
    },
  );
}

/** A query of a sync's session failed: the connection, hence the target's lock, may be gone. */
export function connectionLost(where: string, error: unknown): unknown {
  if (error instanceof AudienceKitError) return error;
  return new EnvironmentError(
    'state_connection_lost',
    `the state database ${where} failed during the sync (${codeOf(error)}): its lock on the target may be gone, so nothing more is sent`,
    {
      path: where,
      fix: 'run the sync again once the database is reachable: it continues from what the database recorded',
      cause: error,
    },
  );
}

/** A connected client. A connection that fails while idle emits 'error' (unhandled, it would end the process): the next query fails instead. */
export async function connect(url: string, where: string): Promise<pg.Client> {
  const client = new pg.Client(clientConfig(url));
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw unreachable(where, error);
  }
  return client;
}
