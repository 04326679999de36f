/**
 * Connections to the PostgreSQL state store (`pg`). Every message names the database by its URL
 * without the password (`redactUrl`); connection failures are EnvironmentErrors with a fix.
 */
import pg from 'pg';
import { databaseFailure } from './errors.js';

/** The URL without its password (nor a `password` or `sslpassword` query parameter): safe to print. */
export function redactUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'postgres://(an invalid URL)';
  }
  u.password = '';
  u.searchParams.delete('password');
  u.searchParams.delete('sslpassword');
  return u.toString();
}

/**
 * `sslmode` means what it means to libpq (psql and every other PostgreSQL client): `require`
 * encrypts without checking the certificate, `verify-full` checks it and the host name. `pg` 8
 * reads `require` as `verify-full` and prints a 9-line warning saying that will change; it reads
 * it as libpq does when told to (`uselibpqcompat=true`), which is set unless the URL says.
 */
function withLibpqSslModes(url: string): string {
  if (!URL.canParse(url)) return url;
  const u = new URL(url);
  // Only the modes pg reads otherwise (verify-full, disable and pg's own no-verify stay as they are).
  const mode = u.searchParams.get('sslmode');
  if (!['prefer', 'require', 'verify-ca'].includes(mode ?? '') || u.searchParams.has('uselibpqcompat')) return url;
  u.searchParams.set('uselibpqcompat', 'true');
  return u.toString();
}

/**
 * How long one statement of the audit log or a run journal may go unanswered before it fails (a
 * half-open connection answers nothing, and TCP keepalives take minutes to say so). A sync's
 * locking session has none: its statements (the snapshot's read, a commit) grow with the target,
 * and its lease's heartbeat finds a connection that stopped answering (state/postgres/target-session.ts).
 */
export const QUERY_TIMEOUT_MS = 120_000;

/** Settings of every connection: keepalive so a dead peer is noticed, a name in pg_stat_activity, `queryTimeoutMs` (none by default). */
export function clientConfig(url: string, queryTimeoutMs?: number): pg.ClientConfig {
  return {
    connectionString: withLibpqSslModes(url),
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: 'audience-kit',
    connectionTimeoutMillis: 30_000,
    ...(queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs }),
  };
}

/** A failure to connect (or to log in), by its named cause (errors.ts); errors of ours unchanged. */
export function unreachable(where: string, error: unknown): unknown {
  return databaseFailure(where, error, {
    code: 'state_unreachable',
    cause: 'could not be connected to',
    fix: 'check that the server runs and the URL (host, port, database, user; the password in the URL or PGPASSWORD / ~/.pgpass) is right',
  });
}

/** A query of a sync's session failed: the connection, hence the target's lock, may be gone. */
export function connectionLost(where: string, error: unknown): unknown {
  return databaseFailure(where, error, {
    code: 'state_connection_lost',
    cause: 'failed during the sync: its lock on the target may be gone, so nothing more is sent',
    fix: 'run the sync again once the database is reachable: it continues from what the database recorded',
    context: ': nothing more is sent',
    again: 'run the sync again: it continues from what the database recorded',
  });
}

/**
 * A statement of the audit log failed (an append, a read): the log's own cause, not the target's
 * lock (the log has its own connections). A sync reports it beside what it sent.
 */
export function auditLogFailed(where: string, error: unknown): unknown {
  return databaseFailure(where, error, {
    code: 'state_connection_lost',
    cause: 'failed while reading or appending to the audit log (audience_kit_audit)',
    fix: 'check that the database is reachable, then run again: a sync continues from what the database recorded, and `audit verify` checks the log',
    context: ' in the audit log',
    again: 'run again',
  });
}

/** A connected client. A connection that fails while idle emits 'error' (unhandled, it would end the process): the next query fails instead. */
export async function connect(url: string, where: string, queryTimeoutMs?: number): Promise<pg.Client> {
  let client: pg.Client | undefined;
  try {
    client = new pg.Client(clientConfig(url, queryTimeoutMs));
    client.on('error', () => undefined);
    await client.connect();
  } catch (error) {
    await client?.end().catch(() => undefined);
    throw unreachable(where, error);
  }
  return client;
}

/**
 * How the store's parts open a connection of their own (a target's lease, a run journal's lock):
 * made once from the URL by the store, so the URL goes no further than the store.
 */
export interface Connector {
  /** The URL without its password, for messages. */
  readonly where: string;
  connect(queryTimeoutMs?: number): Promise<pg.Client>;
}

export function connector(url: string, where: string): Connector {
  return { where, connect: (queryTimeoutMs) => connect(url, where, queryTimeoutMs) };
}
