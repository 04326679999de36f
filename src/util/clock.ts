/**
 * Time, waits and backoff, in one place: the client, the uploader and the lock all wait, and
 * tests replace the clock so that waits take no time.
 */

/** What waits and timestamps go through; tests pass one whose `sleep` returns at once. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Wait `ms`, or until `signal` aborts (rejecting with its reason). The abort listener is removed
 * when the timer fires: a long run sleeps thousands of times on one signal, and listeners left
 * behind would pile up on it (and trip Node's MaxListenersExceeded warning).
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted === true) return Promise.reject(signal.reason as unknown);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason as unknown);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export const realClock: Clock = { now: () => Date.now(), sleep };

/** A function call, so TypeScript does not narrow `signal.aborted` across awaits. */
export function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/**
 * Exponential backoff with "equal jitter" before attempt `attempt + 1` (`attempt` >= 1): half of
 * min(maxMs, baseMs * 2^(attempt-1)) fixed, half random, so retries of many clients spread out
 * but never come back sooner than half the nominal wait.
 */
export function backoffMs(attempt: number, o: { baseMs: number; maxMs: number }, random: () => number): number {
  const exp = Math.min(o.maxMs, o.baseMs * 2 ** (attempt - 1));
  return Math.round(exp / 2 + (random() * exp) / 2);
}
