/**
 * Sliding-window request counters, one per (family, key), reporting what the platform's
 * x-rate-limit-* and x-account-rate-limit-* headers say.
 */
export interface SandboxRateLimit {
  limit: number;
  windowMs: number;
}

export interface WindowState {
  limit: number;
  remaining: number;
  /** Unix seconds at which the oldest counted request leaves the window. */
  reset: number;
}

export interface WindowKey {
  key: string;
  rule: SandboxRateLimit;
}

export class SlidingWindows {
  private readonly windows = new Map<string, number[]>();

  constructor(private readonly now: () => number) {}

  /**
   * Counts a request in every window when each has room, and in none otherwise: a request the
   * platform refuses uses no quota, so one exhausted window must not drain the others.
   * Returns each window after the decision, in the order given.
   */
  take(keys: readonly WindowKey[]): { allowed: boolean; windows: WindowState[] } {
    const t = this.now();
    const all = keys.map(({ key, rule }) => ({ rule, hits: this.prune(key, rule, t) }));
    const allowed = all.every(({ rule, hits }) => hits.length < rule.limit);
    if (allowed) for (const { hits } of all) hits.push(t);
    return {
      allowed,
      windows: all.map(({ rule, hits }) => ({
        limit: rule.limit,
        remaining: Math.max(0, rule.limit - hits.length),
        reset: Math.ceil(((hits[0] ?? t) + rule.windowMs) / 1000),
      })),
    };
  }

  private prune(key: string, rule: SandboxRateLimit, t: number): number[] {
    let hits = this.windows.get(key);
    if (hits === undefined) {
      hits = [];
      this.windows.set(key, hits);
    }
    // Timestamps are appended in order, so expired ones are a prefix.
    let expired = 0;
    while (expired < hits.length && (hits[expired] ?? 0) <= t - rule.windowMs) expired++;
    if (expired > 0) hits.splice(0, expired);
    return hits;
  }
}

/** The window a client must hear about: the one with the least room left (the first on a tie). */
export function tightest(windows: readonly WindowState[]): WindowState | undefined {
  let out: WindowState | undefined;
  for (const w of windows) if (out === undefined || w.remaining < out.remaining) out = w;
  return out;
}

export function rateLimitHeaders(
  prefix: 'x-rate-limit' | 'x-account-rate-limit',
  w: WindowState,
): Record<string, string> {
  return {
    [`${prefix}-limit`]: String(w.limit),
    [`${prefix}-remaining`]: String(w.remaining),
    [`${prefix}-reset`]: String(w.reset),
  };
}
