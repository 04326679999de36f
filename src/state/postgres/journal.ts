/**
 * Upload run journals in PostgreSQL, as line logs (state/line-logs.ts: the chain, the checks and a
 * resume are the file's): each line's exact text in `audience_kit_journal_lines` by `seq`; failed
 * batches' bodies in `audience_kit_journal_failed` (bytea, the input lines as big-endian uint32s),
 * deleted when the run completes. A run holds a session-level advisory lock on its own connection
 * while it writes, and writes through that connection only: if the connection is lost, so is the
 * lock, and the next record fails (the run stops).
 */
import type pg from 'pg';
import { sleep } from '../../util/clock.js';
import { runInProgress } from '../journal.js';
import type { JournalLines, JournalRun } from '../line-logs.js';
import { QUERY_TIMEOUT_MS, type Connector } from './connection.js';
import { databaseFailure } from './errors.js';
import { advisoryKey } from './keys.js';

/** How long a run waits for another process's lock on its journal (the file lock's 2 s). */
const LOCK_WAIT_MS = 2000;

/** A query of a run's journal failed: EnvironmentError naming the database and the cause (never the server's text). */
function journalFailed(where: string, error: unknown): unknown {
  return databaseFailure(where, error, {
    code: 'state_connection_lost',
    cause: "failed while recording the upload's journal: nothing more is sent",
    fix: 'run the upload again with --resume once the database is reachable: it continues from what the database recorded',
    context: " while recording the upload's journal: nothing more is sent",
    again: 'run the upload again with --resume: it continues from what the database recorded',
  });
}

async function query<R extends pg.QueryResultRow>(
  db: pg.ClientBase | pg.Pool,
  where: string,
  sql: string,
  params: unknown[],
): Promise<pg.QueryResult<R>> {
  try {
    return await db.query<R>(sql, params);
  } catch (error) {
    throw journalFailed(where, error);
  }
}

async function readLines(db: pg.ClientBase | pg.Pool, where: string, key: string): Promise<string[]> {
  const r = await query<{ line: string }>(
    db,
    where,
    'SELECT line FROM audience_kit_journal_lines WHERE key = $1 ORDER BY seq',
    [key],
  );
  return r.rows.map((row) => row.line);
}

export class PostgresJournalLines implements JournalLines {
  readonly where: string;

  constructor(
    private readonly db: Connector,
    private readonly pool: pg.Pool,
  ) {
    this.where = db.where;
  }

  async keys(): Promise<string[]> {
    const r = await query<{ key: string }>(
      this.pool,
      this.where,
      'SELECT DISTINCT key FROM audience_kit_journal_lines ORDER BY key',
      [],
    );
    return r.rows.map((row) => row.key);
  }

  read(key: string): Promise<string[]> {
    return readLines(this.pool, this.where, key);
  }

  async lock(key: string): Promise<JournalRun> {
    const client = await this.db.connect(QUERY_TIMEOUT_MS);
    try {
      await takeLock(client, key, this.where);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw journalFailed(this.where, error);
    }
    return new PostgresJournalRun(client, this.where, key);
  }
}

/** Take the journal's advisory lock, trying again for LOCK_WAIT_MS; refused with `run_in_progress`. */
async function takeLock(client: pg.Client, id: string, where: string): Promise<void> {
  const start = Date.now();
  for (;;) {
    const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [
      advisoryKey(`journal:${id}`),
    ]);
    if (r.rows[0]?.ok === true) return;
    if (Date.now() - start >= LOCK_WAIT_MS) throw runInProgress(`it holds the journal's lock in ${where}`);
    await sleep(50);
  }
}

class PostgresJournalRun implements JournalRun {
  private closed = false;

  constructor(
    private readonly client: pg.Client,
    private readonly where: string,
    private readonly key: string,
  ) {}

  read(): Promise<string[]> {
    return readLines(this.client, this.where, this.key);
  }

  /** In one transaction: the key's lines and kept batches. */
  async forget(): Promise<void> {
    await this.query('BEGIN', []);
    try {
      await this.query('DELETE FROM audience_kit_journal_lines WHERE key = $1', [this.key]);
      await this.query('DELETE FROM audience_kit_journal_failed WHERE key = $1', [this.key]);
      await this.query('COMMIT', []);
    } catch (error) {
      // An aborted transaction would make every later statement of the connection fail (its unlock too).
      await this.query('ROLLBACK', []).catch(() => undefined);
      throw error;
    }
  }

  async append(seq: number, line: string): Promise<void> {
    await this.query('INSERT INTO audience_kit_journal_lines (key, seq, line) VALUES ($1, $2, $3)', [
      this.key,
      seq,
      line,
    ]);
  }

  async keep(index: number, body: Buffer, lines: Buffer): Promise<void> {
    await this.query(
      `INSERT INTO audience_kit_journal_failed (key, batch, body, lines) VALUES ($1, $2, $3, $4)
       ON CONFLICT (key, batch) DO UPDATE SET body = EXCLUDED.body, lines = EXCLUDED.lines`,
      [this.key, index, body, lines],
    );
  }

  async load(index: number): Promise<{ body: Buffer; lines: Buffer } | undefined> {
    const r = await this.query<{ body: Buffer; lines: Buffer }>(
      'SELECT body, lines FROM audience_kit_journal_failed WHERE key = $1 AND batch = $2',
      [this.key, index],
    );
    return r.rows[0];
  }

  async drop(index?: number): Promise<void> {
    if (index === undefined) await this.query('DELETE FROM audience_kit_journal_failed WHERE key = $1', [this.key]);
    else await this.query('DELETE FROM audience_kit_journal_failed WHERE key = $1 AND batch = $2', [this.key, index]);
  }

  /** Releases the advisory lock before the connection ends (its end would too, once the server notices). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client
      .query('SELECT pg_advisory_unlock($1)', [advisoryKey(`journal:${this.key}`)])
      .catch(() => undefined);
    await this.client.end().catch(() => undefined);
  }

  private query<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    return query<R>(this.client, this.where, sql, params);
  }
}
