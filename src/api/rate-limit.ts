/**
 * Rate limiting as data (like octokit's plugin-throttling): a policy lists which endpoints
 * share which sliding window, and how far server hints are trusted. The limiter enforces
 * the window on the client so that a well-behaved upload never sees a 429; the server's
 * headers can only make it wait longer, never shorter.
 */
import { TARGET_KINDS } from '../platform/targets.js';
import type { QueryValue } from '../platform/request.js';

export interface RateLimitEndpoint {
  method: string;
  /** Regular-expression source matched against the request path (no query). */
  path: string;
  /** Query parameters the request must carry with exactly these values (e.g. `with_total_count: 'true'`). */
  query?: Record<string, string>;
}

export interface RateLimitRule {
  name: string;
  /** Every endpoint listed shares ONE window (conservative: the platform may count them together). */
  endpoints: RateLimitEndpoint[];
  limit: number;
  windowMs: number;
}

export interface RateLimitPolicy {
  rules: RateLimitRule[];
  /** Added to each window, for servers that count a request a little after its response. */
  safetyMarginMs: number;
  /** Random extra wait added to a server reset, so parallel clients do not stampede. */
  resetJitterMs: number;
  /** Server hints (`retry-after`, `*-reset`) are clamped to [0, this]; garbage is ignored. */
  maxServerWaitMs: number;
}

/**
 * Each target kind's user-batch endpoint (platform/kinds/), as a pattern: the path its spec
 * builds, each id one segment. An id of NUL is encoded `%00`, which no literal part of a path holds.
 */
function userBatchEndpoints(): RateLimitEndpoint[] {
  const id = '\0';
  return TARGET_KINDS.map((kind) => {
    const { method, path } = kind.endpoints.postUsers(id, id, Buffer.alloc(0));
    const literal = path.split('%00').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    return { method, path: `^${literal.join('[^/]+')}$` };
  });
}

/**
 * The platform's documented limits: the audience users endpoints allow 1500 requests per 60 s
 * (custom audiences and do-not-reach lists: every target kind's user batches, in one window);
 * any request with `with_total_count=true` falls under a lower limit, 200 per 15 minutes.
 */
export const DEFAULT_RATE_LIMIT_POLICY: RateLimitPolicy = {
  rules: [
    {
      name: 'audience_users',
      endpoints: userBatchEndpoints(),
      limit: 1500,
      windowMs: 60_000,
    },
    {
      name: 'with_total_count',
      endpoints: [{ method: 'GET', path: '^/', query: { with_total_count: 'true' } }],
      limit: 200,
      windowMs: 15 * 60_000,
    },
  ],
  safetyMarginMs: 100,
  resetJitterMs: 1_000,
  maxServerWaitMs: 15 * 60_000,
};

/**
 * Sliding-window limiter shared by concurrent requests. A slot is held from the moment a
 * request is sent until its response (or failure) and then stays in the window for
 * `windowMs` from that END time. The server sees a request arrive somewhere between send
 * and end, so a new request sent `windowMs` after the oldest one ENDED can never fall into
 * the same server-side window, whatever the latency of either: the guarantee holds on the
 * wire, not only in the client's bookkeeping.
 */
export class SlidingWindowLimiter {
  /** End time of each request in the window; Infinity while it is in flight. */
  private slots: number[] = [];
  private waiters: Array<() => void> = [];

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  /** Milliseconds to wait before a slot is free at `now`: 0 = free now, Infinity = wait for `released()`. */
  delay(now: number): number {
    this.slots = this.slots.filter((end) => end + this.windowMs > now);
    if (this.slots.length < this.limit) return 0;
    let oldest = Infinity;
    for (const end of this.slots) if (end < oldest) oldest = end;
    return oldest === Infinity ? Infinity : Math.max(1, oldest + this.windowMs - now);
  }

  /** Takes a slot; call right after `delay(now)` returned 0 (no await in between). Returns `release(endTime)`. */
  take(): (end: number) => void {
    this.slots.push(Infinity);
    let released = false;
    return (end: number) => {
      if (released) return;
      released = true;
      // In-flight markers are interchangeable, and pruning may have moved this one.
      const i = this.slots.indexOf(Infinity);
      if (i >= 0) this.slots[i] = end;
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    };
  }

  /** Resolves at the next release (when every slot of the window is in flight). */
  released(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

const patterns = new Map<string, RegExp>();

function pattern(source: string): RegExp {
  let re = patterns.get(source);
  if (re === undefined) {
    re = new RegExp(source);
    patterns.set(source, re);
  }
  return re;
}

function matchesQuery(
  wanted: Record<string, string> | undefined,
  query: Record<string, QueryValue> | undefined,
): boolean {
  if (wanted === undefined) return true;
  return Object.entries(wanted).every(([name, value]) => {
    const v = query?.[name];
    return v !== undefined && (Array.isArray(v) ? v.join(',') : String(v)) === value;
  });
}

/** Every rule the request falls under: a request may count in several windows and must fit in all. */
export function findRateLimitRules(
  policy: RateLimitPolicy,
  method: string,
  path: string,
  query?: Record<string, QueryValue>,
): RateLimitRule[] {
  return policy.rules.filter((r) =>
    r.endpoints.some((e) => e.method === method && pattern(e.path).test(path) && matchesQuery(e.query, query)),
  );
}

export interface RateLimitHeaders {
  limit: number | undefined;
  remaining: number | undefined;
  /** Unix seconds. */
  reset: number | undefined;
  source: 'account' | 'global';
}

type HeaderBag = Record<string, string | string[] | undefined>;

function headerValue(headers: HeaderBag, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function intHeader(headers: HeaderBag, name: string): number | undefined {
  const raw = headerValue(headers, name)?.trim();
  if (raw === undefined || !/^\d{1,15}$/.test(raw)) return undefined;
  return Number(raw);
}

/**
 * Both families the server sent: the per-account window (`x-account-rate-limit-*`) first, then
 * the per-credentials one (`x-rate-limit-*`). They are separate windows and either can run out
 * while the other has room, so callers must honour every one of them.
 */
export function parseRateLimitHeaders(headers: HeaderBag): RateLimitHeaders[] {
  const families: RateLimitHeaders[] = [];
  for (const [prefix, source] of [
    ['x-account-rate-limit-', 'account'],
    ['x-rate-limit-', 'global'],
  ] as const) {
    const remaining = intHeader(headers, `${prefix}remaining`);
    const reset = intHeader(headers, `${prefix}reset`);
    if (remaining !== undefined || reset !== undefined) {
      families.push({ limit: intHeader(headers, `${prefix}limit`), remaining, reset, source });
    }
  }
  return families;
}

function clampHint(ms: number, maxMs: number): number | undefined {
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(0, ms), maxMs);
}

/** Milliseconds until a `reset` (Unix seconds), clamped; undefined when absent or garbage. */
export function resetWaitMs(resetSeconds: number | undefined, now: number, maxMs: number): number | undefined {
  if (resetSeconds === undefined) return undefined;
  return clampHint(resetSeconds * 1000 - now, maxMs);
}

/**
 * Milliseconds until the LATEST reset among the exhausted families (clamped), since no request
 * gets through before every exhausted window has reset. A family is exhausted when it says
 * `remaining: 0`; after a 429 (`rejected`), a family that gives a reset but no remaining count
 * counts as exhausted too. Undefined when no exhausted family gives a usable reset.
 */
export function exhaustedResetWaitMs(
  families: readonly RateLimitHeaders[],
  now: number,
  maxMs: number,
  rejected: boolean,
): number | undefined {
  let latest: number | undefined;
  for (const f of families) {
    const exhausted = f.remaining === 0 || (rejected && f.remaining === undefined);
    const ms = exhausted ? resetWaitMs(f.reset, now, maxMs) : undefined;
    if (ms !== undefined && (latest === undefined || ms > latest)) latest = ms;
  }
  return latest;
}

/** `retry-after` as seconds or an HTTP date, clamped; undefined when absent or garbage. */
export function retryAfterMs(value: string | undefined, now: number, maxMs: number): number | undefined {
  const v = value?.trim();
  if (v === undefined || v === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return clampHint(Number(v) * 1000, maxMs);
  // Only the three HTTP date forms are dates (RFC 9110 5.6.7); Date.parse would also accept "1" or "-5".
  const date = IMF_FIXDATE_RE.test(v) || RFC850_DATE_RE.test(v) ? v : ASCTIME_RE.test(v) ? `${v} GMT` : undefined;
  const at = date === undefined ? NaN : Date.parse(date);
  return Number.isNaN(at) ? undefined : clampHint(at - now, maxMs);
}

/** `Sun, 06 Nov 1994 08:49:37 GMT`, the form servers send. */
const IMF_FIXDATE_RE = /^[A-Za-z]{3},\s+\d{1,2}\s+[A-Za-z]{3}\s+\d{4}\s+\d{2}:\d{2}:\d{2}\s+GMT$/;
/** `Sunday, 06-Nov-94 08:49:37 GMT` and `Sun Nov  6 08:49:37 1994` (GMT, unsaid): obsolete, and a recipient must read them. */
const RFC850_DATE_RE = /^[A-Za-z]+,\s+\d{2}-[A-Za-z]{3}-\d{2}\s+\d{2}:\d{2}:\d{2}\s+GMT$/;
const ASCTIME_RE = /^[A-Za-z]{3}\s+[A-Za-z]{3}\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}\s+\d{4}$/;
