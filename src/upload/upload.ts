/**
 * `uploadAudience()`: users in, verified batches out.
 *
 * Users (built user objects, chunks of them from the fast file pipeline, or plain user
 * objects) are deduplicated and packed (batch.ts), sent concurrently under the client's rate
 * limiter, and every response is verified: `success_count == total_count == users sent` (per
 * operation for do-not-reach lists). A mismatch re-sends the same batch (at once, then with
 * backoff). With a journal, confirmed batches are recorded as they are confirmed and skipped
 * when a run resumes; batches that still fail are kept for `--resume`.
 *
 * Reading is paced by sending: at most `concurrency` requests are in flight and the next
 * batch waits for a free slot, so memory stays flat whatever the input size.
 */
import pLimit from 'p-limit';
import {
  postCustomAudienceUsers,
  postDoNotReachListUsers,
  type AdsClient,
  type UserBatchResult,
} from '../api/index.js';
import {
  BatchPacker,
  DO_NOT_REACH_TYPES,
  maxDoNotReachExpiry,
  resolveBatchLimits,
  type BatchGroup,
  type BatchLimits,
  type PackedBatch,
} from './batch.js';
import {
  AudienceKitError,
  AuthError,
  BatchVerificationError,
  ConfigError,
  EnvironmentError,
  EXIT_CODES,
  exitCodeFor,
  HttpError,
  type ExitCode,
} from '../errors.js';
import { batchDigest, JournalError, type RunJournal } from '../state/journal.js';
import { hashRecords, type HashRecordsOptions, type RawRecord } from '../hashing/pipeline.js';
import { guardInput, rejectGuardOptions } from '../identifiers/reject-guard.js';
import type { PackedUsers } from '../hashing/chunk.js';
import { addUserToSummary, createHashSummary, type HashSummary, type HashTypeCounts } from '../hashing/summary.js';
import {
  IDENTIFIER_TYPES,
  serializeUser,
  type AudienceUser,
  type BuiltUser,
  type IdentifierType,
  type RejectReason,
} from '../identifiers/normalize.js';

export type UploadTarget = { customAudienceId: string } | { doNotReachListId: string };
export type UploadOperation = 'update' | 'delete';
export type UploadStatus = 'completed' | 'partial' | 'failed' | 'interrupted';

/** A built user; `json` (its `serializeUser`) when the producer already computed it. */
export type UploadUser = BuiltUser & { json?: string };
/**
 * What `users` may yield: a built user (hashRecords), a chunk of the fast file pipeline
 * (hashFile: `{ users: HashedUser[] }`, or `{ packed }` with emit `packed`), an array of built
 * users, or a bare user object.
 */
export type UploadItem =
  UploadUser | readonly UploadUser[] | { readonly users: readonly UploadUser[] } | UploadPackedChunk | AudienceUser;

/**
 * The cheapest shape for a producer on another thread (hashFile with `emit: 'packed'` yields
 * it): users already serialized, with their input lines and dedupe fingerprints.
 */
export interface UploadPackedChunk {
  readonly packed: PackedUsers;
}

/** What a pipeline run exposes besides its items (hashRecords / hashFile runs): used when present. */
interface PipelineExtras {
  summary?: HashSummary;
  bytesRead?: () => number;
  totalBytes?: number | undefined;
  /** Stops the producer even while it waits for input (an interrupted upload calls it). */
  close?: () => Promise<void>;
}

export interface UploadClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

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
  batch: number;
  operation: number;
  code: string;
}

export interface UploadReport {
  run_id: string;
  status: UploadStatus;
  account_id: string;
  target: { kind: 'custom_audience' | 'do_not_reach_list'; id: string };
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
  batches: number;
  batches_confirmed: number;
  batches_skipped: number;
  batches_failed: number;
  failed_batches: FailedBatchReport[];
  /** HTTP requests made by the uploader (re-sends included; the client's own retries are in `retries`). */
  requests: number;
  bytes: number;
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
  /** The CLI's exit code for this outcome (EXIT_CODES). */
  exit_code: ExitCode;
  error?: { code: string; message: string; fix?: string };
}

export interface UploadAudienceOptions {
  /** Not needed with `dryRun`. */
  client?: AdsClient;
  accountId: string;
  target: UploadTarget;
  operation?: UploadOperation;
  /** UTC ISO 8601; refused for do-not-reach lists. */
  effectiveAt?: string;
  /** UTC ISO 8601; for do-not-reach lists at most 13 months ahead. */
  expiresAt?: string;
  /**
   * The users. A hashRecords() or hashFile() run is used as is: its summary gives the row
   * and identifier counts and (hashFile) its byte counts give the progress ETA. Bare user
   * objects must already be hashed (64 lowercase hex, except partner_user_id): anything else
   * is refused, never sent. With `records`, items are raw records instead.
   */
  users: (AsyncIterable<UploadItem | RawRecord> | Iterable<UploadItem | RawRecord>) & PipelineExtras;
  /**
   * `users` yields raw records (objects keyed by column name, e.g. rows of a database cursor):
   * they are mapped, normalized and hashed here (hashRecords) with these options.
   */
  records?: HashRecordsOptions;
  /**
   * Stop (InputError `input_reject_rate_exceeded`) when more than this share (0..1) of the
   * values was rejected: judged after each item once 1000 values were seen, and at the end of
   * the input before the last batch is sent. See guardInput.
   */
  maxRejectRate?: number;
  /** An input without a single user is an error (`input_no_users`) instead of a `completed` run. */
  requireUsers?: boolean;
  limits?: Partial<BatchLimits>;
  /** Send identical users once (default true; the set of seen users costs 11-23 bytes per distinct user). */
  dedupe?: boolean;
  /** Requests in flight (default DEFAULT_UPLOAD_CONCURRENCY). */
  concurrency?: number;
  /** Re-sends of a batch after a count mismatch or a failed request (default 5). */
  maxRetries?: number;
  /** First backoff between re-sends after the immediate one (default 1 s, doubling, capped at 30 s). */
  retryBaseMs?: number;
  journal?: RunJournal;
  dryRun?: boolean;
  runId?: string;
  /** Called for each batch as it is packed (the CLI writes the first one for --preview). */
  onBatch?: (batch: PackedBatch) => void;
  onProgress?: (p: UploadProgress) => void;
  /** Minimum time between two progress callbacks while reading (default 250 ms). */
  progressIntervalMs?: number;
  /** Input position for the progress ETA (default: from a hashFile run). */
  inputProgress?: () => { bytesRead: number; totalBytes?: number };
  /** Stop reading, let in-flight requests finish, return status `interrupted`. */
  signal?: AbortSignal;
  clock?: UploadClock;
  random?: () => number;
}

/** Measured against the sandbox on 2 cores (see README): more gains nothing, fewer leaves the link idle. */
export const DEFAULT_UPLOAD_CONCURRENCY = 4;
export const DEFAULT_MAX_RETRIES = 5;
const MAX_RETRY_BACKOFF_MS = 30_000;
const OPERATION_ERRORS_KEPT = 100;

const realClock: UploadClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(t);
          resolve();
        },
        { once: true },
      );
    }),
};

function parseIsoTime(value: string, option: string): string {
  const ok = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value);
  const ms = ok ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new ConfigError(
      'invalid_time',
      `${option} must be an ISO 8601 date-time such as 2030-01-31T00:00:00Z, got "${value}"`,
      {
        fix: `pass ${option} in UTC, e.g. 2030-01-31T00:00:00Z`,
      },
    );
  }
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/**
 * Check the operation parameters before anything is sent; returns the batch group (times
 * normalized to UTC). Do-not-reach lists refuse effective_at and take expires_at only up to
 * 13 months ahead.
 */
export function resolveUploadGroup(o: {
  target: UploadTarget;
  operation?: UploadOperation;
  effectiveAt?: string | undefined;
  expiresAt?: string | undefined;
  now?: Date;
}): BatchGroup {
  const now = o.now ?? new Date();
  const op = o.operation ?? 'update';
  if (op !== 'update' && op !== 'delete') {
    throw new ConfigError('invalid_operation', `--operation must be update or delete, got "${String(op)}"`, {
      fix: 'pass --operation update or --operation delete',
    });
  }
  const group: BatchGroup = { operationType: op === 'update' ? 'Update' : 'Delete' };
  const dnr = 'doNotReachListId' in o.target;
  if (o.effectiveAt !== undefined) {
    if (dnr) {
      throw new ConfigError(
        'dnr_effective_at',
        'do-not-reach lists do not take --effective-at (membership starts when the upload is processed)',
        {
          fix: 'drop --effective-at',
        },
      );
    }
    group.effectiveAt = parseIsoTime(o.effectiveAt, '--effective-at');
  }
  if (o.expiresAt !== undefined) {
    const expiresAt = parseIsoTime(o.expiresAt, '--expires-at');
    const expires = Date.parse(expiresAt);
    const from = group.effectiveAt === undefined ? now.getTime() : Date.parse(group.effectiveAt);
    if (expires <= from) {
      throw new ConfigError(
        'invalid_expiry',
        `--expires-at ${expiresAt} is not after ${group.effectiveAt === undefined ? 'now' : '--effective-at'}`,
        {
          fix: 'pass a later --expires-at',
        },
      );
    }
    if (dnr && expires >= maxDoNotReachExpiry(now).getTime()) {
      throw new ConfigError(
        'dnr_expiry_too_far',
        `--expires-at ${expiresAt} is not under 13 months ahead; do-not-reach memberships last less than 13 months`,
        {
          fix: `pass --expires-at before ${maxDoNotReachExpiry(now).toISOString()}, or omit it for the platform default`,
        },
      );
    }
    group.expiresAt = expiresAt;
  }
  return group;
}

/** Check the sending options (ConfigError naming the option); the CLI calls it before opening the journal. */
export function resolveSendOptions(o: { concurrency?: number | undefined; maxRetries?: number | undefined }): {
  concurrency: number;
  maxRetries: number;
} {
  return {
    concurrency: positiveInt(o.concurrency, DEFAULT_UPLOAD_CONCURRENCY, '--concurrency', 1, 64),
    maxRetries: positiveInt(o.maxRetries, DEFAULT_MAX_RETRIES, '--max-retries', 0, 100),
  };
}

function positiveInt(value: number | undefined, fallback: number, option: string, min: number, max: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(
      'invalid_option',
      `${option} must be a whole number from ${min} to ${max}, got ${String(v)}`,
      {
        fix: `pass ${option} within ${min}..${max}, or omit it for the default ${fallback}`,
      },
    );
  }
  return v;
}

/**
 * `next`, or 'aborted' as soon as the signal fires. The abort listener is removed each time:
 * racing against one long-lived promise would keep every item reachable.
 */
function raceAbort<T>(next: Promise<T>, signal: AbortSignal | undefined): Promise<T | 'aborted'> {
  if (signal === undefined) return next;
  if (signal.aborted) return Promise.resolve('aborted');
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
    next.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

const DIGEST = /^[0-9a-f]{64}$/;

/**
 * A bare user object from a library caller: refused unless every value is already a digest
 * (partner_user_id excepted), so a raw identifier can never be sent by mistake. The message
 * names the position and type, never the value.
 */
function checkHashedUser(item: unknown, position: number): AudienceUser {
  const refuse = (what: string): never => {
    throw new ConfigError('user_not_hashed', `user ${position} of the input ${what}`, {
      fix: 'pass raw records with the records option (they are hashed here), or hash them first with hashRecords()',
    });
  };
  if (item === null || typeof item !== 'object' || Array.isArray(item)) return refuse('is not a user object');
  for (const [type, values] of Object.entries(item)) {
    // The key is not repeated: a caller may have put a value where a type belongs.
    if (!(IDENTIFIER_TYPES as readonly string[]).includes(type))
      refuse(`has a key that is not an identifier type (allowed: ${IDENTIFIER_TYPES.join(', ')})`);
    if (!Array.isArray(values) || values.some((v) => typeof v !== 'string'))
      refuse(`has a ${type} that is not an array of strings`);
    for (const v of values as string[]) {
      if (type === 'partner_user_id' ? v.length === 0 || v.length > 256 : !DIGEST.test(v)) {
        refuse(
          type === 'partner_user_id'
            ? 'has an empty or over-long partner_user_id'
            : `has a ${type} value that is not a SHA-256 digest (64 lowercase hex): raw identifiers are never sent`,
        );
      }
    }
  }
  return item;
}

/** A key of a serialized user that do-not-reach lists do not take. */
const NOT_DNR_KEY = new RegExp(`"(${IDENTIFIER_TYPES.filter((t) => !DO_NOT_REACH_TYPES.includes(t)).join('|')})":`);

function countLines(text: string, end: number): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** Before anything of the batch is sent: the platform would refuse the whole request. */
function refuseTypeForDnr(type: string, line: number): never {
  throw new ConfigError(
    'type_not_taken',
    `do-not-reach lists take only ${DO_NOT_REACH_TYPES.join(' and ')} identifiers; the user of line ${line} has ${type}`,
    {
      fix: `map only ${DO_NOT_REACH_TYPES.join(' and ')} columns (option types: DO_NOT_REACH_TYPES of hashFile/hashRecords; the CLI does it for --do-not-reach-list)`,
    },
  );
}

const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;

function isBuiltUser(item: UploadItem): item is UploadUser {
  return typeof (item as UploadUser).line === 'number' && typeof (item as UploadUser).user === 'object';
}

/** Why a send failed, for the report and the journal (never identifiers). */
function describeFailure(error: unknown): { code: string; reason: string } {
  if (error instanceof AudienceKitError) return { code: error.code, reason: error.message };
  return { code: 'internal', reason: error instanceof Error ? error.message : String(error) };
}

/** Errors after which sending more is pointless: credentials, permission, configuration. */
function isFatal(error: unknown): boolean {
  return error instanceof AuthError || error instanceof ConfigError;
}

/** Failures the same request will not fix (the platform refused the content). */
function isPermanent(error: unknown): boolean {
  return (
    error instanceof HttpError &&
    error.status >= 400 &&
    error.status < 500 &&
    error.status !== 408 &&
    error.status !== 423 &&
    error.status !== 429
  );
}

function verify(
  batch: { users: number; operationUsers: number[] },
  result: UserBatchResult | UserBatchResult[],
): { success: number; total: number; error?: BatchVerificationError } {
  const results = Array.isArray(result) ? result : [result];
  let success = 0;
  let total = 0;
  for (const r of results) {
    success += r.success_count;
    total += r.total_count;
  }
  let problem: string | undefined;
  if (Array.isArray(result)) {
    if (result.length !== batch.operationUsers.length) {
      problem = `${result.length} count pairs for ${batch.operationUsers.length} operations`;
    } else {
      const bad = result.findIndex(
        (r, i) => r.success_count !== batch.operationUsers[i] || r.total_count !== batch.operationUsers[i],
      );
      if (bad >= 0)
        problem = `operation ${bad}: success_count ${result[bad]?.success_count}, total_count ${result[bad]?.total_count}, users sent ${batch.operationUsers[bad]}`;
    }
  } else if (success !== batch.users || total !== batch.users) {
    problem = `success_count ${success}, total_count ${total}, users sent ${batch.users}`;
  }
  if (problem === undefined) return { success, total };
  return {
    success,
    total,
    error: new BatchVerificationError(`the platform did not confirm every user of the batch (${problem})`, {
      expected: batch.users,
      successCount: success,
      totalCount: total,
      fix: 'the batch is re-sent automatically; if it keeps failing, run again with --resume later',
    }),
  };
}

interface SendableBatch {
  index: number;
  body: Buffer;
  bytes: number;
  users: number;
  operationUsers: number[];
  group: BatchGroup;
  lines: Uint32Array;
  sha256: string | undefined;
}

/** Upload users to a custom audience or a do-not-reach list; returns the report. */
export async function uploadAudience(o: UploadAudienceOptions): Promise<UploadReport> {
  const clock = o.clock ?? realClock;
  const random = o.random ?? Math.random;
  const startedMs = clock.now();
  const startedAt = new Date(startedMs);
  const dryRun = o.dryRun === true;
  const limits = resolveBatchLimits(o.limits);
  const group = resolveUploadGroup({
    target: o.target,
    operation: o.operation ?? 'update',
    effectiveAt: o.effectiveAt,
    expiresAt: o.expiresAt,
    now: startedAt,
  });
  const { concurrency, maxRetries } = resolveSendOptions(o);
  const retryBaseMs = o.retryBaseMs ?? 1000;
  const client = o.client;
  if (!dryRun && client === undefined) {
    throw new ConfigError('missing_client', 'uploadAudience needs a client unless dryRun is set', {
      fix: 'pass client: createClient({...})',
    });
  }
  const isDnr = 'doNotReachListId' in o.target;
  const targetId = 'doNotReachListId' in o.target ? o.target.doNotReachListId : o.target.customAudienceId;
  const journal = o.journal;
  const clientStart = client?.stats();

  const packer = new BatchPacker(limits, { dedupe: o.dedupe !== false });
  const handle = packer.group(group);
  // The pipeline's running summary when it has one; otherwise the uploader counts.
  const source: UploadAudienceOptions['users'] =
    o.records === undefined
      ? o.users
      : hashRecords(o.users as Iterable<RawRecord> | AsyncIterable<RawRecord>, {
          ...(isDnr ? { types: DO_NOT_REACH_TYPES } : {}),
          ...o.records,
        });
  const ownSummary = source.summary === undefined ? createHashSummary() : undefined;
  const summary: HashSummary = source.summary ?? ownSummary ?? createHashSummary();
  const users = guardInput(source, () => summary, rejectGuardOptions(o));
  const bytesRead = users.bytesRead;
  const inputProgress =
    o.inputProgress ??
    (bytesRead === undefined
      ? undefined
      : () => ({
          bytesRead: bytesRead.call(users),
          ...(users.totalBytes === undefined ? {} : { totalBytes: users.totalBytes }),
        }));
  let bareLine = 0;

  const r = {
    requests: 0,
    bytes: 0,
    resends: 0,
    mismatches: 0,
    confirmed: 0,
    usersConfirmed: 0,
    skipped: 0,
    usersSkipped: 0,
    success: 0,
    total: 0,
    failed: [] as FailedBatchReport[],
    usersFailed: 0,
    opErrors: [] as OperationErrorReport[],
    opErrorsTotal: 0,
    unrecorded: [] as number[],
  };
  let fatal: unknown;
  let lastProgress = Number.NEGATIVE_INFINITY;
  const progressInterval = o.progressIntervalMs ?? 250;
  const limit = pLimit(concurrency);
  const inFlight = new Set<Promise<void>>();
  /** Batches re-sent from the journal's kept bodies in this run: index → content hash. */
  const handledThisRun = new Map<number, string>();

  const progress = (done: boolean, force = false): void => {
    if (o.onProgress === undefined) return;
    const now = clock.now();
    if (!force && !done && now - lastProgress < progressInterval) return;
    lastProgress = now;
    const stats = client?.stats();
    const input = inputProgress?.();
    o.onProgress({
      rows: summary.rows,
      users: packer.stats.users,
      duplicates: packer.stats.duplicates,
      batchesPacked: packer.stats.batches,
      requestsSent: r.requests,
      batchesConfirmed: r.confirmed,
      batchesSkipped: r.skipped,
      batchesFailed: r.failed.length,
      usersConfirmed: r.usersConfirmed + r.usersSkipped,
      bytesSent: r.bytes,
      retries: r.resends + (stats && clientStart ? stats.retries - clientStart.retries : 0),
      mismatches: r.mismatches,
      rateLimitWaits: stats && clientStart ? stats.rateLimitWaits - clientStart.rateLimitWaits : 0,
      waitedMs: stats && clientStart ? stats.waitedMs - clientStart.waitedMs : 0,
      inFlight: inFlight.size,
      elapsedMs: now - startedMs,
      ...(input === undefined ? {} : { inputBytesRead: input.bytesRead }),
      ...(input?.totalBytes === undefined ? {} : { inputTotalBytes: input.totalBytes }),
      done,
    });
  };

  const recordOperationErrors = (batch: SendableBatch, error: HttpError): void => {
    const starts: number[] = [];
    let acc = 0;
    for (const n of batch.operationUsers) {
      starts.push(acc);
      acc += n;
    }
    for (const e of error.operationErrors) {
      r.opErrorsTotal++;
      if (r.opErrors.length >= OPERATION_ERRORS_KEPT) continue;
      const start = starts[e.index];
      const line = start !== undefined && e.userIndex !== undefined ? (batch.lines[start + e.userIndex] ?? null) : null;
      r.opErrors.push({ line, batch: batch.index, operation: e.index, code: String(e.code ?? 'INVALID_USER_DATA') });
    }
  };

  const send = async (batch: SendableBatch): Promise<void> => {
    if (client === undefined) return;
    for (let attempt = 0; ; attempt++) {
      // Interrupted during a backoff: leave the batch unconfirmed for a resumed run.
      if (fatal !== undefined || isAborted(o.signal)) return;
      try {
        r.requests++;
        r.bytes += batch.bytes;
        const result = isDnr
          ? await postDoNotReachListUsers(client, {
              accountId: o.accountId,
              doNotReachListId: targetId,
              body: batch.body,
            })
          : await postCustomAudienceUsers(client, {
              accountId: o.accountId,
              customAudienceId: targetId,
              body: batch.body,
            });
        const v = verify(batch, result);
        if (v.error !== undefined) {
          r.mismatches++;
          throw v.error;
        }
        r.success += v.success;
        r.total += v.total;
        r.confirmed++;
        r.usersConfirmed += batch.users;
        try {
          journal?.recordConfirmed(batch.index, batch.sha256 ?? batchDigest(batch.body), batch.users);
        } catch (error) {
          // Confirmed but not recorded (disk full): never re-send it as if the send had failed;
          // stop, and say which batches a resumed run will send again.
          r.unrecorded.push(batch.index);
          fatal ??= error;
          return;
        }
        progress(false, true);
        return;
      } catch (error) {
        if (isFatal(error)) {
          fatal ??= error;
          return;
        }
        // Interrupted: leave the batch unconfirmed (a resumed run sends it) rather than wait out backoffs.
        if (isAborted(o.signal)) return;
        const permanent = isPermanent(error);
        if (permanent && error instanceof HttpError && error.operationErrors.length > 0)
          recordOperationErrors(batch, error);
        if (permanent || attempt >= maxRetries) {
          const { code, reason } = describeFailure(error);
          r.failed.push({ index: batch.index, users: batch.users, reason, code });
          r.usersFailed += batch.users;
          try {
            journal?.recordFailed(batch, batch.sha256 ?? batchDigest(batch.body), reason);
          } catch (journalError) {
            fatal ??= journalError;
          }
          return;
        }
        r.resends++;
        // The first re-send goes at once (a count mismatch is usually transient), then back off.
        if (attempt > 0) {
          const backoff = Math.min(MAX_RETRY_BACKOFF_MS, retryBaseMs * 2 ** (attempt - 1));
          await clock.sleep(backoff / 2 + random() * (backoff / 2), o.signal);
        }
      }
    }
  };

  /**
   * Start sending once a slot is free: reading waits here, so memory stays flat (p-limit
   * bounds the requests; this wait bounds the batches held in memory).
   */
  const dispatch = async (batch: SendableBatch): Promise<void> => {
    while (inFlight.size >= concurrency) await Promise.race(inFlight);
    const p = limit(() => send(batch)).finally(() => inFlight.delete(p));
    inFlight.add(p);
  };

  const onPacked = async (batch: PackedBatch): Promise<void> => {
    o.onBatch?.(batch);
    if (dryRun) return;
    const sha256 = journal === undefined ? undefined : batchDigest(batch.body);
    if (journal !== undefined && sha256 !== undefined) {
      const kept = handledThisRun.get(batch.index) ?? journal.failed.get(batch.index)?.sha256;
      if (kept !== undefined && kept !== sha256) {
        throw new JournalError(
          'journal_mismatch',
          `batch ${batch.index} differs from the failed batch kept in the journal: the input, the options or the tool version changed`,
          {
            fix: 'run again with --restart to start over',
          },
        );
      }
      if (handledThisRun.has(batch.index)) return;
      if (journal.isConfirmed(batch.index, sha256)) {
        r.skipped++;
        r.usersSkipped += batch.users;
        return;
      }
    }
    await dispatch({ ...batch, sha256 });
  };

  // A resumed run first re-sends the batches an earlier run kept after they failed.
  if (journal !== undefined && !dryRun) {
    for (const f of [...journal.failed.values()]) {
      const kept = journal.readFailedBatch(f.index);
      if (kept === undefined) continue; // recomputed from the input below
      handledThisRun.set(f.index, f.sha256);
      await dispatch({
        index: f.index,
        body: kept.body,
        bytes: kept.body.length,
        users: f.users,
        operationUsers: f.operationUsers,
        group: f.group,
        lines: kept.lines,
        sha256: f.sha256,
      });
      if (fatal !== undefined) break;
    }
  }

  let interrupted = false;
  const aborted = (): boolean => {
    if (o.signal?.aborted === true) interrupted = true;
    return interrupted || fatal !== undefined;
  };

  /** Synchronous on the hot path: only a closed batch costs an await. */
  const addUser = (u: UploadUser): PackedBatch | undefined => {
    if (ownSummary !== undefined) addUserToSummary(ownSummary, u);
    if (isDnr)
      for (const type in u.user)
        if (!DO_NOT_REACH_TYPES.includes(type as IdentifierType)) refuseTypeForDnr(type, u.line);
    const json = u.json ?? serializeUser(u.user);
    return json === '{}' ? undefined : packer.add(handle, json, u.line);
  };

  let inputError: unknown;
  /** Set only when the input was read to its end and every batch was handed out. */
  let inputEnded = false;
  /** An iterator.next() that an interrupt left unsettled (the producer waits for input). */
  let pendingNext: Promise<unknown> | undefined;
  const iterator =
    Symbol.asyncIterator in users
      ? (users as AsyncIterable<UploadItem>)[Symbol.asyncIterator]()
      : (users as Iterable<UploadItem>)[Symbol.iterator]();
  try {
    while (!aborted()) {
      const pending = Promise.resolve(iterator.next());
      const next = await raceAbort(pending, o.signal);
      if (next === 'aborted') {
        interrupted = true;
        pendingNext = pending;
        break;
      }
      if (aborted()) break;
      if (next.done === true) {
        for (const b of packer.finish()) {
          await onPacked(b);
          if (aborted()) break;
        }
        if (!aborted()) {
          journal?.recordInputEnd(packer.stats.batches);
          inputEnded = true;
        }
        break;
      }
      const item = next.value;
      const packed = (item as Partial<UploadPackedChunk>).packed;
      if (packed !== undefined) {
        const { jsonLines, lines, fingerprints } = packed;
        if (isDnr) {
          const found = NOT_DNR_KEY.exec(jsonLines);
          if (found !== null) refuseTypeForDnr(found[1] ?? '', lines[countLines(jsonLines, found.index)] ?? 0);
        }
        const fingerprint: [number, number] = [0, 0];
        for (let start = 0, k = 0; start < jsonLines.length; k++) {
          let end = jsonLines.indexOf('\n', start);
          if (end < 0) end = jsonLines.length;
          fingerprint[0] = fingerprints[2 * k] as number;
          fingerprint[1] = fingerprints[2 * k + 1] as number;
          const closed = packer.add(handle, jsonLines.slice(start, end), lines[k] ?? 0, fingerprint);
          if (closed !== undefined) await onPacked(closed);
          start = end + 1;
        }
        progress(false);
        continue;
      }
      const list: readonly UploadUser[] = Array.isArray(item)
        ? (item as readonly UploadUser[])
        : Array.isArray((item as { users?: unknown }).users)
          ? (item as { users: readonly UploadUser[] }).users
          : isBuiltUser(item)
            ? [item]
            : [{ line: ++bareLine, user: checkHashedUser(item, bareLine), rejects: [] }];
      for (let i = 0; i < list.length; i++) {
        const closed = addUser(list[i] as UploadUser);
        if (closed !== undefined) await onPacked(closed);
      }
      progress(false);
    }
  } catch (error) {
    inputError = error;
  } finally {
    // Stops the producer (closes files, ends worker threads) when we leave early. An async
    // generator queues return() behind a pending next(), so that case needs the producer's close().
    if (interrupted || inputError !== undefined || fatal !== undefined) {
      if (pendingNext === undefined) await iterator.return?.();
      else {
        pendingNext.catch(() => undefined);
        await users.close?.();
      }
    }
  }
  while (inFlight.size > 0) await Promise.race(inFlight);
  // Once sending has started, a failure still gets a report (with the counts so far and the error).
  if (inputError !== undefined && r.requests === 0 && r.skipped === 0) throw inputError;
  fatal ??= inputError;

  if (inputEnded && fatal === undefined && !interrupted && r.failed.length === 0 && journal !== undefined && !dryRun) {
    try {
      journal.markComplete();
    } catch (error) {
      fatal = error;
    }
  }
  const allConfirmed = inputEnded && fatal === undefined && !interrupted && r.failed.length === 0;

  const endedMs = clock.now();
  const stats = client?.stats();
  let status: UploadStatus;
  if (interrupted) status = 'interrupted';
  else if (allConfirmed) status = 'completed';
  else status = r.confirmed + r.skipped > 0 ? 'partial' : 'failed';
  const report: UploadReport = {
    run_id: o.runId ?? '',
    status,
    account_id: o.accountId,
    target: { kind: isDnr ? 'do_not_reach_list' : 'custom_audience', id: targetId },
    operation: o.operation ?? 'update',
    dry_run: dryRun,
    resumed: journal?.resumed ?? false,
    rows: summary.rows,
    rows_without_identifier: summary.emptyRows,
    malformed_rows: summary.malformed.count,
    users: packer.stats.users,
    users_confirmed: r.usersConfirmed + r.usersSkipped,
    users_confirmed_earlier: r.usersSkipped,
    users_failed: r.usersFailed,
    duplicates: packer.stats.duplicates,
    oversized_users: packer.stats.oversized,
    oversized_lines: [...packer.stats.oversizedLines],
    identifiers: summary.types,
    invalid_by_reason: summary.rejects,
    batches: packer.stats.batches,
    batches_confirmed: r.confirmed,
    batches_skipped: r.skipped,
    batches_failed: r.failed.length,
    failed_batches: r.failed,
    requests: r.requests,
    bytes: dryRun ? packer.stats.bytes : r.bytes,
    retries: r.resends + (stats && clientStart ? stats.retries - clientStart.retries : 0),
    mismatches: r.mismatches,
    rate_limit_waits: stats && clientStart ? stats.rateLimitWaits - clientStart.rateLimitWaits : 0,
    waited_ms: stats && clientStart ? Math.round(stats.waitedMs - clientStart.waitedMs) : 0,
    success_count: r.success,
    total_count: r.total,
    operation_errors: r.opErrors,
    operation_errors_total: r.opErrorsTotal,
    unrecorded_batches: r.unrecorded,
    started_at: startedAt.toISOString(),
    ended_at: new Date(endedMs).toISOString(),
    duration_ms: endedMs - startedMs,
    exit_code:
      fatal instanceof EnvironmentError
        ? EXIT_CODES.environment
        : status === 'completed'
          ? EXIT_CODES.ok
          : status === 'interrupted'
            ? EXIT_CODES.interrupted
            : status === 'partial'
              ? EXIT_CODES.partial
              : fatal !== undefined
                ? exitCodeFor(fatal)
                : EXIT_CODES.api,
  };
  if (fatal !== undefined) {
    const e = fatal instanceof AudienceKitError ? fatal : undefined;
    report.error = {
      code: e?.code ?? 'internal',
      message: fatal instanceof Error ? fatal.message : 'non-Error value thrown',
      ...(e?.fix === undefined ? {} : { fix: e.fix }),
    };
  }
  progress(true);
  return report;
}
