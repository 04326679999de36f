/**
 * `uploadAudience()`: users in, verified batches out. Input (input.ts) feeds the batch plan
 * (plan.ts); each closed batch goes to the engine (engine.ts), which sends and verifies it
 * (sender.ts) with at most `concurrency` in flight; the ledger keeps the books and the journal;
 * the report is built from them (report.ts). `sendUsers()` is the same for a caller that has
 * users to add or remove and wants each confirmed batch back (sync).
 */
import { hashRows } from '../hashing/pipeline.js';
import type { RawRecord } from '../identifiers/rows.js';
import type { RowRules } from '../identifiers/rows.js';
import { createHashSummary } from '../hashing/summary.js';
import { guardInput } from '../hashing/reject-guard.js';
import { withMinimumUsers } from './audience-size.js';
import { createEngine, type Engine, type EngineOptions } from './engine.js';
import { readInput, type ReadResult } from './input.js';
import { Ledger } from './ledger.js';
import {
  DEFAULT_PROGRESS_INTERVAL_MS,
  resolveUploadOptions,
  type ResolvedSendOptions,
  type ResolvedUploadOptions,
} from './options.js';
import { BatchPacker } from './plan.js';
import type { OperationType } from '../platform/batch.js';
import { buildReport, progressReporter, runBooks } from './report.js';
import type { SendableBatch, SenderOptions } from './sender.js';
import type {
  ConfirmedBatchInfo,
  SendUsersOptions,
  UploadAudienceOptions,
  UploadReport,
  UploadStatus,
  UploadUsers,
} from './types.js';

/** Upload users to a custom audience or a do-not-reach list; returns the report. */
export async function uploadAudience(o: UploadAudienceOptions): Promise<UploadReport> {
  return upload(await withAudienceMinimum(resolveUploadOptions(o)));
}

/**
 * The options with their users read ahead to the audience's minimum size (raw records hashed
 * first): ConfigError `audience_too_small`, before any request, when the input holds fewer.
 */
export async function withAudienceMinimum<T extends ResolvedUploadOptions>(o: T): Promise<T> {
  if (o.minAudienceSize === 0 || o.dryRun) return o;
  const users = await withMinimumUsers(hashedUsers(o.users, o.records), o.minAudienceSize, o.target, o.operation);
  return { ...o, users, records: undefined };
}

/** The upload of options resolved at an entry (uploadAudience, runUpload, sync): nothing is checked again. */
export async function upload(o: ResolvedUploadOptions): Promise<UploadReport> {
  const startedMs = o.clock.now();
  const packer = new BatchPacker(o.limits, { dedupe: o.dedupe });
  const handle = packer.group(o.group);
  const ledger = new Ledger(o.journal, o.onConfirmed);
  const source = hashedUsers(o.users, o.records);
  const summary = source.summary ?? createHashSummary();
  // The run counts into its own summary when the source keeps none.
  const ownSummary = source.summary === undefined ? summary : undefined;
  // Throws from the stream, so an input over the limits stops before its last batch is packed.
  const users = guardInput(source, () => summary, o.guard);
  const { runId, accountId, target, operation, dryRun, client, journal } = o;
  const resumed = journal?.resumed ?? false;
  const books = runBooks(
    { runId, accountId, target, operation, dryRun, resumed, client },
    startedMs,
    summary,
    packer,
    ledger,
  );
  const { onProgress, progressIntervalMs, inputProgress, clock } = o;
  const progressOptions = { onProgress, progressIntervalMs, inputProgress, clock };
  const progress = progressReporter(progressOptions, books, users, () => engine?.inFlight ?? 0);
  // A caller given each batch (onBatch) may keep it, and so may a dispatcher the caller gave the
  // client: a body is then never reused.
  const reuse = o.onBatch === undefined && o.client?.ownsDispatcher === true;
  const release = reuse ? (batch: SendableBatch) => packer.release(batch) : undefined;
  const engine = sendingEngine(o, ledger, () => progress(false, true), release);
  await engine?.resendKept();
  const sizeDedupe = dedupeSizing(packer, users);
  const read = await readInput({
    users,
    packer,
    handle,
    target: o.target,
    ownSummary,
    signal: o.signal,
    onPacked: async (batch) => {
      sizeDedupe();
      o.onBatch?.(batch);
      await engine?.offer(batch);
    },
    onItem: () => progress(false),
    stopped: () => ledger.stopped,
  });
  if (read.ended && !o.dryRun) await journalWrite(ledger, () => o.journal?.recordInputEnd(packer.stats.batches));
  await engine?.drain();
  const status = await settle(o, read, ledger, packer.stats.oversized);
  const report = buildReport(books, status, o.clock.now());
  progress(true);
  return report;
}

/**
 * The run's status once the input was read and every batch settled. A failure to read the input
 * before anything was sent is thrown; once sending has started it stops the run and is reported
 * (with the counts so far).
 */
async function settle(
  o: ResolvedUploadOptions,
  read: ReadResult,
  ledger: Ledger,
  oversized: number,
): Promise<UploadStatus> {
  if (read.error !== undefined && ledger.tally.requests === 0 && ledger.skipped === 0) throw read.error;
  if (read.error !== undefined) ledger.stop(read.error);
  // A user no request can carry leaves the run unfinished: the journal is not marked complete, so a
  // rerun resumes (every confirmed batch skipped, nothing claimed for that user) instead of starting over.
  if (!o.dryRun && statusOf(read, ledger, oversized) === 'completed')
    await journalWrite(ledger, () => o.journal?.markComplete());
  return statusOf(read, ledger, oversized);
}

/**
 * Sizes the packer's dedupe once for the whole input when its size is known (a file), at the first
 * batch closed after a sixteenth of it was read: the distinct users so far, scaled to the input's
 * bytes, 2% over for the chunks read and not yet packed. Grown by steps instead, its tables were
 * 68 to 85% full and left their earlier copies to the collector (10M rows: 389-418 -> 380-382 MB peak RSS,
 * docs/performance.md). Once the whole input was read, its users are nearly all in: not resized.
 */
function dedupeSizing(packer: BatchPacker, users: UploadUsers): () => void {
  const { totalBytes, bytesRead } = users;
  let sized = false;
  return () => {
    if (sized || totalBytes === undefined || bytesRead === undefined) return;
    const read = bytesRead.call(users);
    if (read < totalBytes / 16) return;
    sized = true;
    if (read < totalBytes) packer.reserve(packer.stats.users * (totalBytes / read) * 1.02);
  };
}

/**
 * A journal record that fails once sending may have started (disk full) stops the run, like an
 * unrecordable confirmation: batches in flight still settle and the report says why.
 */
async function journalWrite(ledger: Ledger, write: () => Promise<void> | undefined): Promise<void> {
  try {
    await write();
  } catch (error) {
    ledger.stop(error);
  }
}

/** The engine that sends the packed batches, with its part and the sender's of the options; none on a dry run. */
function sendingEngine(
  o: ResolvedUploadOptions,
  ledger: Ledger,
  onSettled: () => void,
  release: EngineOptions['release'],
): Engine | undefined {
  if (o.client === undefined || o.dryRun) return undefined;
  const { accountId, target, maxRetries, retryBaseMs, clock, random, signal, cancelSignal, lease } = o;
  const sender: SenderOptions = {
    client: o.client,
    accountId,
    target,
    maxRetries,
    retryBaseMs,
    clock,
    random,
    signal,
    cancelSignal,
    lease,
  };
  return createEngine({ sender, concurrency: o.concurrency, ledger, journal: o.journal, onSettled, release });
}

/** The users to pack: raw records (the `records` option, its rules resolved at the entry) are hashed here first. */
export function hashedUsers(users: UploadUsers, records: RowRules | undefined): UploadUsers {
  if (records === undefined) return users;
  return hashRows(users as Iterable<RawRecord> | AsyncIterable<RawRecord>, records);
}

function statusOf(read: ReadResult, ledger: Ledger, oversized: number): UploadStatus {
  // A batch cut by the run's signal after the input had been read is not confirmed: interrupted.
  if (read.interrupted || (ledger.unfinished > 0 && ledger.fatal === undefined)) return 'interrupted';
  // A user too large for any request was not sent: the target lacks it (as sync's `partial`).
  if (read.ended && ledger.fatal === undefined && ledger.failed.length === 0)
    return oversized > 0 ? 'partial' : 'completed';
  return ledger.confirmed + ledger.skipped > 0 ? 'partial' : 'failed';
}

/**
 * One operation's users sent with options resolved already (sync's Deletes and Updates): the
 * upload's own options at their defaults.
 */
export function sendResolved(
  o: ResolvedSendOptions,
  how: {
    operationType: OperationType;
    users: UploadUsers;
    dryRun?: boolean;
    onConfirmed?: (batch: ConfirmedBatchInfo) => void | Promise<void>;
  },
): Promise<UploadReport> {
  return upload({
    ...o,
    ...(how.onConfirmed === undefined ? {} : { onConfirmed: how.onConfirmed }),
    users: how.users,
    records: undefined,
    operation: how.operationType === 'Update' ? 'update' : 'delete',
    group: { operationType: how.operationType },
    guard: {},
    // The sync judged its plan's size (sync-plan.ts); its sends are parts of it.
    minAudienceSize: 0,
    dryRun: how.dryRun === true,
    progressIntervalMs: DEFAULT_PROGRESS_INTERVAL_MS,
  });
}

/**
 * Add (`Update`) or remove (`Delete`) users, verifying every batch; `onConfirmed` hears of each
 * confirmed batch with the `line` of its users. What sync builds on.
 */
export function sendUsers(o: SendUsersOptions): Promise<UploadReport> {
  const { operationType, ...rest } = o;
  return upload(resolveUploadOptions({ ...rest, operation: operationType === 'Update' ? 'update' : 'delete' }));
}
