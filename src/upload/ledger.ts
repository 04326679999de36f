/**
 * The run's books: what was confirmed, skipped, failed or refused, written to the journal as it
 * happens. Never identifiers: counts, batch indexes, input line numbers and error codes.
 */
import { AudienceKitError, HttpError } from '../errors.js';
import { batchDigest } from '../state/journal.js';
import type { UploadJournal } from '../state/journal.js';
import type { PackedBatch } from './plan.js';
import type { SendableBatch, SendOutcome, SendTally } from './sender.js';
import type { ConfirmedBatchInfo, FailedBatchReport, OperationErrorReport } from './types.js';

const OPERATION_ERRORS_KEPT = 100;

export class Ledger {
  readonly tally: SendTally = { requests: 0, bytes: 0, mismatches: 0, resends: 0, clientRetries: 0 };
  confirmed = 0;
  usersConfirmed = 0;
  skipped = 0;
  usersSkipped = 0;
  success = 0;
  total = 0;
  usersFailed = 0;
  readonly failed: FailedBatchReport[] = [];
  readonly opErrors: OperationErrorReport[] = [];
  opErrorsTotal = 0;
  /** Confirmed by the platform, not recorded by the journal. */
  readonly unrecorded: number[] = [];
  /** The error that stopped the run (the first one). */
  fatal: unknown;
  /** Batches left unconfirmed because the run was stopped (its signal, cancelSignal, a fatal error elsewhere). */
  unfinished = 0;

  constructor(
    private readonly journal: UploadJournal | undefined,
    private readonly onConfirmed: ((batch: ConfirmedBatchInfo) => void | Promise<void>) | undefined,
  ) {}

  /** True once nothing more should be sent. */
  get stopped(): boolean {
    return this.fatal !== undefined;
  }

  stop(error: unknown): void {
    this.fatal ??= error;
  }

  /** A batch an earlier run of the journal confirmed: counted, not sent. */
  skip(batch: PackedBatch): Promise<void> {
    this.skipped++;
    this.usersSkipped += batch.users;
    return this.tell(batch, true);
  }

  /** Tells `onConfirmed` of a confirmed batch and waits for it: its record may be what it awaits. */
  private async tell(batch: Pick<PackedBatch, 'index' | 'group' | 'users' | 'lines'>, earlier: boolean): Promise<void> {
    try {
      await this.onConfirmed?.({
        index: batch.index,
        group: batch.group,
        users: batch.users,
        lines: batch.lines,
        earlier,
      });
    } catch (error) {
      this.stop(error);
    }
  }

  /** Resolves once the journal holds the outcome. */
  async record(batch: SendableBatch, outcome: SendOutcome): Promise<void> {
    if (outcome.kind === 'stopped') {
      this.unfinished++;
      return;
    }
    if (outcome.kind === 'fatal') {
      this.stop(outcome.error);
      return;
    }
    if (outcome.kind === 'failed') {
      await this.recordFailure(batch, outcome.error);
      return;
    }
    this.success += outcome.success;
    this.total += outcome.total;
    this.confirmed++;
    this.usersConfirmed += batch.users;
    try {
      await this.journal?.recordConfirmed(batch.index, batch.sha256 ?? batchDigest(batch.body), batch.users);
    } catch (error) {
      // Confirmed but not recorded (disk full): never re-send it as if the send had failed;
      // stop, and say which batches a resumed run will send again.
      this.unrecorded.push(batch.index);
      this.stop(error);
    }
    await this.tell(batch, false);
  }

  private async recordFailure(batch: SendableBatch, error: unknown): Promise<void> {
    if (error instanceof HttpError && error.operationErrors.length > 0)
      this.recordOperationErrors(batch, error as HttpError);
    const { code, reason } = describeFailure(error);
    this.failed.push({ index: batch.index, users: batch.users, reason, code });
    this.usersFailed += batch.users;
    try {
      await this.journal?.recordFailed(batch, batch.sha256 ?? batchDigest(batch.body), reason);
    } catch (journalError) {
      this.stop(journalError);
    }
  }

  /** The platform refused users by position: mapped back to input lines. */
  private recordOperationErrors(batch: SendableBatch, error: HttpError): void {
    const starts: number[] = [];
    let acc = 0;
    for (const n of batch.operationUsers) {
      starts.push(acc);
      acc += n;
    }
    for (const e of error.operationErrors) {
      this.opErrorsTotal++;
      if (this.opErrors.length >= OPERATION_ERRORS_KEPT) continue;
      const start = starts[e.index];
      const count = batch.operationUsers[e.index] ?? 0;
      const line = start !== undefined && e.userIndex !== undefined ? (batch.lines[start + e.userIndex] ?? null) : null;
      // The operation's span lets a user find the refused rows when the platform names no user.
      const first = start === undefined || count === 0 ? undefined : batch.lines[start];
      const last = start === undefined || count === 0 ? undefined : batch.lines[start + count - 1];
      this.opErrors.push({
        line,
        operation_lines: first === undefined || last === undefined ? null : [first, last],
        batch: batch.index,
        operation: e.index,
        code: String(e.code ?? 'INVALID_USER_DATA'),
      });
    }
  }
}

/** Why a send failed, for the report and the journal (never identifiers). */
function describeFailure(error: unknown): { code: string; reason: string } {
  if (error instanceof AudienceKitError) return { code: error.code as string, reason: error.message };
  return { code: 'internal', reason: error instanceof Error ? error.message : String(error) };
}
