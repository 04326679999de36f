/**
 * `uploadAudience()`: users in, verified batches out. Input (input.ts) feeds the batch plan
 * (plan.ts); each closed batch goes to the engine (engine.ts), which sends and verifies it
 * (sender.ts) with at most `concurrency` in flight; the ledger keeps the books and the journal;
 * the report is built from them (report.ts). `sendUsers()` is the same for a caller that has
 * users to add or remove and wants each confirmed batch back (sync).
 */
import { ConfigError } from '../errors.js';
import { hashRecords, type RawRecord } from '../hashing/pipeline.js';
import { createHashSummary } from '../hashing/summary.js';
import { guardInput, rejectGuardOptions } from '../hashing/reject-guard.js';
import { realClock, type Clock } from '../util/clock.js';
import { createEngine, type Engine } from './engine.js';
import { readInput, type ReadResult } from './input.js';
import { Ledger } from './ledger.js';
import { resolveSendOptions, resolveUploadGroup } from './options.js';
import { BatchPacker, resolveBatchLimits, type PackedBatch } from './plan.js';
import { describeTarget, type Target } from './target.js';
import { buildReport, progressOf, type RunBooks } from './report.js';
import type { SendUsersOptions, UploadAudienceOptions, UploadReport, UploadStatus, UploadUsers } from './types.js';

/** Upload users to a custom audience or a do-not-reach list; returns the report. */
export async function uploadAudience(o: UploadAudienceOptions): Promise<UploadReport> {
  const clock = o.clock ?? realClock;
  const startedMs = clock.now();
  const dryRun = o.dryRun === true;
  const limits = resolveBatchLimits(o.limits);
  const group = resolveUploadGroup({ ...o, now: new Date(startedMs) });
  const { concurrency, maxRetries } = resolveSendOptions(o);
  const client = o.client;
  if (!dryRun && client === undefined) {
    throw new ConfigError('missing_client', 'uploadAudience needs a client unless dryRun is set', {
      fix: 'pass client: createClient({...})',
    });
  }
  const target = describeTarget(o.target);
  const source = hashedUsers(o, target);
  const ownSummary = source.summary === undefined ? createHashSummary() : undefined;
  const packer = new BatchPacker(limits, { dedupe: o.dedupe !== false });
  const ledger = new Ledger(o.journal, o.onConfirmed);
  const books: RunBooks = {
    runId: o.runId ?? '',
    accountId: o.accountId,
    target: o.target,
    operation: o.operation ?? 'update',
    dryRun,
    resumed: o.journal?.resumed ?? false,
    summary: source.summary ?? ownSummary ?? createHashSummary(),
    packer,
    ledger,
    client,
    clientStart: client?.stats(),
    startedMs,
  };
  // Throws from the stream, so an input over the limits stops before its last batch is packed.
  const users = guardInput(source, () => books.summary, rejectGuardOptions(o));
  const progress = progressReporter(o, books, clock, users, () => engine?.inFlight ?? 0);
  const engine: Engine | undefined =
    client === undefined || dryRun
      ? undefined
      : createEngine({
          ...o,
          client,
          concurrency,
          maxRetries,
          retryBaseMs: o.retryBaseMs ?? 1000,
          clock,
          random: o.random ?? Math.random,
          signal: o.signal,
          ledger,
          journal: o.journal,
          onSettled: () => progress(false, true),
        });
  const onPacked = async (batch: PackedBatch): Promise<void> => {
    o.onBatch?.(batch);
    await engine?.offer(batch);
  };

  await engine?.resendKept();
  const read = await readInput({
    users,
    packer,
    handle: packer.group(group),
    target,
    ownSummary,
    signal: o.signal,
    onPacked,
    onItem: () => progress(false),
    stopped: () => ledger.stopped,
  });
  if (read.ended && !dryRun) await journalWrite(ledger, () => o.journal?.recordInputEnd(packer.stats.batches));
  await engine?.drain();
  // Once sending has started, a failure still gets a report (with the counts so far and the error).
  if (read.error !== undefined && ledger.tally.requests === 0 && ledger.skipped === 0) throw read.error;
  if (read.error !== undefined) ledger.stop(read.error);

  if (!dryRun && statusOf(read, ledger) === 'completed') await journalWrite(ledger, () => o.journal?.markComplete());
  const status = statusOf(read, ledger);
  const report = buildReport(books, status, clock.now());
  progress(true);
  return report;
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
export function hashedUsers(o: Pick<UploadAudienceOptions, 'users' | 'records'>, target: Target): UploadUsers {
  if (o.records === undefined) return o.users;
  return hashRecords(o.users as Iterable<RawRecord> | AsyncIterable<RawRecord>, {
    ...(target.types === undefined ? {} : { types: target.types }),
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
  o: UploadAudienceOptions,
  books: RunBooks,
  clock: Clock,
  users: UploadUsers,
  inFlight: () => number,
): (done: boolean, force?: boolean) => void {
  const interval = o.progressIntervalMs ?? 250;
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
    const now = clock.now();
    if (!force && !done && now - last < interval) return;
    last = now;
    o.onProgress(progressOf(books, now, inFlight(), inputProgress?.(), done));
  };
}

/**
 * Add (`Update`) or remove (`Delete`) users, verifying every batch; `onConfirmed` hears of each
 * confirmed batch with the `line` of its users. What sync builds on.
 */
export function sendUsers(o: SendUsersOptions): Promise<UploadReport> {
  const { operationType, ...rest } = o;
  return uploadAudience({ ...rest, operation: operationType === 'Update' ? 'update' : 'delete' });
}
