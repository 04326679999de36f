/**
 * The upload's public shapes: what goes in (users, options), what comes out (progress, report).
 * Only types here, so every other upload module can import them without a cycle.
 */
import type { AdsClient } from '../api/client.js';
import type { AudienceKitError } from '../errors.js';
import type { PackedUsers } from '../hashing/chunk.js';
import type { HashRecordsOptions } from '../hashing/pipeline.js';
import type { RawRecord } from '../identifiers/rows.js';
import type { ConsentJson, HashSummary, HashTypeCounts } from '../hashing/summary.js';
import type { KnownUsers } from '../hashing/known-users.js';
import type { AudienceUser, IdentifierType } from '../platform/users.js';
import type { BuiltUser, RejectReason } from '../identifiers/types.js';
import type { TargetKind } from '../platform/targets.js';
import type { UploadJournal } from '../state/journal.js';
import type { Clock } from '../util/clock.js';
import type { BatchGroup, OperationType } from '../platform/batch.js';
import type { BatchLimits, PackedBatch } from './plan.js';
import type { Target } from './target.js';
import type { UploadTarget } from '../platform/targets.js';
export type UploadOperation = 'update' | 'delete';
export type UploadStatus = 'completed' | 'partial' | 'failed' | 'interrupted';

/** A built user; `json` (its `serializeUser`) when the producer already computed it. */
export type UploadUser = BuiltUser & { json?: string };

/**
 * The cheapest shape for a producer on another thread (hashCsv with `emit: 'packed'` yields
 * it): users already serialized, with their input lines and dedupe fingerprints.
 */
export interface UploadPackedChunk {
  readonly packed: PackedUsers;
}

/**
 * What `users` may yield: a built user (hashRecords), a chunk of the fast file pipeline
 * (hashCsv: `{ users: HashedUser[] }`, or `{ packed }` with emit `packed`), an array of built
 * users, or a bare user object.
 */
export type UploadItem =
  UploadUser | readonly UploadUser[] | { readonly users: readonly UploadUser[] } | UploadPackedChunk | AudienceUser;

/** What a pipeline run exposes besides its items (hashRecords / hashCsv runs): used when present. */
export interface PipelineExtras {
  summary?: HashSummary;
  bytesRead?: () => number;
  totalBytes?: number | undefined;
  /** Stops the producer even while it waits for input (an interrupted upload calls it). */
  close?: () => Promise<void>;
  /** A sync's table of the users its snapshot knows, given once the snapshot is open, before or while the run is read (HashCsvRun.leaveOutKnownUsers). */
  leaveOutKnownUsers?: (table: KnownUsers | undefined) => boolean;
}

export type UploadUsers = (AsyncIterable<UploadItem | RawRecord> | Iterable<UploadItem | RawRecord>) & PipelineExtras;

export interface UploadProgress {
  rows: number;
  users: number;
  duplicates: number;
  batchesPacked: number;
  requestsSent: number;
  batchesConfirmed: number;
  batchesSkipped: number;
  batchesFailed: number;
  usersConfirmed: number;
  bytesSent: number;
  retries: number;
  mismatches: number;
  rateLimitWaits: number;
  /** Time the client spent waiting: rate limits, retry backoffs, server resets. */
  waitedMs: number;
  inFlight: number;
  elapsedMs: number;
  /** From `inputProgress`, for an ETA. */
  inputBytesRead?: number;
  inputTotalBytes?: number;
  done: boolean;
}

export interface FailedBatchReport {
  index: number;
  users: number;
  reason: string;
  code: string;
}

export interface OperationErrorReport {
  /** Input line of the refused user, when the platform named the user. */
  line: number | null;
  /** First and last input line of the operation's users (all of them when no user was named). */
  operation_lines: [first: number, last: number] | null;
  batch: number;
  operation: number;
  code: string;
}

export interface UploadReport {
  run_id: string;
  status: UploadStatus;
  account_id: string;
  target: { kind: TargetKind; id: string };
  operation: UploadOperation;
  dry_run: boolean;
  resumed: boolean;
  /** Data rows read (malformed CSV records included). */
  rows: number;
  rows_without_identifier: number;
  malformed_rows: number;
  /** Distinct users packed into batches (duplicates removed). */
  users: number;
  users_confirmed: number;
  /** Users in batches confirmed by an earlier run of the journal. */
  users_confirmed_earlier: number;
  users_failed: number;
  duplicates: number;
  oversized_users: number;
  oversized_lines: number[];
  /** Per type: values valid (hashed here), invalid, and digests passed through. */
  identifiers: Partial<Record<IdentifierType, HashTypeCounts>>;
  /** Invalid values by reason, with the first line numbers. */
  invalid_by_reason: Partial<Record<RejectReason, { count: number; lines: number[] }>>;
  /** Invalid identifier values / all identifier values read (0 when none were read). */
  reject_rate: number;
  /** Inputs with consent or opt-out columns: what they said and what the policy left out. */
  consent?: ConsentJson;
  batches: number;
  batches_confirmed: number;
  batches_skipped: number;
  batches_failed: number;
  failed_batches: FailedBatchReport[];
  /**
   * HTTP requests the batches made: every attempt, the client's own retries and the re-sends
   * after a count mismatch included (each batch's first attempt plus `retries`).
   */
  requests: number;
  /** Body bytes of those requests (each attempt's), or on a dry run of the batches planned. */
  bytes: number;
  /** The client's retries (5xx, 429, reset, timeout) plus the uploader's re-sends after a count mismatch. */
  retries: number;
  mismatches: number;
  rate_limit_waits: number;
  /** Time the client spent waiting: rate limits, retry backoffs, server resets. */
  waited_ms: number;
  success_count: number;
  total_count: number;
  operation_errors: OperationErrorReport[];
  operation_errors_total: number;
  /**
   * Batches the platform confirmed whose journal record could not be written (disk full): the
   * run stopped there; a resumed run sends them again (Update treats repeats as no-ops).
   */
  unrecorded_batches: number[];
  started_at: string;
  ended_at: string;
  duration_ms: number;
  /**
   * Why the run stopped early, as thrown (`code`, `message`, `fix`; the class tells its kind).
   * Serialize it with `reportJson` (an Error has no enumerable message).
   */
  error?: AudienceKitError;
  /**
   * runUpload with `consent: { policy: 'do-not-reach' }`: the list's run (the rows that say no);
   * `status` and `error` above are then both runs'. Absent when the list's run did not start.
   */
  do_not_reach?: UploadReport;
}

/** A batch the platform confirmed (every user counted), for `onConfirmed`. */
export interface ConfirmedBatchInfo {
  index: number;
  group: BatchGroup;
  users: number;
  /** Input line (or 1-based position of a bare user object) of each user of the batch, in body order. */
  lines: Uint32Array;
  /** True when an earlier run of the journal confirmed it (skipped here, not sent). */
  earlier: boolean;
}

/** Options of how batches are sent (shared by uploadAudience, sendUsers and runUpload). */
export interface SendOptions {
  /** Not needed with `dryRun`. */
  client?: AdsClient;
  accountId: string;
  target: UploadTarget;
  limits?: Partial<BatchLimits>;
  /** Send identical users once (default true; the set of seen users costs 11-23 bytes per distinct user). */
  dedupe?: boolean;
  /** Batches in flight (default DEFAULT_UPLOAD_CONCURRENCY); p-limit enforces it. */
  concurrency?: number;
  /**
   * Re-sends of a batch after a count mismatch (default DEFAULT_MAX_RETRIES). Failed requests
   * are retried by the client alone, within its `maxAttempts`.
   */
  maxRetries?: number;
  /** First backoff between mismatch re-sends after the immediate one (default 1 s, doubling, capped at 30 s). */
  retryBaseMs?: number;
  /**
   * Stop reading and sending, return status `interrupted`: the requests on the wire finish (their
   * batches confirmed and recorded), every wait of the client and of the re-sends is cut.
   */
  signal?: AbortSignal;
  /**
   * As `signal`, and the requests on the wire are cut too: their batches end neither confirmed
   * nor failed, left for a resumed run (or, for a sync, re-sent by the next one).
   */
  cancelSignal?: AbortSignal;
  /**
   * Called once per confirmed batch (and per batch skipped as confirmed by an earlier run). A
   * promise it returns is awaited before the batch frees its place among the `concurrency` in
   * flight (record the confirmation durably there); if it rejects, the run stops as for a journal
   * that cannot record.
   */
  onConfirmed?: (batch: ConfirmedBatchInfo) => void | Promise<void>;
  /** Time and waits (the mismatch backoff); tests pass one whose sleep returns at once. */
  clock?: Clock;
  random?: () => number;
}

export interface UploadAudienceOptions extends SendOptions {
  operation?: UploadOperation;
  /** UTC ISO 8601; refused for do-not-reach lists. */
  effectiveAt?: string;
  /** UTC ISO 8601; for do-not-reach lists at most 13 months ahead. */
  expiresAt?: string;
  /**
   * The users. A hashRecords() or hashCsv() run is used as is: its summary gives the row
   * and identifier counts and (hashCsv) its byte counts give the progress ETA. Bare user
   * objects must already be hashed (64 lowercase hex, except partner_user_id): anything else
   * is refused, never sent. With `records`, items are raw records instead.
   */
  users: UploadUsers;
  /**
   * `users` yields raw records (objects keyed by column name, e.g. rows of a database cursor):
   * they are mapped, normalized and hashed here (hashRecords) with these options.
   */
  records?: HashRecordsOptions;
  /**
   * Stop (InputError `input_reject_rate_exceeded`) when more than this share (0..1) of the
   * values was rejected: judged after each item once 1000 values were seen, and at the end of
   * the input before the last batch is sent (guardInput).
   */
  maxRejectRate?: number;
  /** An input without a single user is an error (`input_no_users`) instead of a `completed` run. */
  requireUsers?: boolean;
  /**
   * Refuse, before any request, an update of a custom audience whose input holds fewer distinct
   * users (ConfigError `audience_too_small`; default 100, 0 turns it off). Not for do-not-reach
   * lists nor removals.
   */
  minAudienceSize?: number;
  journal?: UploadJournal;
  dryRun?: boolean;
  runId?: string;
  /** Called for each batch as it is packed (the CLI writes the first one to a preview file). */
  onBatch?: (batch: PackedBatch) => void;
  onProgress?: (p: UploadProgress) => void;
  /** Minimum time between two progress callbacks while reading (default 250 ms). */
  progressIntervalMs?: number;
  /** Input position for the progress ETA (default: from a hashCsv run). */
  inputProgress?: () => { bytesRead: number; totalBytes?: number };
}

export interface SendUsersOptions extends Omit<SendOptions, 'target'> {
  /** As a caller names it, or described (`describeTarget`). */
  target: UploadTarget | Target;
  operationType: OperationType;
  /** UTC ISO 8601 (custom audiences, Update only). */
  effectiveAt?: string;
  /** UTC ISO 8601. */
  expiresAt?: string;
  /** Built users (`line` is handed back in `onConfirmed`), hashCsv chunks, or bare hashed user objects. */
  users: (AsyncIterable<UploadItem> | Iterable<UploadItem>) & PipelineExtras;
  journal?: UploadJournal;
  /** Pack without sending: the report's `batches` and `bytes` are what would be sent. */
  dryRun?: boolean;
}
