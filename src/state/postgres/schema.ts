/**
 * The PostgreSQL store's tables, created on first use and versioned.
 *
 * Tables are named `audience_kit_*` and created in the first schema of the connection's
 * `search_path` (usually `public`; pick another with `?options=-c%20search_path%3Dads` in the URL
 * or the role's default). `audience_kit_migrations` lists the versions applied; migrations run
 * in one transaction under an advisory lock, so two first uses cannot both apply them. A database
 * whose schema version is newer than this code knows is refused (`state_schema_newer`), never
 * read. A role without CREATE rights gets `state_schema_denied` with the SQL to run as an owner
 * (`audience-kit state schema` prints it).
 */
import type pg from 'pg';
import { ConfigError, EnvironmentError } from '../../errors.js';
import { databaseFailure, ident, shellArg, urlParts } from './errors.js';
import { advisoryKey } from './keys.js';

/** The write-ahead table as version 1 creates it (also its re-creation: see WAL_REPAIR). */
const WAL_TABLE = `CREATE TABLE audience_kit_snapshot_wal (
  target text NOT NULL REFERENCES audience_kit_targets (target) ON DELETE CASCADE,
  seq integer NOT NULL,
  version bigint NOT NULL,
  file text NOT NULL,
  "offset" bigint NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (target, seq)
);`;
const WAL_UNCOMPRESSED = 'ALTER TABLE audience_kit_snapshot_wal ALTER COLUMN data SET STORAGE EXTERNAL;';

/**
 * Version 1. Tables by concern:
 * - targets: one row per sync target (`target` = the snapshot directory's name,
 *   `<kind>-<24 hex of the target hash>`); `version` counts the commits (the fencing token),
 *   `holder` says who holds the target's lock (host, pid, run id, since), written under it.
 * - snapshot files: the committed files of a target's snapshot (`index`, `data.<gen>`,
 *   `unrecovered.json`), each as `size` plus parts of at most 1 MiB in `part` order.
 * - snapshot write-ahead: every write of a sync under way to `pending` or the data file, by
 *   `seq`, tagged with the `version` it applies to; deleted by the commit that includes them.
 * - audit: one row per audit record: `line` is the exact JSON text the hash chain covers (the
 *   chain runs in `seq` order); the other columns repeat fields of it for SQL queries (account,
 *   target kind and id, operation: on `run_start` rows; join on run_id for the end).
 * - journals: an upload run journal's lines (`line` exact text, chained), and the bodies of its
 *   failed batches with their input line numbers (`lines`: big-endian uint32s).
 */
const V1 = `
CREATE TABLE audience_kit_targets (
  target text PRIMARY KEY,
  account_id text NOT NULL,
  kind text NOT NULL,
  target_id text NOT NULL,
  version bigint NOT NULL DEFAULT 0,
  committed_at timestamptz,
  holder jsonb
);
CREATE TABLE audience_kit_snapshot_files (
  target text NOT NULL REFERENCES audience_kit_targets (target) ON DELETE CASCADE,
  name text NOT NULL,
  size bigint NOT NULL,
  PRIMARY KEY (target, name)
);
CREATE TABLE audience_kit_snapshot_parts (
  target text NOT NULL,
  name text NOT NULL,
  part integer NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (target, name, part),
  FOREIGN KEY (target, name) REFERENCES audience_kit_snapshot_files (target, name) ON DELETE CASCADE
);
${WAL_TABLE}
CREATE TABLE audience_kit_audit (
  seq bigserial PRIMARY KEY,
  line text NOT NULL,
  run_id text NOT NULL,
  event text NOT NULL,
  account_id text,
  target_kind text,
  target_id text,
  operation text,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audience_kit_audit_target ON audience_kit_audit (account_id, target_kind, target_id);
CREATE TABLE audience_kit_journal_lines (
  key text NOT NULL,
  seq integer NOT NULL,
  line text NOT NULL,
  PRIMARY KEY (key, seq)
);
CREATE TABLE audience_kit_journal_failed (
  key text NOT NULL,
  batch integer NOT NULL,
  body bytea NOT NULL,
  lines bytea NOT NULL,
  PRIMARY KEY (key, batch)
);
`;

/**
 * Version 2: a commit stores what changed, not whole files (file-delta.ts). The parts of
 * version 1 become patch rows (the table renamed `audience_kit_snapshot_patches`, `part` renamed
 * `seq`): a file's rows, applied in `seq` order, each packing ranges `[offset uint64 BE][length
 * uint32 BE][bytes]` (a part of version 1 becomes one range at the sum of the parts before it).
 * `sha256` is the file's digest, checked on every read (NULL for a file of version 1 until a
 * commit stores it again: its ranges must then cover it exactly). Byte columns are stored
 * uncompressed (`STORAGE EXTERNAL`): hashed users barely compress (3% in version 1), and the
 * server spent CPU trying at every commit.
 */
const V2 = `
ALTER TABLE audience_kit_snapshot_files ADD COLUMN sha256 bytea;
ALTER TABLE audience_kit_snapshot_parts RENAME TO audience_kit_snapshot_patches;
ALTER TABLE audience_kit_snapshot_patches RENAME COLUMN part TO seq;
ALTER TABLE audience_kit_snapshot_patches ALTER COLUMN data SET STORAGE EXTERNAL;
${WAL_UNCOMPRESSED}
UPDATE audience_kit_snapshot_patches p SET data = int8send(s.start) || int4send(length(p.data)) || p.data
  FROM (SELECT target, name, seq, coalesce(sum(length(data)) OVER (PARTITION BY target, name ORDER BY seq
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)::bigint AS start
        FROM audience_kit_snapshot_patches) s
  WHERE p.target = s.target AND p.name = s.name AND p.seq = s.seq;
`;

/**
 * Version 3: `blocks` holds the digests of a data file's blocks (file-delta.ts) as the commit that
 * stored it computed them, sealed to that version of the file (its SHA-256 and size), for the
 * next commit to compare with: version 2 computed them from the whole file at every open (at 10M
 * users 2 s, and about 30 MB of resident memory kept through the sync). NULL (a file of version 2,
 * or a file not changed in place) or a seal that does not match: the next commit stores the file
 * whole. Never trusted for the file's content, which is checked against `sha256` on every open.
 */
const V3 = `
ALTER TABLE audience_kit_snapshot_files ADD COLUMN blocks bytea;
ALTER TABLE audience_kit_snapshot_files ALTER COLUMN blocks SET STORAGE EXTERNAL;
`;

/**
 * Version 4: `audience_kit_move` holds the marker of a `state move` into this database, from its
 * first write until the copy is verified (at most one row): while it is there, no target of the
 * database is synced (state/move.ts).
 */
const V4 = `
CREATE TABLE audience_kit_move (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  source text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now()
);
`;

/**
 * Version 5: a commit that stores a data file's changed blocks also rewrites the older rows that
 * hold bytes of those blocks (mirror-files.ts, refillOverwritten), so no row keeps the frame of a
 * user a sync removed. Rows stored before may still hold frames scrubbed since: the block digests
 * are dropped, so the next commit stores each data file whole, and its old rows go. No column
 * changes; applied again (harmlessly: one commit stores whole) if its record is lost.
 */
const V5 = `
UPDATE audience_kit_snapshot_files SET blocks = NULL WHERE blocks IS NOT NULL;
`;

/** Each version's DDL, applied in order; version n is MIGRATIONS[n - 1]. Append only. */
const MIGRATIONS: readonly string[] = [V1, V2, V3, V4, V5];

/**
 * Whether the tables already have each version's changes (version n is PRESENT[n - 1]), as the
 * catalog says: a migrations table deleted or emptied (its record lost, the tables kept) is
 * rebuilt from it, instead of applying the versions again over tables that have them.
 */
const PRESENT: readonly string[] = [
  `to_regclass('audience_kit_targets') IS NOT NULL`,
  `to_regclass('audience_kit_snapshot_patches') IS NOT NULL`,
  `EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('audience_kit_snapshot_files') AND attname = 'blocks' AND NOT attisdropped)`,
  `to_regclass('audience_kit_move') IS NOT NULL`,
  // Nothing in the catalog tells: applied again.
  `false`,
];

/**
 * The write-ahead table, dropped, is created again empty: what it held was a killed sync's record,
 * whose loss the next sync finds and refuses (snapshot_write_ahead_lost) and `--recover` accounts for.
 * Idempotent. The other tables hold what cannot be rebuilt (restore them from a backup).
 */
const WAL_REPAIR = `DO $repair$ BEGIN
IF to_regclass('audience_kit_snapshot_wal') IS NULL AND to_regclass('audience_kit_targets') IS NOT NULL THEN
${WAL_TABLE}
${WAL_UNCOMPRESSED}
END IF;
END $repair$;`;

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS.length;

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS audience_kit_migrations (
  version integer PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now()
);`;

/** The tables of the current version that a sync, an upload and the audit commands read and write. */
const DATA_TABLES = [
  'audience_kit_targets',
  'audience_kit_snapshot_files',
  'audience_kit_snapshot_patches',
  'audience_kit_snapshot_wal',
  'audience_kit_audit',
  'audience_kit_journal_lines',
  'audience_kit_journal_failed',
  'audience_kit_move',
];

/** What the role `role` needs to use the tables: the schema's USAGE, the tables' rows, the audit's sequence. */
export function grantsSql(role: string): string {
  const to = ident(role);
  return [
    `-- What the database user the syncs connect as needs (the tables' schema: this session's current one).`,
    `DO $grant$ BEGIN EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), ${literal(role)}); END $grant$;`,
    `GRANT SELECT ON TABLE audience_kit_migrations TO ${to};`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE ${DATA_TABLES.join(', ')} TO ${to};`,
    `GRANT USAGE, SELECT ON SEQUENCE audience_kit_audit_seq_seq TO ${to};`,
  ].join('\n');
}

const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`;

/** One migration as a step of the owner's script: skipped when the database has it already. */
function scriptStep(version: number): string {
  return [
    `-- Version ${version} (skipped when the database has it)`,
    `DO $migration$ BEGIN`,
    `IF NOT EXISTS (SELECT 1 FROM audience_kit_migrations WHERE version = ${version}) THEN`,
    `IF NOT (${PRESENT[version - 1] as string}) THEN`,
    (MIGRATIONS[version - 1] as string).trim(),
    `END IF;`,
    `INSERT INTO audience_kit_migrations (version) VALUES (${version});`,
    `END IF;`,
    `END $migration$;`,
  ].join('\n');
}

/**
 * The SQL that creates or brings up to date the schema, as an owner runs it with psql: one
 * transaction under the migrations' lock, each version's step skipped when the database has it
 * (so it can be run whatever the database holds), refused when the database is newer than `to`,
 * then, with `role`, the grants that user needs (grantsSql). `from` leaves out the earlier steps.
 */
export function schemaSql(from = 0, to = SCHEMA_VERSION, role?: string): string {
  const steps = MIGRATIONS.slice(from, to).map((_, i) => scriptStep(from + i + 1));
  const newer = `DO $check$ BEGIN
IF (SELECT max(version) FROM audience_kit_migrations) > ${to} THEN
  RAISE EXCEPTION 'the audience-kit schema here is newer than version ${to}: use the audience-kit that wrote it';
END IF;
END $check$;`;
  const lock = `DO $lock$ BEGIN PERFORM pg_advisory_xact_lock(${advisoryKey('schema')}); END $lock$;`;
  const grants = role === undefined ? [] : [grantsSql(role)];
  const repair = to === SCHEMA_VERSION ? [WAL_REPAIR] : [];
  return ['BEGIN;', lock, MIGRATIONS_TABLE, newer, ...steps, ...repair, ...grants, 'COMMIT;', ''].join('\n');
}

/** The highest version applied; 0 when the migrations table does not exist. */
async function appliedVersion(client: pg.ClientBase): Promise<number> {
  const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('audience_kit_migrations')::text AS t`);
  if (exists.rows[0]?.t == null) return 0;
  const r = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM audience_kit_migrations');
  return r.rows[0]?.v ?? 0;
}

function newerSchema(found: number): ConfigError {
  return new ConfigError(
    'state_schema_newer',
    `the state database's schema is version ${found}, newer than this version of audience-kit knows (${SCHEMA_VERSION}): it was written by a newer audience-kit and is not read`,
    { fix: 'upgrade audience-kit on this machine to the version that wrote it' },
  );
}

function schemaDenied(from: number, where: string, cause: unknown): EnvironmentError {
  const { user } = urlParts(where);
  return new EnvironmentError(
    'state_schema_denied',
    `the state database's tables ${from === 0 ? 'do not exist' : from === SCHEMA_VERSION ? 'lack the write-ahead table (dropped)' : `are at version ${from} of ${SCHEMA_VERSION}`} and the database user ${user} may not create them`,
    {
      fix: `have the schema's owner run the output of \`audience-kit state schema --role ${shellArg(user)}\` (psql -f - with the owner's URL): it creates the tables and grants ${user} what it needs; or grant ${user} CREATE on the schema`,
      cause,
      path: where,
    },
  );
}

/**
 * No schema to create the tables in: the search_path names none that exists and that the user
 * may use (PostgreSQL then skips it silently, and the first CREATE would fail without a name).
 */
async function checkSchemaPath(client: pg.ClientBase, where: string): Promise<void> {
  const r = await client.query<{ current: string | null; path: string }>(
    `SELECT current_schema() AS current, current_setting('search_path') AS path`,
  );
  const row = r.rows[0];
  if (row === undefined || row.current !== null) return;
  const { user } = urlParts(where);
  const first = row.path
    .split(',')
    .map((name) => name.trim().replace(/^"(.*)"$/, '$1'))
    .find((name) => name !== '' && name !== '$user');
  const exists =
    first !== undefined &&
    (await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [first])).rowCount === 1;
  const name = first ?? 'NAME';
  throw new EnvironmentError(
    'state_schema_missing',
    exists
      ? `the state database ${where} has the schema ${name} of the search_path, but the user ${user} may not use it`
      : `the state database ${where} has no schema ${name}: the search_path (${row.path}) names none that exists`,
    {
      path: where,
      fix: exists
        ? `as the schema's owner: GRANT USAGE, CREATE ON SCHEMA ${ident(name)} TO ${ident(user)} (or have the owner run \`audience-kit state schema --role ${shellArg(user)}\`)`
        : `as the database's owner: CREATE SCHEMA ${ident(name)} AUTHORIZATION ${ident(user)}; or name an existing schema in the URL (options=-c%20search_path%3Dpublic)`,
    },
  );
}

/** Create or update the schema when needed (no DDL at all when it is current); `where` names the database in errors. */
export async function ensureSchema(client: pg.ClientBase, where: string): Promise<void> {
  try {
    await checkSchemaPath(client, where);
    await migrate(client, where);
  } catch (error) {
    throw databaseFailure(where, error, {
      code: 'state_connection_lost',
      cause: 'failed while its tables were checked',
      fix: 'run again once the database is reachable',
      again: 'run again',
    });
  }
}

async function migrate(client: pg.ClientBase, where: string): Promise<void> {
  const found = await appliedVersion(client);
  if (found > SCHEMA_VERSION) throw newerSchema(found);
  if (found === SCHEMA_VERSION && (await walTablePresent(client))) return;
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [advisoryKey('schema')]);
    await client.query(MIGRATIONS_TABLE);
    // Another process may have migrated while this one waited for the lock.
    const now = await appliedVersion(client);
    if (now > SCHEMA_VERSION) throw newerSchema(now);
    for (let v = now + 1; v <= SCHEMA_VERSION; v++) {
      // A version whose changes the tables have (its record lost) is recorded, not applied again.
      const present = await client.query<{ ok: boolean }>(`SELECT ${PRESENT[v - 1] as string} AS ok`);
      if (present.rows[0]?.ok !== true) await client.query(MIGRATIONS[v - 1] as string);
      await client.query('INSERT INTO audience_kit_migrations (version) VALUES ($1)', [v]);
    }
    await client.query(WAL_REPAIR);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    if ((error as { code?: unknown }).code === '42501') throw schemaDenied(found, where, error);
    throw error;
  }
}

async function walTablePresent(client: pg.ClientBase): Promise<boolean> {
  const r = await client.query<{ ok: boolean }>(`SELECT to_regclass('audience_kit_snapshot_wal') IS NOT NULL AS ok`);
  return r.rows[0]?.ok === true;
}
