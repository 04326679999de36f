/**
 * What a run tells: the progress snapshots while it runs and the report at its end, both built
 * from the same books (ledger, packer, summary, the client's counters).
 */
import { rejectCounts } from '../hashing/reject-guard.js';
import type { AdsClient, ClientStats } from '../api/index.js';
import { AudienceKitError } from '../errors.js';
import type { HashSummary } from '../hashing/summary.js';
import type { Ledger } from './ledger.js';
import type { BatchPacker } from './plan.js';
import type { Target } from './target.js';
import type { ResolvedUploadOptions } from './options.js';
import type { UploadOperation, UploadProgress, UploadReport, UploadStatus, UploadUsers } from './types.js';

export interface RunBooks {
  runId: string;
  accountId: string;
  target: Target;
  operation: UploadOperation;
  dryRun: boolean;
  resumed: boolean;
  summary: HashSummary;
  packer: BatchPacker;
  ledger: Ledger;
  client: AdsClient | undefined;
  clientStart: ClientStats | undefined;
  startedMs: number;
}

/** The run's books: what the report is built from. */
export function runBooks(
  o: ResolvedUploadOptions,
  startedMs: number,
  summary: HashSummary,
  packer: BatchPacker,
  ledger: Ledger,
): RunBooks {
  return {
    runId: o.runId ?? '',
    accountId: o.accountId,
    target: o.target,
    operation: o.operation,
    dryRun: o.dryRun,
    resumed: o.journal?.resumed ?? false,
    summary,
    packer,
    ledger,
    client: o.client,
    clientStart: o.client?.stats(),
    startedMs,
  };
}

/** Progress callbacks, at most one per `progressIntervalMs` while reading (forced ones aside). */
export function progressReporter(
  o: ResolvedUploadOptions,
  books: RunBooks,
  users: UploadUsers,
  inFlight: () => number,
): (done: boolean, force?: boolean) => void {
  const interval = o.progressIntervalMs;
  const bytesRead = users.bytesRead;
  const inputProgress =
    o.inputProgress ??
    (bytesRead === undefined
      ? undefined
      : () => ({
          bytesRead: bytesRead.call(users),
          ...(users.totalBytes === undefined ? {} : { totalBytes: users.totalBytes }),
        }));
  let last = Number.NEGATIVE_INFINITY;
  return (done, force = false) => {
    if (o.onProgress === undefined) return;
    const now = o.clock.now();
    if (!force && !done && now - last < interval) return;
    last = now;
    o.onProgress(progressOf(books, now, inFlight(), inputProgress?.(), done));
  };
}

/** The client's waits and retries during this run (a client may serve several runs). */
function clientDelta(b: RunBooks): { retries: number; rateLimitWaits: number; waitedMs: number } {
  const now = b.client?.stats();
  const start = b.clientStart;
  if (now === undefined || start === undefined) return { retries: 0, rateLimitWaits: 0, waitedMs: 0 };
  return {
    retries: now.retries - start.retries,
    rateLimitWaits: now.rateLimitWaits - start.rateLimitWaits,
    waitedMs: now.waitedMs - start.waitedMs,
  };
}

/** Rejected values (malformed rows included) / all values read so far (0 before any): what maxRejectRate judges. */
export function rejectRate(summary: HashSummary): number {
  const { rejected, total } = rejectCounts(summary);
  return total === 0 ? 0 : rejected / total;
}

export function progressOf(
  b: RunBooks,
  now: number,
  inFlight: number,
  input: { bytesRead: number; totalBytes?: number } | undefined,
  done: boolean,
): UploadProgress {
  const r = b.ledger;
  const client = clientDelta(b);
  return {
    rows: b.summary.rows,
    users: b.packer.stats.users,
    duplicates: b.packer.stats.duplicates,
    batchesPacked: b.packer.stats.batches,
    requestsSent: r.tally.requests,
    batchesConfirmed: r.confirmed,
    batchesSkipped: r.skipped,
    batchesFailed: r.failed.length,
    usersConfirmed: r.usersConfirmed + r.usersSkipped,
    bytesSent: r.tally.bytes,
    retries: client.retries + r.tally.resends,
    mismatches: r.tally.mismatches,
    rateLimitWaits: client.rateLimitWaits,
    waitedMs: client.waitedMs,
    inFlight,
    elapsedMs: now - b.startedMs,
    ...(input === undefined ? {} : { inputBytesRead: input.bytesRead }),
    ...(input?.totalBytes === undefined ? {} : { inputTotalBytes: input.totalBytes }),
    done,
  };
}

export function buildReport(b: RunBooks, status: UploadStatus, endedMs: number): UploadReport {
  const r = b.ledger;
  const { summary, packer } = b;
  const client = clientDelta(b);
  const report: UploadReport = {
    run_id: b.runId,
    status,
    account_id: b.accountId,
    target: targetRef(b.target),
    operation: b.operation,
    dry_run: b.dryRun,
    resumed: b.resumed,
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
    reject_rate: rejectRate(summary),
    batches: packer.stats.batches,
    batches_confirmed: r.confirmed,
    batches_skipped: r.skipped,
    batches_failed: r.failed.length,
    failed_batches: r.failed,
    requests: r.tally.requests,
    bytes: b.dryRun ? packer.stats.bytes : r.tally.bytes,
    retries: client.retries + r.tally.resends,
    mismatches: r.tally.mismatches,
    rate_limit_waits: client.rateLimitWaits,
    waited_ms: Math.round(client.waitedMs),
    success_count: r.success,
    total_count: r.total,
    operation_errors: r.opErrors,
    operation_errors_total: r.opErrorsTotal,
    unrecorded_batches: r.unrecorded,
    started_at: new Date(b.startedMs).toISOString(),
    ended_at: new Date(endedMs).toISOString(),
    duration_ms: endedMs - b.startedMs,
  };
  if (r.fatal !== undefined) report.error = asKitError(r.fatal);
  return report;
}

export function targetRef(target: Target): UploadReport['target'] {
  return { kind: target.kind, id: target.id };
}

/** Anything thrown, as an AudienceKitError (`internal` when it was not one). */
export function asKitError(error: unknown): AudienceKitError {
  if (error instanceof AudienceKitError) return error as AudienceKitError;
  return new AudienceKitError('internal', error instanceof Error ? error.message : 'non-Error value thrown', {
    cause: error,
  });
}

/** The report as plain JSON (its `error` as `{ code, message, fix }`), e.g. for `JSON.stringify`. */
export function reportJson<R extends { error?: AudienceKitError } = UploadReport>(
  report: R,
): Omit<R, 'error'> & {
  error?: { code: string; message: string; fix?: string };
} {
  const { error, ...rest } = report;
  if (error === undefined) return rest;
  return {
    ...rest,
    error: { code: error.code, message: error.message, ...(error.fix === undefined ? {} : { fix: error.fix }) },
  };
}
