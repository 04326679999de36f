/**
 * The client against a tiny node:http server of our own, for the faults and body shapes that
 * are not the sandbox's job (non-JSON bodies, Problem objects, core Error objects, garbage
 * retry-after, resets, timeouts). Sleeps go through an injected clock: tests take milliseconds.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { z } from 'zod';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AuthError,
  ConfigError,
  ConnectionError,
  HttpError,
  RateLimitError,
  ResponseShapeError,
  TimeoutError,
} from '../src/errors.js';
import {
  accessToken,
  createCustomAudience,
  deleteCustomAudience,
  deleteDoNotReachList,
  getCustomAudience,
  listAudiencePermissions,
  listCustomAudiences,
  postCustomAudienceUsers,
  requestToken,
  revokeAudiencePermission,
} from '../src/api/endpoints.js';
import {
  AdsClient,
  createClient,
  type ClientOptions,
  type RequestEvent as ClientRequestEvent,
  type WaitEvent as ClientWaitEvent,
} from '../src/api/client.js';
import {
  DEFAULT_RATE_LIMIT_POLICY,
  SlidingWindowLimiter,
  retryAfterMs,
  type RateLimitPolicy,
} from '../src/api/rate-limit.js';
import { paginate } from '../src/api/pagination.js';
import { parseOAuthHeader, verifyOauth1Signature } from '../src/api/oauth.js';
import { findRateLimitRules } from '../src/api/rate-limit.js';
import { USER_AGENT } from '../src/version.js';

const SECRETS = {
  consumerKey: 'ck-test-key',
  consumerSecret: 'CONSUMER-SECRET-s3cr3t',
  accessToken: 'at-test-token',
  accessTokenSecret: 'TOKEN-SECRET-t0k3n',
};
/** The temporary credentials of the OAuth login: signed with by accessToken(), unknown to the client's options. */
const REQUEST_TOKEN = { key: 'rt-request-token', secret: 'REQUEST-TOKEN-SECRET-rq7' };

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  nonce: string | undefined;
  signatureOk: boolean;
}

type Handler = (req: Seen, res: ServerResponse, n: number) => void;

async function startServer(handler: Handler) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const oauthParams = parseOAuthHeader(req.headers.authorization) ?? {};
      const url = `http://${req.headers.host ?? ''}${req.url ?? ''}`;
      const form =
        req.headers['content-type'] === 'application/x-www-form-urlencoded' ? new URLSearchParams(body) : undefined;
      const token = oauthParams['oauth_token'];
      const signatureOk = verifyOauth1Signature({
        method: req.method ?? 'GET',
        url,
        oauthParams,
        ...(form === undefined ? {} : { bodyParams: form }),
        consumerSecret: SECRETS.consumerSecret,
        tokenSecret:
          token === SECRETS.accessToken ? SECRETS.accessTokenSecret : token === undefined ? '' : REQUEST_TOKEN.secret,
      });
      const s: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        nonce: oauthParams['oauth_nonce'],
        signatureOk,
      };
      seen.push(s);
      handler(s, res, seen.length);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const AUDIENCE = {
  id: 'ca1',
  name: 'Buyers',
  description: null,
  audience_size: null,
  targetable: false,
  deleted: false,
};

/** A clock whose sleeps return at once and move time forward; concurrent sleeps do not add up. */
function fakeClock(start = Date.now()) {
  let t = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      sleeps.push(ms);
      const target = t + ms;
      await Promise.resolve();
      t = Math.max(t, target);
    },
  };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

interface Harness {
  client: AdsClient;
  waits: ClientWaitEvent[];
  events: ClientRequestEvent[];
  clock: ReturnType<typeof fakeClock>;
  server: Awaited<ReturnType<typeof startServer>>;
}

async function harness(handler: Handler, opts: Partial<ClientOptions> = {}, realTime = false): Promise<Harness> {
  const server = await startServer(handler);
  const clock = fakeClock();
  const waits: ClientWaitEvent[] = [];
  const events: ClientRequestEvent[] = [];
  const client = createClient({
    adsBaseUrl: server.url,
    credentials: SECRETS,
    ...(realTime ? {} : { clock }),
    random: () => 0.5,
    retry: { baseMs: 100, maxMs: 400 },
    onWait: (e) => waits.push(e),
    onRequest: (e) => events.push(e),
    ...opts,
  });
  cleanups.push(
    () => server.close(),
    () => client.close(),
  );
  return { client, waits, events, clock, server };
}

/** Every string a user or a log could ever see from this error. */
function renderings(error: unknown): string[] {
  const e = error as Error;
  return [String(e.message), JSON.stringify(e), String(e.stack), inspect(e, { depth: Infinity, showHidden: true })];
}

function expectNoSecrets(texts: string[]): void {
  for (const t of texts) {
    for (const s of [
      SECRETS.consumerSecret,
      SECRETS.accessTokenSecret,
      REQUEST_TOKEN.secret,
      'oauth_signature',
      'OAuth oauth_',
    ]) {
      expect(t).not.toContain(s);
    }
    expect(t.toLowerCase()).not.toContain('authorization:');
  }
}

const collected: unknown[] = [];
async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    collected.push(e);
    return e as Error;
  }
  throw new Error('expected a rejection');
}

describe('createClient options', () => {
  const base = { adsBaseUrl: 'https://ads.example.com', credentials: SECRETS };

  it('requires https except on loopback hosts', async () => {
    expect(() => createClient({ ...base, adsBaseUrl: 'http://ads.example.com' })).toThrow(ConfigError);
    expect(() => createClient({ ...base, adsBaseUrl: 'http://ads.example.com' })).toThrow(/must use https/);
    expect(() => createClient({ ...base, apiBaseUrl: 'http://10.0.0.1' })).toThrow(/apiBaseUrl/);
    expect(() => createClient({ ...base, adsBaseUrl: 'not a url' })).toThrow(/not a URL/);
    for (const ok of [
      'http://127.0.0.1:8080',
      'http://127.1.2.3',
      'http://localhost:3000',
      'http://[::1]:9',
      'https://ads.example.com',
    ]) {
      await createClient({ ...base, adsBaseUrl: ok }).close();
    }
  });

  it('names the missing credential variable', () => {
    const e1 = (() => {
      try {
        createClient({ ...base, credentials: { ...SECRETS, consumerKey: '' } });
      } catch (e) {
        return e as ConfigError;
      }
      return undefined;
    })();
    expect(e1?.code).toBe('config_missing_credential');
    expect(e1?.message).toContain('credentials.consumerKey');
    expect(() =>
      createClient({ ...base, credentials: { consumerKey: 'k', consumerSecret: 's', accessToken: 't' } }),
    ).toThrow(/credentials\.accessTokenSecret/);
    expect(() => createClient({ ...base, maxAttempts: 0 })).toThrow(/maxAttempts/);
  });

  it('says which option is missing and how to set it', () => {
    const configError = (o: unknown): ConfigError => {
      try {
        createClient(o as ClientOptions);
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected a ConfigError');
    };
    const noUrl = configError({ credentials: SECRETS });
    expect(noUrl).toBeInstanceOf(ConfigError);
    expect(noUrl.code).toBe('config_missing_base_url');
    expect(noUrl.message).toBe('Invalid client configuration: adsBaseUrl is missing');
    expect(noUrl.fix).toMatch(/Pass adsBaseUrl to createClient.*https:\/\//);
    expect(configError({ ...base, adsBaseUrl: 42 }).message).toContain('adsBaseUrl must be a string');
    expect(configError({ ...base, apiBaseUrl: 'ftp://x' }).fix).toContain('Pass apiBaseUrl to createClient');

    const fields = ['consumerKey', 'consumerSecret'] as const;
    for (const field of fields) {
      const { [field]: _dropped, ...rest } = SECRETS;
      const e = configError({ ...base, credentials: rest });
      expect(e.code).toBe('config_missing_credential');
      expect(e.message).toBe(`Invalid client configuration: credentials.${field} is missing`);
      expect(e.fix).toMatch(
        /Pass credentials \{ consumerKey, consumerSecret, accessToken, accessTokenSecret \} to createClient/,
      );
    }
    const noCredentials = configError({ adsBaseUrl: base.adsBaseUrl });
    expect(noCredentials.code).toBe('config_missing_credential');
    expect(noCredentials.message).toBe('Invalid client configuration: credentials is missing');
    expect(configError({ ...base, credentials: { ...SECRETS, accessToken: undefined } }).message).toContain(
      'credentials.accessToken is missing',
    );
    // A lone surrogate cannot be signed: refused up front, without showing the secret.
    const broken = configError({ ...base, credentials: { ...SECRETS, consumerSecret: 'CONSUMER-\uD800-secret' } });
    expect(broken.message).toContain('credentials.consumerSecret contains a lone UTF-16 surrogate');
    expect(broken.message).not.toContain('CONSUMER-');
  });

  it('refuses an ads request without an access token, naming the options', async () => {
    const client = createClient({
      ...base,
      credentials: { consumerKey: 'k', consumerSecret: 'CONSUMER-SECRET-s3cr3t' },
    });
    cleanups.push(() => client.close());
    const e = await failure(getCustomAudience(client, { accountId: 'a', customAudienceId: 'b' }));
    expect(e).toBeInstanceOf(ConfigError);
    expect(e.message).toContain('credentials.accessToken');
  });
});

describe('request basics', () => {
  it('signs every request, sends the User-Agent and JSON bodies unsigned, query parameters signed', async () => {
    const h = await harness((req, res) =>
      json(res, 200, {
        request: {},
        data: req.url.endsWith('/users') ? { success_count: 1, total_count: 1 } : AUDIENCE,
      }),
    );
    const r = await postCustomAudienceUsers(h.client, {
      accountId: 'acc 1',
      customAudienceId: 'ca/1',
      operations: [{ operation_type: 'Update', params: { users: [{ email: ['a'.repeat(64)] }] } }],
    });
    expect(r).toEqual({ success_count: 1, total_count: 1 });
    const s = h.server.seen[0];
    expect(s?.url).toBe('/12/accounts/acc%201/custom_audiences/ca%2F1/users');
    expect(s?.headers['user-agent']).toBe(USER_AGENT);
    expect(s?.headers['content-type']).toBe('application/json');
    expect(s?.signatureOk).toBe(true);
    expect(JSON.parse(s?.body ?? '')).toEqual([
      { operation_type: 'Update', params: { users: [{ email: ['a'.repeat(64)] }] } },
    ]);

    await createCustomAudience(h.client, { accountId: 'a', name: 'N & M+ ☃', description: 'd' });
    expect(h.server.seen[1]?.url).toBe('/12/accounts/a/custom_audiences?name=N%20%26%20M%2B%20%E2%98%83&description=d');
    expect(h.server.seen[1]?.signatureOk).toBe(true);
    expect(h.events.map((e) => e.status)).toEqual([200, 200]);
  });

  it('sends a pre-serialized body byte for byte', async () => {
    const h = await harness((_req, res) => json(res, 200, { data: { success_count: 0, total_count: 0 } }));
    const body = '[{"operation_type":"Delete","params":{"users":[{"partner_user_id":["x"]}]}}]';
    await postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body });
    expect(h.server.seen[0]?.body).toBe(body);
  });

  it('checks the batch limits before sending', async () => {
    const h = await harness((_req, res) => json(res, 200, {}));
    const ops = Array.from({ length: 2501 }, () => ({ operation_type: 'Update' as const, params: { users: [] } }));
    const e = await failure(
      postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', operations: ops }),
    );
    expect((e as ConfigError).code).toBe('invalid_parameter');
    const big = `["${'x'.repeat(5_000_000)}"]`;
    await expect(
      postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: big }),
    ).rejects.toThrow(/5000004 bytes/);
    expect(h.server.seen).toHaveLength(0);
  });
});

describe('error parsing, one shape at a time', () => {
  it('platform errors with parameter and x-api-warn', async () => {
    const h = await harness((_req, res) =>
      json(
        res,
        400,
        {
          errors: [{ code: 'INVALID_PARAMETER', message: 'name is too long', parameter: 'name' }],
          request: { params: {} },
        },
        { 'x-api-warn': 'deprecated soon' },
      ),
    );
    const e = (await failure(createCustomAudience(h.client, { accountId: 'a', name: 'n' }))) as HttpError;
    expect(e).toBeInstanceOf(HttpError);
    expect(e.code).toBe('api_bad_request');
    expect(e.status).toBe(400);
    expect(e.errors).toEqual([{ code: 'INVALID_PARAMETER', message: 'name is too long', parameter: 'name' }]);
    expect(e.apiWarn).toBe('deprecated soon');
    expect(e.message).toBe(
      'POST /12/accounts/a/custom_audiences failed with HTTP 400: INVALID_PARAMETER: name is too long (parameter name)',
    );
    expect(e.message).not.toContain('\n');
    expect(e.fix).toMatch(/parameter/);
    expect(h.server.seen).toHaveLength(1);
  });

  it('operation_errors keep the operation index and user index', async () => {
    const h = await harness((_req, res) =>
      json(res, 400, {
        errors: [{ code: 'INVALID_USER_DATA', message: 'bad users' }],
        operation_errors: [
          { index: 1, message: 'email must be 64 lowercase hex', code: 'INVALID_USER_DATA', user_index: 3 },
          { index: 2, message: 'x' },
        ],
      }),
    );
    const e = (await failure(
      postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]' }),
    )) as HttpError;
    expect(e.operationErrors).toEqual([
      { index: 1, message: 'email must be 64 lowercase hex', code: 'INVALID_USER_DATA', userIndex: 3 },
      { index: 2, message: 'x' },
    ]);
    expect(e.message).toContain('operation 1 user 3: email must be 64 lowercase hex (+1 more operation errors)');
    expect(e.fix).toMatch(/operation/);
  });

  it('a 2xx whose body holds errors or operation_errors is refused like a 4xx, its counts never taken; empty ones are not errors', async () => {
    const bodies: unknown[] = [
      {
        data: { success_count: 2, total_count: 2 },
        operation_errors: [{ index: 0, user_index: 1, message: 'Invalid email hash', code: 'INVALID_USER_DATA' }],
      },
      { data: { success_count: 2, total_count: 2 }, errors: [{ code: 'INVALID_PARAMETER', message: 'x' }] },
      { data: { success_count: 2, total_count: 2 }, operation_errors: [[], [{ message: 'bad' }]] },
      { data: { success_count: 2, total_count: 2 }, errors: [42] },
    ];
    for (const body of bodies) {
      const h = await harness((_req, res) => json(res, 200, body));
      const e = (await failure(
        postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]' }),
      )) as HttpError;
      expect(e).toBeInstanceOf(HttpError);
      expect(e.message).toMatch(/^POST \/12\/accounts\/a\/custom_audiences\/b\/users failed with HTTP 200: /);
      expect(h.client.stats().retries).toBe(0);
    }
    const first = (await failure(
      postCustomAudienceUsers((await harness((_req, res) => json(res, 200, bodies[0]))).client, {
        accountId: 'a',
        customAudienceId: 'b',
        body: '[]',
      }),
    )) as HttpError;
    expect(first.operationErrors).toEqual([
      { index: 0, userIndex: 1, message: 'Invalid email hash', code: 'INVALID_USER_DATA' },
    ]);
    for (const empty of [{ errors: [] }, { operation_errors: [[], []] }, { errors: null, operation_errors: [null] }]) {
      const h = await harness((_req, res) => json(res, 200, { data: { success_count: 2, total_count: 2 }, ...empty }));
      const r = await postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]' });
      expect(r.success_count).toBe(2);
    }
  });

  it('operation_errors as one array per operation (the java SDK model): the position names the operation', async () => {
    const h = await harness((_req, res) =>
      json(res, 400, {
        errors: [{ code: 'INVALID_USER_DATA', message: 'bad users' }],
        operation_errors: [
          [],
          [
            { message: 'email must be 64 lowercase hex', code: 'INVALID_USER_DATA', user_index: 0 },
            { message: 'handle must be 64 lowercase hex', user_index: 2 },
          ],
          null,
          [{ index: 9, message: 'the position wins over a stray index' }],
        ],
      }),
    );
    const e = (await failure(
      postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]' }),
    )) as HttpError;
    expect(e.errors).toEqual([{ code: 'INVALID_USER_DATA', message: 'bad users' }]);
    expect(e.operationErrors).toEqual([
      { index: 1, message: 'email must be 64 lowercase hex', code: 'INVALID_USER_DATA', userIndex: 0 },
      { index: 1, message: 'handle must be 64 lowercase hex', userIndex: 2 },
      { index: 3, message: 'the position wins over a stray index' },
    ]);
    expect(e.message).toContain('operation 1 user 0: email must be 64 lowercase hex (+2 more operation errors)');
  });

  it('never drops the top-level errors when another part of the body has an unknown shape', async () => {
    for (const operation_errors of [
      'not a list',
      { 0: 'an object' },
      [{ index: 'one', message: 1 }, 7],
      [{ message: 'flat but without its operation' }],
    ]) {
      const h = await harness((_req, res) =>
        json(res, 400, {
          errors: [{ code: 'INVALID_USER_DATA', message: 'bad users' }, { unexpected: true }],
          operation_errors,
        }),
      );
      const e = (await failure(
        postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]' }),
      )) as HttpError;
      expect(e.errors, JSON.stringify(operation_errors)).toEqual([{ code: 'INVALID_USER_DATA', message: 'bad users' }]);
      expect(e.operationErrors).toEqual([]);
      expect(e.message).toMatch(
        /^POST \S+ failed with HTTP 400: INVALID_USER_DATA: bad users; \d+ more error entr(y|ies) of an unknown shape$/,
      );
    }
    // operation_errors alone (no errors array) still name the operation.
    const only = await harness((_req, res) =>
      json(res, 400, { operation_errors: [{ index: 0, message: 'x', user_index: 1 }] }),
    );
    const e = (await failure(
      postCustomAudienceUsers(only.client, { accountId: 'a', customAudienceId: 'b', body: '[]' }),
    )) as HttpError;
    expect(e.operationErrors).toEqual([{ index: 0, message: 'x', userIndex: 1 }]);
  });

  it("the core API's Error object (401, code 89) is an AuthError with the credentials fix", async () => {
    const h = await harness((_req, res) => json(res, 401, { code: 89, message: 'Invalid or expired token.' }));
    const e = (await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }))) as AuthError;
    expect(e).toBeInstanceOf(AuthError);
    expect(e.code).toBe('auth_unauthorized');
    expect(e.errors).toEqual([{ code: 89, message: 'Invalid or expired token.' }]);
    expect(e.fix).toContain('OAuth PIN flow');
    expect(e.fix).toContain('consumerSecret');
    expect(h.server.seen).toHaveLength(1);
  });

  it('an RFC 7807 Problem object (application/problem+json)', async () => {
    const h = await harness((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/problem+json' });
      res.end(
        JSON.stringify({
          type: 'https://api.example.com/2/problems/client-forbidden',
          title: 'Forbidden',
          detail: 'Client not enrolled',
          status: 403,
        }),
      );
    });
    const e = (await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }))) as AuthError;
    expect(e).toBeInstanceOf(AuthError);
    expect(e.code).toBe('auth_forbidden');
    expect(e.problemType).toBe('https://api.example.com/2/problems/client-forbidden');
    expect(e.message).toContain('Forbidden: Client not enrolled');
    expect(e.fix).toMatch(/account is not yours/);
  });

  it('a Problem object sent as application/json, with a type outside /problems/, keeps its status', async () => {
    const h = await harness((_req, res) =>
      json(res, 409, {
        type: 'https://errors.example.com/quota-exceeded',
        title: 'Quota exceeded',
        detail: 'Try tomorrow',
        status: 429,
      }),
    );
    const e = (await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }))) as HttpError;
    expect(e.code).toBe('api_conflict');
    expect(e.problemType).toBe('https://errors.example.com/quota-exceeded');
    expect(e.problemStatus).toBe(429);
    expect(e.errors).toEqual([
      { code: 'https://errors.example.com/quota-exceeded', message: 'Quota exceeded: Try tomorrow' },
    ]);
    expect(e.message).toBe('GET /12/accounts/a/custom_audiences/b failed with HTTP 409: Quota exceeded: Try tomorrow');
  });

  it('a JSON body of no known shape is called JSON, with an excerpt; an empty body says so', async () => {
    const bodies: Array<[string, string]> = [
      ['{"error":"bad"}', 'HTTP 400: JSON body of an unknown shape: {"error":"bad"}'],
      ['[1,2]', 'HTTP 400: JSON body of an unknown shape: [1,2]'],
      ['"just a string"', 'HTTP 400: JSON body of an unknown shape: "just a string"'],
      ['{"type":"t"}', 'HTTP 400: JSON body of an unknown shape: {"type":"t"}'],
      ['bad{', 'HTTP 400: non-JSON body: bad{'],
      ['', 'HTTP 400: empty body'],
    ];
    for (const [body, message] of bodies) {
      const h = await harness((_req, res) => {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(body);
      });
      const e = (await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }))) as HttpError;
      expect(e.message).toBe(`GET /12/accounts/a/custom_audiences/b failed with ${message}`);
      expect(e.errors).toEqual([]);
      expect(e.bodyExcerpt).toBe(body === '' ? undefined : body);
    }
  });

  it('a non-JSON body gives the status and a short excerpt (after the retries a 502 earns)', async () => {
    const h = await harness(
      (_req, res) => {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end(`<html><body><h1>Bad gateway</h1>${'padding '.repeat(100)}</body></html>`);
      },
      { maxAttempts: 3 },
    );
    const e = (await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }))) as HttpError;
    expect(e.code).toBe('api_server_error');
    expect(e.bodyExcerpt?.startsWith('Bad gateway padding')).toBe(true);
    expect(e.bodyExcerpt?.length).toBeLessThanOrEqual(121);
    expect(e.message).toMatch(/HTTP 502: non-JSON body: Bad gateway/);
    expect(h.server.seen).toHaveLength(3);
    expect(h.client.stats().retries).toBe(2);
  });

  it('404 says to check the id; 400, 401, 403, 404 are never retried', async () => {
    for (const status of [400, 401, 403, 404]) {
      const h = await harness((_req, res) => json(res, status, { errors: [{ code: 'X', message: 'no' }] }));
      const e = (await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }))) as HttpError;
      expect(e.status).toBe(status);
      expect(h.server.seen).toHaveLength(1);
      if (status === 404) {
        expect(e.code).toBe('api_not_found');
        expect(e.fix).toMatch(/Check the id/);
      }
    }
  });

  it('a 2xx with the wrong shape names the field', async () => {
    const h = await harness((_req, res) =>
      json(res, 200, { data: [AUDIENCE, { ...AUDIENCE, name: 42 }], next_cursor: null }),
    );
    const e = await failure(listCustomAudiences(h.client, { accountId: 'a' }));
    expect(e).toBeInstanceOf(ResponseShapeError);
    expect(e.message).toContain('data[1].name');
  });

  it('a request token without oauth_callback_confirmed=true is refused (RFC 5849 2.1), naming the field', async () => {
    for (const confirmed of ['false', 'TRUE', '']) {
      const h = await harness((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-www-form-urlencoded' });
        res.end(`oauth_token=t&oauth_token_secret=s&oauth_callback_confirmed=${confirmed}`);
      });
      const e = (await failure(requestToken(h.client, { callback: 'oob' }))) as ResponseShapeError;
      expect(e).toBeInstanceOf(ResponseShapeError);
      expect(e.message).toContain('at oauth_callback_confirmed: must be "true"');
    }
    const ok = await harness((_req, res) =>
      res.end('oauth_token=t&oauth_token_secret=s&oauth_callback_confirmed=true'),
    );
    expect(await requestToken(ok.client, { callback: 'oob' })).toEqual({
      oauth_token: 't',
      oauth_token_secret: 's',
      oauth_callback_confirmed: true,
    });
  });

  it('a 2xx that is not JSON', async () => {
    const h = await harness((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>login</html>');
    });
    const e = (await failure(
      getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }),
    )) as ResponseShapeError;
    expect(e.code).toBe('response_not_json');
  });
});

describe('retries and server hints', () => {
  it('retries 500, 408, 423 and 5xx with fresh signatures (new nonce each attempt)', async () => {
    const statuses = [500, 408, 423, 504];
    const h = await harness((_req, res, n) =>
      n <= statuses.length
        ? json(res, statuses[n - 1] ?? 500, { errors: [{ code: 'E', message: 'e' }] })
        : json(res, 200, { data: AUDIENCE }),
    );
    const a = await getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'ca1' });
    expect(a.name).toBe('Buyers');
    expect(h.server.seen).toHaveLength(5);
    expect(new Set(h.server.seen.map((s) => s.nonce)).size).toBe(5);
    expect(h.server.seen.every((s) => s.signatureOk)).toBe(true);
    // Exponential, capped (base 100, cap 400), "equal jitter" with random = 0.5: 75% of the step.
    expect(h.waits.map((w) => [w.reason, w.ms])).toEqual([
      ['retry', 75],
      ['retry', 150],
      ['retry', 300],
      ['retry', 300],
    ]);
    expect(h.client.stats()).toMatchObject({ requests: 5, retries: 4, waitedMs: 825, rateLimitWaits: 0 });
    expect(h.events.map((e) => e.attempt)).toEqual([1, 2, 3, 4, 5]);
  });

  it('503 honors retry-after in seconds and as an HTTP date; garbage and huge values are bounded', async () => {
    const clock = fakeClock(Date.parse('2030-01-01T00:00:00Z'));
    const hints = ['7', 'Tue, 01 Jan 2030 00:00:30 GMT', 'soon', '-3', '99999999'];
    const h = await harness(
      (_req, res, n) =>
        n <= hints.length
          ? json(
              res,
              503,
              { errors: [{ code: 'SERVICE_UNAVAILABLE', message: 'later' }] },
              { 'retry-after': hints[n - 1] ?? '' },
            )
          : json(res, 200, { data: AUDIENCE }),
      { clock, maxAttempts: 6 },
    );
    await getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'ca1' });
    expect(h.waits.map((w) => w.ms)).toEqual([
      7000, // seconds
      30000 - 7000, // the date, relative to the (moved) clock
      300, // garbage: ignored, backoff instead (attempt 3)
      300, // negative: not a valid delay, backoff (attempt 4, capped)
      15 * 60_000, // clamped to the 15 minute bound
    ]);
    expect(retryAfterMs('1.5', 0, 10_000)).toBe(1500);
    expect(retryAfterMs('Mon, 32 Foo 2030 99:00:00 GMT', 0, 10_000)).toBeUndefined();
    // The two obsolete date forms a recipient must read (RFC 9110 5.6.7); asctime's is GMT, unsaid.
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs('Tuesday, 01-Jan-30 00:00:20 GMT', now, 60_000)).toBe(20_000);
    expect(retryAfterMs('Tue Jan  1 00:00:20 2030', now, 60_000)).toBe(20_000);
    expect(retryAfterMs('Tue Jan 1 00:00:20 2030 +0100', now, 60_000)).toBeUndefined();
  });

  it('under a lease: proven before every attempt and between slices of a long wait; once lost, nothing more is sent', async () => {
    let proofs = 0;
    const lost = new Error('lease lost');
    const controller = new AbortController();
    // Proven twice (the first attempt, then the first slice of the 15-minute reset), lost at the third.
    const lease = {
      signal: controller.signal,
      proofIntervalMs: 60_000,
      abortWithinMs: 240_000,
      verify: async () => {
        if (++proofs < 3) return;
        controller.abort(lost);
        throw lost;
      },
    };
    const h = await harness((_req, res) =>
      json(
        res,
        429,
        { errors: [{ code: 'TOO_MANY_REQUESTS', message: 'later' }] },
        { 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': String(Math.ceil(Date.now() / 1000) + 900) },
      ),
    );
    const request = h.client.request({ method: 'GET', path: '/12/accounts/a', schema: z.unknown(), lease });
    await expect(request).rejects.toBe(lost);
    expect(h.server.seen).toHaveLength(1);
    // The reset (15 minutes and a jitter) waited in slices of at most the proof interval.
    expect(h.clock.sleeps.slice(0, 2)).toEqual([60_000, 60_000]);
    expect(proofs).toBe(3);
    // A lease already lost sends nothing, not even a first attempt.
    await expect(h.client.request({ method: 'GET', path: '/12/accounts/a', schema: z.unknown(), lease })).rejects.toBe(
      lost,
    );
    expect(h.server.seen).toHaveLength(1);
  });

  it('429 waits for the latest reset among the exhausted windows, then retries', async () => {
    const t0 = 1_900_000_000;
    const cases: Array<[Record<string, string>, number]> = [
      // Both windows exhausted: nothing gets through before the later one resets.
      [
        {
          'x-account-rate-limit-remaining': '0',
          'x-account-rate-limit-reset': String(t0 + 12),
          'x-rate-limit-remaining': '0',
          'x-rate-limit-reset': String(t0 + 50),
        },
        50_000,
      ],
      // The account window has room; the per-credentials one is the reason for the 429.
      [
        {
          'x-account-rate-limit-remaining': '5',
          'x-account-rate-limit-reset': String(t0 + 10),
          'x-rate-limit-remaining': '0',
          'x-rate-limit-reset': String(t0 + 30),
        },
        30_000,
      ],
      [
        {
          'x-account-rate-limit-remaining': '0',
          'x-account-rate-limit-reset': String(t0 + 20),
          'x-rate-limit-remaining': '3',
          'x-rate-limit-reset': String(t0 + 40),
        },
        20_000,
      ],
      // Bounded by maxServerWaitMs.
      [{ 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': String(t0 + 86_400) }, 15 * 60_000],
      // A reset already past (a skewed clock, a stale header): retry-after still holds.
      [{ 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': String(t0 - 5), 'retry-after': '60' }, 60_000],
      // Both: the later.
      [{ 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': String(t0 + 30), 'retry-after': '10' }, 30_000],
    ];
    for (const [headers, ms] of cases) {
      const clock = fakeClock(t0 * 1000);
      const h = await harness(
        (_req, res, n) =>
          n === 1
            ? json(res, 429, { errors: [{ code: 'TOO_MANY_REQUESTS', message: 'slow down' }] }, headers)
            : json(res, 200, { data: { success_count: 2, total_count: 2 } }),
        { clock, random: () => 0 },
      );
      const r = await postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]' });
      expect(r.success_count).toBe(2);
      // The 429 itself waits; the "remaining 0" block ends at the same reset, so it adds nothing.
      expect(h.waits).toEqual([{ reason: 'server_reset', ms, path: '/12/accounts/a/custom_audiences/b/users' }]);
      expect(h.client.stats()).toMatchObject({ rateLimited: 1, rateLimitWaits: 1, retries: 1 });
    }
  });

  it('an exhausted per-credentials window blocks the next request even when the account window has room', async () => {
    const clock = fakeClock(1_900_000_000_000);
    const h = await harness(
      (_req, res, n) =>
        json(
          res,
          200,
          { data: { success_count: 1, total_count: 1 } },
          n === 1
            ? {
                'x-account-rate-limit-remaining': '5',
                'x-account-rate-limit-reset': String(1_900_000_000 + 10),
                'x-rate-limit-remaining': '0',
                'x-rate-limit-reset': String(1_900_000_000 + 30),
              }
            : {},
        ),
      { clock, random: () => 0 },
    );
    await postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]' });
    await postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]' });
    expect(h.waits).toEqual([{ reason: 'server_reset', ms: 30_000, path: '/12/accounts/a/custom_audiences/b/users' }]);
    expect(h.client.stats().rateLimited).toBe(0);
  });

  it('429 on every attempt ends in a RateLimitError with resetAt', async () => {
    const clock = fakeClock(1_900_000_000_000);
    const h = await harness(
      (_req, res) =>
        json(
          res,
          429,
          { errors: [{ code: 'TOO_MANY_REQUESTS', message: 'slow down' }] },
          { 'x-rate-limit-reset': String(1_900_000_000 + 60) },
        ),
      { clock, random: () => 0, maxAttempts: 2 },
    );
    const e = (await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }))) as RateLimitError;
    expect(e).toBeInstanceOf(RateLimitError);
    expect(e.code).toBe('rate_limited');
    expect(e.resetAt?.getTime()).toBe(1_900_000_060_000);
  });

  it('remaining 0 makes the next request of that family wait for the reset', async () => {
    const clock = fakeClock(1_900_000_000_000);
    const h = await harness(
      (_req, res, n) =>
        json(
          res,
          200,
          { data: AUDIENCE },
          n === 1 ? { 'x-rate-limit-remaining': '0', 'x-rate-limit-reset': String(1_900_000_000 + 5) } : {},
        ),
      { clock, random: () => 0 },
    );
    await getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' });
    await getCustomAudience(h.client, { accountId: 'other', customAudienceId: 'c' });
    expect(h.waits).toEqual([{ reason: 'server_reset', ms: 5000, path: '/12/accounts/other/custom_audiences/c' }]);
  });

  it('recovers from a connection reset; gives up with ConnectionError after maxAttempts', async () => {
    const h = await harness((_req, res, n) => (n <= 2 ? res.socket?.destroy() : json(res, 200, { data: AUDIENCE })));
    await getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' });
    expect(h.events.map((e) => e.status)).toEqual(['error', 'error', 200]);

    const dead = await harness((_req, res) => res.socket?.destroy(), { maxAttempts: 3 });
    const e = (await failure(
      getCustomAudience(dead.client, { accountId: 'a', customAudienceId: 'b' }),
    )) as ConnectionError;
    expect(e).toBeInstanceOf(ConnectionError);
    expect(e.code).toBe('connection_reset');
    expect(dead.server.seen).toHaveLength(3);
  });

  it('recovers from a headers timeout; gives up with TimeoutError after maxAttempts', async () => {
    const pending: ServerResponse[] = [];
    const h = await harness(
      (_req, res, n) => {
        if (n === 1) pending.push(res);
        else json(res, 200, { data: AUDIENCE });
      },
      { headersTimeoutMs: 50 },
    );
    await getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' });
    expect(h.events.map((e) => e.status)).toEqual(['error', 200]);

    const slow = await harness((_req, res) => pending.push(res), { headersTimeoutMs: 50, maxAttempts: 2 });
    const e = (await failure(
      getCustomAudience(slow.client, { accountId: 'a', customAudienceId: 'b' }),
    )) as TimeoutError;
    expect(e).toBeInstanceOf(TimeoutError);
    expect(e.code).toBe('timeout_headers');
    for (const r of pending) r.destroy();
  });

  it('a body timeout is a TimeoutError too', async () => {
    const h = await harness(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"data":');
      },
      { bodyTimeoutMs: 50, maxAttempts: 1 },
    );
    const e = (await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }))) as TimeoutError;
    expect(e.code).toBe('timeout_body');
  });

  it('a create is not repeated after a 500 or a reset (it could duplicate), but is after a 503', async () => {
    const h = await harness((_req, res) => json(res, 500, { errors: [{ code: 'INTERNAL_ERROR', message: 'oops' }] }));
    await failure(createCustomAudience(h.client, { accountId: 'a', name: 'n' }));
    expect(h.server.seen).toHaveLength(1);
    const r = await harness((_req, res) => res.socket?.destroy());
    await failure(createCustomAudience(r.client, { accountId: 'a', name: 'n' }));
    expect(r.server.seen).toHaveLength(1);
    const u = await harness((_req, res, n) =>
      n === 1 ? json(res, 503, { errors: [{ code: 'S', message: 's' }] }) : json(res, 200, { data: AUDIENCE }),
    );
    await createCustomAudience(u.client, { accountId: 'a', name: 'n' });
    expect(u.server.seen).toHaveLength(2);
  });

  it('an abort during a wait stops with request_aborted', async () => {
    const ac = new AbortController();
    const h = await harness((_req, res) => json(res, 503, { errors: [{ code: 'S', message: 's' }] }), {
      clock: {
        now: () => Date.now(),
        sleep: async (_ms: number, signal?: AbortSignal) => {
          ac.abort();
          signal?.throwIfAborted();
        },
      },
    });
    const e = (await failure(
      postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: 'b', body: '[]', signal: ac.signal }),
    )) as ConnectionError;
    expect(e.code).toBe('request_aborted');
  });
});

describe('a retried DELETE that meets its own 404', () => {
  const PERMISSION = {
    id: 'p1',
    custom_audience_id: 'ca1',
    granted_account_id: 'acc2',
    permission_level: 'READ_ONLY',
    deleted: false,
  };

  it('returns the deleted object when the first attempt deleted it and its answer was lost', async () => {
    let deleted = false;
    const h = await harness((req, res) => {
      if (req.method === 'GET') return json(res, 200, { data: { ...AUDIENCE, deleted } });
      if (deleted)
        return json(res, 404, { errors: [{ code: 'NOT_FOUND', message: 'Audience ca1 (deleted) not found' }] });
      deleted = true;
      res.socket?.destroy();
    });
    const a = await deleteCustomAudience(h.client, { accountId: 'a', customAudienceId: 'ca1' });
    expect(a).toMatchObject({ id: 'ca1', deleted: true });
    expect(h.events.map((e) => [e.method, e.status, e.attempt])).toEqual([
      ['DELETE', 'error', 1],
      ['DELETE', 404, 2],
      ['GET', 200, 1],
    ]);
    // A deleted audience is read back only with with_deleted=true (the platform defaults it to false).
    expect(h.server.seen.at(-1)?.url).toBe('/12/accounts/a/custom_audiences/ca1?with_deleted=true');
  });

  it('the same for a do-not-reach list after a 500 that was processed anyway', async () => {
    let deleted = false;
    const list = { id: 'l1', name: 'Opt-outs', description: null, list_size: 3 };
    const h = await harness((req, res) => {
      if (req.method === 'GET') return json(res, 200, { data: [{ ...list, deleted }], next_cursor: null });
      const status = deleted ? 404 : 500;
      deleted = true;
      json(res, status, { errors: [{ code: status === 404 ? 'NOT_FOUND' : 'INTERNAL_ERROR', message: 'x' }] });
    });
    const l = await deleteDoNotReachList(h.client, { accountId: 'a', doNotReachListId: 'l1' });
    expect(l).toMatchObject({ id: 'l1', deleted: true });
    // Found through the listing (there is no GET of one list), deleted lists included.
    expect(h.server.seen.at(-1)?.url).toBe('/12/accounts/a/do_not_reach_lists?with_deleted=true');
  });

  it('a revoke sends only the DELETE; a retried one that meets its own 404 says the permission is revoked', async () => {
    const once = await harness((_req, res) => json(res, 200, { data: { ...PERMISSION, deleted: true } }));
    const ids = { kind: 'custom', accountId: 'a', audienceId: 'ca1', permissionId: 'p1' } as const;
    expect(await revokeAudiencePermission(once.client, ids)).toEqual({ ...PERMISSION, deleted: true });
    expect(once.server.seen.map((x) => [x.method, x.url])).toEqual([
      ['DELETE', '/12/accounts/a/custom_audiences/ca1/permissions/p1'],
    ]);

    let revoked = false;
    const lost = await harness((_req, res) => {
      if (revoked) return json(res, 404, { errors: [{ code: 'NOT_FOUND', message: 'Permission p1 not found' }] });
      revoked = true;
      res.socket?.destroy();
    });
    const p = await revokeAudiencePermission(lost.client, { ...ids, kind: 'tailored' });
    expect(p).toEqual({ id: 'p1', tailored_audience_id: 'ca1', deleted: true });
    expect(lost.server.seen.map((x) => x.method)).toEqual(['DELETE', 'DELETE']);
  });

  it('keeps the 404 on a first attempt, or when the resource is not deleted after all', async () => {
    const first = await harness((_req, res) => json(res, 404, { errors: [{ code: 'NOT_FOUND', message: 'no' }] }));
    const e1 = (await failure(
      deleteCustomAudience(first.client, { accountId: 'a', customAudienceId: 'ca1' }),
    )) as HttpError;
    expect(e1.code).toBe('api_not_found');
    expect(e1.attempts).toBe(1);
    expect(first.server.seen).toHaveLength(1);

    const alive = await harness((req, res, n) =>
      req.method === 'GET'
        ? json(res, 200, { data: AUDIENCE })
        : json(res, n === 1 ? 503 : 404, {
            errors: [{ code: n === 1 ? 'SERVICE_UNAVAILABLE' : 'NOT_FOUND', message: 'x' }],
          }),
    );
    const e2 = (await failure(
      deleteCustomAudience(alive.client, { accountId: 'a', customAudienceId: 'ca1' }),
    )) as HttpError;
    expect(e2.code).toBe('api_not_found');
    expect(e2.attempts).toBe(2);

    const unknown = await harness((req, res) =>
      req.method === 'GET'
        ? json(res, 200, { data: [], next_cursor: null })
        : json(res, 404, { errors: [{ code: 'NOT_FOUND', message: 'no' }] }),
    );
    const e3 = (await failure(
      revokeAudiencePermission(unknown.client, {
        kind: 'tailored',
        accountId: 'a',
        audienceId: 'ta',
        permissionId: 'nope',
      }),
    )) as HttpError;
    expect(e3.code).toBe('api_not_found');
    expect(e3.method).toBe('DELETE');
  });
});

describe('warnings and the with_total_count limit', () => {
  it('x-api-warn of a successful response reaches onWarn, redacted, with method and path only', async () => {
    const warnings: Array<[string, { method: string; path: string }]> = [];
    const h = await harness(
      (_req, res) =>
        json(
          res,
          200,
          { data: AUDIENCE },
          { 'x-api-warn': `parameter foo is deprecated; echo ${SECRETS.accessTokenSecret}` },
        ),
      { onWarn: (w, ctx) => warnings.push([w, ctx]) },
    );
    await getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'ca1' });
    expect(warnings).toEqual([
      ['parameter foo is deprecated; echo [redacted]', { method: 'GET', path: '/12/accounts/a/custom_audiences/ca1' }],
    ]);
  });

  it('the default policy holds with_total_count requests to 200 per 15 minutes, whatever they list', () => {
    const rule = DEFAULT_RATE_LIMIT_POLICY.rules.find((r) => r.name === 'with_total_count');
    expect(rule).toMatchObject({ limit: 200, windowMs: 15 * 60_000 });
    const names = (method: string, path: string, query?: Record<string, string | boolean>) =>
      findRateLimitRules(DEFAULT_RATE_LIMIT_POLICY, method, path, query).map((r) => r.name);
    expect(names('GET', '/12/accounts/a/custom_audiences', { with_total_count: true })).toEqual(['with_total_count']);
    expect(names('GET', '/12/accounts/a/custom_audiences')).toEqual([]);
    expect(names('POST', '/12/accounts/a/custom_audiences/c/users')).toEqual(['audience_users']);
  });

  it('paces with_total_count requests under a scaled-down rule and leaves the others alone', async () => {
    const policy: RateLimitPolicy = {
      ...DEFAULT_RATE_LIMIT_POLICY,
      rules: DEFAULT_RATE_LIMIT_POLICY.rules.map((r) =>
        r.name === 'with_total_count' ? { ...r, limit: 2, windowMs: 10_000 } : r,
      ),
      safetyMarginMs: 0,
    };
    const h = await harness((_req, res) => json(res, 200, { data: [], next_cursor: null, total_count: 0 }), {
      rateLimitPolicy: policy,
    });
    for (let i = 0; i < 2; i++) await listCustomAudiences(h.client, { accountId: 'a', withTotalCount: true });
    for (let i = 0; i < 3; i++) await listCustomAudiences(h.client, { accountId: 'a' });
    // One window for every endpoint: the third with_total_count request waits, whatever it lists.
    await listAudiencePermissions(h.client, { kind: 'custom', accountId: 'a', audienceId: 'x', withTotalCount: true });
    expect(h.waits).toEqual([
      { reason: 'rate_limit', ms: 10_000, path: '/12/accounts/a/custom_audiences/x/permissions' },
    ]);
    expect(h.server.seen).toHaveLength(6);
  });
});

describe('pagination and bounds', () => {
  it('follows next_cursor until null', async () => {
    const h = await harness((req, res) => {
      const cursor = new URL(req.url, 'http://x').searchParams.get('cursor');
      const page = cursor === null ? 0 : Number(cursor);
      json(res, 200, {
        data: [{ ...AUDIENCE, id: `ca${page}` }],
        next_cursor: page < 2 ? String(page + 1) : null,
        ...(cursor === null ? { total_count: 3 } : {}),
      });
    });
    const ids: string[] = [];
    for await (const a of paginate((cursor) =>
      listCustomAudiences(h.client, {
        accountId: 'a',
        count: 1,
        ...(cursor === undefined ? { withTotalCount: true } : { cursor }),
      }),
    )) {
      ids.push(a.id);
    }
    expect(ids).toEqual(['ca0', 'ca1', 'ca2']);
    expect(h.server.seen.map((s) => s.url)).toEqual([
      '/12/accounts/a/custom_audiences?count=1&with_total_count=true',
      '/12/accounts/a/custom_audiences?count=1&cursor=1',
      '/12/accounts/a/custom_audiences?count=1&cursor=2',
    ]);
  });

  it('refuses out-of-range parameters before sending, naming the parameter and the range', async () => {
    const h = await harness((_req, res) => json(res, 200, { data: [], next_cursor: null }));
    const cases: Array<[Promise<unknown>, RegExp]> = [
      [listCustomAudiences(h.client, { accountId: 'a', count: 0 }), /count.*1 to 1000/s],
      [listCustomAudiences(h.client, { accountId: 'a', count: 1001 }), /count.*1 to 1000/s],
      [listCustomAudiences(h.client, { accountId: 'a', count: 2.5 }), /count/],
      [listCustomAudiences(h.client, { accountId: 'a', withTotalCount: true, cursor: 'c' }), /with_total_count/],
      [
        listAudiencePermissions(h.client, {
          kind: 'custom',
          accountId: 'a',
          audienceId: 'b',
          grantedAccountIds: Array.from({ length: 201 }, (_, i) => `g${i}`),
        }),
        /granted_account_ids.*200/s,
      ],
      [
        listAudiencePermissions(h.client, {
          kind: 'tailored',
          accountId: 'a',
          audienceId: 'b',
          permissionIds: Array.from({ length: 201 }, (_, i) => `p${i}`),
        }),
        /tailored_audience_permission_ids/,
      ],
    ];
    for (const [p, re] of cases) {
      const e = (await failure(p)) as ConfigError;
      expect(e).toBeInstanceOf(ConfigError);
      expect(e.code).toBe('invalid_parameter');
      expect(`${e.message} ${e.fix ?? ''}`).toMatch(re);
    }
    expect(h.server.seen).toHaveLength(0);
  });
});

describe('rate limiting', () => {
  it('the sliding window never admits more than the limit in any window (concurrent callers)', () => {
    const limiter = new SlidingWindowLimiter(30, 2000);
    const admitted: number[] = [];
    // 200 callers polling at irregular times; each admitted when delay() says 0.
    let t = 0;
    let waiting = 200;
    while (waiting > 0) {
      const d = limiter.delay(t);
      if (d === 0) {
        limiter.take()(t);
        admitted.push(t);
        waiting--;
      } else {
        t += Math.min(d, 37);
      }
    }
    for (let i = 0; i + 30 < admitted.length; i++)
      expect((admitted[i + 30] ?? 0) - (admitted[i] ?? 0)).toBeGreaterThanOrEqual(2000);
  });

  it('30 per window: concurrent uploads never exceed the cap and get zero 429s from a server enforcing it', async () => {
    const windowMs = 400;
    const limit = 30;
    const arrivals: number[] = [];
    let rejected = 0;
    const policy: RateLimitPolicy = {
      rules: [
        {
          name: 'users',
          endpoints: [{ method: 'POST', path: '^/12/accounts/[^/]+/custom_audiences/[^/]+/users$' }],
          limit,
          windowMs,
        },
      ],
      // The default margin: the client spaces its sends a window apart, the server judges arrivals,
      // and a send that waited longer on the way (the first connection's set-up, a loaded
      // machine) would otherwise arrive less than a window after an earlier one.
      safetyMarginMs: 100,
      resetJitterMs: 0,
      maxServerWaitMs: 60_000,
    };
    // Real time here: the point is the wire, and the server judges by its own arrival times.
    const h = await harness(
      (_req, res) => {
        const now = performance.now();
        const inWindow = arrivals.filter((a) => a > now - windowMs).length;
        if (inWindow >= limit) {
          rejected++;
          json(res, 429, { errors: [{ code: 'TOO_MANY_REQUESTS', message: 'over' }] });
          return;
        }
        arrivals.push(now);
        json(res, 200, { data: { success_count: 1, total_count: 1 } });
      },
      { rateLimitPolicy: policy, maxAttempts: 1 },
      true,
    );
    await Promise.all(
      Array.from({ length: 75 }, (_, i) =>
        postCustomAudienceUsers(h.client, { accountId: 'a', customAudienceId: `ca${i % 3}`, body: '[]' }),
      ),
    );
    expect(rejected).toBe(0);
    for (let i = 0; i + limit < arrivals.length; i++)
      expect((arrivals[i + limit] ?? 0) - (arrivals[i] ?? 0)).toBeGreaterThanOrEqual(windowMs);
    const s = h.client.stats();
    expect(s.rateLimited).toBe(0);
    expect(s.rateLimitWaits).toBeGreaterThan(0);
    expect(h.waits.every((w) => w.reason === 'rate_limit')).toBe(true);
    // Other endpoints are not slowed by the users window.
    expect(policy.rules[0]?.endpoints.some((e) => new RegExp(e.path).test('/12/accounts/a/custom_audiences'))).toBe(
      false,
    );
  });
});

describe('secrets', () => {
  it('never appear in any error, event or log line, even when the server echoes them', async () => {
    const warnings: string[] = [];
    const h = await harness(
      (req, res, n) => {
        const echo = `${req.headers.authorization ?? ''} ${SECRETS.consumerSecret} ${SECRETS.accessTokenSecret} ${REQUEST_TOKEN.secret}`;
        const headers = { 'x-api-warn': echo, 'x-request-id': `req-${SECRETS.consumerSecret}` };
        if (n === 1) json(res, 400, { errors: [{ code: 'X', message: `bad ${echo}`, details: echo }] }, headers);
        else if (n === 2) json(res, 401, { code: 32, message: `Could not authenticate ${echo}` });
        else if (n === 3) {
          res.writeHead(400, { 'content-type': 'application/problem+json' });
          res.end(JSON.stringify({ type: 'about:blank', title: echo, detail: echo }));
        } else if (n === 4) {
          // Every string field of an error, and whatever `value` echoes, at any depth.
          json(
            res,
            400,
            {
              errors: [
                {
                  code: `CODE_${SECRETS.accessTokenSecret}`,
                  message: 'bad',
                  parameter: `param_${SECRETS.consumerSecret}`,
                  value: { sent: [SECRETS.consumerSecret, { [SECRETS.accessTokenSecret]: echo }], n: 1 },
                },
              ],
              operation_errors: [{ index: 0, message: echo, code: SECRETS.consumerSecret }],
            },
            headers,
          );
        } else if (n === 5) json(res, 400, { code: `E_${SECRETS.consumerSecret}`, message: 'core' }, headers);
        else if (n === 6)
          json(res, 400, { type: `https://x/${SECRETS.accessTokenSecret}`, title: 'T', status: 400 }, headers);
        else if (n === 7) json(res, 200, { data: AUDIENCE }, headers);
        else if (req.url.startsWith('/oauth/')) json(res, 401, { code: REQUEST_TOKEN.secret, message: echo }, headers);
        else {
          res.writeHead(400, { 'content-type': 'text/plain' });
          res.end(`Authorization: ${echo}`);
        }
      },
      { onWarn: (w) => warnings.push(w) },
    );
    for (let i = 0; i < 6; i++) await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }));
    await getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' });
    // The login step signs with the request token's secret, which the client's options never held.
    await failure(
      accessToken(h.client, {
        oauthToken: REQUEST_TOKEN.key,
        oauthTokenSecret: REQUEST_TOKEN.secret,
        verifier: '1234',
      }),
    );
    await failure(getCustomAudience(h.client, { accountId: 'a', customAudienceId: 'b' }));
    expect(h.server.seen[7]?.signatureOk).toBe(true);
    const texts = [...collected.flatMap(renderings), JSON.stringify(h.events), JSON.stringify(h.waits), ...warnings];
    expect(collected.length).toBeGreaterThan(20);
    expect(warnings).toHaveLength(1);
    expectNoSecrets(texts);
    for (const t of texts) expect(t).not.toContain(REQUEST_TOKEN.key);
  });
});
