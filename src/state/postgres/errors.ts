/**
 * What went wrong with the state database, in words: a `pg` failure (an SQLSTATE from the server,
 * an errno from the socket, a TLS verification code, or one of the driver's own messages) becomes
 * a named cause with a fix a person can follow literally (the SQL to run, the URL parameter to
 * set). Every path of the PostgreSQL store that catches a driver error builds its EnvironmentError
 * from `databaseFailure`, so no raw `pg` error leaves the library and none is "connection lost"
 * when it is something else. The server's own text is read to tell causes apart but never
 * printed (it may quote values); names come from the URL (without its password).
 */
import { userInfo } from 'node:os';
import { AudienceKitError, EnvironmentError, type ErrorCode } from '../../errors.js';

/** A named cause: the error's code, what happened (completes "the state database URL …"), the fix. */
export interface DatabaseCause {
  code: ErrorCode;
  cause: string;
  fix: string;
  /** A statement's failure (not the connection's): the fix ends with running the command again. */
  statement?: true;
}

/** What the URL names, for fixes (the password never). */
export interface UrlParts {
  user: string;
  database: string;
  host: string;
  port: string;
}

/**
 * The user, database, host and port `where` (a URL without its password) names, as pg reads it:
 * a `user`, `host` or `port` query parameter wins over the URL's own part; then libpq's defaults.
 */
export function urlParts(where: string, env: NodeJS.ProcessEnv = process.env): UrlParts {
  let u: URL | undefined;
  try {
    u = new URL(where);
  } catch {
    u = undefined;
  }
  const query = (name: string): string => u?.searchParams.get(name) ?? '';
  const user = query('user') || decoded(u?.username ?? '') || env.PGUSER || env.USER || safeUserName();
  return {
    user,
    database: decoded(u?.pathname.slice(1) ?? ''),
    host: query('host') || u?.hostname || 'localhost',
    port: query('port') || u?.port || '5432',
  };
}

/** A word as a POSIX shell reads it back unchanged: as it is when plain, else single-quoted. */
export const shellArg = (word: string): string =>
  /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;

/** A %-encoded URL part, as typed when it is not valid %-encoding (a malformed URL's error is still built). */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return 'the login name';
  }
}

/** An SQL identifier as psql takes it: always quoted, so a name with capitals or dashes works as printed. */
export const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

interface DriverError {
  code?: unknown;
  message?: unknown;
  /** A file the driver failed to read (the URL's sslrootcert, sslcert, sslkey). */
  path?: unknown;
}

const fields = (error: unknown): { code: string | undefined; text: string; path: string | undefined } => {
  const e = (typeof error === 'object' && error !== null ? error : {}) as DriverError;
  return {
    code: typeof e.code === 'string' ? e.code : undefined,
    text: typeof e.message === 'string' ? e.message : '',
    path: typeof e.path === 'string' ? e.path : undefined,
  };
};

const UNREACHABLE_ERRNOS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ETIMEDOUT', 'ENOENT']);
const UNKNOWN_HOST_ERRNOS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL']);
const CERT_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
/** Connection exceptions (08…), the server shutting down or crashing (57P01–57P03), a socket cut. */
const LOST_CODES = new Set(['57P01', '57P02', '57P03', 'ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** The cause of a failure to reach the server (host, port, TLS files); undefined when it is not one. */
function connectCause(
  code: string | undefined,
  text: string,
  p: UrlParts,
  fileNamed?: string,
): DatabaseCause | undefined {
  const at = `${p.host}:${p.port}`;
  if (code !== undefined && UNKNOWN_HOST_ERRNOS.has(code))
    return {
      code: 'state_host_unknown',
      cause: `names a host, ${p.host}, that does not resolve (${code})`,
      fix: `correct the host in the URL (postgres://user@HOST:5432/database), or check this machine's DNS`,
    };
  if (fileNamed !== undefined)
    return {
      code: 'state_tls_untrusted',
      cause: `names a TLS file (sslrootcert, sslcert or sslkey) that cannot be read: ${fileNamed} (${code ?? 'error'})`,
      fix: 'correct that path in the URL, or make the file readable by this user',
    };
  if (/verify-ca requires/.test(text))
    return {
      code: 'state_tls_untrusted',
      cause: 'asks sslmode=verify-ca without a CA certificate to verify the server with',
      fix: "add sslrootcert=/path/to/ca.pem (the server's CA) to the URL, or use sslmode=verify-full",
    };
  // node-postgres's own query_timeout (the audit log's and journals' 120 s, or the URL's): the
  // connection was made; a statement went unanswered (a half-open connection, a stalled server).
  if (code === undefined && /^Query read timeout$/.test(text))
    return {
      code: 'state_connection_lost',
      cause: `did not answer a statement in time (the client's query_timeout): the connection to ${at} may be half-open (a network path that dropped it without a reset) or the server stalled`,
      fix: 'check the network path to the server and the server itself, then run again: a sync continues from what the database recorded',
    };
  if ((code !== undefined && UNREACHABLE_ERRNOS.has(code)) || (code === undefined && /timeout|timed out/i.test(text)))
    return {
      code: 'state_unreachable',
      cause: `could not connect: nothing answered at ${at} (${code ?? 'connection timeout'})`,
      fix: `start the PostgreSQL server, or correct the host and port in the URL (postgres://user@HOST:PORT/database; psql -h ${shellArg(p.host)} -p ${shellArg(p.port)} tells whether one listens there)`,
    };
  return undefined;
}

/** The cause of a refused login (database, role, password, TLS, pg_hba.conf); undefined when it is not one. */
function loginCause(code: string | undefined, text: string, p: UrlParts): DatabaseCause | undefined {
  const at = `${p.host}:${p.port}`;
  if (code === '3D000')
    return {
      code: 'state_database_missing',
      cause: `names a database, ${p.database}, that does not exist on ${at}`,
      fix: `create it as a user that may (psql -h ${shellArg(p.host)} -p ${shellArg(p.port)} -U postgres -d postgres -c ${shellArg(`CREATE DATABASE ${ident(p.database)} OWNER ${ident(p.user)}`)}), or correct the database name in the URL`,
    };
  if (code === '28000' && /does not exist/i.test(text))
    return {
      code: 'state_role_missing',
      cause: `names a database user (role), ${p.user}, that does not exist on ${at}`,
      fix: `create it as a superuser (CREATE ROLE ${ident(p.user)} LOGIN PASSWORD '…' with the URL's password), or correct the user in the URL`,
    };
  if (code === '28000' && /no encryption|SSL off/i.test(text))
    return {
      code: 'state_tls_required',
      cause: `refused a connection without TLS (the server's pg_hba.conf accepts ${p.user} from this host only over TLS)`,
      fix: 'add sslmode=require to the URL (postgres://…/database?sslmode=require; sslmode=verify-full with sslrootcert=CA.pem to also check the certificate)',
    };
  if (code === '28000')
    return {
      code: 'state_access_refused',
      cause: `refused ${p.user} on database ${p.database} from this host (no pg_hba.conf entry allows it)`,
      fix: `have the server's administrator allow ${p.user} to reach ${p.database} from this host in pg_hba.conf, or use a user it allows`,
    };
  if (code === '28P01')
    return {
      code: 'state_password_refused',
      cause: `refused the password of ${p.user}`,
      fix: 'put the right password in the URL (postgres://user:PASSWORD@host/database, special characters %-encoded), in PGPASSWORD or in ~/.pgpass',
    };
  if (/password must be a string|client password|SASL/i.test(text))
    return {
      code: 'state_password_refused',
      cause: `asks for a password for ${p.user} and none was given`,
      fix: 'put the password in the URL (postgres://user:PASSWORD@host/database, special characters %-encoded), in PGPASSWORD or in ~/.pgpass',
    };
  if (/does not support SSL/i.test(text))
    return {
      code: 'state_tls_refused',
      cause: `does not accept TLS connections (the URL asks for TLS with sslmode)`,
      fix: 'remove sslmode from the URL (or set sslmode=disable) if the network to the server is trusted, or have the server enable ssl',
    };
  if (code !== undefined && CERT_CODES.has(code))
    return {
      code: 'state_tls_untrusted',
      cause: `presented a TLS certificate this machine does not trust (${code})`,
      fix: "give the server's CA certificate with sslrootcert=/path/to/ca.pem in the URL (with sslmode=verify-full), or sslmode=require to encrypt without checking the certificate",
    };
  if (code === '53300')
    return {
      code: 'state_unreachable',
      cause: `refused the connection: it has too many connections (53300)`,
      fix: "wait for other clients to disconnect or raise the server's max_connections, then run again",
    };
  return undefined;
}

/** The cause of a failed statement; undefined when it is not one of the named ones. */
function statementCause(code: string | undefined, text: string, p: UrlParts): DatabaseCause | undefined {
  switch (code) {
    case '42501':
      return {
        code: 'state_permission_denied',
        cause: `refused ${p.user} access to audience-kit's tables (no privileges granted)`,
        fix: `have the tables' owner run \`audience-kit state schema --role ${shellArg(p.user)}\` through psql (it creates what is missing and grants ${p.user} what a sync needs)`,
      };
    case '3F000':
      return {
        code: 'state_schema_missing',
        cause: `has no schema to hold audience-kit's tables: the search_path names a schema that does not exist or that ${p.user} may not use`,
        fix: `create the schema as the database's owner (CREATE SCHEMA name AUTHORIZATION ${ident(p.user)}), or name an existing one in the URL (options=-c%20search_path%3Dpublic)`,
      };
    case '25006':
      return {
        code: 'state_read_only',
        cause: 'accepts only read-only transactions (a standby, or default_transaction_read_only is on)',
        fix: `point the URL at the primary server, or turn the setting off for this user there (ALTER ROLE ${ident(p.user)} IN DATABASE ${ident(p.database)} SET default_transaction_read_only = off)`,
      };
    case '57014':
      return /statement timeout/i.test(text)
        ? {
            code: 'state_statement_timeout',
            cause: 'cancelled a statement that ran longer than statement_timeout',
            fix: `raise it for this user (ALTER ROLE ${ident(p.user)} IN DATABASE ${ident(p.database)} SET statement_timeout = '10min'), or in the URL (options=-c%20statement_timeout%3D600000)`,
          }
        : {
            code: 'state_connection_lost',
            cause: 'cancelled a statement (pg_cancel_backend or an administrator)',
            fix: 'find who cancels it (pg_stat_activity, the server log)',
          };
    case '55P03':
      return {
        code: 'state_lock_timeout',
        cause: 'gave up waiting for a lock on its tables (lock_timeout): another session holds it',
        fix: `raise lock_timeout for this user (ALTER ROLE ${ident(p.user)} IN DATABASE ${ident(p.database)} SET lock_timeout = '1min'), or end the session holding the lock (pg_locks, pg_stat_activity)`,
      };
    case '42P01':
      return {
        code: 'state_table_missing',
        cause: `lacks one of audience-kit's tables although its schema version is recorded (dropped, or in a schema outside ${p.user}'s search_path)`,
        fix: `restore it from a backup, or put its schema first in the search_path (options=-c%20search_path%3Dname in the URL); \`audience-kit state schema\` lists the tables`,
      };
    case '23505':
      return {
        code: 'state_duplicate_key',
        cause:
          "refused a row whose key already exists (a restored table whose sequence was left behind, or a row another process wrote outside audience-kit's locks)",
        fix: "have the tables' owner realign the audit sequence after a restore (SELECT setval('audience_kit_audit_seq_seq', (SELECT max(seq) FROM audience_kit_audit)))",
      };
    case '53100':
      return {
        code: 'state_database_full',
        cause: 'ran out of disk space (53100)',
        fix: "free space on the database server's disk",
      };
    default:
      return undefined;
  }
}

/** The named cause of a driver error, or undefined (a lost connection, an unreachable server, an unnamed SQLSTATE). */
export function classifyDatabaseError(error: unknown, where: string): DatabaseCause | undefined {
  const { code, text, path } = fields(error);
  const p = urlParts(where);
  const statement = statementCause(code, text, p);
  return (
    connectCause(code, text, p, path) ??
    loginCause(code, text, p) ??
    (statement === undefined ? undefined : { ...statement, statement: true })
  );
}

/** Whether a driver error is the connection itself failing (the lock held through it is gone). */
export function isConnectionFailure(error: unknown): boolean {
  const { code, text } = fields(error);
  return (
    (code !== undefined && (code.startsWith('08') || LOST_CODES.has(code))) ||
    /Connection terminated|not queryable/i.test(text)
  );
}

/** How a failure reads when no named cause fits: one while connecting, or the connection lost during the work. */
export interface FallbackCause {
  code: 'state_unreachable' | 'state_connection_lost';
  /** Completes "the state database URL …". */
  cause: string;
  fix: string;
  /** What follows a statement's cause: what stops because of it (e.g. ": nothing more is sent"). */
  context?: string;
  /** How to go on once a statement's cause is fixed (e.g. "run the sync again: it continues …"). */
  again?: string;
}

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** An SQLSTATE no cause names (a server refusal, not the connection): said with its code. */
function unnamedStatement(code: string): DatabaseCause {
  return {
    code: 'state_query_failed',
    cause: `refused a statement of audience-kit (SQLSTATE ${code})`,
    fix: `look the code up (https://www.postgresql.org/docs/current/errcodes-appendix.html) and the server's log; if it is audience-kit's doing, run again with --debug and report it`,
    statement: true,
  };
}

/**
 * The EnvironmentError for a driver error in the state database `where` (a URL without its
 * password): its named cause when one fits, an SQLSTATE no cause names as `state_query_failed`,
 * else `fallback` (with the errno or SQLSTATE). Errors of ours are returned unchanged.
 */
export function databaseFailure(where: string, error: unknown, fallback: FallbackCause): Error {
  if (error instanceof AudienceKitError) return error;
  const { code } = fields(error);
  const unnamed =
    code !== undefined && SQLSTATE.test(code) && !isConnectionFailure(error) ? unnamedStatement(code) : undefined;
  const named = classifyDatabaseError(error, where) ?? unnamed;
  const message =
    named === undefined
      ? `the state database ${where} ${fallback.cause} (${code ?? 'connection error'})`
      : `the state database ${where} ${named.cause}${named.statement === true ? (fallback.context ?? '') : ''}`;
  const fix =
    named === undefined
      ? fallback.fix
      : named.statement === true && fallback.again !== undefined
        ? `${named.fix}; then ${fallback.again}`
        : named.fix;
  return new EnvironmentError(named?.code ?? fallback.code, message, { path: where, fix, cause: error });
}
