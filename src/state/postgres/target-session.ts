/**
 * A sync target leased in the PostgreSQL store: a session-level advisory lock held on one
 * dedicated connection for the whole sync, through which go the snapshot's read, every
 * write-ahead insert, the commit and the lease's proofs, one at a time (serial.ts). If the connection is lost, the lock is gone with it and the
 * next write fails: the sync stops sending. Writes are fenced by the target's `version` (its
 * commit count), so a writer that lost its lock cannot overwrite a newer commit.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { z } from 'zod';
import { AudienceKitError, ConfigError } from '../../errors.js';
import { HeldLease } from '../../util/lease.js';
import { sleep as realSleep } from '../../util/clock.js';
import { processRunning } from '../../util/process.js';
import { fenced, type BackendLease, type CommittedView, type CommitWriter, type WriteAheadRecord } from '../backend.js';
import { snapshotName } from '../snapshot.js';
import { leaseLost, syncInProgress, type TargetLockOptions } from '../store.js';
import type { SnapshotTarget } from '../snapshot-format.js';
import { connectionLost, type Connector } from './connection.js';
import { advisoryKey } from './keys.js';
import { SerialClient } from './serial.js';
import { committedView, commitWriter } from './snapshot-blobs.js';

const holderSchema = z.object({
  host: z.string(),
  pid: z.number(),
  since: z.string(),
  run_id: z.string().optional(),
  /** Since the lease: this holder's own token (a release clears only its own record). */
  lease: z.string().optional(),
  /** Since the lease: the longest one of its requests could be in flight, and its proof interval. */
  request_timeout_ms: z.number().optional(),
  abort_within_ms: z.number().optional(),
});
type Holder = z.infer<typeof holderSchema>;

/** The client's defaults (connect 10 s + headers 60 s): what a holder that recorded none is assumed to use. */
const DEFAULT_REQUEST_TIMEOUT_MS = 70_000;

/**
 * How long a process taking the target over waits before it sends: a holder recorded under the
 * lock and never cleared ended uncleanly (killed, or its session lost), and any request it sent
 * before it knew can still arrive. Sent under a lease, such a request started before the loss,
 * and its body was cut by the heartbeat within `abort_within_ms` of it: what was sent whole is
 * answered within the request timeout. A holder of this host whose process is gone has nothing
 * in flight; a holder of an older version (no lease) is given the default request timeout.
 */
export function takeoverWaitMs(holder: unknown): number {
  const h = holderSchema.safeParse(holder);
  if (holder === null || holder === undefined) return 0;
  if (!h.success) return DEFAULT_REQUEST_TIMEOUT_MS;
  if (h.data.host === hostname() && !processRunning(h.data.pid)) return 0;
  return (h.data.request_timeout_ms ?? DEFAULT_REQUEST_TIMEOUT_MS) + (h.data.abort_within_ms ?? 0);
}

function describeHolder(h: Holder): string {
  return `pid ${h.pid} on host ${h.host} since ${h.since}${h.run_id === undefined ? '' : `, run ${h.run_id}`}`;
}

/** Take the target's advisory lock, trying again until `waitMs`; refused naming the holder. */
async function takeLock(client: pg.Client, name: string, o: TargetLockOptions): Promise<void> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? realSleep;
  const start = now();
  for (let attempt = 0; ; attempt++) {
    const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [
      advisoryKey(`target:${name}`),
    ]);
    if (r.rows[0]?.ok === true) return;
    if (now() - start >= (o.waitMs ?? 0)) {
      const h = await client.query<{ holder: unknown }>('SELECT holder FROM audience_kit_targets WHERE target = $1', [
        name,
      ]);
      const holder = holderSchema.safeParse(h.rows[0]?.holder);
      throw syncInProgress(
        holder.success ? describeHolder(holder.data) : 'another process holds its lock in the state database',
      );
    }
    await sleep(Math.min(500, 50 + attempt * 50));
  }
}

export class PostgresLease implements BackendLease {
  readonly lease: HeldLease;
  private released = false;

  private constructor(
    private readonly serial: SerialClient,
    private readonly name: string,
    private readonly where: string,
    private readonly held: HeldTarget,
  ) {
    this.lease = held.lease;
  }

  /** Connect, lock the target, record the holder, and wait out what an unclean previous holder could still have in flight. */
  static async open(db: Connector, target: SnapshotTarget, o: TargetLockOptions): Promise<PostgresLease> {
    const client = await db.connect();
    const name = snapshotName(target);
    try {
      await configureSession(client);
      await takeLock(client, name, o);
      const serial = new SerialClient(client);
      const held = await holdTarget(serial, { db, name }, target, o);
      return new PostgresLease(serial, name, db.where, held);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw connectionLost(db.where, error);
    }
  }

  /** The committed files and the write-ahead rows, read in one consistent snapshot of the database. */
  read<T>(work: (view: CommittedView) => Promise<T>): Promise<T> {
    return this.serial.transaction(async (client) => {
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const v = await client.query<{ version: string }>(
          'SELECT version::text AS version FROM audience_kit_targets WHERE target = $1',
          [this.name],
        );
        const result = await work(committedView(client, this.name, v.rows[0]?.version ?? '0'));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw connectionLost(this.where, error);
      }
    });
  }

  async append(fence: string, { seq, file, offset, data }: WriteAheadRecord): Promise<void> {
    try {
      const r = await this.serial.run((client) =>
        client.query(
          `INSERT INTO audience_kit_snapshot_wal (target, seq, version, file, "offset", data)
         SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS
           (SELECT 1 FROM audience_kit_targets WHERE target = $1 AND version = $3)`,
          [this.name, seq, fence, file, offset, data],
        ),
      );
      if (r.rowCount !== 1) throw fenced(this.where);
    } catch (error) {
      throw connectionLost(this.where, error);
    }
  }

  commit(fence: string, work: (writer: CommitWriter) => Promise<void>): Promise<string> {
    return this.serial.transaction(async (client) => {
      try {
        await client.query('BEGIN');
        const r = await client.query<{ version: string }>(
          'UPDATE audience_kit_targets SET version = version + 1, committed_at = now() WHERE target = $1 AND version = $2 RETURNING version::text AS version',
          [this.name, fence],
        );
        if (r.rowCount !== 1) throw fenced(this.where);
        await work(commitWriter(client, this.name));
        await client.query('DELETE FROM audience_kit_snapshot_wal WHERE target = $1', [this.name]);
        await client.query('COMMIT');
        return (r.rows[0] as { version: string }).version;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw connectionLost(this.where, error);
      }
    });
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await releaseHeld(this.serial, this.name, this.held);
  }
}

/** The lock taken: its lease, the token recorded in the holder row, and the backend that holds it. */
interface HeldTarget {
  db: Connector;
  lease: HeldLease;
  token: string;
  backendPid: number;
  /** The advisory lock's key. */
  key: string;
}

/**
 * The holding session's settings: the server notices a dead client (and frees the lock) in about
 * 25 s (TCP keepalives; with 14+, also while a statement runs), and no idle timeout of the role
 * ends it while the sync waits (`idle_session_timeout`, `idle_in_transaction_session_timeout`).
 */
async function configureSession(client: pg.Client): Promise<void> {
  const v = await client.query<{ v: string }>('SHOW server_version_num');
  const settings: [string, string][] = [
    ['tcp_keepalives_idle', '10'],
    ['tcp_keepalives_interval', '5'],
    ['tcp_keepalives_count', '3'],
    ['idle_in_transaction_session_timeout', '0'],
  ];
  if (Number(v.rows[0]?.v) >= 140000)
    settings.push(['idle_session_timeout', '0'], ['client_connection_check_interval', '5000']);
  await client.query('SELECT set_config(k, v, false) FROM unnest($1::text[], $2::text[]) AS s(k, v)', [
    settings.map(([k]) => k),
    settings.map(([, value]) => value),
  ]);
}

/**
 * The lock is ours: record the holder (with what a successor must wait out), check the lock is
 * held by this very backend (a transaction-mode pooler is refused), wait out an unclean previous
 * holder, and start the heartbeat.
 */
async function holdTarget(
  serial: SerialClient,
  { db, name }: { db: Connector; name: string },
  target: SnapshotTarget,
  o: TargetLockOptions,
): Promise<HeldTarget> {
  const { client } = serial;
  const lease = new HeldLease({
    // While the snapshot's read or a commit is pending, a proof would wait behind statements that
    // may take minutes at 10M users (and its timeout, counted from its call, would lose the lease
    // falsely); nothing is sent meanwhile, so none is made. Otherwise it waits its turn (at most one
    // write-ahead insert), and a connection that stopped answering fails it by the timeout.
    prove: () => (serial.transactionPending ? Promise.resolve() : serial.run((c) => proveLock(c, held))),
    lost: (cause) =>
      cause instanceof AudienceKitError ? cause : leaseLost(db.where, 'its database session ended', cause),
    onLost: () => client.connection.stream.destroy(),
    ...(o.proofIntervalMs === undefined ? {} : { proofIntervalMs: o.proofIntervalMs }),
  });
  const pid = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const held: HeldTarget = {
    db,
    lease,
    token: randomBytes(12).toString('hex'),
    backendPid: pid.rows[0]?.pid ?? 0,
    key: advisoryKey(`target:${name}`),
  };
  await proveLock(client, held)
    .then(() => refuseSharedSession(db, held.backendPid))
    .catch(async (error: unknown) => {
      // Through a pooler the server session outlives this client: the lock is given back, not left to leak.
      await client.query('SELECT pg_advisory_unlock($1)', [held.key]).catch(() => undefined);
      return Promise.reject(poolerRefused(db.where, error));
    });
  const holder: Holder = {
    host: hostname(),
    pid: process.pid,
    since: new Date().toISOString(),
    ...(o.runId === undefined ? {} : { run_id: o.runId }),
    lease: held.token,
    request_timeout_ms: o.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    abort_within_ms: lease.abortWithinMs,
  };
  const previous = await client.query<{ holder: unknown }>(
    'SELECT holder FROM audience_kit_targets WHERE target = $1',
    [name],
  );
  await client.query(
    `INSERT INTO audience_kit_targets (target, account_id, kind, target_id, holder) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (target) DO UPDATE SET holder = EXCLUDED.holder`,
    [name, target.accountId, target.kind, target.id, JSON.stringify(holder)],
  );
  // A connection that ends or fails is a lease lost at once, not at the next proof.
  client.on('end', () => lease.fail(new Error('connection ended')));
  client.on('error', (error) => lease.fail(error));
  // From here the heartbeat shares the connection: every use goes through `serial`.
  lease.start();
  const wait = takeoverWaitMs(previous.rows[0]?.holder);
  if (wait > 0) {
    const last = holderSchema.safeParse(previous.rows[0]?.holder);
    o.onTakeoverWait?.({
      ms: wait,
      ...(last.success ? { holder: { host: last.data.host, pid: last.data.pid, since: last.data.since } } : {}),
    });
    await (o.sleep ?? realSleep)(wait);
    await lease.verify();
  }
  return held;
}

/**
 * End the session (which releases the advisory lock), its holder record cleared first. A cleared
 * holder tells the next one this sync ended cleanly: nothing of it is in flight (a session is
 * released once every request of its sync settled). A lost session's record is cleared through
 * a new connection, and only if no other process recorded itself since.
 */
async function releaseHeld(serial: SerialClient, name: string, held: HeldTarget): Promise<void> {
  held.lease.stop();
  const clear = async (on: pg.Client): Promise<void> => {
    await on
      .query(`UPDATE audience_kit_targets SET holder = NULL WHERE target = $1 AND holder->>'lease' = $2`, [
        name,
        held.token,
      ])
      .catch(() => undefined);
  };
  // After a proof still under way.
  const lost = await serial.run(async (client) => {
    const gone = held.lease.signal.aborted;
    if (!gone) await clear(client);
    await client.end().catch(() => undefined);
    return gone;
  });
  if (!lost) return;
  const other = await held.db.connect().catch(() => undefined);
  if (other !== undefined) await clear(other).finally(() => other.end().catch(() => undefined));
}

/** A failure of the check right after the lock was taken. */
function poolerRefused(where: string, error: unknown): unknown {
  if (!(error instanceof Error) || error.message !== NOT_HELD) return error;
  return new ConfigError(
    'state_pooler_transaction_mode',
    `the state database ${where} does not keep a session's advisory lock on that session: the URL goes through a pooler in transaction or statement mode (PgBouncer pool_mode = transaction, a cloud "transaction" pooler), where the target's lock would leak to other clients`,
    {
      fix: 'connect to PostgreSQL directly, or through a pool in session mode (PgBouncer pool_mode = session; often another port of the same pooler)',
    },
  );
}

const NOT_HELD = 'the advisory lock is not held by this session';

/**
 * A transaction-mode pooler that keeps one client on one server session while nothing else runs
 * (PgBouncer does) passes the proof above, yet hands that session, lock and all, to the next
 * client: a second connection of the same URL served by the lock's own backend shows it.
 */
async function refuseSharedSession(db: Connector, backendPid: number): Promise<void> {
  const other = await db.connect();
  try {
    const r = await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    if (r.rows[0]?.pid === backendPid) throw new Error(NOT_HELD);
  } finally {
    await other.end().catch(() => undefined);
  }
}

/**
 * Proves the lock held now: by this backend (the one that took it: a pooler that changed it has
 * given the lock's session to another client) and listed as granted in pg_locks. A dead session
 * fails the query.
 */
async function proveLock(client: pg.Client, held: { backendPid: number; key: string }): Promise<void> {
  const key = BigInt.asUintN(64, BigInt(held.key));
  const r = await client.query<{ pid: number; held: boolean }>(
    `SELECT pg_backend_pid() AS pid, EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
       AND pid = pg_backend_pid() AND objsubid = 1 AND classid::bigint = $1 AND objid::bigint = $2) AS held`,
    [(key >> 32n).toString(), (key & 0xffffffffn).toString()],
  );
  const row = r.rows[0];
  if (row?.pid !== held.backendPid || row.held !== true) throw new Error(NOT_HELD);
}
