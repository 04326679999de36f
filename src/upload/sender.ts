/**
 * One batch: send it and verify the answer, `success_count == total_count == users sent` (per
 * operation for do-not-reach lists).
 *
 * Retries have one owner each: the client retries failed requests (transport errors, 408/423/
 * 429/5xx) within its `maxAttempts`; this module re-sends only when a 2xx answer's counts do
 * not match, which the client cannot see. So a batch that always gets a 500 costs exactly
 * `maxAttempts` requests. Every attempt of either kind is counted (`SendTally`) as it goes out.
 */
import type { AdsClient } from '../api/client.js';
import type { UserBatchResult } from '../platform/responses.js';
import { AuthError, BatchVerificationError, ConfigError, ConnectionError } from '../errors.js';
import type { BatchGroup } from '../platform/batch.js';
import { backoffMs, isAborted, type Clock } from '../util/clock.js';
import type { Lease } from '../util/lease.js';
import type { Target } from './target.js';

/** A packed batch on its way: `sha256` is set when a journal records it. */
export interface SendableBatch {
  index: number;
  body: Buffer;
  bytes: number;
  users: number;
  operationUsers: number[];
  group: BatchGroup;
  lines: Uint32Array;
  sha256: string | undefined;
}

export interface SenderOptions {
  client: AdsClient;
  accountId: string;
  target: Target;
  /** Re-sends after a count mismatch. */
  maxRetries: number;
  retryBaseMs: number;
  clock: Clock;
  random: () => number;
  signal: AbortSignal | undefined;
  /** Cuts the requests on the wire too (the run's `cancelSignal`); `signal` is aborted with it. */
  cancelSignal: AbortSignal | undefined;
  /** A sync's lease on its target: every attempt of every request (re-sends too) is sent under it. */
  lease?: Lease | undefined;
}

/** What the sender adds to the run's counts. */
export interface SendTally {
  /** HTTP attempts: every request the batches made (the client's retries and the re-sends included). */
  requests: number;
  /** Body bytes of every attempt. */
  bytes: number;
  mismatches: number;
  /** Re-sends after a count mismatch. */
  resends: number;
  /** Attempts the client made again after a failed one (5xx, 429, reset, timeout). */
  clientRetries: number;
}

export type SendOutcome =
  /** `requests`: the HTTP attempts it took, re-sends and the client's retries included. */
  | { kind: 'confirmed'; success: number; total: number; requests: number }
  /** The batch did not go through; the run goes on with the others. */
  | { kind: 'failed'; error: unknown }
  /** Sending more is pointless (credentials, permission, configuration): the run stops. */
  | { kind: 'fatal'; error: unknown }
  /** Stopped before a re-send (interrupt, or another batch's fatal error): left for a resumed run. */
  | { kind: 'stopped' };

const MAX_RESEND_BACKOFF_MS = 30_000;

/** Send one batch until its counts verify, `maxRetries` re-sends at most. */
export async function sendBatch(
  o: SenderOptions,
  batch: SendableBatch,
  tally: SendTally,
  shouldStop: () => boolean,
): Promise<SendOutcome> {
  const sent = { requests: 0 };
  for (let attempt = 0; ; attempt++) {
    // A lease lost during a wait aborts the run's signal too: checked first, it is fatal, never a stop.
    if (leaseLost(o)) return { kind: 'fatal', error: o.lease?.signal.reason };
    if (shouldStop()) return { kind: 'stopped' };
    if (attempt > 0) tally.resends++;
    let result: UserBatchResult | UserBatchResult[];
    try {
      result = await post(o, batch, tally, sent);
    } catch (error) {
      if (leaseLost(o)) return { kind: 'fatal', error: o.lease?.signal.reason };
      // The run's signal ended a wait or a retry of the request: not a failure, left for a resumed run.
      if (isAborted(o.signal) && isAbortOf(error)) return { kind: 'stopped' };
      return isFatal(error) ? { kind: 'fatal', error } : { kind: 'failed', error };
    }
    const v = verify(batch, result);
    if (v.error === undefined)
      return { kind: 'confirmed', success: v.success, total: v.total, requests: sent.requests };
    tally.mismatches++;
    if (attempt >= o.maxRetries) return { kind: 'failed', error: v.error };
    // The first re-send goes at once (a count mismatch is usually transient), then back off.
    if (attempt > 0) {
      const wait = backoffMs(attempt, { baseMs: o.retryBaseMs, maxMs: MAX_RESEND_BACKOFF_MS }, o.random);
      // An abort ends the wait (the sleep rejects): the next turn's checks end the batch.
      await o.clock.sleep(wait, o.signal).catch((error: unknown) => {
        if (!isAborted(o.signal)) throw error;
      });
    }
  }
}

/** One post of the batch under the sync's lease: each of its HTTP attempts counted as it goes out (`sent`: the batch's). */
function post(
  o: SenderOptions,
  batch: SendableBatch,
  tally: SendTally,
  sent: { requests: number },
): Promise<UserBatchResult | UserBatchResult[]> {
  let attempts = 0;
  const onAttempt = (): void => {
    sent.requests++;
    if (attempts++ > 0) tally.clientRetries++;
    tally.requests++;
    tally.bytes += batch.bytes;
  };
  const { lease, signal: stopSignal, cancelSignal: signal } = o;
  return o.target.postUsers(o.client, o.accountId, batch.body, { onAttempt, lease, stopSignal, signal });
}

/** The client's error for a request its signal ended. */
const isAbortOf = (error: unknown): boolean => error instanceof ConnectionError && error.code === 'request_aborted';

/** Errors after which sending more is pointless: credentials, permission, configuration (a lost lease is too). */
function isFatal(error: unknown): boolean {
  return error instanceof AuthError || error instanceof ConfigError;
}

/** The sync's lease is known lost: its error (the signal's reason) ends the batch and the run. */
const leaseLost = (o: SenderOptions): boolean => o.lease?.signal.aborted === true;

/** Checks the platform's counts against the users sent; `error` when they do not prove every user was taken. */
export function verify(
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
  const problem = Array.isArray(result)
    ? perOperationProblem(batch.operationUsers, result)
    : success !== batch.users || total !== batch.users
      ? `success_count ${success}, total_count ${total}, users sent ${batch.users}`
      : undefined;
  if (problem === undefined) return { success, total };
  return {
    success,
    total,
    error: new BatchVerificationError(`the platform did not confirm every user of the batch (${problem})`, {
      expected: batch.users,
      successCount: success,
      totalCount: total,
      fix: 'the batch is re-sent automatically; if it keeps failing, run again later, resuming the journal',
    }),
  };
}

function perOperationProblem(operationUsers: number[], result: UserBatchResult[]): string | undefined {
  if (result.length !== operationUsers.length)
    return `${result.length} count pairs for ${operationUsers.length} operations`;
  const bad = result.findIndex((r, i) => r.success_count !== operationUsers[i] || r.total_count !== operationUsers[i]);
  if (bad < 0) return undefined;
  return `operation ${bad}: success_count ${result[bad]?.success_count}, total_count ${result[bad]?.total_count}, users sent ${operationUsers[bad]}`;
}
