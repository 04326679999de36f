/**
 * `uploadAudience()`: users in, verified batches out. Input (input.ts) feeds the batch plan
 * (plan.ts); each closed batch goes to the engine (engine.ts), which sends and verifies it
 * (sender.ts) with at most `concurrency` in flight; the ledger keeps the books and the journal;
 * the report is built from them (report.ts). `sendUsers()` is the same for a caller that has
 * users to add or remove and wants each confirmed batch back (sync).
 */
import { hashRecords, type HashRecordsOptions, type RawRecord } from '../hashing/pipeline.js';
import { createHashSummary, type HashSummary } from '../hashing/summary.js';
import { guardInput } from '../hashing/reject-guard.js';
import { createEngine, type Engine } from './engine.js';
import { readInput, type ReadResult } from './input.js';
import { Ledger } from './ledger.js';
import {
  DEFAULT_PROGRESS_INTERVAL_MS,
  resolveUploadOptions,
  type ResolvedSendOptions,
  type ResolvedUploadOptions,
} from './options.js';
import { BatchPacker, type OperationType } from './plan.js';
import type { Target } from './target.js';
import { buildReport, progressOf, type RunBooks } from './report.js';
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
  return upload(resolveUploadOptions(o));
}

/** The upload of options resolved at an entry (uploadAudience, runUpload, sync): nothing is checked again. */
export async function upload(o: ResolvedUploadOptions): Promise<UploadReport> {
  const startedMs = o.clock.now();
  const source = hashedUsers(o);
  const ownSummary = source.summary === undefined ? createHashSummary() : undefined;
  const packer = new BatchPacker(o.limits, { dedupe: o.dedupe });
  const ledger = new Ledger(o.journal, o.onConfirmed);
  const books = runBooks(o, startedMs, source.summary ?? ownSummary ?? createHashSummary(), packer, ledger);
  // Throws from the stream, so an input over the limits stops before its last batch is packed.
  const users = guardInput(source, () => books.summary, o.guard);
  const progress = progressReporter(o, books, users, () => engine?.inFlight ?? 0);
  const engine = sendingEngine(o, ledger, () => progress(false, true));
  await engine?.resendKept();
  const read = await readInput({
    users,
    packer,
    handle: packer.group(o.group),
    target: o.target,
    ownSummary,
    signal: o.signal,
    onPacked: async (batch) => {
      o.onBatch?.(batch);
      await engine?.offer(batch);
    },
    onItem: () => progress(false),
    stopped: () => ledger.stopped,
  });
  if (read.ended && !o.dryRun) await journalWrite(ledger, () => o.journal?.recordInputEnd(packer.stats.batches));
  await engine?.drain();
  const status = await settle(o, read, ledger);
  const report = buildReport(books, status, o.clock.now());
  progress(true);
  return report;
}

/** The run's books: what the report is built from. */
function runBooks(
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

/** The engine that sends the packed batches; none on a dry run. */
function sendingEngine(o: ResolvedUploadOptions, ledger: Ledger, onSettled: () => void): Engine | undefined {
  if (o.client === undefined || o.dryRun) return undefined;
  return createEngine({ ...o, client: o.client, signal: o.signal, ledger, journal: o.journal, onSettled });
}

/**
 * The run's status once the input was read and every batch settled. A failure to read the input
 * before anything was sent is thrown; once sending has started it stops the run and is reported
 * (with the counts so far).
 */
async function settle(o: ResolvedUploadOptions, read: ReadResult, ledger: Ledger): Promise<UploadStatus> {
  if (read.error !== undefined && ledger.tally.requests === 0 && ledger.skipped === 0) throw read.error;
  if (read.error !== undefined) ledger.stop(read.error);
  if (!o.dryRun && statusOf(read, ledger) === 'completed') await journalWrite(ledger, () => o.journal?.markComplete());
  return statusOf(read, ledger);
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

/** The users to pack: raw records (the `records` option) are hashed here first. */
export function hashedUsers(o: {
  users: UploadUsers;
  records?: HashRecordsOptions | undefined;
  target: Target;
}): UploadUsers {
  if (o.records === undefined) return o.users;
  return hashRecords(o.users as Iterable<RawRecord> | AsyncIterable<RawRecord>, {
    ...(o.target.types === undefined ? {} : { types: o.target.types }),
    ...o.records,
  });
}

function statusOf(read: ReadResult, ledger: Ledger): UploadStatus {
  if (read.interrupted) return 'interrupted';
  if (read.ended && ledger.fatal === undefined && ledger.failed.length === 0) return 'completed';
  return ledger.confirmed + ledger.skipped > 0 ? 'partial' : 'failed';
}

/** Progress callbacks, at most one per `progressIntervalMs` while reading (forced ones aside). */
function progressReporter(
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
    onConfirmed?: (batch: ConfirmedBatchInfo) => void;
  },
): Promise<UploadReport> {
  return upload({
    ...o,
    ...(how.onConfirmed === undefined ? {} : { onConfirmed: how.onConfirmed }),
    users: how.users,
    operation: how.operationType === 'Update' ? 'update' : 'delete',
    group: { operationType: how.operationType },
    guard: {},
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
