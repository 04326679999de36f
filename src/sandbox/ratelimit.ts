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

export class SlidingWindows {
  private readonly windows = new Map<string, number[]>();

  constructor(private readonly now: () => number) {}

  /** Counts a request if there is room; returns the window after it and whether it was allowed. */
  take(key: string, rule: SandboxRateLimit): WindowState & { allowed: boolean } {
    const t = this.now();
    let hits = this.windows.get(key);
    if (hits === undefined) {
      hits = [];
      this.windows.set(key, hits);
    }
    // Timestamps are appended in order, so expired ones are a prefix.
    let expired = 0;
    while (expired < hits.length && (hits[expired] ?? 0) <= t - rule.windowMs) expired++;
    if (expired > 0) hits.splice(0, expired);
    const allowed = hits.length < rule.limit;
    if (allowed) hits.push(t);
    const oldest = hits[0] ?? t;
    return {
      allowed,
      limit: rule.limit,
      remaining: Math.max(0, rule.limit - hits.length),
      reset: Math.ceil((oldest + rule.windowMs) / 1000),
    };
  }
}

export function rateLimitHeaders(prefix: 'x-rate-limit' | 'x-account-rate-limit', w: WindowState): Record<string, string> {
  return {
    [`${prefix}-limit`]: String(w.limit),
    [`${prefix}-remaining`]: String(w.remaining),
    [`${prefix}-reset`]: String(w.reset),
  };
}
