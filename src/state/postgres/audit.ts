/**
 * The audit log in PostgreSQL, as a line log (state/line-logs.ts: the same records, chain and
 * checks as the file): `audience_kit_audit`, one row per record in `seq` order, `line` the exact
 * JSON text the hash chain covers, with run_id, event, account and target columns for SQL.
 * Appends are serialized by a transaction-level advisory lock held around read-last-line +
 * insert, so concurrent runs never fork the chain.
 */
import type pg from 'pg';
import { parseAuditLine, type AuditRecord } from '../audit.js';
import type { AuditLines } from '../line-logs.js';
import type { SnapshotTarget } from '../snapshot-format.js';
import { auditLogFailed } from './connection.js';
import { advisoryKey } from './keys.js';

/** One record's exact line, with the columns SQL queries use (from its start record). */
async function insertLine(client: pg.PoolClient, line: string): Promise<void> {
  const record = parseAuditLine(line) as AuditRecord | undefined;
  const start = record?.event === 'run_start' ? record : undefined;
  await client.query(
    `INSERT INTO audience_kit_audit (line, run_id, event, account_id, target_kind, target_id, operation)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      line,
      record?.run_id ?? '',
      record?.event ?? '',
      start?.account_id ?? null,
      start?.target.kind ?? null,
      start?.target.id ?? null,
      start?.operation ?? null,
    ],
  );
}

export class PostgresAuditLines implements AuditLines {
  readonly where: string;

  constructor(
    private readonly pool: pg.Pool,
    private readonly database: string,
  ) {
    this.where = `${database} (table audience_kit_audit)`;
  }

  async append(next: (last: string | undefined) => string): Promise<void> {
    await this.underAppendLock(async (client) => {
      const last = await client.query<{ line: string }>(
        'SELECT line FROM audience_kit_audit ORDER BY seq DESC LIMIT 1',
      );
      await insertLine(client, next(last.rows[0]?.line));
    });
  }

  lastSyncLines(target: SnapshotTarget): Promise<string[]> {
    return this.query(
      `SELECT line FROM audience_kit_audit WHERE run_id = (
         SELECT run_id FROM audience_kit_audit WHERE event = 'run_start' AND operation = 'sync'
           AND account_id = $1 AND target_kind = $2 AND target_id = $3 ORDER BY seq DESC LIMIT 1)
       ORDER BY seq`,
      [target.accountId, target.kind, target.id],
    );
  }

  lines(): Promise<string[]> {
    return this.query('SELECT line FROM audience_kit_audit ORDER BY seq', []);
  }

  /** In one transaction under the append lock: an empty table gets every line, or nothing changes. */
  importInto(lines: readonly string[]): Promise<boolean> {
    return this.underAppendLock(async (client) => {
      const any = await client.query('SELECT 1 FROM audience_kit_audit LIMIT 1');
      if (any.rowCount !== 0) return false;
      for (const line of lines) await insertLine(client, line);
      return true;
    });
  }

  /** `work` in one transaction holding the log's append lock (every writer takes it): committed, or rolled back on any error. */
  private async underAppendLock<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool
      .connect()
      .catch((error: unknown) => Promise.reject(auditLogFailed(this.database, error)));
    let failed = false;
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [advisoryKey('audit')]);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      failed = true;
      await client.query('ROLLBACK').catch(() => undefined);
      throw auditLogFailed(this.database, error);
    } finally {
      // A client that failed is not given back to the pool (its connection may be dead or timed out).
      client.release(failed);
    }
  }

  private async query(sql: string, params: unknown[]): Promise<string[]> {
    try {
      const r = await this.pool.query<{ line: string }>(sql, params);
      return r.rows.map((row) => row.line);
    } catch (error) {
      throw auditLogFailed(this.database, error);
    }
  }
}
