/** Choosing a state store: a directory, or a PostgreSQL URL (opened on demand: `pg` loads only then). */
import { ConfigError } from '../errors.js';
import { DirectoryStore } from './directory-store.js';
import type { StateStore } from './store.js';

/** Where the state lives, parsed once at the entry (CLI flags, environment, library options). */
export type StateSpec = { kind: 'directory'; dir: string } | { kind: 'postgres'; url: string };

const POSTGRES_URL = /^postgres(?:ql)?:\/\/[^\s]*$/i;

/** `value` as a PostgreSQL state URL; `source` names the flag, variable or option in the error (the value is never quoted: it may hold a password). */
export function parseStateUrl(value: string, source: string): StateSpec {
  if (!POSTGRES_URL.test(value) || !URL.canParse(value)) {
    throw new ConfigError('invalid_option', `${source} must be a PostgreSQL URL (postgres://user@host:5432/database)`, {
      fix: 'pass a postgres:// or postgresql:// URL (a state directory is given with stateDir)',
    });
  }
  const url = new URL(value);
  // Without one, the driver would connect to the server's default database and create the tables
  // there; it ignores a `database` query parameter (pg reads the database from the path only).
  if (url.pathname.replace(/^\//, '') === '') {
    throw new ConfigError(
      'state_database_unnamed',
      `${source} names no database: audience-kit keeps its state only in a database the URL names, never in the server's default one`,
      {
        fix: `add the database's name after the host and port (postgres://user@${url.host || 'host:5432'}/DATABASE); create it first if needed (CREATE DATABASE name)`,
      },
    );
  }
  return { kind: 'postgres', url: value };
}

/**
 * The state backends a URL can name (state/backend.ts), each loaded only when used: a new backend
 * is one file and its line here (its URL's parse in parseStateUrl, and `StateSpec`'s kind).
 */
const BACKENDS: Record<Exclude<StateSpec['kind'], 'directory'>, (url: string) => Promise<StateStore>> = {
  postgres: async (url) => {
    const { PostgresStore } = await import('./postgres/store.js').catch((error: unknown) => {
      throw postgresClientMissing(error) ?? error;
    });
    return PostgresStore.open(url);
  },
};

export async function openStateStore(spec: StateSpec): Promise<StateStore> {
  if (spec.kind === 'directory') return new DirectoryStore(spec.dir);
  return BACKENDS[spec.kind](spec.url);
}

/**
 * The PostgreSQL client packages, optional peer dependencies (package.json): a library user who
 * keeps the state in a directory never installs them, so they are loaded only here.
 */
export const POSTGRES_CLIENT_PACKAGES = ['pg@^8.23.1', 'pg-copy-streams@^7.0.0'] as const;

/** A ConfigError naming the install command when `error` is one of the client packages not found. */
export function postgresClientMissing(error: unknown): ConfigError | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' || typeof message !== 'string') return undefined;
  const name = /Cannot find package '(pg|pg-copy-streams)'/.exec(message)?.[1];
  if (name === undefined) return undefined;
  return new ConfigError(
    'state_client_missing',
    `a PostgreSQL state store needs the package ${name}, which is not installed beside audience-kit`,
    {
      fix: `npm install ${POSTGRES_CLIENT_PACKAGES.join(' ')} (where audience-kit is installed; after a global install, npm install -g), or keep the state in a directory (stateDir)`,
      cause: error,
    },
  );
}
