import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type AdsClient } from '../src/api/client.js';
import {
  createCustomAudience,
  createDoNotReachList,
  deleteCustomAudience,
  deleteDoNotReachList,
  findDoNotReachList,
  getCustomAudience,
  grantAudiencePermission,
  listAudiencePermissions,
  listCustomAudiences,
  listDoNotReachLists,
  listTargetedCampaigns,
  postCustomAudienceUsers,
  postDoNotReachListUsers,
  revokeAudiencePermission,
  updateCustomAudience,
} from '../src/api/endpoints.js';
import { AuthError, HttpError } from '../src/errors.js';
import { FIXTURES, runCli } from './helpers/cli.js';
import { undocumentedParts } from './helpers/documented-requests.js';

/**
 * Real response bodies of the platform (its SDKs' test fixtures, its docs' examples, bodies quoted in
 * its SDKs' issue threads; full citations in fixtures/replay/README.md), served by a local server and
 * read through the client and the CLI. The server answers by method and path: what is replayed is
 * the platform's body, not ours. Every request the client sends is first held to its endpoint's
 * documented shape (test/helpers/documented-requests.ts: query parameters, JSON batch bodies);
 * one that departs from it gets a 400 and fails its test.
 */
const body = (file: string): string => readFileSync(`${FIXTURES}replay/${file}`, 'utf8');

const A = '[^/]+';
const ROUTES: ReadonlyArray<[method: string, path: RegExp, file: string]> = [
  // python SDK, tests/fixtures/custom_audiences_all.json
  ['GET', new RegExp(`^/12/accounts/${A}/custom_audiences$`), 'python-custom_audiences_all.json'],
  // docs, "Custom Audiences", POST accounts/:account_id/custom_audiences, example response
  ['POST', new RegExp(`^/12/accounts/${A}/custom_audiences$`), 'docs-custom_audiences_post.json'],
  // python SDK, tests/fixtures/custom_audiences_load.json
  ['GET', new RegExp(`^/12/accounts/${A}/custom_audiences/${A}$`), 'python-custom_audiences_load.json'],
  // docs, "Custom Audiences", PUT accounts/:account_id/custom_audiences/:id, example response
  ['PUT', new RegExp(`^/12/accounts/${A}/custom_audiences/${A}$`), 'docs-custom_audiences_put.json'],
  // docs, "Custom Audiences", DELETE accounts/:account_id/custom_audiences/:id, example response
  ['DELETE', new RegExp(`^/12/accounts/${A}/custom_audiences/${A}$`), 'docs-custom_audiences_delete.json'],
  // docs, "Custom Audiences Users", POST accounts/:account_id/custom_audiences/:id/users, example response
  ['POST', new RegExp(`^/12/accounts/${A}/custom_audiences/${A}/users$`), 'docs-custom_audiences_users_post.json'],
  // python SDK, tests/fixtures/custom_audiences_permissions_all.json
  [
    'GET',
    new RegExp(`^/12/accounts/${A}/custom_audiences/${A}/permissions$`),
    'python-custom_audiences_permissions_all.json',
  ],
  // docs, "Custom Audience Permissions", POST and DELETE, example responses
  [
    'POST',
    new RegExp(`^/12/accounts/${A}/custom_audiences/${A}/permissions$`),
    'docs-custom_audience_permissions_post.json',
  ],
  [
    'DELETE',
    new RegExp(`^/12/accounts/${A}/custom_audiences/${A}/permissions/${A}$`),
    'docs-custom_audience_permissions_delete.json',
  ],
  // python SDK, tests/fixtures/tailored_audiences_permissions_all.json
  [
    'GET',
    new RegExp(`^/5/accounts/${A}/tailored_audiences/${A}/permissions$`),
    'python-tailored_audiences_permissions_all.json',
  ],
  // docs, "Tailored Audience Permissions", POST and DELETE, example responses
  [
    'POST',
    new RegExp(`^/5/accounts/${A}/tailored_audiences/${A}/permissions$`),
    'docs-tailored_audience_permissions_post.json',
  ],
  [
    'DELETE',
    new RegExp(`^/5/accounts/${A}/tailored_audiences/${A}/permissions/${A}$`),
    'docs-tailored_audience_permissions_delete.json',
  ],
  // python SDK, tests/fixtures/targeted_audiences.json
  ['GET', new RegExp(`^/12/accounts/${A}/custom_audiences/${A}/targeted$`), 'python-targeted_audiences.json'],
  // docs, "Do Not Reach Lists": GET, POST, DELETE and the batch users POST, example responses
  ['GET', new RegExp(`^/12/accounts/${A}/do_not_reach_lists$`), 'docs-do_not_reach_lists_get.json'],
  ['POST', new RegExp(`^/12/accounts/${A}/do_not_reach_lists$`), 'docs-do_not_reach_lists_post.json'],
  ['DELETE', new RegExp(`^/12/accounts/${A}/do_not_reach_lists/${A}$`), 'docs-do_not_reach_lists_delete.json'],
  [
    'POST',
    new RegExp(`^/12/batch/accounts/${A}/do_not_reach_lists/${A}/users$`),
    'docs-do_not_reach_lists_users_post.json',
  ],
];

interface Reply {
  status: number;
  body: string;
  type?: string;
}

/** A test's own answer for some requests (an error body, another fixture), before the table. */
let override: ((method: string, path: string) => Reply | undefined) | undefined;
const replay = (file: string, status = 200): Reply => ({ status, body: body(file) });

let server: Server;
let baseUrl: string;
let client: AdsClient;
/** `METHOD /path?query` of every request, and the JSON bodies sent. */
const seen: string[] = [];
const sentBodies: unknown[] = [];
/** Requests that departed from their endpoint's documented shape, with how. */
const undocumented: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const method = req.method ?? 'GET';
      seen.push(`${method} ${url.pathname}${url.search}`);
      const sent = Buffer.concat(chunks);
      const problems = undocumentedParts({ method, url, contentType: req.headers['content-type'], body: sent });
      if (problems.length > 0) undocumented.push(`${method} ${url.pathname}: ${problems.join('; ')}`);
      if (chunks.length > 0 && problems.length === 0) sentBodies.push(JSON.parse(sent.toString('utf8')));
      const route = ROUTES.find(([m, p]) => m === method && p.test(url.pathname));
      const reply =
        (problems.length > 0 ? undocumentedReply(problems) : undefined) ??
        override?.(method, url.pathname) ??
        (route === undefined
          ? { status: 404, body: '{"errors":[{"code":"ROUTE_NOT_FOUND","message":"no route"}]}' }
          : replay(route[2]));
      res.writeHead(reply.status, { 'content-type': reply.type ?? 'application/json;charset=utf-8' }).end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = createClient({ adsBaseUrl: baseUrl, credentials: CREDENTIALS, maxAttempts: 1 });
});

afterEach(() => {
  const departed = undocumented.splice(0);
  override = undefined;
  seen.length = 0;
  sentBodies.length = 0;
  expect(departed, 'requests that depart from the documented shapes').toEqual([]);
});

/** The platform's answer to a request it does not take: 400 INVALID_PARAMETER naming the first problem. */
function undocumentedReply(problems: string[]): Reply {
  const message = `undocumented request: ${problems[0] ?? ''}`;
  return { status: 400, body: JSON.stringify({ errors: [{ code: 'INVALID_PARAMETER', message }] }) };
}

afterAll(async () => {
  await client.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const CREDENTIALS = {
  consumerKey: 'replay-consumer-key',
  consumerSecret: 'replay-consumer-secret',
  accessToken: 'replay-access-token',
  accessTokenSecret: 'replay-access-token-secret',
};
const ENV = (): NodeJS.ProcessEnv => ({
  AUDIENCE_KIT_ADS_BASE_URL: baseUrl,
  AUDIENCE_KIT_CONSUMER_KEY: CREDENTIALS.consumerKey,
  AUDIENCE_KIT_CONSUMER_SECRET: CREDENTIALS.consumerSecret,
  AUDIENCE_KIT_ACCESS_TOKEN: CREDENTIALS.accessToken,
  AUDIENCE_KIT_ACCESS_TOKEN_SECRET: CREDENTIALS.accessTokenSecret,
});
const cli = (args: string[], cwd?: string) => runCli(args, { env: ENV(), ...(cwd === undefined ? {} : { cwd }) });

/** An account listing with no list in it: the docs' example with its `data` emptied. */
const NO_DNR_LIST: Reply = {
  status: 200,
  body: JSON.stringify({ ...JSON.parse(body('docs-do_not_reach_lists_get.json')), data: [] }),
};
/** The docs' HTML-404 case ("Error codes and responses": a 404 may come with an HTML body). */
const HTML_404: Reply = { status: 404, body: body('docs-404.html'), type: 'text/html; charset=utf-8' };

const users = (n: number) => Array.from({ length: n }, (_, i) => ({ email: [`${i}`.padStart(64, '0')] }));

describe('replay: the client reads the platform’s own bodies', () => {
  it('custom audience listing (python and ruby SDK fixtures, docs example) with permission_scope', async () => {
    for (const file of ['python-custom_audiences_all.json', 'ruby-tailored_audiences_all.json']) {
      override = (m, p) => (m === 'GET' && p.endsWith('/custom_audiences') ? replay(file) : undefined);
      const page = await listCustomAudiences(client, { accountId: '2iqph', permissionScope: 'OWNER' });
      expect(page.data.map((a) => [a.id, a.name, a.targetable, a.reasons_not_targetable])).toEqual([
        ['abc2', 'TA #2', false, ['TOO_SMALL']],
        ['abc1', 'TA #1', true, []],
        ['abc3', 'TA #3', false, ['TOO_SMALL']],
      ]);
      expect(page).toMatchObject({ next_cursor: null, total_count: 3 });
      // Fields we do not model pass through untouched.
      expect(page.data[0]).toMatchObject({ audience_size: null, list_type: null, partner_source: 'OTHER' });
    }
    expect(seen.at(-1)).toBe('GET /12/accounts/2iqph/custom_audiences?permission_scope=OWNER');
    override = (m, p) =>
      m === 'GET' && p.endsWith('/custom_audiences') ? replay('docs-custom_audiences_get.json') : undefined;
    const docs = await listCustomAudiences(client, { accountId: '18ce54d4x5t', customAudienceIds: ['1nmth'] });
    expect(docs.data).toEqual([
      expect.objectContaining({ id: '1nmth', owner_account_id: '18ce54d4x5t', audience_size: 1470, targetable: true }),
    ]);
    expect(seen.at(-1)).toBe('GET /12/accounts/18ce54d4x5t/custom_audiences?custom_audience_ids=1nmth');
  });

  it('one audience (python SDK fixture), read with with_deleted', async () => {
    const a = await getCustomAudience(client, { accountId: '2iqph', customAudienceId: 'abc2', withDeleted: true });
    expect(a).toMatchObject({ id: 'abc2', name: 'TA #2', audience_type: 'WEB', deleted: false, audience_size: null });
    expect(seen).toEqual(['GET /12/accounts/2iqph/custom_audiences/abc2?with_deleted=true']);
  });

  it('create, update, delete an audience (docs examples)', async () => {
    const created = await createCustomAudience(client, { accountId: '18ce54d4x5t', name: 'developers' });
    expect(created).toMatchObject({ id: '2906h', reasons_not_targetable: ['PROCESSING', 'TOO_SMALL'], deleted: false });
    const updated = await updateCustomAudience(client, {
      accountId: '18ce54d4x5t',
      customAudienceId: '2906h',
      name: 'developers_changed',
    });
    expect(updated).toMatchObject({ id: '2906h', name: 'developers_changed', is_owner: true });
    const deleted = await deleteCustomAudience(client, { accountId: '18ce54d4x5t', customAudienceId: '2906h' });
    expect(deleted).toMatchObject({ id: '2906h', deleted: true });
    expect(seen).toEqual([
      'POST /12/accounts/18ce54d4x5t/custom_audiences?name=developers',
      'PUT /12/accounts/18ce54d4x5t/custom_audiences/2906h?name=developers_changed',
      'DELETE /12/accounts/18ce54d4x5t/custom_audiences/2906h',
    ]);
  });

  it('users batch (docs example: two operations, four users, success_count == total_count == 4)', async () => {
    // The docs' example request, byte for byte in meaning, with its `twitter_id` under the name
    // the reference gives the platform's user id, `service_id`.
    const [a, b, c, d, e, f, g, h, i, j, k] = [
      '4798b8bbdcf6f2a52e527f46a3d7a7c9aefb541afda03af79c74809ecc6376f3',
      '7352f353c460e74c7ae226952d04f8aa307b12329c5512ec8cb6f1a0f8f9b2cb',
      '49e0be2aeccfb51a8dee4c945c8a70a9ac500cf6f5cb08112575f74db9b1470d',
      '5bf13d5ad4200407c5bc8b9bb578e425d05ef936fd488e3799a9d0806669223c',
      '34d56c7159a7eea941f359653029410f813f65a1d2d13ecc5ccbdd5a8cb755cf',
      '00e7b76c9739dec57f4c4a20ec021a20ffcf26bd00f519b17ea00f0ed6048f85',
      '8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92',
      '461222f5dd690a20651c3d19848015cb0369db3f8e937571ffb775de70750847',
      'c623c7e163984493b46c547088542e95d0aaa529bc52bbecce3ff91eb6b7843b',
      '858cdc7f313f84a3f3c48e9a6323307c1ef1bb7439b8e3623e140454b0fd8fa5',
      'bb074e154657b91d99bd1bb3757409149670e8ae7a0fe9136fae29a26a7881c8',
    ] as const;
    const times = { effective_at: '2018-05-15T00:00:00Z', expires_at: '2019-01-01T07:00:00Z' };
    const operations = [
      {
        operation_type: 'Update' as const,
        params: {
          ...times,
          users: [
            { email: [a], handle: [b, c] },
            { email: [d], service_id: [e, f] },
          ],
        },
      },
      {
        operation_type: 'Delete' as const,
        params: {
          ...times,
          users: [
            { device_id: [g], email: [a], handle: [h], service_id: [i] },
            { email: [d], service_id: [j, k] },
          ],
        },
      },
    ];
    const result = await postCustomAudienceUsers(client, {
      accountId: '18ce54d4x5t',
      customAudienceId: '1nmth',
      operations,
    });
    expect(result).toEqual({ success_count: 4, total_count: 4 });
    expect(seen).toEqual(['POST /12/accounts/18ce54d4x5t/custom_audiences/1nmth/users']);
    expect(sentBodies).toEqual([operations]);
  });

  it('permissions, custom (v12) and tailored (v5): list (python SDK fixtures), grant and revoke (docs examples)', async () => {
    for (const kind of ['custom', 'tailored'] as const) {
      const key = kind === 'custom' ? 'custom_audience_id' : 'tailored_audience_id';
      const page = await listAudiencePermissions(client, { kind, accountId: '2iqph', audienceId: 'abc2' });
      expect(page.data.map((p) => [p.id, p.granted_account_id, p.permission_level])).toEqual([
        ['k', 'pz6ec', 'READ_ONLY'],
        ['l', 'j9ozo', 'READ_ONLY'],
      ]);
      expect(page.data[0]?.[key]).toBe('abc2');
      expect(page.total_count).toBe(2);
      const granted = await grantAudiencePermission(client, {
        kind,
        accountId: '18ce54d4x5t',
        audienceId: '2906h',
        grantedAccountId: '18ce54aymz3',
        permissionLevel: 'READ_ONLY',
      });
      expect(granted).toMatchObject({ id: '14m', [key]: '2906h', granted_account_id: '18ce54aymz3', deleted: false });
      seen.length = 0;
      const revoked = await revokeAudiencePermission(client, {
        kind,
        accountId: '18ce54d4x5t',
        audienceId: '1nmth',
        permissionId: 'ri',
      });
      expect(revoked).toMatchObject({ id: 'ri', [key]: '1nmth', deleted: true });
      // Only the DELETE, as the SDKs send it.
      expect(seen).toEqual([
        `DELETE /${kind === 'custom' ? '12' : '5'}/accounts/18ce54d4x5t/${kind}_audiences/1nmth/permissions/ri`,
      ]);
    }
  });

  it('targeted campaigns, a line item without a name (python SDK fixture)', async () => {
    const page = await listTargetedCampaigns(client, { accountId: '2iqph', customAudienceId: 'abc2' });
    expect(page.data.map((r) => [r.campaign_id, r.line_items.map((li) => [li.id, li.name, li.servable])])).toEqual([
      ['59hod', [['5gzog', 'test-line-item', true]]],
      ['arja7', [['bjw1q', null, true]]],
    ]);
  });

  it('do-not-reach list: listing, found through it, create, users batch, delete (docs examples)', async () => {
    const page = await listDoNotReachLists(client, { accountId: '18ce54bgxky' });
    expect(page.data).toEqual([
      expect.objectContaining({ id: '4kzrq', name: 'Do Not Reach List', description: 'test DNRL', list_size: null }),
    ]);
    expect(await findDoNotReachList(client, { accountId: '18ce54bgxky', doNotReachListId: '4kzrq' })).toMatchObject({
      id: '4kzrq',
      reasons_not_targetable: ['TOO_SMALL'],
    });
    const created = await createDoNotReachList(client, {
      accountId: '18ce54bgxky',
      description: 'A list of users to exclude',
    });
    expect(created).toMatchObject({ id: '4ofrq', description: 'A list of users to exclude', deleted: false });
    const counts = await postDoNotReachListUsers(client, {
      accountId: '18ce54bgxky',
      doNotReachListId: '4ofrq',
      operations: [{ operation_type: 'Update', params: { users: users(2), expires_at: '2023-01-22T00:00:00Z' } }],
    });
    expect(counts).toEqual([{ success_count: 2, total_count: 2 }]);
    const deleted = await deleteDoNotReachList(client, { accountId: '18ce54bgxky', doNotReachListId: '4ofrp' });
    expect(deleted).toMatchObject({ id: '4ofrp', deleted: true });
    expect(seen).toEqual([
      'GET /12/accounts/18ce54bgxky/do_not_reach_lists',
      'GET /12/accounts/18ce54bgxky/do_not_reach_lists',
      'POST /12/accounts/18ce54bgxky/do_not_reach_lists?description=A%20list%20of%20users%20to%20exclude',
      'POST /12/batch/accounts/18ce54bgxky/do_not_reach_lists/4ofrq/users',
      'DELETE /12/accounts/18ce54bgxky/do_not_reach_lists/4ofrp',
    ]);
  });

  it('error bodies: the docs example (400), 403s quoted in SDK issues, an HTML 404', async () => {
    const get = () => getCustomAudience(client, { accountId: 'hkk5', customAudienceId: 'x' });
    const failure = async (reply: Reply): Promise<HttpError> => {
      override = () => reply;
      return get().then(
        () => expect.fail('no error'),
        (e: unknown) => e as HttpError,
      );
    };

    const invalid = await failure(replay('docs-error_invalid_parameter.json', 400));
    expect(invalid).toBeInstanceOf(HttpError);
    expect(invalid).toMatchObject({ status: 400, code: 'api_bad_request' });
    expect(invalid.errors).toEqual([
      {
        code: 'INVALID_PARAMETER',
        message: 'Expected time, got "" for start_time',
        parameter: 'start_time',
        details: 'invalid date',
        value: '',
      },
    ]);
    expect(invalid.message).toContain('INVALID_PARAMETER: Expected time, got "" for start_time (parameter start_time)');

    const notFound403 = await failure(replay('issue-twitter4j-ads-48-403_not_found.json', 403));
    expect(notFound403).toBeInstanceOf(AuthError);
    expect(notFound403.errors).toEqual([{ code: 'NOT_FOUND', message: 'Account 938627011618263040 was not found' }]);

    const app = await failure(replay('issue-twurl-66-403_unauthorized_client_application.json', 403));
    expect(app).toBeInstanceOf(AuthError);
    expect(app.errors[0]?.code).toBe('UNAUTHORIZED_CLIENT_APPLICATION');

    // The docs: when the body cannot be parsed, the HTTP code's meaning takes precedence.
    const html = await failure(HTML_404);
    expect(html).toMatchObject({ status: 404, code: 'api_not_found', errors: [] });
    expect(html.message).toMatch(/HTTP 404: non-JSON body: .*Not Found/);
    expect(html.message).not.toContain('<');
  });
});

describe('the replay server holds each request to its documented shape', () => {
  const digest = 'a'.repeat(64);
  const send = async (method: string, path: string, body?: unknown, type = 'application/json') => {
    const init =
      body === undefined ? { method } : { method, headers: { 'content-type': type }, body: JSON.stringify(body) };
    const res = await fetch(`${baseUrl}${path}`, init);
    await res.arrayBuffer();
    return { status: res.status, undocumented: undocumented.splice(0) };
  };
  const CUSTOM = '/12/accounts/a1/custom_audiences/c1/users';
  const DNR = '/12/batch/accounts/a1/do_not_reach_lists/d1/users';
  const op = (params: Record<string, unknown>, operation_type = 'Update') => [{ operation_type, params }];

  it('answers a documented request from its fixture', async () => {
    const all = { email: [digest], phone_number: [digest], handle: [digest], device_id: [digest] };
    const users = [{ ...all, service_id: [digest], partner_user_id: ['p-1'] }];
    expect(await send('POST', CUSTOM, op({ users, effective_at: '2026-01-01T00:00:00Z' }))).toEqual({
      status: 200,
      undocumented: [],
    });
    expect(
      await send('POST', DNR, op({ users: [{ email: [digest] }], expires_at: '2026-06-01T00:00:00Z' }, 'Delete')),
    ).toEqual({ status: 200, undocumented: [] });
  });

  it('refuses, with the reason, each body or query the documentation does not allow', async () => {
    const cases: Array<[string, string, string, unknown, RegExp, string?]> = [
      [
        'unhashed email',
        'POST',
        CUSTOM,
        op({ users: [{ email: ['a@example.com'] }] }),
        /users\.0\.email\.0: a SHA-256/,
      ],
      ['unknown user key', 'POST', CUSTOM, op({ users: [{ twitter_id: [digest] }] }), /Unrecognized key/],
      ['handle on a do-not-reach list', 'POST', DNR, op({ users: [{ handle: [digest] }] }), /Unrecognized key/],
      [
        'effective_at on a do-not-reach list',
        'POST',
        DNR,
        op({ users: [{ email: [digest] }], effective_at: '2026-01-01T00:00:00Z' }),
        /Unrecognized key/,
      ],
      ['operation Add', 'POST', CUSTOM, op({ users: [{ email: [digest] }] }, 'Add'), /operation_type/],
      ['a user without identifiers', 'POST', CUSTOM, op({ users: [{}] }), /at least one identifier/],
      [
        'expires_at not ISO',
        'POST',
        DNR,
        op({ users: [{ email: [digest] }], expires_at: 'tomorrow' }),
        /expires_at: a UTC ISO 8601/,
      ],
      ['2501 operations', 'POST', CUSTOM, new Array(2501).fill(op({ users: [{ email: [digest] }] })[0]), /Too big/i],
      ['not JSON', 'POST', CUSTOM, undefined, /not application\/json/, 'text/plain'],
      [
        'an undocumented query parameter',
        'GET',
        '/12/accounts/a1/custom_audiences?permission_scope=OWNED',
        undefined,
        /permission_scope=OWNED/,
      ],
      [
        'a missing required parameter',
        'POST',
        '/12/accounts/a1/custom_audiences/c1/permissions?granted_account_id=b',
        undefined,
        /permission_level is missing/,
      ],
      ['a body on a query endpoint', 'POST', '/12/accounts/a1/custom_audiences?name=x', { name: 'x' }, /a body/],
    ];
    for (const [what, method, path, body, reason, type] of cases) {
      const sent = type === undefined ? body : 'x';
      const r = await send(method, path, sent, type);
      expect(r.status, what).toBe(400);
      expect(r.undocumented.join('\n'), what).toMatch(reason);
    }
  });
});

describe('replay: the CLI reads them too', () => {
  it('audiences list and get, JSON and table', async () => {
    const list = await cli(['audiences', 'list', '--account', '2iqph', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { data: Array<{ id: string }> }).data.map((a) => a.id)).toEqual([
      'abc2',
      'abc1',
      'abc3',
    ]);
    expect(seen.at(-1)).toBe('GET /12/accounts/2iqph/custom_audiences?permission_scope=OWNER');
    const table = await cli(['audiences', 'list', '--account', '2iqph', '--scope', 'shared']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^abc1\s+TA #1\s+-?\s*true\s/m);
    expect(table.stdout).toContain('custom audiences: 3');
    expect(seen.at(-1)).toBe('GET /12/accounts/2iqph/custom_audiences?permission_scope=SHARED');
    const get = await cli(['audiences', 'get', '--account', '2iqph', '--audience', 'abc2', '--json']);
    expect(get.code, get.stderr).toBe(0);
    expect(JSON.parse(get.stdout)).toMatchObject({ id: 'abc2', reasons_not_targetable: ['TOO_SMALL'] });
  });

  it('audiences create, update, delete (refused while targeted, then --force)', async () => {
    const created = await cli(['audiences', 'create', '--account', '18ce54d4x5t', '--name', 'developers', '--json']);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ id: '2906h', targetable: false });
    const updated = await cli([
      'audiences',
      'update',
      '--account',
      '18ce54d4x5t',
      '--audience',
      '2906h',
      '--name',
      'x',
    ]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toContain('developers_changed');

    const del = ['audiences', 'delete', '--account', '18ce54d4x5t', '--audience', '2906h', '--yes'];
    const refused = await cli(del);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('targeted by 2 active line item(s) in 2 campaign(s)');
    seen.length = 0;
    const deleted = await cli([...del, '--force', '--json']);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(JSON.parse(deleted.stdout)).toMatchObject({ id: '2906h', deleted: true });
    expect(seen).toEqual([
      'GET /12/accounts/18ce54d4x5t/custom_audiences/2906h?with_deleted=true',
      'GET /12/accounts/18ce54d4x5t/custom_audiences/2906h/targeted?with_active=false',
      'DELETE /12/accounts/18ce54d4x5t/custom_audiences/2906h',
    ]);
  });

  it('permissions list, grant and revoke (custom and --tailored), targeted', async () => {
    const perms = await cli(['permissions', 'list', '--account', '2iqph', '--audience', 'abc2', '--tailored']);
    expect(perms.code, perms.stderr).toBe(0);
    expect(perms.stdout).toMatch(/^k\s+pz6ec\s+READ_ONLY\s/m);
    for (const extra of [[], ['--tailored']]) {
      const at = ['--account', '18ce54d4x5t', '--audience', '2906h', ...extra];
      const grant = await cli(['permissions', 'grant', ...at, '--to', '18ce54aymz3', '--json']);
      expect(grant.code, grant.stderr).toBe(0);
      expect(JSON.parse(grant.stdout)).toMatchObject({ id: '14m', granted_account_id: '18ce54aymz3' });
      seen.length = 0;
      const revoke = await cli(['permissions', 'revoke', ...at, '--permission-id', 'ri', '--yes', '--json']);
      expect(revoke.code, revoke.stderr).toBe(0);
      expect(JSON.parse(revoke.stdout)).toMatchObject({ id: 'ri', deleted: true });
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatch(/^DELETE .*\/permissions\/ri$/);
    }
    const targeted = await cli(['targeted', '--account', '2iqph', '--audience', 'abc2', '--json']);
    expect(targeted.code, targeted.stderr).toBe(0);
    expect((JSON.parse(targeted.stdout) as { data: unknown[] }).data).toHaveLength(2);
  });

  it('do-not-reach list, create (refused while the account has one), delete', async () => {
    const dnr = await cli(['do-not-reach', 'list', '--account', '18ce54bgxky']);
    expect(dnr.code, dnr.stderr).toBe(0);
    expect(dnr.stdout).toMatch(/^4kzrq\s+Do Not Reach List\s/m);
    const create = [
      'do-not-reach',
      'create',
      '--account',
      '18ce54bgxky',
      '--description',
      'A list of users to exclude',
    ];
    const refused = await cli(create);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('already has do-not-reach list 4kzrq');
    override = (m, p) => (m === 'GET' && p.endsWith('/do_not_reach_lists') ? NO_DNR_LIST : undefined);
    const created = await cli([...create, '--json']);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ id: '4ofrq', name: 'Do Not Reach List' });
    const deleted = await cli([
      'do-not-reach',
      'delete',
      '--account',
      '18ce54bgxky',
      '--list',
      '4ofrp',
      '--yes',
      '--json',
    ]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(JSON.parse(deleted.stdout)).toMatchObject({ id: '4ofrp', deleted: true });
  });

  it('upload to an audience (4 users) and to the do-not-reach list (2 users): the docs’ counts verify', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ak-replay-'));
    try {
      const csv = (n: number) => `email\n${Array.from({ length: n }, (_, i) => `user${i}@example.com`).join('\n')}\n`;
      writeFileSync(join(dir, 'four.csv'), csv(4));
      writeFileSync(join(dir, 'two.csv'), csv(2));
      const audience = await cli(
        ['upload', 'four.csv', '--account', '18ce54d4x5t', '--audience', 'abc2', '-q', '--json'],
        dir,
      );
      expect(audience.code, audience.stderr).toBe(0);
      expect(JSON.parse(audience.stdout)).toMatchObject({ status: 'completed', success_count: 4, total_count: 4 });
      expect(seen.at(-1)).toBe('POST /12/accounts/18ce54d4x5t/custom_audiences/abc2/users');
      const list = await cli(
        ['upload', 'two.csv', '--account', '18ce54bgxky', '--do-not-reach-list', '4kzrq', '-q', '--json'],
        dir,
      );
      expect(list.code, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toMatchObject({ status: 'completed', success_count: 2, total_count: 2 });
      expect(seen.at(-1)).toBe('POST /12/batch/accounts/18ce54bgxky/do_not_reach_lists/4kzrq/users');
      const sent = sentBodies.at(-1) as Array<{ params: { users: Array<{ email: string[] }> } }>;
      expect(sent[0]?.params.users.map((u) => u.email[0]?.length)).toEqual([64, 64]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('error bodies: exit codes and messages', async () => {
    const get = ['audiences', 'get', '--account', 'hkk5', '--audience', 'x'];
    const run = async (reply: Reply) => {
      override = () => reply;
      return cli(get);
    };
    const invalid = await run(replay('docs-error_invalid_parameter.json', 400));
    expect(invalid.code).toBe(6);
    expect(invalid.stderr).toContain('INVALID_PARAMETER: Expected time, got "" for start_time (parameter start_time)');
    const notFound403 = await run(replay('issue-twitter4j-ads-48-403_not_found.json', 403));
    expect(notFound403.code).toBe(4);
    expect(notFound403.stderr).toContain('NOT_FOUND: Account 938627011618263040 was not found');
    const app = await run(replay('issue-twurl-66-403_unauthorized_client_application.json', 403));
    expect(app.code).toBe(4);
    expect(app.stderr).toContain('UNAUTHORIZED_CLIENT_APPLICATION');
    const html = await run(HTML_404);
    expect(html.code).toBe(6);
    expect(html.stderr).toMatch(/HTTP 404: non-JSON body: .*Not Found/);
    expect(html.stderr).toMatch(/fix: /);
  });
});

describe('owner-only refusal keyed on documented codes and HTTP 403', () => {
  const update = ['audiences', 'update', '--account', 'grantee', '--audience', 'abc2', '--name', 'x'];
  const refuse = (reply: Reply) => {
    override = (m) => (m === 'PUT' ? reply : undefined);
  };

  it('ACTION_NOT_ALLOWED, UNAUTHORIZED_ACCESS, or a 403 whose body names no code: the owner fix (exit 4)', async () => {
    for (const reply of [
      { status: 403, body: '{"errors":[{"code":"ACTION_NOT_ALLOWED","message":"no"}]}' },
      { status: 403, body: '{"errors":[{"code":"UNAUTHORIZED_ACCESS","message":"no"}]}' },
      { status: 403, body: '<html><body><h1>403 Forbidden</h1></body></html>', type: 'text/html' },
    ]) {
      refuse(reply);
      const r = await cli(update);
      expect(r.code, reply.body).toBe(4);
      expect(r.stderr).toContain("error: only the audience's owner account can update it");
      expect(r.stderr).toContain(
        'fix: find the owner with `audience-kit audiences get --account grantee --audience abc2`',
      );
    }
  });

  it('any other 403 keeps its own message (not the user’s account, a token without write access, undocumented codes)', async () => {
    for (const code of ['UNAUTHORIZED_CLIENT_APPLICATION', 'INSUFFICIENT_USER_AUTHORIZED_PERMISSION', 'FORBIDDEN']) {
      refuse({ status: 403, body: JSON.stringify({ errors: [{ code, message: 'refused' }] }) });
      const r = await cli(update);
      expect(r.code).toBe(4);
      expect(r.stderr).not.toContain("only the audience's owner account");
      expect(r.stderr).toContain(`${code}: refused`);
    }
  });
});
