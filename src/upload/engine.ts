/**
 * The sending engine: packed batches in, confirmed batches out, at most `concurrency` in flight.
 *
 * p-limit is the one bound. `offer()` resolves when its batch has a slot (not when it is
 * confirmed), so a reader that awaits it holds at most `concurrency` batches in flight plus the
 * one waiting: memory stays flat whatever the input size. With a journal, batches an earlier
 * run confirmed are skipped (after checking their content hash) and batches it kept after
 * failing are re-sent first.
 */
import pLimit from 'p-limit';
import { JournalError, batchDigest } from '../state/journal.js';
import type { UploadJournal } from '../state/journal.js';
import { isAborted } from '../util/clock.js';
import type { Ledger } from './ledger.js';
import type { PackedBatch } from './plan.js';
import { sendBatch, type SendableBatch, type SenderOptions } from './sender.js';

export interface EngineOptions {
  /** How each batch is sent and verified (sender.ts's part of the options). */
  sender: SenderOptions;
  concurrency: number;
  ledger: Ledger;
  journal?: UploadJournal | undefined;
  /** After each batch settles (progress). */
  onSettled?: () => void;
  /** A confirmed batch whose body nothing else keeps, given back to the packer (BatchPacker.release). */
  release?: ((batch: SendableBatch) => void) | undefined;
}

export interface Engine {
  /** Re-send the batches an earlier run kept in the journal after they failed (a resumed run does it first). */
  resendKept(): Promise<void>;
  /** Send a packed batch, or skip it when the journal says it was confirmed; resolves once it has a slot. */
  offer(batch: PackedBatch): Promise<void>;
  /** Wait until every batch offered has settled. */
  drain(): Promise<void>;
  readonly inFlight: number;
}

export function createEngine(o: EngineOptions): Engine {
  const limit = pLimit(o.concurrency);
  const settling = new Set<Promise<void>>();
  const { ledger, journal } = o;
  /** Batches re-sent from the journal's kept bodies in this run: index → content hash. */
  const keptResent = new Map<number, string>();
  const shouldStop = (): boolean => ledger.stopped || isAborted(o.sender.signal);

  const send = async (batch: SendableBatch): Promise<void> => {
    const outcome = await sendBatch(o.sender, batch, ledger.tally, shouldStop).catch(asFailure);
    await ledger.record(batch, outcome);
    // Recorded (the journal's digest is of these bytes). Only a body confirmed at its first request
    // is free to reuse: an earlier attempt's socket, ended by a timeout or an early answer, could in
    // principle still be writing it.
    if (outcome.kind === 'confirmed' && outcome.requests === 1) o.release?.(batch);
    o.onSettled?.();
  };

  const submit = (batch: SendableBatch): Promise<void> =>
    new Promise((started) => {
      const task = limit(async () => {
        started();
        await send(batch);
      });
      settling.add(task);
      void task.finally(() => settling.delete(task));
    });

  return {
    get inFlight() {
      return limit.activeCount;
    },
    async resendKept() {
      if (journal === undefined) return;
      for (const f of [...journal.failed.values()]) {
        if (shouldStop()) return;
        const kept = await journal.readFailedBatch(f.index);
        if (kept === undefined) continue; // recomputed from the input
        keptResent.set(f.index, f.sha256);
        await submit({ ...f, body: kept.body, bytes: kept.body.length, lines: kept.lines });
      }
    },
    async offer(batch) {
      if (journal === undefined) return submit({ ...batch, sha256: undefined });
      const sha256 = batchDigest(batch.body);
      const kept = keptResent.get(batch.index) ?? journal.failed.get(batch.index)?.sha256;
      if (kept !== undefined && kept !== sha256) throw keptMismatch(batch.index);
      if (keptResent.has(batch.index)) return;
      if (journal.isConfirmed(batch.index, sha256)) return ledger.skip(batch);
      return submit({ ...batch, sha256 });
    },
    async drain() {
      while (settling.size > 0) await Promise.all(settling);
    },
  };
}

/** sendBatch settles every platform answer itself; anything else thrown is a failure of this batch. */
function asFailure(error: unknown): { kind: 'failed'; error: unknown } {
  return { kind: 'failed', error };
}

function keptMismatch(index: number): JournalError {
  return new JournalError(
    'journal_mismatch',
    `batch ${index} differs from the failed batch kept in the journal: the input, the options or the tool version changed`,
    { fix: "start over (unfinished: 'restart')" },
  );
}
