/**
 * The narrow state backend (Terraform's lesson: a dumb backend, the logic written once above it).
 * A backend keeps a target's committed snapshot files as a head (size, SHA-256, sealed block
 * digests) and patch rows each, a numbered write-ahead log, a lease, the audit log and the run
 * journals, and owns its connections; it knows nothing of the snapshot's format. The mirror
 * (state/mirror.ts) turns it into a `StateStore`: it materialises the committed files into a private
 * directory, replays the write-ahead log over them, stores a commit's changed blocks (block deltas
 * with sealed digests, state/file-delta.ts) and sweeps the copies of killed syncs.
 *
 * A new backend is one file implementing `StateBackend` plus its line in the registry
 * (`BACKENDS` in state/open-store.ts), and passes `test/state-contract.test.ts`. The PostgreSQL
 * backend is state/postgres/store.ts; the in-memory one (tests, and the proof of the seam)
 * state/memory-backend.ts. The directory store (state/directory-store.ts) is not a backend: its
 * files are the record, so it needs neither mirror nor log.
 */
import { EnvironmentError } from '../errors.js';
import type { SnapshotTarget } from './snapshot-format.js';
import type { StateStore, TargetLockOptions } from './store.js';
import type { Lease } from '../util/lease.js';

/** A committed file's head: its size and SHA-256 (null: stored by PostgreSQL schema 1, whose rows must then cover it exactly). */
export interface StoredFileHead {
  name: string;
  size: number;
  sha256: Buffer | null;
}

/** One write-ahead record: `data` written at `offset` of `file` (`pending` or `data.<gen>`). Numbered 1, 2, 3… since the last commit. */
export interface WriteAheadRecord {
  seq: number;
  file: string;
  offset: number;
  data: Buffer;
}

/** A consistent read of a target's committed files and write-ahead log, under its lease. */
export interface CommittedView {
  /** The fence token: the target's commit count ('0' before its first commit). */
  readonly fence: string;
  files(): Promise<StoredFileHead[]>;
  /**
   * The file's patch rows in `seq` order, each read into `into` (valid until the next is asked
   * for): ranges packed as file-delta.ts says. A row that cannot be read throws a SnapshotError.
   */
  rows(name: string, into: Buffer): AsyncIterable<{ seq: number; bytes: Buffer }>;
  /** How many write-ahead records are of another fence (written over committed files that are gone). */
  staleRecords(): Promise<number>;
  /** The write-ahead records of this fence after `seq`, in order, at most `limit`. */
  records(after: number, limit: number): Promise<WriteAheadRecord[]>;
}

/** What a commit writes, inside the backend's transaction: nothing of it is visible until the commit ends. */
export interface CommitWriter {
  /**
   * The value stored with the file by the commit that wrote it (its SHA-256, then its sealed block
   * digests) when the head says `size` bytes and the value is `sealedBytes` long; undefined
   * otherwise (none, or a damaged value that cannot be read).
   */
  blocks(name: string, size: number, sealedBytes: number): Promise<Buffer | undefined>;
  remove(name: string): Promise<void>;
  /** Set the file's head and sealed digests; `whole`: its rows are dropped first (it is written again from seq 0). */
  put(head: StoredFileHead & { sha256: Buffer; blocks: Buffer | null }, whole: boolean): Promise<void>;
  row(name: string, seq: number, bytes: Buffer): Promise<void>;
  /** The bytes of the file's stored row `seq`, read into `into`; undefined when there is none. */
  storedRow(name: string, seq: number, into: Buffer): Promise<Buffer | undefined>;
  /** Replace the bytes of the file's stored row `seq` (a row of the same ranges, their bytes as the file now has them). */
  replaceRow(name: string, seq: number, bytes: Buffer): Promise<void>;
}

/** A target leased: exclusive across every process and machine using the backend, until `release()`. */
export interface BackendLease {
  /** Proven by a heartbeat; its signal aborted once the lease is lost. */
  readonly lease: Lease;
  /** Run `work` over one consistent read of the target (failures reported as the backend's errors). */
  read<T>(work: (view: CommittedView) => Promise<T>): Promise<T>;
  /** Append one write-ahead record, if the target's fence is still `fence` (EnvironmentError `state_fenced` otherwise). */
  append(fence: string, record: WriteAheadRecord): Promise<void>;
  /**
   * Atomically: check the fence is still `fence` (`state_fenced` otherwise, nothing changed), run
   * `work`, drop the write-ahead log, and move the fence on. Resolves to the new fence. A commit
   * cut off midway (a failure, a kill) leaves everything as it was.
   */
  commit(fence: string, work: (writer: CommitWriter) => Promise<void>): Promise<string>;
  /** Give the lease back (a lost one too). Idempotent; never throws for a lost connection. */
  release(): Promise<void>;
}

/** A backend: the store's own members (describe, targets, the move marker, the audit log, the run journals, close), and leases. */
export interface StateBackend extends Pick<
  StateStore,
  'kind' | 'describe' | 'targets' | 'moveMarker' | 'setMoveMarker' | 'discardMoved' | 'audit' | 'journals' | 'close'
> {
  /**
   * Lease the target (refused with `sync_in_progress` naming the holder when it is held, after
   * `waitMs`), having waited out what a previous holder that ended uncleanly may still have in flight.
   */
  lease(target: SnapshotTarget, options: TargetLockOptions): Promise<BackendLease>;
}

/** A write under a fence that moved on: another process committed the target since this one read it. */
export function fenced(where: string): EnvironmentError {
  return new EnvironmentError(
    'state_fenced',
    `another process committed this target's snapshot in ${where} while this sync ran (its lock was lost): nothing more is sent and its snapshot is not stored`,
    { path: where, fix: 'run the sync again: it starts from the snapshot the store holds' },
  );
}
