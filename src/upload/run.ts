/**
 * `runUpload()`: an upload as a run, what the CLI's `upload` does and a data pipeline wants too.
 * Before the input is read: the options are checked and the target is read back once (it
 * exists, this account may write to it). Then the run journal is opened (resume or restart),
 * the audit log gets its `run_start` record, the users are uploaded, and `run_end` closes the
 * record with the report's counts.
 */
import { AudienceKitError } from '../errors.js';
import { z } from 'zod';
import type { NormalizeOptions } from '../identifiers/types.js';
import { newRunId, type AuditRunEnd, type AuditRunOptions, type AuditRunStart } from '../state/audit.js';
import { unfinishedRunError, type JournalKey, type JournalSummary } from '../state/journal.js';
import type { AuditLog, StateStore } from '../state/store.js';
import type { UploadJournal } from '../state/journal.js';
import { VERSION } from '../version.js';
import { isAborted } from '../util/clock.js';
import { orIssue, parseOptions, UPLOAD_FIELDS, uploadSchema, uploadSettingsSchema } from './options.js';
import { auditCounts, targetRef } from './report.js';
import type { Target } from './target.js';
import type { UploadAudienceOptions, UploadOperation, UploadReport } from './types.js';
import {
  bothTargets,
  checkConsentTarget,
  CONSENT_FIELD,
  doNotReachPass,
  type DoNotReachConsent,
  type ListTarget,
} from './do-not-reach.js';
import { upload, withAudienceMinimum } from './upload.js';
import {
  AUDIT_LOG_FIELD,
  openUploadState,
  resolveStorage,
  STATE_FIELDS,
  type StateOption,
  type Storage,
} from './state-option.js';
import { auditOptions, identify, type RunInput, type RunInputOption } from './run-facts.js';
import { checkTargets } from './target-check.js';

/** What to do with an unfinished run of the same input, target and options. */
export type UnfinishedRunChoice = 'resume' | 'restart' | 'cancel';
export type UnfinishedRunPolicy =
  'refuse' | 'resume' | 'restart' | ((summary: JournalSummary) => Promise<UnfinishedRunChoice>);

export type RunNotice =
  /** `dir`: where the journal is (its directory, or the database and key). */
  { kind: 'journal'; dir: string; resumed: boolean; confirmed: number; failed: number } | { kind: 'nothing_to_resume' };

export interface RunUploadOptions extends Omit<UploadAudienceOptions, 'journal'> {
  /** Read the target back before the input is read: it exists and this account may write to it (default true). */
  checkTarget?: boolean;
  /** Where run journals live; without it or `state` (or without `input.sha256`) a run cannot be resumed. */
  stateDir?: string;
  /**
   * The state store instead of `stateDir`: a PostgreSQL URL (`postgres://user@host/db`, opened and
   * closed by the run), or a store object (left open). The run's journal and, unless `auditLog`
   * is given, its audit log are the store's.
   */
  state?: StateOption;
  /**
   * The input's identity, for the journal key and the audit record. With `path` the file is
   * measured and fingerprinted (SHA-256) here, after the target check and only when not a dry run.
   */
  input?: RunInputOption;
  /** An unfinished run of the same input, target and options: `refuse` (default: ConfigError `unfinished_run`), `resume`, `restart`, or a function that decides. */
  unfinished?: UnfinishedRunPolicy;
  /** Audit log file (e.g. defaultAuditLogPath(stateDir)) or a store's log; with `state`, the store's when omitted; none otherwise and on a dry run. */
  auditLog?: string | AuditLog;
  /** The options the users were hashed with, recorded in the journal key and the audit record. */
  normalize?: NormalizeOptions;
  /** Recorded in the audit record. */
  sandbox?: boolean;
  onNotice?: (notice: RunNotice) => void;
  /**
   * The audit log refused the run's end record (disk full): called instead of throwing, so the
   * report still comes back. Without it the error is thrown (the run's own error first, if any).
   */
  onAuditError?: (error: unknown) => void;
  /**
   * `{ policy: 'do-not-reach', doNotReachListId }`: as `exclude` (the users' own policy, the
   * default) for the custom audience, and the rows that say no go to that list in the same call,
   * as a run of its own (`report.do_not_reach`). The input is read again for it: a hashCsv run of
   * a file, or raw records given as an array with `records`; anything else is refused.
   */
  consent?: DoNotReachConsent;
}

const { journal: _journal, ...RUN_UPLOAD_FIELDS } = UPLOAD_FIELDS;

/** runUpload's options: uploadAudience's (without `journal`) and the run's own. */
const RUN_FIELDS = {
  ...RUN_UPLOAD_FIELDS,
  checkTarget: z.boolean().default(true),
  ...STATE_FIELDS,
  input: z.custom<RunInputOption>().optional(),
  unfinished: z.custom<UnfinishedRunPolicy>().default('refuse'),
  auditLog: AUDIT_LOG_FIELD,
  normalize: z.custom<NormalizeOptions>().optional(),
  sandbox: z.boolean().default(false),
  onNotice: z.custom<(notice: RunNotice) => void>().optional(),
  onAuditError: z.custom<(error: unknown) => void>().optional(),
  consent: CONSENT_FIELD,
};
/**
 * The run's own part of its options: the storage resolved (a state URL parsed: refused before any
 * I/O), and a do-not-reach consent policy only with an update of a custom audience.
 */
function settleRun<
  T extends {
    stateDir?: string | undefined;
    state?: StateOption | undefined;
    auditLog?: string | AuditLog | undefined;
    consent?: DoNotReachConsent | undefined;
    target: Target;
    operation: UploadOperation;
  },
>(o: T): Omit<T, 'stateDir' | 'state' | 'auditLog'> & { storage: Storage } {
  const { stateDir, state, auditLog, ...rest } = o;
  const storage = resolveStorage({ stateDir, state, auditLog });
  checkConsentTarget(o.consent, o.target, o.operation);
  return { ...rest, storage };
}
const RUN_SCHEMA = uploadSchema(RUN_FIELDS, 'runUpload').transform((o, ctx) => orIssue(ctx, () => settleRun(o)));
const RUN_CHECK_SCHEMA = uploadSettingsSchema(RUN_FIELDS).transform((o, ctx) => orIssue(ctx, () => settleRun(o)));

/** runUpload's options, resolved (the entry's value: its parts are handed down, not the whole). */
export type ResolvedRunOptions = z.output<typeof RUN_SCHEMA>;

/** The options of runUpload, parsed once (ConfigError naming the first option refused). */
export function resolveRunOptions(o: unknown): ResolvedRunOptions {
  return parseOptions(RUN_SCHEMA, o);
}

/**
 * runUpload's options but the values only a session brings (`users`, `client`), checked with its
 * schema: what the CLI's `upload` does with its flags before it opens the input or the sandbox.
 */
export function checkRunOptions(o: Omit<RunUploadOptions, 'users' | 'client'>): void {
  parseOptions(RUN_CHECK_SCHEMA, o);
}

/**
 * Check, journal, audit, upload; returns the report (a run cancelled by `unfinished` reports
 * `interrupted`). With a do-not-reach consent policy, the list's run follows the audience's.
 */
export async function runUpload(options: RunUploadOptions): Promise<UploadReport> {
  const o = resolveRunOptions(options);
  return bothTargets(
    doNotReachPass(o.consent, o.users, o.records),
    o.signal,
    (alsoCheck) => runOne(o, alsoCheck),
    (list) => runOne(listRun(o, list)),
  );
}

/** The list's run: an update of the rows that say no, with the audience's sending and state options. */
function listRun(o: ResolvedRunOptions, { target, users, records }: ListTarget): ResolvedRunOptions {
  const { effectiveAt: _e, expiresAt: _x, ...group } = o.group;
  return {
    ...o,
    target,
    users,
    records,
    operation: 'update',
    group: { ...group, operationType: 'Update' },
    consent: undefined,
    // Read back with the audience, before anything was sent.
    checkTarget: false,
    minAudienceSize: 0,
    // The reject guard judged the file in the audience's run; nobody saying no is an empty, complete run.
    guard: {},
    runId: undefined,
    onBatch: undefined,
    onProgress: undefined,
    inputProgress: undefined,
    onNotice: undefined,
  };
}

/** One target's run; `alsoCheck` (the do-not-reach list) is read back with the target, before anything is sent. */
async function runOne(resolved: ResolvedRunOptions, alsoCheck?: Target): Promise<UploadReport> {
  // Before the target check: an audience too small to be anonymous is refused before any request.
  const o = await withAudienceMinimum(resolved);
  if (!o.dryRun && o.client !== undefined && o.checkTarget)
    await checkTargets(o.client, o.accountId, o.target, alsoCheck);
  const runId = o.runId ?? newRunId();
  const options = auditOptions({ normalize: o.normalize, users: o.users, limits: o.limits }, o.group);
  const input = await identify(o.input, o.dryRun);
  const state = await openUploadState(o.storage);
  try {
    return await runWithState(o, { input, runId, options }, state.store, state.audit);
  } finally {
    await state.close();
  }
}

interface RunFacts {
  input: RunInput | undefined;
  runId: string;
  options: AuditRunOptions;
}

async function runWithState(
  o: ResolvedRunOptions,
  { input, runId, options }: RunFacts,
  store: StateStore | undefined,
  auditLog: AuditLog | undefined,
): Promise<UploadReport> {
  const journal = o.dryRun || store === undefined ? undefined : await openJournal(o, store, input, runId, options);
  // Declined at the question, or interrupted while the input was fingerprinted: nothing sent, nothing recorded.
  if (journal === 'cancel' || isAborted(o.signal)) {
    if (journal !== 'cancel') await journal?.close();
    return upload({ ...o, users: [], runId, signal: AbortSignal.abort() });
  }
  try {
    const audit = o.dryRun ? undefined : auditLog;
    const run = (): Promise<UploadReport> => upload({ ...o, runId, journal });
    if (audit === undefined) return await run();
    await audit.append(startRecord(o, input, runId, options, journal?.resumed ?? false));
    return await audited(o, audit, input, runId, run);
  } finally {
    await journal?.close();
  }
}

/** The run's `run_end` record after the upload, also when it threw (nothing sent): the record says why. */
async function audited(
  o: Pick<ResolvedRunOptions, 'onAuditError'>,
  audit: AuditLog,
  input: RunInput | undefined,
  runId: string,
  run: () => Promise<UploadReport>,
): Promise<UploadReport> {
  const startedAt = new Date();
  let report: UploadReport | undefined;
  let thrown: unknown;
  try {
    report = await run();
    return report;
  } catch (error) {
    thrown = error;
    throw error;
  } finally {
    const end = audit.append(endRecord(input, runId, startedAt, report, thrown));
    // The run's own error is the one to report, even when the audit log fails too.
    if (thrown !== undefined || o.onAuditError !== undefined) await end.catch(o.onAuditError ?? (() => undefined));
    else await end;
  }
}

/**
 * The journal of this input, target and options, opened new or resumed; undefined when the run
 * cannot be journaled (an input that cannot be read again).
 */
async function openJournal(
  o: ResolvedRunOptions,
  store: StateStore,
  input: RunInput | undefined,
  runId: string,
  options: AuditRunOptions,
): Promise<UploadJournal | 'cancel' | undefined> {
  if (input?.sha256 == null || input.size === null) return undefined;
  const key: JournalKey = {
    input: { name: input.name, size: input.size, sha256: input.sha256 },
    accountId: o.accountId,
    target: targetRef(o.target),
    options: { ...options, operation: o.operation, dedupe: o.dedupe },
  };
  const policy = o.unfinished;
  // A restart replaces the journal unread (it may be the damaged one being replaced).
  const existing = policy === 'restart' ? undefined : await store.journals.find(key);
  // A run that stopped before any batch was confirmed or kept has nothing to resume.
  const resumable = existing !== undefined && !existing.complete && existing.confirmed + existing.failed > 0;
  let choice: UnfinishedRunChoice = 'restart';
  if (resumable) {
    if (policy === 'refuse') throw unfinishedRunError(existing);
    choice = typeof policy === 'function' ? await policy(existing) : policy;
    if (choice === 'cancel') return 'cancel';
  } else if (policy === 'resume') o.onNotice?.({ kind: 'nothing_to_resume' });
  const journal = await store.journals.open(key, { mode: choice === 'resume' ? 'resume' : 'new', runId });
  const { location, resumed, confirmed, failed } = journal;
  o.onNotice?.({ kind: 'journal', dir: location, resumed, confirmed: confirmed.size, failed: failed.size });
  return journal;
}

function startRecord(
  o: ResolvedRunOptions,
  input: RunInput | undefined,
  runId: string,
  options: AuditRunOptions,
  resumed: boolean,
): AuditRunStart {
  return {
    event: 'run_start',
    run_id: runId,
    at: new Date().toISOString(),
    tool_version: VERSION,
    account_id: o.accountId,
    target: targetRef(o.target),
    operation: o.operation,
    input: input ?? { name: 'users', size: null, sha256: null },
    options,
    resumed,
    sandbox: o.sandbox,
  };
}

function endRecord(
  input: RunInput | undefined,
  runId: string,
  startedAt: Date,
  report: UploadReport | undefined,
  thrown: unknown,
): AuditRunEnd {
  const now = new Date();
  const error = report === undefined ? errorCode(thrown) : report.error?.code;
  return {
    event: 'run_end',
    run_id: runId,
    at: report?.ended_at ?? now.toISOString(),
    started_at: report?.started_at ?? startedAt.toISOString(),
    duration_ms: report?.duration_ms ?? now.getTime() - startedAt.getTime(),
    outcome: report === undefined ? 'failed' : report.status,
    input: { name: input?.name ?? 'users', rows: report?.rows ?? 0, sha256: input?.sha256 ?? null },
    counts: auditCounts(report, [report]),
    ...(report?.consent === undefined ? {} : { consent: report.consent }),
    ...(error === undefined ? {} : { error }),
  };
}

function errorCode(error: unknown): string {
  return error instanceof AudienceKitError ? (error.code as string) : 'internal';
}
