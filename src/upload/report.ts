/**
 * What a run tells: the progress snapshots while it runs and the report at its end, both built
 * from the same books (ledger, packer, summary, the client's counters).
 */
import { rejectCounts } from '../hashing/reject-guard.js';
import type { AdsClient, ClientStats } from '../api/client.js';
import { AudienceKitError, InputError } from '../errors.js';
import { consentJson, type HashSummary } from '../hashing/summary.js';
import type { AuditCounts } from '../state/audit.js';
import type { Ledger } from './ledger.js';
import { PLATFORM_BATCH_LIMITS, type BatchPacker } from './plan.js';
import type { Target } from './target.js';
import type { Clock } from '../util/clock.js';
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

/** What the report says of the run itself (report.ts's part of the upload's options). */
export interface ReportedRun {
  runId: string | undefined;
  accountId: string;
  target: Target;
  operation: UploadOperation;
  dryRun: boolean;
  resumed: boolean;
  client: AdsClient | undefined;
}

/** The run's books: what the report is built from. */
export function runBooks(
  run: ReportedRun,
  startedMs: number,
  summary: HashSummary,
  packer: BatchPacker,
  ledger: Ledger,
): RunBooks {
  return {
    ...run,
    runId: run.runId ?? '',
    summary,
    packer,
    ledger,
    clientStart: run.client?.stats(),
    startedMs,
  };
}

/** The upload's progress options (report.ts's part of them). */
export interface ProgressOptions {
  onProgress: ((p: UploadProgress) => void) | undefined;
  progressIntervalMs: number;
  inputProgress: (() => { bytesRead: number; totalBytes?: number }) | undefined;
  clock: Clock;
}

/** Progress callbacks, at most one per `progressIntervalMs` while reading (forced ones aside). */
export function progressReporter(
  o: ProgressOptions,
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

/** The client's waits during this run (a client may serve several runs). */
function clientDelta(b: RunBooks): { rateLimitWaits: number; waitedMs: number } {
  const now = b.client?.stats();
  const start = b.clientStart;
  if (now === undefined || start === undefined) return { rateLimitWaits: 0, waitedMs: 0 };
  return {
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
    retries: r.tally.clientRetries + r.tally.resends,
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
    ...inputCounts(summary),
    users: packer.stats.users,
    users_confirmed: r.usersConfirmed + r.usersSkipped,
    users_confirmed_earlier: r.usersSkipped,
    users_failed: r.usersFailed,
    duplicates: packer.stats.duplicates,
    oversized_users: packer.stats.oversized,
    oversized_lines: [...packer.stats.oversizedLines],
    batches: packer.stats.batches,
    batches_confirmed: r.confirmed,
    batches_skipped: r.skipped,
    batches_failed: r.failed.length,
    failed_batches: r.failed,
    requests: r.tally.requests,
    bytes: b.dryRun ? packer.stats.bytes : r.tally.bytes,
    retries: r.tally.clientRetries + r.tally.resends,
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
  else if (status === 'partial' && r.failed.length === 0 && packer.stats.oversized > 0)
    report.error = usersOversized(packer);
  return report;
}

/** Users no request can carry: the cause of an upload that sent everything else. */
function usersOversized({ stats, limits }: BatchPacker): InputError {
  const lines = `lines ${stats.oversizedLines.join(', ')}${stats.oversized > stats.oversizedLines.length ? ', …' : ''}`;
  const platform = PLATFORM_BATCH_LIMITS.maxBodyBytes;
  return new InputError(
    'users_oversized',
    `${stats.oversized} user${stats.oversized === 1 ? '' : 's'} too large for one request (limits.maxBodyBytes ${limits.maxBodyBytes}) were not sent (${lines}); the run is not complete`,
    {
      fix:
        limits.maxBodyBytes < platform
          ? `raise limits.maxBodyBytes (the platform takes up to ${platform} bytes, the default) and upload again: other limits make a new run, which sends every user again (an Update repeats harmlessly)`
          : `those rows hold more values than one request of ${platform} bytes carries: keep fewer values in them and upload the file again (a resume of this run sends nothing already confirmed, nor those users)`,
    },
  );
}

/** What the input held, as every report (upload's and sync's) says it: one reading of the summary. */
export type InputCounts = Pick<
  UploadReport,
  | 'rows'
  | 'rows_without_identifier'
  | 'malformed_rows'
  | 'identifiers'
  | 'invalid_by_reason'
  | 'reject_rate'
  | 'consent'
>;

export function inputCounts(summary: HashSummary): InputCounts {
  return {
    rows: summary.rows,
    rows_without_identifier: summary.emptyRows,
    malformed_rows: summary.malformed.count,
    identifiers: summary.types,
    invalid_by_reason: summary.rejects,
    reject_rate: rejectRate(summary),
    ...(summary.consent === undefined ? {} : { consent: consentJson(summary.consent) }),
  };
}

/** The sends' counts that the audit record adds up (an upload has one send, a sync two). */
const SEND_COUNTS = {
  users_sent: (r) => r.users,
  oversized_users: (r) => r.oversized_users,
  requests: (r) => r.requests,
  batches_confirmed: (r) => r.batches_confirmed + r.batches_skipped,
  batches_failed: (r) => r.batches_failed,
  bytes: (r) => r.bytes,
  retries: (r) => r.retries,
  mismatches: (r) => r.mismatches,
  rate_limit_waits: (r) => r.rate_limit_waits,
  success_count: (r) => r.success_count,
  total_count: (r) => r.total_count,
  unrecorded_batches: (r) => r.unrecorded_batches.length,
} satisfies Partial<Record<keyof AuditCounts, (r: UploadReport) => number>>;

/**
 * A run's counts for the audit log, the one computation for `upload` and `sync`: the input's
 * (zeros when the run stopped before reading it) and the sends' added up (an upload's one
 * report, a sync's Delete and Update; a send not made counts zeros).
 */
export function auditCounts(
  input: (InputCounts & { duplicates: number }) | undefined,
  sends: readonly (UploadReport | undefined)[],
): AuditCounts {
  const sum = (k: keyof typeof SEND_COUNTS): number =>
    sends.reduce((n, r) => n + (r === undefined ? 0 : SEND_COUNTS[k](r)), 0);
  return {
    rows: input?.rows ?? 0,
    users_sent: sum('users_sent'),
    duplicates: input?.duplicates ?? 0,
    rows_without_identifier: input?.rows_without_identifier ?? 0,
    invalid_values: Object.values(input?.invalid_by_reason ?? {}).reduce((n, r) => n + (r?.count ?? 0), 0),
    digests_passed_through: Object.values(input?.identifiers ?? {}).reduce((n, t) => n + (t?.digests ?? 0), 0),
    oversized_users: sum('oversized_users'),
    requests: sum('requests'),
    batches_confirmed: sum('batches_confirmed'),
    batches_failed: sum('batches_failed'),
    bytes: sum('bytes'),
    retries: sum('retries'),
    mismatches: sum('mismatches'),
    rate_limit_waits: sum('rate_limit_waits'),
    success_count: sum('success_count'),
    total_count: sum('total_count'),
    unrecorded_batches: sum('unrecorded_batches'),
  };
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
export function reportJson<R extends { error?: AudienceKitError; do_not_reach?: R } = UploadReport>(
  report: R,
): ReportJson<R> {
  const { error, do_not_reach: list, ...rest } = report;
  return {
    ...rest,
    ...(error === undefined ? {} : { error: errorJson(error) }),
    // The list's run of a do-not-reach consent policy, its own error serialized the same way.
    ...(list === undefined ? {} : { do_not_reach: reportJson(list) }),
  };
}

/** A report as JSON: its errors (its own, its do-not-reach list's) as `{ code, message, fix? }`. */
export type ReportJson<R> = Omit<R, 'error' | 'do_not_reach'> & {
  error?: { code: string; message: string; fix?: string };
  do_not_reach?: ReportJson<R>;
};

/** An error as every JSON report carries it: `{ code, message, fix? }`. */
export function errorJson(error: AudienceKitError): { code: string; message: string; fix?: string } {
  return { code: error.code, message: error.message, ...(error.fix === undefined ? {} : { fix: error.fix }) };
}
