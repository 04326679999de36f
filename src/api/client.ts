/**
 * The HTTP core: one undici Agent (keep-alive pool per origin), OAuth 1.0a signing per
 * attempt, client-side rate limiting, retries with backoff, typed errors and zod-validated
 * responses. Endpoint functions (endpoints.ts) are thin wrappers over `request()`.
 *
 * Why undici rather than global fetch: explicit connect/headers/body timeouts with distinct
 * error codes, a tunable keep-alive pool, and no Response/stream wrapping per request (the
 * uploader sends thousands of 5 MB bodies).
 */
import { performance } from 'node:perf_hooks';
import { Agent, request as undiciRequest, type Dispatcher } from 'undici';
import { z } from 'zod';
import { ConfigError, ConnectionError, ResponseShapeError, TimeoutError } from '../errors.js';
import { backoffMs, isAborted, realClock, type Clock } from '../util/clock.js';
import { isLoopbackHost } from '../util/host.js';
import type { Lease } from '../util/lease.js';
import { USER_AGENT } from '../version.js';
import { oauth1Header, percentEncode } from './oauth.js';
import { buildHttpError, carriesErrors } from './parse-error.js';
import { buildQueryString } from './query.js';
import type { QueryValue } from '../platform/request.js';
import type { HttpMethod } from '../platform/request.js';
import {
  DEFAULT_RATE_LIMIT_POLICY,
  SlidingWindowLimiter,
  exhaustedResetWaitMs,
  findRateLimitRules,
  parseRateLimitHeaders,
  retryAfterMs,
  type RateLimitPolicy,
  type RateLimitRule,
} from './rate-limit.js';

export interface Credentials {
  consumerKey: string;
  consumerSecret: string;
  accessToken?: string;
  accessTokenSecret?: string;
}

export type WaitReason = 'rate_limit' | 'retry' | 'server_reset';
export interface WaitEvent {
  reason: WaitReason;
  ms: number;
  path: string;
}
export interface RequestEvent {
  method: string;
  /** Path only: no host, no query, never a header. */
  path: string;
  status: number | 'error';
  attempt: number;
  ms: number;
}

/** Where a warning came from: never a query, header or body. */
export interface WarnContext {
  method: string;
  path: string;
}

export interface RetryOptions {
  /** First backoff (before jitter); doubles per attempt. */
  baseMs?: number;
  /** Cap of one backoff. */
  maxMs?: number;
}

export interface ClientOptions {
  /** e.g. https://ads-api.example.com (no version segment); https unless loopback. */
  adsBaseUrl: string;
  /** Core platform (OAuth endpoints); defaults to adsBaseUrl. */
  apiBaseUrl?: string;
  credentials: Credentials;
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /** Attempts per request including the first (408/423/429/5xx/reset/timeout are retried). */
  maxAttempts?: number;
  retry?: RetryOptions;
  rateLimitPolicy?: RateLimitPolicy;
  onWait?: (e: WaitEvent) => void;
  onRequest?: (e: RequestEvent) => void;
  /** The platform's `x-api-warn` of a successful response (deprecations, ignored parameters), redacted. */
  onWarn?: (warning: string, context: WarnContext) => void;
  clock?: Clock;
  random?: () => number;
  /**
   * Send every request through this undici Dispatcher instead of the client's own keep-alive
   * Agent: a `ProxyAgent` or `EnvHttpProxyAgent` behind a corporate proxy, an Agent with custom
   * TLS, a pool shared by several clients. The caller owns it: `close()` leaves it open, and
   * its own connection settings apply (`connectTimeoutMs` and keep-alive are the own Agent's;
   * `headersTimeoutMs` / `bodyTimeoutMs` are set per request and apply either way).
   */
  dispatcher?: Dispatcher;
}

export interface ClientStats {
  requests: number;
  retries: number;
  waitedMs: number;
  rateLimitWaits: number;
  /** 429 answers received (0 when the client-side limiter did its job). */
  rateLimited: number;
}

export interface ApiRequest<T> {
  method: HttpMethod;
  /** Which base URL: the ads API (default) or the core platform API (OAuth endpoints). */
  base?: 'ads' | 'api';
  /** Path with already-encoded segments, e.g. `/12/accounts/abc/custom_audiences`. */
  path: string;
  query?: Record<string, QueryValue>;
  /** JSON body: an object to serialize, or pre-serialized text or UTF-8 bytes (not signed). */
  json?: unknown;
  /** Form body (signed). */
  form?: Record<string, string>;
  /** `json` (default) or `form` (the OAuth token endpoints answer `a=b&c=d`). */
  responseType?: 'json' | 'form';
  schema: z.ZodType<T>;
  /** Token to sign with: default the client's access token; `null` signs with the consumer key only. */
  token?: { key: string; secret: string } | null;
  oauthParams?: Record<string, string>;
  /**
   * False for requests that create something (a POST creating an audience or a permission):
   * those are retried only when the platform surely did not process them (connect failures,
   * 408/423/429/503), never after a reset or a 500 where a retry could create a duplicate.
   * Default true.
   */
  idempotent?: boolean;
  /** Ends the request: its waits, its retries and the attempt on the wire. */
  signal?: AbortSignal;
  /**
   * Ends the request's waits (the rate limit's, a server's reset, the backoff before a retry) and
   * its retries, but lets an attempt already sent finish, so its answer is not lost: an upload's
   * stop (its batches in flight are confirmed and recorded, nothing more is sent).
   */
  stopSignal?: AbortSignal;
  /** Called as each attempt goes out (the first and every retry): a caller's own count of its requests. */
  onAttempt?: () => void;
  /**
   * A lease the request may only be sent under (a sync's lock on its target): proven before every
   * attempt and after every wait, no wait longer than its proof interval, and its loss aborts the
   * attempt in flight. The request then fails with the lease's error, never sent after it is lost.
   */
  lease?: Lease;
}

export interface ApiResponse<T> {
  status: number;
  body: T;
  apiWarn: string | undefined;
}

const DEFAULTS = {
  connectTimeoutMs: 10_000,
  headersTimeoutMs: 60_000,
  bodyTimeoutMs: 60_000,
  maxAttempts: 5,
  retryBaseMs: 500,
  retryMaxMs: 30_000,
} as const;

/** The most attempts a request may be given (createClient refuses more). */
export const MAX_ATTEMPTS_LIMIT = 20;

const RETRYABLE_STATUS = new Set([408, 423, 429]);
/** 400/401/403/404 and other 4xx are never retried: the same request fails the same way. */
export function isRetryableStatus(status: number, idempotent = true): boolean {
  if (RETRYABLE_STATUS.has(status) || status === 503) return true;
  return idempotent && status >= 500;
}

/** Failures where the request cannot have reached the application (safe to repeat anything). */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT', 'ENOTFOUND', 'EAI_AGAIN']);

/** zod's own wording ("expected string, received undefined") says nothing about what to set. */
const missingOr = (what: string, expected: string) => (issue: { input: unknown }) =>
  issue.input === undefined ? `${what} is missing` : `${what} must be ${expected}`;

function baseUrlSchema(what: string) {
  return z.string({ error: missingOr(what, 'a string') }).superRefine((value, ctx) => {
    let u: URL;
    try {
      u = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: `${what} is not a URL` });
      return;
    }
    if (u.protocol === 'https:') return;
    if (u.protocol === 'http:' && isLoopbackHost(u.hostname)) return;
    ctx.addIssue({
      code: 'custom',
      message: `${what} must use https (http is allowed only for loopback hosts 127.0.0.0/8, localhost, [::1])`,
    });
  });
}

const positiveMs = z.number().int().positive().max(3_600_000);

const policySchema = z.object({
  rules: z.array(
    z.object({
      name: z.string().min(1),
      endpoints: z.array(
        z.object({
          method: z.string().min(1),
          path: z.string().min(1),
          query: z.record(z.string(), z.string()).optional(),
        }),
      ),
      limit: z.number().int().positive(),
      windowMs: z.number().int().positive(),
    }),
  ),
  safetyMarginMs: z.number().int().nonnegative(),
  resetJitterMs: z.number().int().nonnegative(),
  maxServerWaitMs: z.number().int().nonnegative(),
});

type CredentialField = keyof Credentials;

/** `credentials.consumerKey`: the option as the caller wrote it (the CLI names its variable instead). */
const credentialName = (field: CredentialField) => `credentials.${field}`;

const credentialField = (field: CredentialField) =>
  z
    .string({ error: missingOr(credentialName(field), 'a string') })
    .min(1, { error: `${credentialName(field)} is empty` })
    // A lone surrogate has no UTF-8 form to sign with (see percentEncode); say so before any request.
    .refine((v) => !/\p{Cs}/u.test(v), { error: `${credentialName(field)} contains a lone UTF-16 surrogate` });

/** Messages of these name their field themselves; other options get the field appended. */
const SELF_NAMED = /^(adsBaseUrl|apiBaseUrl|credentials)\b/;

const clientOptionsSchema = z.object({
  adsBaseUrl: baseUrlSchema('adsBaseUrl'),
  apiBaseUrl: baseUrlSchema('apiBaseUrl').optional(),
  credentials: z
    .object(
      {
        consumerKey: credentialField('consumerKey'),
        consumerSecret: credentialField('consumerSecret'),
        accessToken: credentialField('accessToken').optional(),
        accessTokenSecret: credentialField('accessTokenSecret').optional(),
      },
      {
        error: missingOr('credentials', 'an object { consumerKey, consumerSecret, accessToken?, accessTokenSecret? }'),
      },
    )
    .superRefine((c, ctx) => {
      if ((c.accessToken === undefined) !== (c.accessTokenSecret === undefined)) {
        const missing = credentialName(c.accessToken === undefined ? 'accessToken' : 'accessTokenSecret');
        ctx.addIssue({
          code: 'custom',
          message: `${missing} is missing (the access token and its secret go together)`,
        });
      }
    }),
  connectTimeoutMs: positiveMs.optional(),
  headersTimeoutMs: positiveMs.optional(),
  bodyTimeoutMs: positiveMs.optional(),
  maxAttempts: z.number().int().min(1).max(MAX_ATTEMPTS_LIMIT).optional(),
  retry: z
    .object({ baseMs: z.number().int().nonnegative().optional(), maxMs: z.number().int().nonnegative().optional() })
    .optional(),
  rateLimitPolicy: policySchema.optional(),
  onWait: z.function().optional(),
  onRequest: z.function().optional(),
  onWarn: z.function().optional(),
  clock: z.object({ now: z.function(), sleep: z.function() }).loose().optional(),
  random: z.function().optional(),
  dispatcher: z
    .custom<Dispatcher>((v) => typeof (v as { dispatch?: unknown } | null)?.dispatch === 'function', {
      message: 'must be an undici Dispatcher (an Agent, ProxyAgent, EnvHttpProxyAgent, Pool...)',
    })
    .optional(),
});

/** `a.b.c` path of a zod issue, for messages that name the exact field. */
export function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out === '' ? '(root)' : out;
}

function fixForOption(where: string): string {
  if (where.startsWith('credentials')) {
    return "Pass credentials { consumerKey, consumerSecret, accessToken, accessTokenSecret } to createClient (the app's consumer pair, and the access token pair the OAuth PIN flow gives)";
  }
  if (where === 'adsBaseUrl' || where === 'apiBaseUrl') {
    return `Pass ${where} to createClient: the platform's origin without a version segment (e.g. https://ads-api.example.com; a sandbox prints its own)`;
  }
  return 'Correct the option named in the message';
}

/** Validates client options; a ConfigError names the option (the CLI rewords it with its variable and flag). */
export function validateClientOptions(o: ClientOptions): void {
  const r = clientOptionsSchema.safeParse(o);
  if (r.success) return;
  const issue = r.error.issues[0];
  const where = issuePath(issue?.path ?? []);
  const message = issue?.message ?? 'invalid';
  const code = where.startsWith('credentials')
    ? 'config_missing_credential'
    : where === 'adsBaseUrl' && (o as Partial<ClientOptions>).adsBaseUrl === undefined
      ? 'config_missing_base_url'
      : 'config_invalid';
  throw new ConfigError(
    code,
    `Invalid client configuration: ${message}${SELF_NAMED.test(message) ? '' : ` (${where})`}`,
    { fix: fixForOption(where) },
  );
}

function joinUrl(base: string, path: string): URL {
  const u = new URL(base);
  const prefix = u.pathname.endsWith('/') ? u.pathname.slice(0, -1) : u.pathname;
  u.pathname = `${prefix}${path}`;
  u.search = '';
  u.hash = '';
  return u;
}

interface EncodedBody {
  body?: Buffer;
  contentType?: string;
}

/** The request body, encoded once for every attempt: a form, or JSON (an object, or a string or bytes sent as they are). */
function encodeBody(req: ApiRequest<unknown>): EncodedBody {
  if (req.form !== undefined) {
    return { body: Buffer.from(formEncode(req.form)), contentType: 'application/x-www-form-urlencoded' };
  }
  if (req.json === undefined) return {};
  const json = req.json;
  const body = Buffer.isBuffer(json) ? json : Buffer.from(typeof json === 'string' ? json : JSON.stringify(json));
  return { body, contentType: 'application/json' };
}

function formEncode(form: Record<string, string>): string {
  return Object.entries(form)
    .map(([k, v]) => `${percentEncode(k, 'form parameter name')}=${percentEncode(v, k)}`)
    .join('&');
}

function headerOf(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Groups requests by route (ids replaced) so that a server's "remaining 0" blocks only that family. */
function routeKey(method: string, path: string): string {
  return `${method} ${path.replace(/\/(accounts|custom_audiences|tailored_audiences|do_not_reach_lists|permissions)\/[^/]+/g, '/$1/:id')}`;
}

const TIMEOUT_CODES: Record<string, 'connect' | 'headers' | 'body'> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect',
  UND_ERR_HEADERS_TIMEOUT: 'headers',
  UND_ERR_BODY_TIMEOUT: 'body',
};

function errorCode(e: unknown): string | undefined {
  const c = (e as { code?: unknown } | null)?.code;
  return typeof c === 'string' ? c : undefined;
}

/** Releases every slot a request took (one per rate-limit rule it falls under). */
function releaseAll(releases: ReadonlyArray<(end: number) => void>): (end: number) => void {
  return (end) => {
    for (const release of releases) release(end);
  };
}

/** A secret as given, and as percent-encoded (how a server echoing a signed parameter would send it back). */
function secretForms(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const s of secrets) {
    // Short values would redact ordinary words; real keys and secrets are far longer.
    if (s.length < 4) continue;
    forms.add(s);
    forms.add(percentEncode(s, 'credential'));
  }
  return [...forms];
}

function redactWith(secrets: readonly string[], text: string): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('[redacted]');
  return out
    .replace(/(?:authorization:\s*)?OAuth\s+(?:realm|oauth_)[^\n]*/gi, '[redacted]')
    .replace(/oauth_(?:signature|token_secret)=[^&\s",]*/gi, '[redacted]');
}

/** What a request's waits need: its path (for events and errors), its signal and its lease. */
interface Waits {
  path: string;
  signal: AbortSignal | undefined;
  lease: Lease | undefined;
}

/** The caller's signal and the lease's, either ending the request. */
function requestSignal(req: ApiRequest<unknown>): AbortSignal | undefined {
  return anySignal(req.signal, req.lease?.signal);
}

/** The signals given (undefined when none): either ends what waits on it. */
function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const given = signals.filter((s) => s !== undefined);
  return given.length <= 1 ? given[0] : AbortSignal.any(given);
}

function abortedError(method: string, path: string, reason: unknown): ConnectionError {
  return new ConnectionError('request_aborted', `${method} ${path} was aborted`, {
    fix: "Run it again (an upload continues with unfinished: 'resume')",
    cause: reason,
  });
}

export class AdsClient {
  readonly adsBaseUrl: string;
  readonly apiBaseUrl: string;
  private readonly credentials: Credentials;
  /** The client's own Agent, closed by close(); undefined when the caller passed a dispatcher. */
  private readonly agent: Agent | undefined;
  private readonly dispatcher: Dispatcher;
  /**
   * The client sends through a dispatcher of its own (its Agent, or the proxy agent the CLI made
   * for it alone): undici's code, which reads a request's body no more once it is answered. A
   * caller's `dispatcher` may keep the bodies it was given (a MockAgent's call history does), so
   * an upload through one never writes a sent body over (BatchPacker.release).
   */
  readonly ownsDispatcher: boolean;
  private readonly headersTimeoutMs: number;
  private readonly bodyTimeoutMs: number;
  /**
   * The longest one attempt waits for its answer once sent: the connect and headers timeouts. A
   * sync records it with its lease, so a process taking the target over after this one lost it
   * waits out any request this one could still have in flight.
   */
  readonly requestTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly policy: RateLimitPolicy;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly onWait: ((e: WaitEvent) => void) | undefined;
  private readonly onRequest: ((e: RequestEvent) => void) | undefined;
  private readonly onWarn: ((warning: string, context: WarnContext) => void) | undefined;
  private readonly limiters = new Map<RateLimitRule, SlidingWindowLimiter>();
  /** Route family → time before which the server said no requests are left. */
  private readonly blockedUntil = new Map<string, number>();
  private readonly secrets: string[];
  private readonly counters: ClientStats = { requests: 0, retries: 0, waitedMs: 0, rateLimitWaits: 0, rateLimited: 0 };

  constructor(o: ClientOptions) {
    validateClientOptions(o);
    this.adsBaseUrl = o.adsBaseUrl;
    this.apiBaseUrl = o.apiBaseUrl ?? o.adsBaseUrl;
    this.credentials = { ...o.credentials };
    this.maxAttempts = o.maxAttempts ?? DEFAULTS.maxAttempts;
    this.retryBaseMs = o.retry?.baseMs ?? DEFAULTS.retryBaseMs;
    this.retryMaxMs = o.retry?.maxMs ?? DEFAULTS.retryMaxMs;
    this.policy = o.rateLimitPolicy ?? DEFAULT_RATE_LIMIT_POLICY;
    this.clock = o.clock ?? realClock;
    this.random = o.random ?? Math.random;
    this.onWait = o.onWait;
    this.onRequest = o.onRequest;
    this.onWarn = o.onWarn;
    this.secrets = secretForms([
      o.credentials.consumerSecret,
      o.credentials.accessTokenSecret ?? '',
      o.credentials.accessToken ?? '',
    ]);
    for (const rule of this.policy.rules) {
      this.limiters.set(rule, new SlidingWindowLimiter(rule.limit, rule.windowMs + this.policy.safetyMarginMs));
    }
    this.headersTimeoutMs = o.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs;
    this.bodyTimeoutMs = o.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs;
    this.requestTimeoutMs = (o.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs) + this.headersTimeoutMs;
    this.agent = o.dispatcher === undefined ? new Agent(agentOptions(o)) : undefined;
    this.dispatcher = o.dispatcher ?? (this.agent as Agent);
    this.ownsDispatcher = this.agent !== undefined;
  }

  stats(): ClientStats {
    return { ...this.counters };
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }

  /**
   * Removes every secret the server might echo back, so no error, warning or log line can carry
   * one: the client's own, plus the token a request signs with (the OAuth access_token step signs
   * with a request token the client does not hold).
   */
  private redactorFor(token: { key: string; secret: string } | null): (text: string) => string {
    const secrets =
      token === null || this.secrets.includes(token.secret)
        ? this.secrets
        : [...this.secrets, ...secretForms([token.key, token.secret])];
    return (text) => redactWith(secrets, text);
  }

  async request<T>(req: ApiRequest<T>): Promise<ApiResponse<T>> {
    const url = joinUrl(req.base === 'api' ? this.apiBaseUrl : this.adsBaseUrl, req.path);
    url.search = buildQueryString(req.query);
    const token = this.tokenFor(req);
    const redact = this.redactorFor(token);
    const payload = encodeBody(req);
    const rules = findRateLimitRules(this.policy, req.method, req.path, req.query);
    const family = routeKey(req.method, req.path);
    const path = url.pathname;
    const idempotent = req.idempotent ?? true;
    const signal = requestSignal(req);
    // A stop ends the waits and the retries, not an attempt on the wire.
    const stop = anySignal(signal, req.stopSignal);
    const waits: Waits = { path, signal: stop, lease: req.lease };

    for (let attempt = 1; ; attempt++) {
      req.lease?.signal.throwIfAborted();
      if (isAborted(stop)) throw abortedError(req.method, path, stop?.reason);
      const release = await this.throttle(rules, family, waits);
      // The lease is proven last, after every wait: nothing is sent once it is lost.
      await req.lease?.verify().catch((error: unknown) => {
        release(this.clock.now());
        throw error;
      });
      const started = performance.now();
      this.counters.requests++;
      req.onAttempt?.();
      let status: number;
      let headers: Dispatcher.ResponseData['headers'];
      let text: string;
      try {
        ({ status, headers, text } = await this.send(req, url, token, payload, signal));
        release(this.clock.now());
      } catch (e) {
        release(this.clock.now());
        this.emitRequest(req.method, path, 'error', attempt, started);
        req.lease?.signal.throwIfAborted();
        if (isAborted(stop)) throw abortedError(req.method, path, stop?.reason);
        const err = this.connectionError(req.method, path, e);
        const code = errorCode(e);
        if (attempt >= this.maxAttempts || (!idempotent && (code === undefined || !NOT_SENT_CODES.has(code))))
          throw err;
        await this.wait('retry', this.backoffMs(attempt), waits);
        this.counters.retries++;
        continue;
      }
      this.emitRequest(req.method, path, status, attempt, started);
      this.observeRateLimit(headers, family);
      if (status >= 200 && status < 300) return this.accepted(req, path, { status, headers, text }, redact, attempt);
      if (status === 429) this.counters.rateLimited++;
      const hint = this.serverHintMs(status, headers);
      if (!isRetryableStatus(status, idempotent) || attempt >= this.maxAttempts) {
        const resetAt = status === 429 && hint !== undefined ? { resetAt: new Date(this.clock.now() + hint.ms) } : {};
        throw buildHttpError({
          status,
          method: req.method,
          path,
          headers,
          body: text,
          redact,
          attempts: attempt,
          ...resetAt,
        });
      }
      await this.wait(hint?.reason ?? 'retry', hint?.ms ?? this.backoffMs(attempt), waits);
      this.counters.retries++;
    }
  }

  /** A 2xx answer: its body parsed, after the platform's deprecation warning (redacted) is reported. */
  private accepted<T>(
    req: ApiRequest<T>,
    path: string,
    answer: { status: number; headers: Dispatcher.ResponseData['headers']; text: string },
    redact: (text: string) => string,
    attempts: number,
  ): ApiResponse<T> {
    const warning = headerOf(answer.headers, 'x-api-warn');
    const apiWarn = warning === undefined ? undefined : redact(warning);
    // Before parsing: a deprecation warning may be what explains an unexpected shape.
    if (apiWarn !== undefined) this.onWarn?.(apiWarn, { method: req.method, path });
    const raw = this.rawBody(req, path, answer.text);
    // The reference gives no status for the platform's errors (`errors`, `operation_errors`): a
    // 2xx body holding some is refused as a 4xx one is, never taken as a success (a user batch's
    // counts beside them confirm nothing).
    if (carriesErrors(raw))
      throw buildHttpError({ ...answer, method: req.method, path, body: answer.text, redact, attempts });
    return { status: answer.status, body: this.checked(req, path, raw), apiWarn };
  }

  /** One attempt: signed afresh (a new nonce and timestamp, so a retry is never a replay), sent, body read. */
  private async send(
    req: ApiRequest<unknown>,
    url: URL,
    token: { key: string; secret: string } | null,
    payload: EncodedBody,
    signal: AbortSignal | undefined,
  ): Promise<{ status: number; headers: Dispatcher.ResponseData['headers']; text: string }> {
    const authorization = oauth1Header({
      method: req.method,
      url,
      consumerKey: this.credentials.consumerKey,
      consumerSecret: this.credentials.consumerSecret,
      ...(token === null ? {} : { token: token.key, tokenSecret: token.secret }),
      ...(req.form === undefined ? {} : { params: req.form }),
      ...(req.oauthParams === undefined ? {} : { oauthParams: req.oauthParams }),
    });
    const res = await undiciRequest(url, {
      method: req.method,
      dispatcher: this.dispatcher,
      headersTimeout: this.headersTimeoutMs,
      bodyTimeout: this.bodyTimeoutMs,
      headers: {
        authorization,
        'user-agent': USER_AGENT,
        accept: 'application/json',
        ...(payload.contentType === undefined ? {} : { 'content-type': payload.contentType }),
      },
      ...(payload.body === undefined ? {} : { body: payload.body }),
      ...(signal === undefined ? {} : { signal }),
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  }

  private tokenFor(req: ApiRequest<unknown>): { key: string; secret: string } | null {
    if (req.token !== undefined) return req.token;
    const { accessToken, accessTokenSecret } = this.credentials;
    if (accessToken === undefined || accessTokenSecret === undefined) {
      throw new ConfigError(
        'config_missing_credential',
        'credentials.accessToken and credentials.accessTokenSecret are not set',
        { fix: 'Pass them to createClient (the OAuth PIN flow gives them)' },
      );
    }
    return { key: accessToken, secret: accessTokenSecret };
  }

  private rawBody(req: ApiRequest<unknown>, path: string, text: string): unknown {
    if (req.responseType === 'form') return Object.fromEntries(new URLSearchParams(text));
    try {
      return JSON.parse(text);
    } catch {
      throw new ResponseShapeError('response_not_json', `${req.method} ${path} answered a body that is not JSON`, {
        fix: 'Check that adsBaseUrl points at the ads API',
      });
    }
  }

  private checked<T>(req: ApiRequest<T>, path: string, raw: unknown): T {
    const r = req.schema.safeParse(raw);
    if (r.success) return r.data;
    const issue = r.error.issues[0];
    throw new ResponseShapeError(
      'response_shape',
      `${req.method} ${path} answered an unexpected shape at ${issuePath(issue?.path ?? [])}: ${issue?.message ?? 'invalid'}`,
      { fix: 'Check the base URL and API version; report this if it persists' },
    );
  }

  private connectionError(method: string, path: string, e: unknown): ConnectionError {
    const code = errorCode(e);
    const phase = code === undefined ? undefined : TIMEOUT_CODES[code];
    if (phase !== undefined) {
      return new TimeoutError(`timeout_${phase}` as const, `${method} ${path} timed out (${phase} timeout)`, {
        fix: 'Check the network, or raise the timeout (connect/headers/body timeout options)',
        cause: e,
      });
    }
    const detail = code ?? (e instanceof Error ? e.name : 'unknown');
    return new ConnectionError(
      code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE' ? 'connection_reset' : 'connection_failed',
      `${method} ${path} failed: connection error (${detail})`,
      { fix: 'Check the network and adsBaseUrl, then run again', cause: e },
    );
  }

  /** Wait the server asked for: a 429's latest reset among the exhausted windows, else `retry-after`. */
  private serverHintMs(
    status: number,
    headers: Dispatcher.ResponseData['headers'],
  ): { ms: number; reason: WaitReason } | undefined {
    const now = this.clock.now();
    const max = this.policy.maxServerWaitMs;
    const ra = retryAfterMs(headerOf(headers, 'retry-after'), now, max);
    if (status === 429) {
      const reset = exhaustedResetWaitMs(parseRateLimitHeaders(headers), now, max, true);
      // The later of the two: a reset already past (a skewed clock, a stale header) says 0.
      if (reset !== undefined) {
        const ms = Math.max(reset + this.random() * this.policy.resetJitterMs, ra ?? 0);
        return { ms: Math.min(max, ms), reason: 'server_reset' };
      }
    }
    return ra === undefined ? undefined : { ms: ra, reason: status === 429 ? 'server_reset' : 'retry' };
  }

  private observeRateLimit(headers: Dispatcher.ResponseData['headers'], family: string): void {
    const now = this.clock.now();
    const ms = exhaustedResetWaitMs(parseRateLimitHeaders(headers), now, this.policy.maxServerWaitMs, false);
    if (ms === undefined || ms === 0) return;
    const until = now + Math.min(this.policy.maxServerWaitMs, ms + this.random() * this.policy.resetJitterMs);
    this.blockedUntil.set(family, Math.max(until, this.blockedUntil.get(family) ?? 0));
  }

  /** Waits until the request may be sent; returns the function that ends its rate-limit slots. */
  private async throttle(rules: readonly RateLimitRule[], family: string, w: Waits): Promise<(end: number) => void> {
    const limiters = rules.flatMap((rule) => this.limiters.get(rule) ?? []);
    for (;;) {
      const now = this.clock.now();
      const blocked = (this.blockedUntil.get(family) ?? 0) - now;
      if (blocked > 0) {
        await this.wait('server_reset', blocked, w);
        continue;
      }
      // Slots are taken in every window at once, or in none: a slot held while waiting for
      // another window would only shrink the first window for everyone else.
      let ms = 0;
      let full: SlidingWindowLimiter | undefined;
      for (const limiter of limiters) {
        const d = limiter.delay(now);
        if (d === Infinity) full = limiter;
        else ms = Math.max(ms, d);
      }
      if (full !== undefined) {
        // Every slot of that window is in flight: the next response frees one.
        await full.released();
        w.lease?.signal.throwIfAborted();
        if (isAborted(w.signal)) throw abortedError('request', w.path, w.signal?.reason);
        continue;
      }
      if (ms === 0) return releaseAll(limiters.map((limiter) => limiter.take()));
      await this.wait('rate_limit', ms, w);
    }
  }

  private backoffMs(attempt: number): number {
    return backoffMs(attempt, { baseMs: this.retryBaseMs, maxMs: this.retryMaxMs }, this.random);
  }

  /**
   * One wait, reported once. Under a lease it is cut into slices of at most its proof interval,
   * the lease proven after each: a wait never outlasts the lease (a 15-minute reset included).
   */
  private async wait(reason: WaitReason, ms: number, w: Waits): Promise<void> {
    const rounded = Math.max(0, Math.ceil(ms));
    this.counters.waitedMs += rounded;
    if (reason !== 'retry') this.counters.rateLimitWaits++;
    this.onWait?.({ reason, ms: rounded, path: w.path });
    const slice = w.lease?.proofIntervalMs ?? Infinity;
    for (let left = rounded; ;) {
      const step = Math.min(left, slice);
      try {
        await this.clock.sleep(step, w.signal);
      } catch (e) {
        w.lease?.signal.throwIfAborted();
        if (isAborted(w.signal)) throw abortedError('request', w.path, w.signal?.reason);
        throw e;
      }
      left -= step;
      if (left <= 0) return;
      await w.lease?.verify();
    }
  }

  private emitRequest(method: string, path: string, status: number | 'error', attempt: number, started: number): void {
    this.onRequest?.({ method, path, status, attempt, ms: Math.round(performance.now() - started) });
  }
}

/**
 * The connection settings of the client's own Agent: also what a caller building its own
 * dispatcher (the CLI's proxy agent) passes, so both behave alike.
 */
export function agentOptions(
  o: Pick<ClientOptions, 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs'>,
): Agent.Options {
  return {
    connect: { timeout: o.connectTimeoutMs ?? DEFAULTS.connectTimeoutMs },
    headersTimeout: o.headersTimeoutMs ?? DEFAULTS.headersTimeoutMs,
    bodyTimeout: o.bodyTimeoutMs ?? DEFAULTS.bodyTimeoutMs,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
  };
}

/** Validates the options (ConfigError naming the field) and returns a client. Call `close()` when done. */
export function createClient(o: ClientOptions): AdsClient {
  return new AdsClient(o);
}
