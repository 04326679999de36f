import type { Clock } from '../../src/util/clock.js';

/**
 * A clock whose sleeps return at once and move its time on by what they waited. A client
 * waiting for time to pass (a server's rate-limit reset, a limiter's window) loops on
 * `sleep` then `now`: with a no-op sleep on the real time it spins, burning a core until the
 * wall clock gets there (about a second per 429); here the first look after the sleep is past it.
 */
export function fastForwardClock(): Clock {
  let skew = 0;
  return {
    now: () => Date.now() + skew,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      skew += ms;
    },
  };
}
