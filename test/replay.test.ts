import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  findDoNotReachList,
  getCustomAudience,
  listAudiencePermissions,
  listCustomAudiences,
  listDoNotReachLists,
  listTargetedCampaigns,
  type AdsClient,
} from '../src/api/index.js';
import { FIXTURES, runCli } from './helpers/cli.js';

/**
 * Real response bodies of the platform (its SDKs' test fixtures and its docs' examples; sources in
 * fixtures/replay/README.md), served by a local server and read through the client and the CLI.
 * The server answers by method and path only: what is replayed is the platform's body, not ours.
 */
const body = (file: string): string => readFileSync(`${FIXTURES}replay/${file}`, 'utf8');

const ROUTES: ReadonlyArray<[method: string, path: RegExp, file: string]> = [
  ['GET', /^\/12\/accounts\/[^/]+\/custom_audiences$/, 'python-custom_audiences_all.json'],
  ['GET', /^\/12\/accounts\/[^/]+\/custom_audiences\/[^/]+$/, 'python-custom_audiences_load.json'],
  [
    'GET',
    /^\/12\/accounts\/[^/]+\/custom_audiences\/[^/]+\/permissions$/,
    'python-custom_audiences_permissions_all.json',
  ],
  [
    'GET',
    /^\/5\/accounts\/[^/]+\/tailored_audiences\/[^/]+\/permissions$/,
    'python-tailored_audiences_permissions_all.json',
  ],
  ['GET', /^\/12\/accounts\/[^/]+\/custom_audiences\/[^/]+\/targeted$/, 'python-targeted_audiences.json'],
  ['GET', /^\/12\/accounts\/[^/]+\/do_not_reach_lists$/, 'docs-do_not_reach_lists_get.json'],
];

let server: Server;
let baseUrl: string;
let client: AdsClient;
/** Overrides the file served for the audience listing (the ruby SDK's variant). */
let listingFile: string | undefined;
/** Not a replay: the 403 body a PUT answers, to check which codes mean "not the owner". */
let ownerRefusal: unknown;
const seen: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    seen.push(`${req.method} ${url.pathname}${url.search}`);
    const route = ROUTES.find(([m, p]) => m === req.method && p.test(url.pathname));
    if (req.method === 'PUT' && ownerRefusal !== undefined) {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify(ownerRefusal));
      return;
    }
    if (route === undefined) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end('{"errors":[{"code":"NOT_FOUND","message":"no"}]}');
      return;
    }
    const file = route[2] === 'python-custom_audiences_all.json' && listingFile !== undefined ? listingFile : route[2];
    res.writeHead(200, { 'content-type': 'application/json;charset=utf-8' }).end(body(file));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = createClient({ adsBaseUrl: baseUrl, credentials: CREDENTIALS, maxAttempts: 1 });
});

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

describe('replay: the client reads the platform’s own bodies', () => {
  it('custom audience listing (python and ruby SDK fixtures)', async () => {
    for (const file of ['python-custom_audiences_all.json', 'ruby-tailored_audiences_all.json']) {
      listingFile = file;
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
    listingFile = undefined;
    expect(seen.at(-1)).toBe('GET /12/accounts/2iqph/custom_audiences?permission_scope=OWNER');
  });

  it('one audience (python SDK fixture), read with with_deleted', async () => {
    const a = await getCustomAudience(client, { accountId: '2iqph', customAudienceId: 'abc2', withDeleted: true });
    expect(a).toMatchObject({ id: 'abc2', name: 'TA #2', audience_type: 'WEB', deleted: false, audience_size: null });
    expect(seen.at(-1)).toBe('GET /12/accounts/2iqph/custom_audiences/abc2?with_deleted=true');
  });

  it('permissions, custom (v12) and tailored (v5) (python SDK fixtures)', async () => {
    for (const kind of ['custom', 'tailored'] as const) {
      const page = await listAudiencePermissions(client, { kind, accountId: '2iqph', audienceId: 'abc2' });
      expect(page.data.map((p) => [p.id, p.granted_account_id, p.permission_level])).toEqual([
        ['k', 'pz6ec', 'READ_ONLY'],
        ['l', 'j9ozo', 'READ_ONLY'],
      ]);
      expect(page.data[0]?.[kind === 'custom' ? 'custom_audience_id' : 'tailored_audience_id']).toBe('abc2');
      expect(page.total_count).toBe(2);
    }
  });

  it('targeted campaigns, a line item without a name (python SDK fixture)', async () => {
    const page = await listTargetedCampaigns(client, { accountId: '2iqph', customAudienceId: 'abc2' });
    expect(page.data.map((r) => [r.campaign_id, r.line_items.map((li) => [li.id, li.name, li.servable])])).toEqual([
      ['59hod', [['5gzog', 'test-line-item', true]]],
      ['arja7', [['bjw1q', null, true]]],
    ]);
  });

  it('do-not-reach list (docs example), found through the listing', async () => {
    const page = await listDoNotReachLists(client, { accountId: '18ce54bgxky' });
    expect(page.data).toEqual([
      expect.objectContaining({ id: '4kzrq', name: 'Do Not Reach List', description: 'test DNRL', list_size: null }),
    ]);
    expect(await findDoNotReachList(client, { accountId: '18ce54bgxky', doNotReachListId: '4kzrq' })).toMatchObject({
      id: '4kzrq',
      reasons_not_targetable: ['TOO_SMALL'],
    });
    expect(seen.at(-1)).toBe('GET /12/accounts/18ce54bgxky/do_not_reach_lists');
  });
});

describe('replay: the CLI reads them too', () => {
  const cli = (args: string[]) => runCli(args, { env: ENV() });

  it('audiences list and get, JSON and table', async () => {
    const list = await cli(['audiences', 'list', '--account', '2iqph', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as { data: Array<{ id: string }> }).data.map((a) => a.id)).toEqual([
      'abc2',
      'abc1',
      'abc3',
    ]);
    const table = await cli(['audiences', 'list', '--account', '2iqph', '--scope', 'shared']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^abc1\s+TA #1\s+-?\s*true\s/m);
    expect(table.stdout).toContain('custom audiences: 3');
    expect(seen.at(-1)).toBe('GET /12/accounts/2iqph/custom_audiences?permission_scope=SHARED');
    const get = await cli(['audiences', 'get', '--account', '2iqph', '--audience', 'abc2', '--json']);
    expect(get.code, get.stderr).toBe(0);
    expect(JSON.parse(get.stdout)).toMatchObject({ id: 'abc2', reasons_not_targetable: ['TOO_SMALL'] });
  });

  it('permissions list, targeted, do-not-reach list', async () => {
    const perms = await cli(['permissions', 'list', '--account', '2iqph', '--audience', 'abc2', '--tailored']);
    expect(perms.code, perms.stderr).toBe(0);
    expect(perms.stdout).toMatch(/^k\s+pz6ec\s+READ_ONLY\s/m);
    const targeted = await cli(['targeted', '--account', '2iqph', '--audience', 'abc2', '--json']);
    expect(targeted.code, targeted.stderr).toBe(0);
    expect((JSON.parse(targeted.stdout) as { data: unknown[] }).data).toHaveLength(2);
    const dnr = await cli(['do-not-reach', 'list', '--account', '18ce54bgxky']);
    expect(dnr.code, dnr.stderr).toBe(0);
    expect(dnr.stdout).toMatch(/^4kzrq\s+Do Not Reach List\s/m);
  });
});

describe('owner-only refusal keyed on documented codes and HTTP 403', () => {
  it('FORBIDDEN, UNAUTHORIZED_ACCESS, INSUFFICIENT_USER_AUTHORIZED_PERMISSION or no code: the owner fix (exit 4)', async () => {
    const update = ['audiences', 'update', '--account', 'grantee', '--audience', 'abc2', '--name', 'x'];
    for (const body of [
      { errors: [{ code: 'FORBIDDEN', message: 'no' }] },
      { errors: [{ code: 'UNAUTHORIZED_ACCESS', message: 'no' }] },
      { errors: [{ code: 'INSUFFICIENT_USER_AUTHORIZED_PERMISSION', message: 'no' }] },
      '<html>Forbidden</html>',
    ]) {
      ownerRefusal = body;
      const r = await runCli(update, { env: ENV() });
      expect(r.code, JSON.stringify(body)).toBe(4);
      expect(r.stderr).toContain("error: only the audience's owner account can update it");
      expect(r.stderr).toContain(
        'fix: find the owner with `audience-kit audiences get --account grantee --audience abc2`',
      );
    }
    // Another 403 (the account is not the user's) keeps its own message.
    ownerRefusal = { errors: [{ code: 'UNAUTHORIZED_CLIENT_APPLICATION', message: 'not your account' }] };
    const other = await runCli(update, { env: ENV() });
    expect(other.code).toBe(4);
    expect(other.stderr).not.toContain("only the audience's owner account");
    expect(other.stderr).toContain('UNAUTHORIZED_CLIENT_APPLICATION');
    ownerRefusal = undefined;
  });
});
