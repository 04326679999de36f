/**
 * A sync target locked in the PostgreSQL store: a session-level advisory lock held on one
 * dedicated connection for the whole sync, through which go every write-ahead insert and the
 * commit. If the connection is lost, the lock is gone with it and the next write fails: the
 * sync stops sending. Writes are fenced by the target's `version` (the commit count read when
 * the session started), so a writer that lost its lock cannot overwrite a newer commit.
 */
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { z } from 'zod';
import { EnvironmentError } from '../../errors.js';
import { sleep as realSleep } from '../../util/clock.js';
import { processRunning } from '../../util/process.js';
import { snapshotName } from '../snapshot.js';
import {
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

const holderSchema = z.object({ host: z.string(), pid: z.number(), since: z.string(), run_id: z.string().optional() });

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
        holder.success
          ? `pid ${holder.data.pid} on host ${holder.data.host} since ${holder.data.since}${holder.data.run_id === undefined ? '' : `, run ${holder.data.run_id}`}`
          : 'another process holds its lock in the state database',
      );
    }
    await sleep(Math.min(500, 50 + attempt * 50));
  }
}

export class PostgresTargetSession implements TargetSession {
  readonly writeAhead: SnapshotWriteAhead;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown;
  private released = false;

  private constructor(
    readonly dir: string,
    private readonly client: pg.Client,
    private readonly name: string,
    private readonly where: string,
    /** The target's commit count this session read: the fencing token of its writes. */
    private version: string,
    /** The committed files as the database holds them (what a commit compares with). */
    private stored: StoredFiles,
    private nextSeq: number,
    /** A committed file that fails its checks, or write-ahead rows that could not all be replayed (a gap, another version). */
    readonly damage: SnapshotError | undefined,
  ) {
    this.writeAhead = { wrote: (file, offset, bytes) => this.queue(file, offset, bytes) };
  }

  /** Connect, lock the target, record the holder and copy its snapshot into a private directory. */
  static async open(url: string, where: string, target: SnapshotTarget, o: TargetLockOptions): Promise<TargetSession> {
    const client = await connect(url, where);
    const name = snapshotName(target);
    let dir: string | undefined;
    try {
      await takeLock(client, name, o);
      const holder = { host: hostname(), pid: process.pid, since: new Date().toISOString(), run_id: o.runId };
      await client.query(
        `INSERT INTO audience_kit_targets (target, account_id, kind, target_id, holder) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (target) DO UPDATE SET holder = EXCLUDED.holder`,
        [name, target.accountId, target.kind, target.id, JSON.stringify(holder)],
      );
      removeDeadCopies();
      dir = mkdtempSync(join(tmpdir(), `${COPY_PREFIX}${process.pid}-`));
      const { version, stored, replayed } = await materialize(client, name, dir);
      const damage = stored.damage ?? replayed.damage;
      return new PostgresTargetSession(dir, client, name, where, version, stored.files, replayed.last + 1, damage);
    } catch (error) {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      await client.end().catch(() => undefined);
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
    }
    this.stored = stored;
    this.nextSeq = 1;
    this.failure = undefined;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.chain;
    rmSync(this.dir, { recursive: true, force: true });
    // Ending the session releases the advisory lock; the holder row is cleared first when possible.
    await this.client
      .query('UPDATE audience_kit_targets SET holder = NULL WHERE target = $1', [this.name])
      .catch(() => undefined);
    await this.client.end().catch(() => undefined);
  }
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
