/**
 * A sync target locked in the PostgreSQL store: a session-level advisory lock held on one
 * dedicated connection for the whole sync, through which go every write-ahead insert and the
 * commit. If the connection is lost, the lock is gone with it and the next write fails: the
 * sync stops sending. Writes are fenced by the target's `version` (the commit count read when
 * the session started), so a writer that lost its lock cannot overwrite a newer commit.
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { z } from 'zod';
import { AudienceKitError, ConfigError, EnvironmentError } from '../../errors.js';
import { HeldLease } from '../../util/lease.js';
import { sleep as realSleep } from '../../util/clock.js';
import { processRunning } from '../../util/process.js';
import { snapshotName } from '../snapshot.js';
import {
  leaseLost,
  syncInProgress,
  type SnapshotTarget,
  type SnapshotWriteAhead,
  type TargetLockOptions,
  type TargetSession,
} from '../store.js';
import { connect, connectionLost } from './connection.js';
import { advisoryKey } from './keys.js';
import {
  filesChanged,
  readCommittedFiles,
  replayWriteAhead,
  writeCommittedFiles,
  type CommittedFiles,
  type StoredFiles,
  type WriteAheadReplay,
} from './snapshot-blobs.js';
import type { SnapshotError } from '../snapshot-format.js';

/** The private copies of snapshots are `<tmpdir>/audience-kit-state-<pid>-<random>`. */
const COPY_PREFIX = 'audience-kit-state-';

/**
 * The copies left by syncs that were killed (their process is gone): removed, since they hold
 * digests of users a later sync may remove. Only this user's directories are touched.
 */
function removeDeadCopies(): void {
  const root = tmpdir();
  for (const name of readdirSync(root)) {
    const pid = /^audience-kit-state-(\d+)-/.exec(name)?.[1];
    if (pid === undefined || processRunning(Number(pid))) continue;
    const path = join(root, name);
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory() === true && stat.uid === process.getuid?.()) rmSync(path, { recursive: true, force: true });
  }
}

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

function fenced(where: string): EnvironmentError {
  return new EnvironmentError(
    'state_fenced',
    `another process committed this target's snapshot in ${where} while this sync ran (its lock was lost): nothing more is sent and its snapshot is not stored`,
    { path: where, fix: 'run the sync again: it starts from the snapshot the database holds' },
  );
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

export class PostgresTargetSession implements TargetSession {
  readonly writeAhead: SnapshotWriteAhead;
  readonly lease: HeldLease;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown;
  private released = false;

  private constructor(
    readonly dir: string,
    private readonly client: pg.Client,
    private readonly name: string,
    private readonly where: string,
    private readonly held: HeldTarget,
    /** The target's commit count this session read: the fencing token of its writes. */
    private version: string,
    /** The committed files as the database holds them (what a commit compares with). */
    private stored: StoredFiles,
    private nextSeq: number,
    /** A committed file that fails its checks, or write-ahead rows that could not all be replayed (a gap, another version). */
    readonly damage: SnapshotError | undefined,
  ) {
    this.writeAhead = { wrote: (file, offset, bytes) => this.queue(file, offset, bytes) };
    this.lease = held.lease;
  }

  /**
   * Connect, lock the target, record the holder, wait out what an unclean previous holder could
   * still have in flight, and copy its snapshot into a private directory.
   */
  static async open(url: string, where: string, target: SnapshotTarget, o: TargetLockOptions): Promise<TargetSession> {
    const client = await connect(url, where);
    const name = snapshotName(target);
    let dir: string | undefined;
    let held: HeldTarget | undefined;
    try {
      await configureSession(client);
      await takeLock(client, name, o);
      held = await holdTarget(client, { url, name, where }, target, o);
      removeDeadCopies();
      dir = mkdtempSync(join(tmpdir(), `${COPY_PREFIX}${process.pid}-`));
      const { version, stored, replayed } = await materialize(client, name, dir);
      const damage = stored.damage ?? replayed.damage;
      const session = new PostgresTargetSession(
        dir,
        client,
        name,
        where,
        held,
        version,
        stored.files,
        replayed.last + 1,
        damage,
      );
      held.quiet = false;
      return session;
    } catch (error) {
      // Nothing was sent under this lock: its holder record goes with it.
      if (held === undefined) await client.end().catch(() => undefined);
      else await releaseHeld(client, name, held);
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      throw connectionLost(where, error);
    }
  }

  private queue(file: string, offset: number, bytes: Buffer): void {
    const seq = this.nextSeq++;
    const data = Buffer.from(bytes);
    this.chain = this.chain.then(async () => {
      if (this.failure !== undefined) return;
      try {
        const r = await this.client.query(
          `INSERT INTO audience_kit_snapshot_wal (target, seq, version, file, "offset", data)
           SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS
             (SELECT 1 FROM audience_kit_targets WHERE target = $1 AND version = $3)`,
          [this.name, seq, this.version, file, offset, data],
        );
        if (r.rowCount !== 1) throw fenced(this.where);
      } catch (error) {
        this.failure = connectionLost(this.where, error);
      }
    });
  }

  async durable(): Promise<void> {
    await this.chain;
    if (this.failure !== undefined) throw this.failure;
  }

  async persist(): Promise<void> {
    // Every queued write settles first (a failed one is included in the files anyway).
    await this.chain;
    if (!filesChanged(this.dir, this.stored) && this.nextSeq === 1) return;
    let stored: StoredFiles;
    this.held.quiet = true;
    try {
      await this.client.query('BEGIN');
      const r = await this.client.query(
        'UPDATE audience_kit_targets SET version = version + 1, committed_at = now() WHERE target = $1 AND version = $2 RETURNING version::text AS version',
        [this.name, this.version],
      );
      if (r.rowCount !== 1) throw fenced(this.where);
      // nextSeq > 1: write-ahead records were queued or replayed since the last commit.
      stored = await writeCommittedFiles(this.client, this.name, this.dir, this.stored, this.nextSeq > 1);
      await this.client.query('DELETE FROM audience_kit_snapshot_wal WHERE target = $1', [this.name]);
      await this.client.query('COMMIT');
      this.version = (r.rows[0] as { version: string }).version;
    } catch (error) {
      await this.client.query('ROLLBACK').catch(() => undefined);
      throw connectionLost(this.where, error);
    } finally {
      this.held.quiet = false;
    }
    this.stored = stored;
    this.nextSeq = 1;
    this.failure = undefined;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.lease.stop();
    await this.chain;
    rmSync(this.dir, { recursive: true, force: true });
    await releaseHeld(this.client, this.name, this.held);
  }
}

/** The lock taken: its lease, the token recorded in the holder row, and the backend that holds it. */
interface HeldTarget {
  url: string;
  where: string;
  lease: HeldLease;
  token: string;
  backendPid: number;
  /** The advisory lock's key. */
  key: string;
  /**
   * The holding connection is busy with the snapshot's read (the open) or a commit: a proof would
   * queue behind statements that may take minutes at 10M users, and nothing is sent meanwhile,
   * so the heartbeat does not prove then.
   */
  quiet: boolean;
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
  client: pg.Client,
  { url, name, where }: { url: string; name: string; where: string },
  target: SnapshotTarget,
  o: TargetLockOptions,
): Promise<HeldTarget> {
  const lease = new HeldLease({
    prove: () => (held.quiet ? Promise.resolve() : proveLock(client, held)),
    lost: (cause) =>
      cause instanceof AudienceKitError ? cause : leaseLost(where, 'its database session ended', cause),
    onLost: () => client.connection.stream.destroy(),
    ...(o.proofIntervalMs === undefined ? {} : { proofIntervalMs: o.proofIntervalMs }),
  });
  const pid = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const held: HeldTarget = {
    url,
    where,
    lease,
    token: randomBytes(12).toString('hex'),
    backendPid: pid.rows[0]?.pid ?? 0,
    key: advisoryKey(`target:${name}`),
    quiet: false,
  };
  await proveLock(client, held)
    .then(() => refuseSharedSession(url, where, held.backendPid))
    .catch(async (error: unknown) => {
      // Through a pooler the server session outlives this client: the lock is given back, not left to leak.
      await client.query('SELECT pg_advisory_unlock($1)', [held.key]).catch(() => undefined);
      return Promise.reject(poolerRefused(where, error));
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
  held.quiet = true;
  return held;
}

/**
 * End the session (which releases the advisory lock), its holder record cleared first. A cleared
 * holder tells the next one this sync ended cleanly: nothing of it is in flight (a session is
 * released once every request of its sync settled). A lost session's record is cleared through
 * a new connection, and only if no other process recorded itself since.
 */
async function releaseHeld(client: pg.Client, name: string, held: HeldTarget): Promise<void> {
  held.lease.stop();
  const clear = async (on: pg.Client): Promise<void> => {
    await on
      .query(`UPDATE audience_kit_targets SET holder = NULL WHERE target = $1 AND holder->>'lease' = $2`, [
        name,
        held.token,
      ])
      .catch(() => undefined);
  };
  const lost = held.lease.signal.aborted;
  if (!lost) await clear(client);
  await client.end().catch(() => undefined);
  if (!lost) return;
  const other = await connect(held.url, held.where).catch(() => undefined);
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
async function refuseSharedSession(url: string, where: string, backendPid: number): Promise<void> {
  const other = await connect(url, where);
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

/** The committed files and the write-ahead rows, read in one consistent snapshot of the database. */
async function materialize(
  client: pg.Client,
  name: string,
  dir: string,
): Promise<{ version: string; stored: CommittedFiles; replayed: WriteAheadReplay }> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  try {
    const v = await client.query<{ version: string }>(
      'SELECT version::text AS version FROM audience_kit_targets WHERE target = $1',
      [name],
    );
    const version = v.rows[0]?.version ?? '0';
    const stored = await readCommittedFiles(client, name, dir);
    const replayed = await replayWriteAhead(client, name, version, dir);
    await client.query('COMMIT');
    return { version, stored, replayed };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
