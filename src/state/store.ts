/**
 * The state-store seam: where a sync's snapshot, its target lock, the audit log and the upload
 * run journals live. Modelled on Terraform's state backends. The sync engine (upload/sync.ts)
 * talks only to this.
 *
 * - `DirectoryStore` (state/directory-store.ts): a state directory, today's files unchanged.
 * - `MirrorStore` (state/mirror.ts) over a narrow `StateBackend` (state/backend.ts): PostgreSQL
 *   (state/postgres/store.ts, tables `audience_kit_*`), or memory (state/memory-backend.ts, tests).
 *
 * The snapshot's format stays one (format 2: `index`, `data.<gen>`, `pending`, `unrecovered.json`,
 * state/snapshot.ts) whatever the store: a store hands the engine a local directory holding the
 * target's committed files (`TargetSession.dir`), so every check (header CRC, target, digest,
 * recovery, the audit log's rollback check) runs on the same bytes. A remote store also hears
 * every write-ahead record (`SnapshotWriteAhead`) and makes it durable on its side before the
 * engine hands the users to the sender, and `persist()` makes a commit its own.
 */
import { ConfigError, EnvironmentError } from '../errors.js';
import type { AuditRecord, AuditRun, AuditVerification, ChainedAuditRecord, RecordedSnapshot } from './audit.js';
import type { JournalKey, JournalSummary, OpenJournalOptions, UploadJournal } from './journal.js';
import type { SnapshotError, SnapshotTarget } from './snapshot-format.js';
import type { Lease } from '../util/lease.js';

export type StateStoreKind = 'directory' | 'postgres' | 'memory';

/** One store of state, opened once per command or library call and closed by whoever opened it. */
export interface StateStore {
  readonly kind: StateStoreKind;
  /**
   * The store for messages and reports: the directory's absolute path, or the PostgreSQL URL
   * without its password (`postgres://app@db.example.com:5432/ads`). Never a secret.
   */
  describe(): string;
  /**
   * Take the target's lock: one sync per target across every process and machine that uses
   * this store. With `waitMs` 0 (the default) a held lock is refused at once with ConfigError
   * `sync_in_progress` naming the holder when known (host, pid, since); otherwise it is tried
   * again until `waitMs` has passed. The session holds the lock until `release()`.
   */
  lockTarget(target: SnapshotTarget, options?: TargetLockOptions): Promise<TargetSession>;
  /**
   * The targets this store holds a snapshot of (committed files or a sync's write-ahead records),
   * for `state move`. The directory store names a target by the audit log's sync records (its
   * directory name is a hash): a snapshot no record names is refused (`state_target_unknown`).
   */
  targets(): Promise<SnapshotTarget[]>;
  /**
   * The marker of an unfinished `state move` into this store (state/move.ts): the source it named,
   * undefined when there is none. While it is there, `lockTarget` refuses (`state_move_unfinished`).
   */
  moveMarker(): Promise<string | undefined>;
  /** Set the move marker (`source`), durably, before a move's first write; clear it (undefined) once the copy is verified. */
  setMoveMarker(source: string | undefined): Promise<void>;
  /**
   * Remove every snapshot and audit record of the store, for a move started over: only while its
   * marker is there, which proves that the store was empty when that move began.
   */
  discardMoved(): Promise<void>;
  /** The audit log (hash-chained records, state/audit.ts). */
  readonly audit: AuditLog;
  /** The upload run journals (resume), state/journal.ts. */
  readonly journals: RunJournals;
  /** Close connections; sessions must have been released. Idempotent. */
  close(): Promise<void>;
}

/** The wait before sending of a sync that took its target over from a holder that ended uncleanly. */
export interface TakeoverWait {
  readonly ms: number;
  /** The last holder, as it recorded itself (absent in a record this version cannot read). */
  readonly holder?: { readonly host: string; readonly pid: number; readonly since: string };
}

export interface TargetLockOptions {
  /** How long to wait for a held lock (default 0: refuse at once). */
  waitMs?: number;
  /** Recorded with the lock (PostgreSQL: in `audience_kit_targets.holder`) so a refusal can name it. */
  runId?: string;
  /**
   * The longest one request of this process can be in flight once sent (the client's
   * `requestTimeoutMs`): recorded with the lock, so a process that takes the target over after
   * this one ended uncleanly waits it out before it sends. Default 70 s (the client's defaults).
   */
  requestTimeoutMs?: number;
  /** The lease's proof interval (heartbeat period, longest unproven wait); default 10 s. */
  proofIntervalMs?: number;
  /** The move's own sessions: taken while the store carries its move marker. */
  moving?: boolean;
  /** Called before the wait a takeover after an unclean end begins with (PostgreSQL store). */
  onTakeoverWait?: (wait: TakeoverWait) => void;
  /** Injectable for tests. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

/**
 * A target locked by this process. `dir` is a local directory holding the target's committed
 * snapshot files: the directory store's own `snapshots/<kind>-<hash>/`, or a private temporary
 * copy (mode 0700) the PostgreSQL store filled from the database, with `pending` and the data
 * file's appended frames rebuilt from the write-ahead rows of a sync that was killed (on this
 * machine or another). Snapshot.open(dir, { writeAhead }) opens it as always.
 */
export interface TargetSession {
  readonly dir: string;
  /**
   * The lock as a lease (util/lease.ts): proven by a heartbeat from the lock until `release()`,
   * its signal aborted once it is lost (the PostgreSQL session ended, the lock file replaced or
   * removed). Every request of the sync is sent under it. A store took the lock only after any
   * request the previous holder could still have in flight (when it ended uncleanly) was waited out.
   */
  readonly lease: Lease;
  /**
   * Passed to Snapshot.open: hears each write-ahead write after it is fsynced locally and
   * stores it (undefined for the directory store, whose files are the record).
   */
  readonly writeAhead: SnapshotWriteAhead | undefined;
  /**
   * What the store could not copy into `dir` as it holds it (PostgreSQL: a committed file that
   * fails its size or SHA-256, left in `dir` as its rows rebuilt it; write-ahead rows with a gap or
   * of another version); undefined when there is none (always, for the directory, whose files are
   * judged by Snapshot.open). The sync refuses the target with it unless it recovers.
   */
  readonly damage: SnapshotError | undefined;
  /**
   * Resolves once every write handed to `writeAhead` so far is durable in the store; rejects
   * with the first failure (connection lost: the lock may be gone; fenced: another process
   * committed). The engine awaits it before the sender gets a chunk: never send without it.
   */
  durable(): Promise<void>;
  /**
   * Make the committed files now in `dir` (after Snapshot.open committed a killed sync's
   * `pending`, a commit, a recovery, unrecovered.json written or removed) the store's, and drop
   * the write-ahead records they include. Atomic, and fenced: if another writer committed since
   * this session's snapshot was read (its lock was lost), it fails with EnvironmentError
   * `state_fenced` and changes nothing; it proves the lease first (`state_lease_lost`). Refused
   * (`state_session_misused`) while write-ahead writes are in flight (await `durable()` first),
   * and a write or a second persist during it are; a session with `damage` refuses with it
   * unless `recovered` says a recovery rebuilt the files. No-op for the directory store and when
   * nothing changed.
   */
  persist(o?: { recovered?: boolean }): Promise<void>;
  /** Release the lock; a remote store removes `dir`. Idempotent; never throws for a lost connection. */
  release(): Promise<void>;
}

/**
 * Every byte Snapshot appends to its write-ahead files (`pending`, and the frames of users
 * about to be sent appended to `data.<gen>`), in order. Called synchronously after the local
 * write and fsync; the store queues it and `TargetSession.durable()` says when it is stored.
 * Replaying the writes in order over the committed files rebuilds the directory exactly.
 */
export interface SnapshotWriteAhead {
  /** `bytes` were written at `offset` of `file` (`pending` or `data.<gen>`; offset 0 of `pending` starts a new log). */
  wrote(file: string, offset: number, bytes: Buffer): void;
}

/**
 * The hash-chained audit log (format and chain: state/audit.ts). The PostgreSQL store keeps each
 * record's exact JSON line (the bytes the chain hashes) in `audience_kit_audit.line`, in `seq`
 * order, with run_id, event, account and target columns for SQL queries.
 */
export interface AuditLog {
  /** For messages: the file's path, or the store's description with the table. */
  describe(): string;
  /** Append one record chained to the last one (serialized against every other writer). */
  append(record: AuditRecord): Promise<ChainedAuditRecord>;
  /** The sync snapshot the log last recorded for the target (see lastRecordedSnapshot in audit.ts). */
  lastRecordedSnapshot(target: SnapshotTarget): Promise<RecordedSnapshot | undefined>;
  /** Check every link; with `head`, that the record it names is still there (verifyAuditLog). */
  verify(options?: { head?: string }): Promise<AuditVerification>;
  /** The runs in log order (readAuditRuns). */
  runs(): Promise<AuditRun[]>;
  /** Every record's exact line (without its newline), in order; none when the log does not exist. */
  lines(): Promise<string[]>;
  /**
   * Write `lines` as they are (a log moved from another store: the same bytes, so the same chain
   * and head) into this log, which must be empty (`state_destination_not_empty` otherwise).
   */
  importLines(lines: readonly string[]): Promise<void>;
}

/**
 * Upload run journals (state/journal.ts): one per journal key, locked while a run writes it
 * (`run_in_progress` when another process holds it). The directory store's are files
 * (`runs/<key>/`); the PostgreSQL store keeps each line's exact text in
 * `audience_kit_journal_lines` (the same chain) and the failed batches' bodies as bytea in
 * `audience_kit_journal_failed`, under an advisory lock held on the run's own connection.
 */
export interface RunJournals {
  find(key: JournalKey): Promise<JournalSummary | undefined>;
  open(key: JournalKey, options: OpenJournalOptions): Promise<UploadJournal>;
  /** Every journal the store holds (complete or not). */
  list(): Promise<JournalSummary[]>;
}

/** A target of a store that carries the marker of an unfinished move (`source`: where it copies from). */
export function moveUnfinished(store: string, source: string): ConfigError {
  return new ConfigError(
    'state_move_unfinished',
    `a state move from ${source} into ${store} did not finish: its targets are not all there, and a sync of a target not copied yet would take it for a first sync; nothing was sent`,
    {
      fix: `run the same state move again (audience-kit state move --from ${source} --to ${store}): it starts the copy over, the source unchanged; or keep syncing against the source`,
    },
  );
}

/** A second sync of a target: refused (after the wait), naming the holder when the store knows it. */
export function syncInProgress(holder: string, cause?: unknown): ConfigError {
  return new ConfigError('sync_in_progress', `another sync of this target is running (${holder})`, {
    fix: 'wait for it to finish (or stop it), then run the sync again',
    ...(cause === undefined ? {} : { cause }),
  });
}

/** A sync's lock on its target was found lost (`why`): it sends nothing more. */
export function leaseLost(where: string, why: string, cause?: unknown): EnvironmentError {
  return new EnvironmentError(
    'state_lease_lost',
    `this sync's lock on the target in ${where} was lost (${why}): nothing more is sent, and another sync may now hold it`,
    {
      path: where,
      fix: 'run the sync again (once any other sync of the target has ended): it continues from what the store recorded',
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

/** ConfigError `state_move_unfinished` when `store` carries an unfinished move's marker (a sync refuses it before any request). */
export async function refuseUnfinishedMove(store: StateStore): Promise<void> {
  const source = await store.moveMarker();
  if (source !== undefined) throw moveUnfinished(store.describe(), source);
}
