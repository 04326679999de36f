/**
 * What a sync tells: its report (the plan, each operation's sends, the snapshot before and after)
 * and its audit record, built from the plan and the reports of the two sendUsers calls.
 */
import { AudienceKitError, BatchesFailedError, InputError } from '../errors.js';
import { PLATFORM_BATCH_LIMITS } from './plan.js';
import { consentJson, type ConsentJson, type HashSummary } from '../hashing/summary.js';
import type { AuditRunEnd } from '../state/audit.js';
import { stateFailure } from '../state/fs.js';
import type { Snapshot } from '../state/snapshot.js';
import { asKitError, auditCounts, inputCounts, targetRef } from './report.js';
import type { RunInput } from './run-facts.js';
import type { SyncPlanCounts } from './sync-plan.js';
import type { Target } from './target.js';
import type { FailedBatchReport, OperationErrorReport, UploadReport, UploadStatus } from './types.js';

/** `refused`: a dry run of a plan that a real run refuses (too many removals, empty input). */
export type SyncStatus = UploadStatus | 'refused';

export interface SyncOperationReport {
  /** `not_sent`: the removals were not all confirmed, so the updates were not sent. */
  status: UploadStatus | 'not_sent';
  /** Users to send (planned ones too when `not_sent`). */
  users: number;
  /** Users not sent because an earlier phase failed (all of them when `not_sent`). */
  users_withheld: number;
  users_confirmed: number;
  users_failed: number;
  batches: number;
  batches_confirmed: number;
  batches_failed: number;
  /** Why each failed batch failed (code and the platform's reason; never identifiers). */
  failed_batches: FailedBatchReport[];
  requests: number;
  bytes: number;
  retries: number;
  mismatches: number;
  rate_limit_waits: number;
  /** Users the platform refused: input line for updates, null for removals (they are in no input). */
  operation_errors: OperationErrorReport[];
  operation_errors_total: number;
}

export interface SnapshotState {
  users: number;
  /** SHA-256 of the users' fingerprints: equal digests, equal membership. */
  digest: string;
}

export interface SyncReport {
  run_id: string;
  status: SyncStatus;
  account_id: string;
  target: UploadReport['target'];
  dry_run: boolean;
  /** No snapshot existed: every user sent as Update, nothing removed. */
  first_sync: boolean;
  full: boolean;
  refresh_after_days: number;
  rows: number;
  rows_without_identifier: number;
  malformed_rows: number;
  /** Distinct users of the input. */
  users: number;
  duplicates: number;
  /**
   * Users too large for one request (upload's `oversized_users`), to add, refresh or remove: not
   * sent, and the snapshot records no change for them (an add is not a member, a removal still
   * is), so the next sync wants them again; the sync is `partial` (its error `users_oversized`).
   */
  oversized_users: number;
  /** The first input lines of the oversized users to add or refresh (a removal has none). */
  oversized_lines: number[];
  identifiers: UploadReport['identifiers'];
  invalid_by_reason: UploadReport['invalid_by_reason'];
  reject_rate: number;
  /** Inputs with consent or opt-out columns: what they said and what the policy left out of the target. */
  consent?: ConsentJson;
  adds: number;
  removes: number;
  refreshes: number;
  unchanged: number;
  delete: SyncOperationReport;
  update: SyncOperationReport;
  /** Users of the plan not sent because an earlier phase failed (the adds and refreshes after failed removals). */
  users_withheld: number;
  requests: number;
  bytes: number;
  retries: number;
  snapshot: { before: SnapshotState; after: SnapshotState; bytes_on_disk: number };
  started_at: string;
  ended_at: string;
  duration_ms: number;
  /** Why the sync stopped early or was refused (`reportJson` serializes it). */
  error?: AudienceKitError;
  /**
   * With `consent: { policy: 'do-not-reach' }`: the list's sync (the rows that say no); `status`
   * and `error` above are then both syncs'. Absent when the list's sync did not start.
   */
  do_not_reach?: SyncReport;
}

/** The two operations' reports, and what else stopped the sends. */
export interface SyncSent {
  deletes?: UploadReport;
  updates?: UploadReport;
  /** Users to update that were not sent (the removals did not all go through). */
  updatesPending?: boolean;
  /** Users left out of each operation as too large for one request. */
  oversized?: SyncOversized;
  error?: AudienceKitError | undefined;
}

export interface SyncOversized {
  deletes: number;
  updates: number;
  /** The first input lines of the updates'. */
  lines: number[];
}

const oversizedUsers = (sent: SyncSent | undefined): number =>
  (sent?.oversized?.deletes ?? 0) + (sent?.oversized?.updates ?? 0);

export interface SyncPlanned {
  counts: SyncPlanCounts;
  summary: HashSummary;
  firstSync: boolean;
  runId: string;
  startedMs: number;
  before: SnapshotState;
}

/** `withheld`: the users of an operation that was not sent (undefined when it was). */
function operationReport(r: UploadReport | undefined, withheld?: number): SyncOperationReport {
  return {
    status: withheld !== undefined ? 'not_sent' : (r?.status ?? 'completed'),
    users: r?.users ?? withheld ?? 0,
    users_withheld: withheld ?? 0,
    users_confirmed: r?.users_confirmed ?? 0,
    users_failed: r?.users_failed ?? 0,
    batches: r?.batches ?? 0,
    batches_confirmed: r?.batches_confirmed ?? 0,
    batches_failed: r?.batches_failed ?? 0,
    failed_batches: r?.failed_batches ?? [],
    requests: r?.requests ?? 0,
    bytes: r?.bytes ?? 0,
    retries: r?.retries ?? 0,
    mismatches: r?.mismatches ?? 0,
    rate_limit_waits: r?.rate_limit_waits ?? 0,
    operation_errors: r?.operation_errors ?? [],
    operation_errors_total: r?.operation_errors_total ?? 0,
  };
}

function statusOf(sent: SyncSent): UploadStatus {
  const reports = [sent.deletes, sent.updates].filter((r) => r !== undefined);
  const confirmed = reports.some((r) => r.users_confirmed > 0);
  if (sent.error !== undefined) return confirmed ? 'partial' : 'failed';
  if (reports.some((r) => r.status === 'interrupted')) return 'interrupted';
  // A user the file wants added or removed that no request can carry leaves the target unlike the file.
  if (sent.updatesPending !== true && reports.every((r) => r.status === 'completed'))
    return oversizedUsers(sent) > 0 ? 'partial' : 'completed';
  return confirmed ? 'partial' : 'failed';
}

export interface SyncReportParts {
  accountId: string;
  target: Target;
  dryRun: boolean;
  full: boolean;
  refreshAfterDays: number;
  plan: SyncPlanned;
  sent: SyncSent;
  snapshot: Snapshot;
  endedMs: number;
  /** Overrides the status the sends give (`interrupted` while planning, `refused`). */
  status?: SyncStatus;
}

export function buildSyncReport(p: SyncReportParts): SyncReport {
  const { plan, sent } = p;
  const { counts, summary } = plan;
  const del = operationReport(sent.deletes);
  const upd = operationReport(sent.updates, sent.updatesPending === true ? counts.adds + counts.refreshes : undefined);
  const report: SyncReport = {
    run_id: plan.runId,
    status: p.status ?? statusOf(sent),
    account_id: p.accountId,
    target: targetRef(p.target),
    dry_run: p.dryRun,
    first_sync: plan.firstSync,
    full: p.full,
    refresh_after_days: p.refreshAfterDays,
    ...inputCounts(summary),
    users: counts.users,
    duplicates: counts.duplicates,
    oversized_users: oversizedUsers(sent),
    oversized_lines: sent.oversized?.lines ?? [],
    adds: counts.adds,
    removes: counts.removes,
    refreshes: counts.refreshes,
    unchanged: counts.unchanged,
    delete: del,
    update: upd,
    users_withheld: del.users_withheld + upd.users_withheld,
    requests: del.requests + upd.requests,
    bytes: del.bytes + upd.bytes,
    retries: del.retries + upd.retries,
    snapshot: {
      before: plan.before,
      after: { users: p.snapshot.count, digest: p.snapshot.digest },
      bytes_on_disk: p.snapshot.bytesOnDisk,
    },
    started_at: new Date(plan.startedMs).toISOString(),
    ended_at: new Date(p.endedMs).toISOString(),
    duration_ms: p.endedMs - plan.startedMs,
  };
  const error =
    sent.error ?? sent.deletes?.error ?? sent.updates?.error ?? batchesFailed(report) ?? usersOversized(sent.oversized);
  // A state write's raw fs error (EACCES, ENOSPC, EFBIG) is the machine's: exit 8, with the path.
  if (error !== undefined) report.error = stateFailure(error, p.snapshot.dir);
  return report;
}

/** Batches the platform refused while the sync went on: the sync's cause, in one line. */
function batchesFailed(r: SyncReport): AudienceKitError | undefined {
  const ops = [
    ['Delete', r.delete],
    ['Update', r.update],
  ] as const;
  const failed = ops.filter(([, o]) => o.batches_failed > 0);
  const [name, op] = failed[0] ?? [];
  const first = op?.failed_batches[0];
  if (op === undefined || first === undefined) return undefined;
  const what = failed.map(
    ([n, o]) => `${o.batches_failed} ${n} batch${o.batches_failed === 1 ? '' : 'es'} (${o.users_failed} users)`,
  );
  const withheld = r.users_withheld > 0 ? `; ${r.users_withheld} users to add or refresh were withheld` : '';
  return new BatchesFailedError(
    first.code as AudienceKitError['code'],
    `${what.join(' and ')} failed${withheld}; first: ${name} batch ${first.index}: ${first.reason}`,
    {
      fix: "run the sync again: what was not confirmed is sent again; if the platform refuses the same batch again, its reason (and 'refused by the platform' lines) says what to change",
    },
  );
}

/** Users no request can carry: the cause of a sync that sent everything else. */
function usersOversized(o: SyncOversized | undefined): InputError | undefined {
  if (o === undefined || o.deletes + o.updates === 0) return undefined;
  const what: string[] = [];
  if (o.updates > 0)
    what.push(
      `${o.updates} to add or refresh (lines ${o.lines.join(', ')}${o.updates > o.lines.length ? ', …' : ''}): not recorded as sent (an add is not counted as a member)`,
    );
  if (o.deletes > 0) what.push(`${o.deletes} to remove, still on the target and in the snapshot`);
  return new InputError(
    'users_oversized',
    `users too large for one request (limits.maxBodyBytes) were not sent: ${what.join('; ')}`,
    {
      fix: `raise limits.maxBodyBytes (the platform takes up to ${PLATFORM_BATCH_LIMITS.maxBodyBytes} bytes, the default) and run the sync again: it sends what is still missing`,
    },
  );
}

export interface SyncAuditEnd {
  plan: SyncPlanned;
  input: RunInput | undefined;
  report?: SyncReport | undefined;
  sent?: SyncSent | undefined;
  thrown: unknown;
  after: SnapshotState;
  /** Whether the store took the commit of the write-ahead record the run began (undefined: none begun). */
  committed?: boolean | undefined;
}

export function syncAuditEnd(a: SyncAuditEnd): AuditRunEnd {
  const now = new Date();
  const { plan, report } = a;
  const error = report === undefined ? asKitError(a.thrown).code : report.error?.code;
  return {
    event: 'run_end',
    run_id: plan.runId,
    at: report?.ended_at ?? now.toISOString(),
    started_at: new Date(plan.startedMs).toISOString(),
    duration_ms: report?.duration_ms ?? now.getTime() - plan.startedMs,
    outcome: report === undefined || report.status === 'refused' ? 'failed' : report.status,
    input: { name: a.input?.name ?? 'users', rows: plan.summary.rows, sha256: a.input?.sha256 ?? null },
    counts: {
      ...auditCounts({ ...inputCounts(plan.summary), duplicates: plan.counts.duplicates }, [
        a.sent?.deletes,
        a.sent?.updates,
      ]),
      // Left out before the sends (the sends' own count is of what reached their packer).
      oversized_users: oversizedUsers(a.sent),
    },
    ...(plan.summary.consent === undefined ? {} : { consent: consentJson(plan.summary.consent) }),
    sync: {
      adds: plan.counts.adds,
      removes: plan.counts.removes,
      refreshes: plan.counts.refreshes,
      unchanged: plan.counts.unchanged,
      removes_confirmed: a.sent?.deletes?.users_confirmed ?? 0,
      updates_confirmed: a.sent?.updates?.users_confirmed ?? 0,
      first_sync: plan.firstSync,
      snapshot_before: plan.before,
      snapshot_after: a.after,
      ...(a.committed === undefined ? {} : { committed: a.committed }),
    },
    ...(error === undefined ? {} : { error }),
  };
}
