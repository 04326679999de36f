/**
 * The PostgreSQL state backend (`--state postgres://…`): the sync snapshots, their target locks,
 * the audit log and the upload run journals in tables `audience_kit_*` (schema.ts), so a sync
 * can run on any machine that reaches the database. `PostgresStore.open(url)` creates or checks
 * the schema and gives the store: the mirror (state/mirror.ts) over this backend.
 */
import pg from 'pg';
import type { BackendLease, StateBackend } from '../backend.js';
import { MirrorStore } from '../mirror.js';
import { LineAuditLog, LineJournals } from '../line-logs.js';
import type { AuditLog, RunJournals, TargetLockOptions } from '../store.js';
import type { SnapshotTarget } from '../snapshot-format.js';
import { PostgresAuditLines } from './audit.js';
import {
  clientConfig,
  connect,
  connectionLost,
  connector,
  QUERY_TIMEOUT_MS,
  redactUrl,
  type Connector,
} from './connection.js';
import { PostgresJournalLines } from './journal.js';
import { ensureSchema } from './schema.js';
import { acceptedLoss, checkDurability } from './durability.js';
import { PostgresLease } from './target-session.js';

/** The PostgreSQL store: the mirror over `PostgresBackend`. */
export class PostgresStore extends MirrorStore {
  static async open(stateUrl: string): Promise<PostgresStore> {
    return new PostgresStore(await PostgresBackend.open(stateUrl));
  }
}

export class PostgresBackend implements StateBackend {
  readonly kind = 'postgres';
  readonly audit: AuditLog;
  readonly journals: RunJournals;
  private readonly where: string;
  private closed = false;

  private constructor(
    private readonly db: Connector,
    private readonly pool: pg.Pool,
  ) {
    this.where = db.where;
    this.audit = new LineAuditLog(new PostgresAuditLines(pool, db.where));
    this.journals = new LineJournals(new PostgresJournalLines(db, pool));
  }

  /** Connect and create or check the schema (`state_schema_newer`, `state_schema_denied`) and the server's durability (`state_commits_unsafe`). */
  static async open(stateUrl: string): Promise<PostgresBackend> {
    const { url, acceptFailoverLoss } = acceptedLoss(stateUrl);
    const where = redactUrl(url);
    const pool = new pg.Pool({ ...clientConfig(url, QUERY_TIMEOUT_MS), max: 2, idleTimeoutMillis: 10_000 });
    // An idle client's failure: the next query reports it. A client in use that fails (a network
    // cut, a terminated session) emits 'error' too, and pg-pool listens only while it is idle:
    // unheard, it would end the process with a stack trace. Its query fails and reports it instead.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    try {
      // On a connection of its own, without the pool's query timeout: a migration rewrites tables
      // that grow with the snapshots.
      const client = await connect(url, where);
      try {
        await ensureSchema(client, where);
        await checkDurability(client, where, acceptFailoverLoss).catch((error: unknown) =>
          Promise.reject(connectionLost(where, error)),
        );
      } finally {
        await client.end().catch(() => undefined);
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
    return new PostgresBackend(connector(url, where), pool);
  }

  describe(): string {
    return this.where;
  }

  lease(target: SnapshotTarget, options: TargetLockOptions): Promise<BackendLease> {
    return PostgresLease.open(this.db, target, options);
  }

  async moveMarker(): Promise<string | undefined> {
    const r = await this.pool
      .query<{ source: string }>('SELECT source FROM audience_kit_move')
      .catch((error: unknown) => Promise.reject(connectionLost(this.where, error)));
    return r.rows[0]?.source;
  }

  async setMoveMarker(source: string | undefined): Promise<void> {
    await (
      source === undefined
        ? this.pool.query('DELETE FROM audience_kit_move')
        : this.pool.query(
            'INSERT INTO audience_kit_move (source) VALUES ($1) ON CONFLICT (one) DO UPDATE SET source = $1, started_at = now()',
            [source],
          )
    ).catch((error: unknown) => Promise.reject(connectionLost(this.where, error)));
  }

  /** One transaction: the targets (their files, patches and write-ahead rows cascade) and the audit log. */
  async discardMoved(): Promise<void> {
    const client = await this.pool
      .connect()
      .catch((error: unknown) => Promise.reject(connectionLost(this.where, error)));
    try {
      await client.query('BEGIN');
      await client.query('DELETE FROM audience_kit_targets');
      await client.query('DELETE FROM audience_kit_audit');
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw connectionLost(this.where, error);
    } finally {
      client.release();
    }
  }

  /** Targets with committed files or write-ahead rows. */
  async targets(): Promise<SnapshotTarget[]> {
    const r = await this.pool
      .query<{ account_id: string; kind: SnapshotTarget['kind']; target_id: string }>(
        `SELECT account_id, kind, target_id FROM audience_kit_targets t WHERE
           EXISTS (SELECT 1 FROM audience_kit_snapshot_files f WHERE f.target = t.target) OR
           EXISTS (SELECT 1 FROM audience_kit_snapshot_wal w WHERE w.target = t.target)
         ORDER BY t.target`,
      )
      .catch((error: unknown) => Promise.reject(connectionLost(this.where, error)));
    return r.rows.map((row) => ({ accountId: row.account_id, kind: row.kind, id: row.target_id }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end().catch(() => undefined);
  }
}
