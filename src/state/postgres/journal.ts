/**
 * Upload run journals in PostgreSQL: the same format 2 lines as the file (state/journal.ts), each
 * line's exact text in `audience_kit_journal_lines` by `seq`, so the chain, the checks and a
 * resume are the file's; failed batches' bodies in `audience_kit_journal_failed` (bytea, the input
 * lines as big-endian uint32s), deleted when the run completes. A run holds a session-level
 * advisory lock on its own connection while it writes, and writes through that connection only:
 * if the connection is lost, so is the lock, and the next record fails (the run stops).
 */
import type pg from 'pg';
import { sleep } from '../../util/clock.js';
import {
  bytesToLines,
  ChainedJournal,
  linesToBytes,
  journalKeyId,
  JOURNAL_GENESIS,
  parseJournalBytes,
  resumable,
  runInProgress,
  summarizeJournal,
  type JournalKey,
  type JournalLine,
  type JournalStart,
  type JournalSummary,
  type KeptBatch,
  type OpenJournalOptions,
} from '../journal.js';
import type { RunJournals, UploadJournal } from '../store.js';
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

/** A journal's lines as stored, checked like the file's (a line cut short is refused: the database stores whole lines). */
async function readLines(
  db: pg.ClientBase | pg.Pool,
  id: string,
  where: string,
): Promise<{ lines: JournalLine[]; head: string; count: number }> {
  const r = await db.query<{ line: string }>(
    'SELECT line FROM audience_kit_journal_lines WHERE key = $1 ORDER BY seq',
    [id],
  );
  const text = r.rows.map((row) => `${row.line}\n`).join('');
  const { lines, head } = parseJournalBytes(Buffer.from(text, 'utf8'), where, false);
  return { lines, head, count: r.rows.length };
}

export class PostgresRunJournals implements RunJournals {
  private readonly where: string;

  constructor(
    private readonly db: Connector,
    private readonly pool: pg.Pool,
  ) {
    this.where = db.where;
  }

  async find(key: JournalKey): Promise<JournalSummary | undefined> {
    const id = journalKeyId(key);
    const where = journalWhere(this.where, id);
    const { lines, count } = await readLines(this.pool, id, where).catch((e: unknown) =>
      Promise.reject(journalFailed(this.where, e)),
    );
    return count === 0 ? undefined : summarizeJournal(id, where, lines);
  }

  open(key: JournalKey, options: OpenJournalOptions): Promise<UploadJournal> {
    return PostgresJournal.open(this.db, key, options);
  }

  async list(): Promise<JournalSummary[]> {
    try {
      const keys = await this.pool.query<{ key: string }>(
        'SELECT DISTINCT key FROM audience_kit_journal_lines ORDER BY key',
      );
      const found: JournalSummary[] = [];
      for (const { key } of keys.rows) {
        const where = journalWhere(this.where, key);
        found.push(summarizeJournal(key, where, (await readLines(this.pool, key, where)).lines));
      }
      return found;
    } catch (error) {
      throw journalFailed(this.where, error);
    }
  }
}

const journalWhere = (where: string, id: string): string => `${where} (journal ${id})`;

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

export class PostgresJournal extends ChainedJournal {
  readonly location: string;
  private closed = false;

  private constructor(
    start: JournalStart,
    private readonly client: pg.Client,
    private readonly where: string,
    /** The next line's `seq`. */
    private seq: number,
  ) {
    super(start);
    this.location = journalWhere(where, start.key);
  }

  static async open(db: Connector, key: JournalKey, options: OpenJournalOptions): Promise<PostgresJournal> {
    const { where } = db;
    const id = journalKeyId(key);
    const now = options.now ?? (() => new Date());
    const client = await db.connect(QUERY_TIMEOUT_MS);
    try {
      await takeLock(client, id, where);
      const found = options.mode === 'resume' ? await readLines(client, id, journalWhere(where, id)) : undefined;
      const resumed = found !== undefined && resumable(found.lines);
      if (!resumed) await forget(client, id);
      const journal = new PostgresJournal(
        {
          key: id,
          resumed,
          lines: resumed ? found.lines : [],
          head: resumed ? found.head : JOURNAL_GENESIS,
          now,
        },
        client,
        where,
        resumed ? found.count : 0,
      );
      await journal.begin(key, options.runId);
      return journal;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw journalFailed(where, error);
    }
  }

  protected async writeLine(text: string): Promise<void> {
    await this.query('INSERT INTO audience_kit_journal_lines (key, seq, line) VALUES ($1, $2, $3)', [
      this.key,
      this.seq,
      text,
    ]);
    this.seq++;
  }

  protected async keepBatch(index: number, batch: KeptBatch): Promise<void> {
    await this.query(
      `INSERT INTO audience_kit_journal_failed (key, batch, body, lines) VALUES ($1, $2, $3, $4)
       ON CONFLICT (key, batch) DO UPDATE SET body = EXCLUDED.body, lines = EXCLUDED.lines`,
      [this.key, index, batch.body, linesToBytes(batch.lines)],
    );
  }

  protected async loadBatch(index: number): Promise<KeptBatch | undefined> {
    const r = await this.query<{ body: Buffer; lines: Buffer }>(
      'SELECT body, lines FROM audience_kit_journal_failed WHERE key = $1 AND batch = $2',
      [this.key, index],
    );
    const row = r.rows[0];
    const lines = row && bytesToLines(row.lines);
    return row === undefined || lines === undefined ? undefined : { body: row.body, lines };
  }

  protected async dropBatches(index?: number): Promise<void> {
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

  private async query<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.client.query<R>(sql, params);
    } catch (error) {
      throw journalFailed(this.where, error);
    }
  }
}

/** A new journal replaces the key's lines and kept batches. */
async function forget(client: pg.Client, id: string): Promise<void> {
  await client.query('BEGIN');
  await client.query('DELETE FROM audience_kit_journal_lines WHERE key = $1', [id]);
  await client.query('DELETE FROM audience_kit_journal_failed WHERE key = $1', [id]);
  await client.query('COMMIT');
}
