/**
 * The embedded sandbox: a node:http server that behaves like the platform's ads API and core
 * OAuth endpoints (limits, errors, rate limits, injected faults), for tests, the quickstart and
 * the benchmark. Nothing here is a production server: state lives in memory and dies with it.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { isLoopbackHost } from '../util/host.js';
import { OAuthVerifier } from './auth.js';
import { checkFaultRules, FaultPlan, mulberry32, parseFaultSpec, type ChosenFault, type FaultRule } from './faults.js';
import { SandboxApiFailure } from './params.js';
import { rateLimitHeaders, SlidingWindows, tightest, type SandboxRateLimit, type WindowKey } from './ratelimit.js';
import { AdsRoutes, matchAdsRoute, type AdsReply, type AdsRequest } from './routes.js';
import { SandboxStore, type SandboxRequestLog, type SandboxStateHandle } from './state.js';
import { MAX_BODY_BYTES, TOTAL_COUNT_RATE_LIMIT, USER_BATCH_RATE_LIMIT } from './platform.js';
import { checkUserBatch, type CheckedOperation } from './users.js';
import type { SandboxErrorCode } from './errors.js';

export interface SandboxOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Makes credentials, ids and rate-based faults reproducible. */
  seed?: number;
  /** Fault spec (`503=1@2,drop@4,mismatch%0.01,500@1:all`) or rules; user-batch requests unless a rule says `all`. */
  faults?: string | FaultRule[];
  /** User-batch endpoints: requests per sliding window (default 1500 per 60,000 ms). */
  rateLimit?: SandboxRateLimit;
  /** Requests with `with_total_count=true`, per credentials (default 200 per 15 minutes, the platform's lower limit). */
  totalCountRateLimit?: SandboxRateLimit;
  /** Targeted campaigns per page (default 200). */
  pageSize?: number;
  /** How long an audience reports PROCESSING after its last upload (default 0). */
  processingMs?: number;
  /** Clock in Unix milliseconds for OAuth timestamps, rate limits and PROCESSING (default Date.now). */
  now?: () => number;
  /** How a `slow` fault waits (default a real timer, cancelled by close()), so tests need not spend the time. */
  sleep?: (ms: number) => Promise<void>;
}

export interface SandboxCredentials {
  consumerKey: string;
  consumerSecret: string;
  accessToken: string;
  accessTokenSecret: string;
}

export interface SandboxAccounts {
  /** The credentials' user's accounts (same business). */
  primary: string;
  secondary: string;
  /** Another user's account: 403 for the sandbox credentials. */
  foreign: string;
}

export interface Sandbox {
  /**
   * Origin, e.g. http://127.0.0.1:41234 (ads and core API share it). A wildcard bind (0.0.0.0,
   * ::) is addressed through loopback: clients accept plain http only for loopback hosts.
   */
  url: string;
  /** False when the sandbox listens on an interface other machines may reach (e.g. host 0.0.0.0). */
  loopbackOnly: boolean;
  adsBaseUrl: string;
  apiBaseUrl: string;
  credentials: SandboxCredentials;
  accounts: SandboxAccounts;
  /** The credentials' user (also returned by the PIN flow). */
  user: { id: string; screenName: string };
  state: SandboxStateHandle;
  /** Replaces the fault rules; request numbering restarts at 1. */
  setFaults(faults: string | FaultRule[]): void;
  /** Stops listening and closes keep-alive connections. */
  close(): Promise<void>;
}

/** The platform's limits (src/sandbox/platform.ts), as the defaults of the options above. */
export const DEFAULT_SANDBOX_RATE_LIMIT: SandboxRateLimit = { ...USER_BATCH_RATE_LIMIT };
export const DEFAULT_SANDBOX_TOTAL_COUNT_RATE_LIMIT: SandboxRateLimit = { ...TOTAL_COUNT_RATE_LIMIT };
/** Endpoints other than user batches: the reference gives no figure; generous so tests never hit it. */
const OTHER_RATE_LIMIT: SandboxRateLimit = { limit: 10_000, windowMs: 15 * 60_000 };
/** Non-batch bodies (form parameters) are small; anything bigger is a client bug. */
const MAX_SMALL_BODY = 64 * 1024;
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** "Every interface" binds, and the loopback address of the same family that reaches them from here. */
const WILDCARD_HOSTS: Record<string, string> = { '0.0.0.0': '127.0.0.1', '[::]': '[::1]' };

const rateLimitSchema = z.object({ limit: z.number().int().min(1), windowMs: z.number().int().min(1) });

const optionsSchema = z
  .object({
    port: z.number().int().min(0).max(65535).optional(),
    host: z.string().min(1).optional(),
    seed: z.number().int().optional(),
    faults: z.union([z.string(), z.array(z.any())]).optional(),
    rateLimit: rateLimitSchema.optional(),
    totalCountRateLimit: rateLimitSchema.optional(),
    pageSize: z.number().int().min(1).max(10_000).optional(),
    processingMs: z.number().int().min(0).optional(),
    now: z.function().optional(),
    sleep: z.function().optional(),
  })
  .strict();

function checkOptions(opts: SandboxOptions): void {
  const parsed = optionsSchema.safeParse(opts);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || 'options';
    throw new ConfigError<SandboxErrorCode>(
      'sandbox_option_invalid',
      `Sandbox option ${field} is invalid: ${issue?.message ?? 'unknown'}`,
      {
        fix: 'See startSandbox options in the README (port 0..65535, rateLimit and totalCountRateLimit {limit, windowMs} positive integers, ...)',
      },
    );
  }
}

function toRules(faults: string | FaultRule[] | undefined): FaultRule[] {
  if (faults === undefined) return [];
  return typeof faults === 'string' ? parseFaultSpec(faults) : checkFaultRules(faults);
}

function readBody(req: IncomingMessage, limit: number): Promise<{ buffer: Buffer; bytes: number; tooLarge: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      // Keep draining past the limit (so the client finishes sending) but stop keeping bytes.
      if (bytes <= limit) chunks.push(chunk);
    });
    req.on('end', () =>
      resolve({
        buffer: bytes <= limit ? Buffer.concat(chunks, bytes) : Buffer.alloc(0),
        bytes,
        tooLarge: bytes > limit,
      }),
    );
    req.on('error', reject);
  });
}

function errorBody(
  code: string,
  message: string,
  parameter?: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    errors: [{ code, message, ...(parameter === undefined ? {} : { parameter }) }],
    ...extra,
    request: { params: {} },
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function sendText(
  res: ServerResponse,
  status: number,
  type: string,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': `${type}; charset=utf-8`,
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function formPairs(buffer: Buffer, contentType: string | undefined): Array<[string, string]> {
  if (contentType === undefined || !contentType.toLowerCase().startsWith('application/x-www-form-urlencoded'))
    return [];
  return [...new URLSearchParams(buffer.toString('utf8'))];
}

/** Everything the request handlers share: one per running sandbox. */
interface SandboxWorld {
  store: SandboxStore;
  me: ReturnType<SandboxStore['addUser']>;
  credentials: SandboxCredentials;
  accounts: SandboxAccounts;
  verifier: OAuthVerifier;
  windows: SlidingWindows;
  routes: AdsRoutes;
  /** Replaced by setFaults. */
  faults: FaultPlan;
  faultRandom: () => number;
  idRandom: () => number;
  /** Random alphanumeric secrets (seeded: reproducible). */
  secret: (length: number) => string;
  now: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Timers of the default sleep, cleared by close(). */
  timers: Set<NodeJS.Timeout>;
  rateLimit: SandboxRateLimit;
  totalCountRateLimit: SandboxRateLimit;
}

/** The platform's state (users, accounts, credentials) and the machinery that answers requests. */
function createWorld(opts: SandboxOptions): SandboxWorld {
  const now = opts.now ?? Date.now;
  const seeded = opts.seed !== undefined;
  const seed = opts.seed ?? randomInt(0, 2 ** 32);
  // Separate streams: how many ids were generated must not shift which requests get faults.
  const idRandom = mulberry32(seed);
  const faultRandom = mulberry32(seed ^ 0x5eed5eed);
  const store = new SandboxStore(idRandom, now, opts.processingMs ?? 0);
  const secret = (length: number): string =>
    seeded ? store.randomString(length, ALNUM) : [...randomBytes(length)].map((b) => ALNUM[b % ALNUM.length]).join('');
  const me = store.addUser('sandbox_user', 'business-1');
  store.owner = me;
  const other = store.addUser('someone_else', 'business-2');
  const accounts: SandboxAccounts = {
    primary: store.addAccount(me).id,
    secondary: store.addAccount(me).id,
    foreign: store.addAccount(other).id,
  };
  const credentials: SandboxCredentials = {
    consumerKey: secret(25),
    consumerSecret: secret(50),
    accessToken: `${me.id}-${secret(40)}`,
    accessTokenSecret: secret(45),
  };
  store.tokens.set(credentials.accessToken, { secret: credentials.accessTokenSecret, userId: me.id, kind: 'access' });
  const timers = new Set<NodeJS.Timeout>();
  const sleep =
    opts.sleep ??
    ((ms: number): Promise<void> =>
      new Promise((resolve) => {
        const t = setTimeout(() => {
          timers.delete(t);
          resolve();
        }, ms);
        timers.add(t);
      }));
  return {
    store,
    me,
    credentials,
    accounts,
    verifier: new OAuthVerifier(credentials.consumerKey, credentials.consumerSecret, store, now),
    windows: new SlidingWindows(now),
    routes: new AdsRoutes(store, opts.pageSize ?? 200),
    faults: new FaultPlan(toRules(opts.faults), faultRandom),
    faultRandom,
    idRandom,
    secret,
    now,
    sleep,
    timers,
    rateLimit: opts.rateLimit ?? DEFAULT_SANDBOX_RATE_LIMIT,
    totalCountRateLimit: opts.totalCountRateLimit ?? DEFAULT_SANDBOX_TOTAL_COUNT_RATE_LIMIT,
  };
}

function authFailure(res: ServerResponse, message: string): number {
  sendJson(res, 401, errorBody('UNAUTHORIZED_ACCESS', message));
  return 401;
}

/** The OAuth 1.0a PIN flow's three steps: the authorize page, a request token, an access token. */
async function handleCore(
  w: SandboxWorld,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  fullUrl: string,
): Promise<number> {
  const method = req.method ?? 'GET';
  if (url.pathname === '/oauth/authorize' && method === 'GET') return authorizePage(w, res, url);
  if (method !== 'POST' || (url.pathname !== '/oauth/request_token' && url.pathname !== '/oauth/access_token')) {
    sendJson(res, 404, errorBody('NOT_FOUND', 'No such endpoint'));
    return 404;
  }
  const body = await readBody(req, MAX_SMALL_BODY);
  const pairs = formPairs(body.buffer, req.headers['content-type']);
  const requestStep = url.pathname === '/oauth/request_token';
  const auth = w.verifier.verify({
    method,
    url: fullUrl,
    authorization: req.headers.authorization,
    bodyParams: pairs,
    tokenKind: requestStep ? 'none' : 'request',
  });
  if (!auth.ok) return authFailure(res, auth.message);
  return requestStep ? requestToken(w, res, auth.value) : accessToken(w, res, auth.value, pairs);
}

type VerifiedRequest = Extract<ReturnType<SandboxWorld['verifier']['verify']>, { ok: true }>['value'];

function sendForm(res: ServerResponse, values: Record<string, string>): number {
  sendText(res, 200, 'application/x-www-form-urlencoded', new URLSearchParams(values).toString());
  return 200;
}

/** The page the user approves the app on: the sandbox approves at once and shows the PIN. */
function authorizePage(w: SandboxWorld, res: ServerResponse, url: URL): number {
  const rec = w.store.tokens.get(url.searchParams.get('oauth_token') ?? '');
  if (rec === undefined || rec.kind !== 'request') {
    sendText(
      res,
      400,
      'text/html',
      '<html><body><p>This authorization request is invalid or expired.</p></body></html>',
    );
    return 400;
  }
  // Auto-approval: the sandbox user "clicks Authorize" at once.
  rec.verifier = String(1_000_000 + Math.floor(w.idRandom() * 9_000_000));
  const html = `<!doctype html><html><head><title>Authorize audience-kit (sandbox)</title></head><body><p>You authorized the app (sandbox auto-approval). Enter this PIN to complete the authorization:</p><code id="oauth_pin">${rec.verifier}</code></body></html>`;
  sendText(res, 200, 'text/html', html);
  return 200;
}

/** A new request token, for a request signed with the consumer pair and naming its callback. */
function requestToken(w: SandboxWorld, res: ServerResponse, auth: VerifiedRequest): number {
  if (auth.oauth['oauth_callback'] === undefined) {
    sendJson(res, 400, errorBody('MISSING_PARAMETER', 'oauth_callback is required (a URL or oob)', 'oauth_callback'));
    return 400;
  }
  const token = w.secret(27);
  const tokenSecret = w.secret(32);
  w.store.tokens.set(token, { secret: tokenSecret, userId: w.me.id, kind: 'request' });
  return sendForm(res, { oauth_token: token, oauth_token_secret: tokenSecret, oauth_callback_confirmed: 'true' });
}

/** The request token and its PIN (verifier) exchanged, once, for an access token. */
function accessToken(
  w: SandboxWorld,
  res: ServerResponse,
  auth: VerifiedRequest,
  pairs: readonly (readonly [string, string])[],
): number {
  const rec = auth.tokenRec;
  const given = auth.oauth['oauth_verifier'] ?? pairs.find(([k]) => k === 'oauth_verifier')?.[1];
  if (rec === undefined || rec.verifier === undefined || given !== rec.verifier) {
    return authFailure(res, 'Invalid or missing oauth_verifier');
  }
  w.store.tokens.delete(auth.token ?? '');
  const user = w.store.users.get(rec.userId) ?? w.me;
  const token = `${user.id}-${w.secret(40)}`;
  const tokenSecret = w.secret(45);
  w.store.tokens.set(token, { secret: tokenSecret, userId: user.id, kind: 'access' });
  return sendForm(res, {
    oauth_token: token,
    oauth_token_secret: tokenSecret,
    user_id: user.id,
    screen_name: user.screenName,
  });
}

async function handleAds(
  w: SandboxWorld,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  fullUrl: string,
  log: SandboxRequestLog,
): Promise<number> {
  const method = req.method ?? 'GET';
  const found = matchAdsRoute(method, url.pathname);
  if (found.match === undefined) {
    const status = found.pathKnown ? 405 : 404;
    sendJson(
      res,
      status,
      errorBody(
        found.pathKnown ? 'METHOD_NOT_ALLOWED' : 'NOT_FOUND',
        found.pathKnown ? `${method} is not supported here` : 'No such endpoint',
      ),
    );
    return status;
  }
  const match = found.match;
  const batch = match.route.batch;
  // Batch bodies are JSON (never signed), so they are only read after every cheap check.
  const small = batch === undefined ? await readBody(req, MAX_SMALL_BODY) : undefined;
  const pairs = small === undefined ? [] : formPairs(small.buffer, req.headers['content-type']);
  const auth = w.verifier.verify({
    method,
    url: fullUrl,
    authorization: req.headers.authorization,
    bodyParams: pairs,
    tokenKind: 'access',
  });
  if (!auth.ok) return authFailure(res, auth.message);
  const userId = auth.value.tokenRec?.userId ?? '';
  const query = new URLSearchParams(url.search);
  for (const [k, v] of pairs) query.append(k, v);
  const adsReq: AdsRequest = { match, query, userId };
  const accountId = match.params['account_id'] ?? '';
  const headers: Record<string, string> = {};
  const fail = (e: SandboxApiFailure): number => {
    sendJson(res, e.status, errorBody(e.code, e.message, e.parameter, e.extra), headers);
    return e.status;
  };
  try {
    if (batch === undefined) {
      return await handleOther(w, res, adsReq, auth.value.token ?? '', small?.tooLarge === true, headers, log);
    }
    return await handleUserBatch(w, req, res, adsReq, auth.value.token ?? '', accountId, headers, log);
  } catch (e) {
    if (e instanceof SandboxApiFailure) return fail(e);
    throw e;
  }
}

/** Any ads request but a user batch: its rate limits (with_total_count's on top), faults, then the route. */
async function handleOther(
  w: SandboxWorld,
  res: ServerResponse,
  adsReq: AdsRequest,
  token: string,
  bodyTooLarge: boolean,
  headers: Record<string, string>,
  log: SandboxRequestLog,
): Promise<number> {
  const family = adsReq.match.route.family;
  const query = adsReq.query;
  const keys: WindowKey[] = [{ key: `${token}|${family}`, rule: OTHER_RATE_LIMIT }];
  // The platform's lower limit applies to the request as a whole, on top of its endpoint's.
  const withTotalCount = query.get('with_total_count') === 'true';
  if (withTotalCount) keys.push({ key: `${token}|with_total_count`, rule: w.totalCountRateLimit });
  const taken = w.windows.take(keys);
  const shown = tightest(taken.windows);
  if (shown !== undefined) Object.assign(headers, rateLimitHeaders('x-rate-limit', shown));
  if (!taken.allowed) {
    const full = taken.windows.findIndex((x) => x.remaining === 0);
    const rule = keys[full]?.rule ?? OTHER_RATE_LIMIT;
    throw new SandboxApiFailure(
      429,
      'TOO_MANY_REQUESTS',
      `Rate limit exceeded: ${rule.limit} ${full === 1 ? 'with_total_count requests' : 'requests'} per ${rule.windowMs / 1000} s`,
    );
  }
  if (bodyTooLarge)
    throw new SandboxApiFailure(
      400,
      'REQUEST_TOO_LARGE',
      'Parameters belong in the query string; the body is too large',
    );
  const answered = await injectFault(w, res, w.faults.next(false), headers, log);
  if (answered !== undefined) return answered;
  const reply: AdsReply = w.routes.handle(adsReq);
  sendJson(res, reply.status, reply.body, headers);
  return reply.status;
}

async function handleUserBatch(
  w: SandboxWorld,
  req: IncomingMessage,
  res: ServerResponse,
  adsReq: AdsRequest,
  token: string,
  accountId: string,
  headers: Record<string, string>,
  log: SandboxRequestLog,
): Promise<number> {
  const target = w.routes.batchTarget(adsReq);
  checkBatchHeaders(req, log);
  takeBatchRate(w, [`${accountId}|${adsReq.match.route.family}`, `${token}|${adsReq.match.route.family}`], headers);
  const fault = w.faults.next(true);
  const body = await readBody(req, MAX_BODY_BYTES);
  log.bytes = body.bytes;
  const answered = await injectFault(w, res, fault, headers, log);
  if (answered !== undefined) return answered;
  const operations = batchOperations(w, adsReq, body, log);
  const reply = w.routes.applyUserBatch(adsReq, target, operations, fault?.kind === 'mismatch');
  sendJson(res, reply.status, reply.body, headers);
  return reply.status;
}

/** A user batch is JSON, and a body declared too large is refused before it is read. */
function checkBatchHeaders(req: IncomingMessage, log: SandboxRequestLog): void {
  const contentType = (req.headers['content-type'] ?? '').toLowerCase();
  if (!contentType.startsWith('application/json')) {
    throw new SandboxApiFailure(400, 'INVALID_CONTENT_TYPE', 'Content-Type must be application/json');
  }
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > MAX_BODY_BYTES) {
    log.bytes = declared;
    throw new SandboxApiFailure(
      400,
      'REQUEST_TOO_LARGE',
      `The body is ${declared} bytes; at most ${MAX_BODY_BYTES} are accepted`,
    );
  }
}

/** One request from the account's and the token's windows (`keys`, in that order), with their headers; 429 when either is full. */
function takeBatchRate(w: SandboxWorld, keys: readonly [string, string], headers: Record<string, string>): void {
  const taken = w.windows.take(keys.map((key) => ({ key, rule: w.rateLimit })));
  const [account, perToken] = taken.windows;
  if (account !== undefined) Object.assign(headers, rateLimitHeaders('x-account-rate-limit', account));
  if (perToken !== undefined) Object.assign(headers, rateLimitHeaders('x-rate-limit', perToken));
  if (!taken.allowed) {
    throw new SandboxApiFailure(
      429,
      'TOO_MANY_REQUESTS',
      `Rate limit exceeded: ${w.rateLimit.limit} requests per ${w.rateLimit.windowMs / 1000} s`,
    );
  }
}

/** The body's operations, checked against the documented batch shape (400 naming the first fault). */
function batchOperations(
  w: SandboxWorld,
  adsReq: AdsRequest,
  body: Awaited<ReturnType<typeof readBody>>,
  log: SandboxRequestLog,
): CheckedOperation[] {
  if (body.tooLarge) {
    throw new SandboxApiFailure(
      400,
      'REQUEST_TOO_LARGE',
      `The body is ${body.bytes} bytes; at most ${MAX_BODY_BYTES} are accepted`,
    );
  }
  const checked = checkUserBatch(body.buffer, adsReq.match.route.batch ?? 'custom', w.now());
  if (!checked.ok) {
    const extra = checked.operationErrors === undefined ? {} : { operation_errors: checked.operationErrors };
    throw new SandboxApiFailure(400, checked.code, checked.message, checked.parameter, extra);
  }
  log.operations = checked.operations.length;
  log.users = checked.users;
  return checked.operations;
}

/** Applies a fault: the status of the answer it gave, or undefined when the request proceeds (after `slow`'s wait). */
async function injectFault(
  w: SandboxWorld,
  res: ServerResponse,
  fault: ChosenFault | undefined,
  headers: Record<string, string>,
  log: SandboxRequestLog,
): Promise<number | undefined> {
  if (fault === undefined) return undefined;
  log.fault = fault.kind;
  switch (fault.kind) {
    case '500':
      sendJson(res, 500, errorBody('INTERNAL_ERROR', 'Internal error (injected fault)'), headers);
      return 500;
    case '503':
      sendJson(res, 503, errorBody('SERVICE_UNAVAILABLE', 'Service unavailable (injected fault)'), {
        ...headers,
        'retry-after': String(fault.arg),
      });
      return 503;
    case '429': {
      const reset = String(Math.ceil(w.now() / 1000) + 1);
      sendJson(res, 429, errorBody('TOO_MANY_REQUESTS', 'Rate limit exceeded (injected fault)'), {
        ...headers,
        'x-rate-limit-remaining': '0',
        'x-rate-limit-reset': reset,
        'x-account-rate-limit-remaining': '0',
        'x-account-rate-limit-reset': reset,
      });
      return 429;
    }
    case 'html':
      sendText(res, 502, 'text/html', '<html>Service unavailable</html>');
      return 502;
    case 'drop':
      res.socket?.destroy();
      return 0;
    case 'slow':
      await w.sleep(fault.arg);
      return undefined;
    case 'mismatch':
      return undefined;
  }
}

async function onRequest(w: SandboxWorld, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = performance.now();
  const host = req.headers.host ?? 'localhost';
  const url = new URL(req.url ?? '/', `http://${host}`);
  const fullUrl = `http://${host}${req.url ?? '/'}`;
  const log: SandboxRequestLog = { method: req.method ?? 'GET', path: url.pathname, status: 0, ms: 0 };
  try {
    log.status = url.pathname.startsWith('/oauth/')
      ? await handleCore(w, req, res, url, fullUrl)
      : await handleAds(w, req, res, url, fullUrl, log);
  } catch (e) {
    log.status = 500;
    // A sandbox bug: answer like the platform's own internal error rather than hanging the client.
    if (!res.headersSent && res.socket?.destroyed !== true)
      sendJson(res, 500, errorBody('INTERNAL_ERROR', `Sandbox failure: ${e instanceof Error ? e.message : String(e)}`));
    else res.destroy();
  }
  log.ms = performance.now() - started;
  w.store.log(log);
}

/** Listen on the options' host and port; a ConfigError when that is impossible. */
async function listen(server: Server, opts: SandboxOptions): Promise<{ origin: string; loopbackOnly: boolean }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new ConfigError<SandboxErrorCode>(
          'sandbox_listen_failed',
          `The sandbox could not listen on ${opts.host ?? '127.0.0.1'}:${opts.port ?? 0}: ${e.code ?? e.message}`,
          {
            fix: 'Choose another port (0 picks a free one) or host',
          },
        ),
      ),
    );
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const origin = `http://${WILDCARD_HOSTS[hostPart] ?? hostPart}:${address.port}`;
  const loopbackOnly = WILDCARD_HOSTS[hostPart] === undefined && isLoopbackHost(new URL(origin).hostname);
  return { origin, loopbackOnly };
}

export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  checkOptions(opts);
  const w = createWorld(opts);
  const server: Server = createServer((req, res) => {
    void onRequest(w, req, res);
  });
  server.keepAliveTimeout = 5_000;
  const { origin, loopbackOnly } = await listen(server, opts);
  let closing: Promise<void> | undefined;
  return {
    url: origin,
    loopbackOnly,
    adsBaseUrl: origin,
    apiBaseUrl: origin,
    credentials: w.credentials,
    accounts: w.accounts,
    user: { id: w.me.id, screenName: w.me.screenName },
    state: w.store,
    setFaults(next) {
      w.faults = new FaultPlan(toRules(next), w.faultRandom);
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const t of w.timers) clearTimeout(t);
        w.timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
