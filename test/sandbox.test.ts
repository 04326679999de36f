import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { oauth1Header } from '../src/api/oauth.js';
import { ConfigError } from '../src/errors.js';
import { mulberry32 } from '../src/sandbox/faults.js';
import { UserKeySet } from '../src/sandbox/state.js';
import {
  DEFAULT_SANDBOX_TOTAL_COUNT_RATE_LIMIT,
  parseFaultSpec,
  startSandbox,
  type Sandbox,
  type SandboxOptions,
} from '../src/sandbox/index.js';

const open: Sandbox[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

async function sandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const s = await startSandbox({ seed: 42, ...opts });
  open.push(s);
  return s;
}

interface CallOptions {
  body?: string;
  contentType?: string;
  form?: Record<string, string>;
  consumerKey?: string;
  consumerSecret?: string;
  token?: string | null;
  tokenSecret?: string;
  nonce?: string;
  timestamp?: number;
  oauthParams?: Record<string, string>;
  /** Alters the URL after signing (to prove the query is signed). */
  tamper?: (url: string) => string;
  authorization?: string | null;
}

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- test assertions on wire shapes
}

async function call(s: Sandbox, method: string, path: string, o: CallOptions = {}): Promise<Reply> {
  const url = `${s.url}${path}`;
  const c = s.credentials;
  const token = o.token === null ? undefined : (o.token ?? c.accessToken);
  const auth =
    o.authorization === null
      ? undefined
      : (o.authorization ??
        oauth1Header({
          method,
          url,
          consumerKey: o.consumerKey ?? c.consumerKey,
          consumerSecret: o.consumerSecret ?? c.consumerSecret,
          ...(token === undefined ? {} : { token, tokenSecret: o.tokenSecret ?? c.accessTokenSecret }),
          ...(o.form === undefined ? {} : { params: o.form }),
          ...(o.oauthParams === undefined ? {} : { oauthParams: o.oauthParams }),
          ...(o.nonce === undefined ? {} : { nonce: o.nonce }),
          ...(o.timestamp === undefined ? {} : { timestamp: o.timestamp }),
        }));
  const headers: Record<string, string> = {};
  if (auth !== undefined) headers['authorization'] = auth;
  let body = o.body;
  if (o.form !== undefined) {
    body = new URLSearchParams(o.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  if (o.contentType !== undefined) headers['content-type'] = o.contentType;
  const r = await fetch(o.tamper === undefined ? url : o.tamper(url), {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await r.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
}

const digest = (i: number | string): string => createHash('sha256').update(String(i)).digest('hex');
const users = (from: number, n: number): Array<{ email: string[] }> =>
  Array.from({ length: n }, (_, i) => ({ email: [digest(from + i)] }));
const batch = (ops: unknown[]): CallOptions => ({ body: JSON.stringify(ops), contentType: 'application/json' });
const update = (u: unknown[], params: Record<string, unknown> = {}): unknown => ({
  operation_type: 'Update',
  params: { users: u, ...params },
});
const usersPath = (s: Sandbox, id: string, account = s.accounts.primary): string =>
  `/12/accounts/${account}/custom_audiences/${id}/users`;
const dnrPath = (s: Sandbox, id: string): string =>
  `/12/batch/accounts/${s.accounts.primary}/do_not_reach_lists/${id}/users`;

/** A second access token of the sandbox user, through the PIN flow (real clock). */
async function secondAccessToken(s: Sandbox): Promise<{ token: string; tokenSecret: string }> {
  const rt = new URLSearchParams(
    (await call(s, 'POST', '/oauth/request_token', { token: null, oauthParams: { oauth_callback: 'oob' } })).text,
  );
  const requestToken = rt.get('oauth_token') ?? '';
  const page = await (await fetch(`${s.url}/oauth/authorize?oauth_token=${requestToken}`)).text();
  const pin = /<code id="oauth_pin">(\d+)<\/code>/.exec(page)?.[1] ?? '';
  const at = await call(s, 'POST', '/oauth/access_token', {
    token: requestToken,
    tokenSecret: rt.get('oauth_token_secret') ?? '',
    oauthParams: { oauth_verifier: pin },
  });
  const access = new URLSearchParams(at.text);
  return { token: access.get('oauth_token') ?? '', tokenSecret: access.get('oauth_token_secret') ?? '' };
}

describe('sandbox: OAuth verification', () => {
  it('accepts a correctly signed request and rejects each kind of bad one with 401 UNAUTHORIZED_ACCESS', async () => {
    const s = await sandbox();
    const path = `/12/accounts/${s.accounts.primary}/custom_audiences?count=5`;
    expect((await call(s, 'GET', path)).status).toBe(200);

    const rejected = [
      await call(s, 'GET', path, { authorization: null }),
      await call(s, 'GET', path, { consumerKey: 'unknown-key' }),
      await call(s, 'GET', path, { token: 'unknown-token' }),
      await call(s, 'GET', path, { consumerSecret: 'wrong-secret' }),
      await call(s, 'GET', path, { tokenSecret: 'wrong-secret' }),
      await call(s, 'GET', path, { tamper: (u) => u.replace('count=5', 'count=6') }),
      await call(s, 'GET', path, { timestamp: Math.floor(Date.now() / 1000) - 400 }),
      await call(s, 'GET', path, { timestamp: Math.floor(Date.now() / 1000) + 400 }),
    ];
    for (const r of rejected) {
      expect(r.status).toBe(401);
      expect(r.json.errors[0].code).toBe('UNAUTHORIZED_ACCESS');
      expect(r.json.request).toEqual({ params: {} });
    }
  });

  it('refuses a replayed nonce and checks the timestamp window against the injected clock', async () => {
    let now = Date.UTC(2030, 0, 1);
    const s = await sandbox({ now: () => now });
    const path = `/12/accounts/${s.accounts.primary}/custom_audiences`;
    const ts = Math.floor(now / 1000);
    expect((await call(s, 'GET', path, { nonce: 'n1', timestamp: ts })).status).toBe(200);
    expect((await call(s, 'GET', path, { nonce: 'n1', timestamp: ts })).json.errors[0].message).toMatch(/nonce/i);
    expect((await call(s, 'GET', path, { nonce: 'n2', timestamp: ts - 299 })).status).toBe(200);
    now += 2_000;
    expect((await call(s, 'GET', path, { nonce: 'n3', timestamp: ts - 299 })).status).toBe(401);
  });

  it('signs form-body parameters: a tampered body is refused', async () => {
    const s = await sandbox();
    const path = `/12/accounts/${s.accounts.primary}/custom_audiences`;
    const ok = await call(s, 'POST', path, { form: { name: 'Form made' } });
    expect(ok.status).toBe(201);
    expect(ok.json.data.name).toBe('Form made');
    const auth = oauth1Header({
      method: 'POST',
      url: `${s.url}${path}`,
      consumerKey: s.credentials.consumerKey,
      consumerSecret: s.credentials.consumerSecret,
      token: s.credentials.accessToken,
      tokenSecret: s.credentials.accessTokenSecret,
      params: { name: 'A' },
    });
    const r = await fetch(`${s.url}${path}`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=B',
    });
    expect(r.status).toBe(401);
  });
});

describe('sandbox: accounts and ownership', () => {
  it('answers 403 for another user account and 404 for an unknown one or an audience of another account', async () => {
    const s = await sandbox();
    const foreign = await call(s, 'GET', `/12/accounts/${s.accounts.foreign}/custom_audiences`);
    expect(foreign.status).toBe(403);
    expect(foreign.json.errors[0].code).toBe('UNAUTHORIZED_CLIENT_APPLICATION');
    const unknown = await call(s, 'GET', '/12/accounts/nosuchaccount/custom_audiences');
    expect(unknown.status).toBe(404);
    expect(unknown.json.errors[0].code).toBe('NOT_FOUND');
    const a = s.state.createCustomAudience(s.accounts.primary, 'Mine');
    const other = await call(s, 'GET', `/12/accounts/${s.accounts.secondary}/custom_audiences/${a.id}`);
    expect(other.status).toBe(404);
    expect((await call(s, 'GET', '/12/nothing/here')).status).toBe(404);
  });
});

describe('sandbox: envelope, paging and bounds', () => {
  it('pages with opaque cursors, counts with with_total_count and filters by name prefix', async () => {
    const s = await sandbox();
    const base = `/12/accounts/${s.accounts.primary}/custom_audiences`;
    for (const name of ['Alpha', 'alpine', 'Beta', 'Alps', 'Gamma']) {
      const r = await call(s, 'POST', `${base}?name=${name}&description=d`);
      expect(r.status).toBe(201);
      expect(r.json.request.params).toMatchObject({ account_id: s.accounts.primary, name, description: 'd' });
    }
    const first = await call(s, 'GET', `${base}?count=2&with_total_count=true`);
    expect(first.json.data).toHaveLength(2);
    expect(first.json.total_count).toBe(5);
    expect(typeof first.json.next_cursor).toBe('string');
    expect(first.json.request.params).toMatchObject({ count: 2, with_total_count: true });
    const names: string[] = first.json.data.map((a: { name: string }) => a.name);
    let cursor: string | null = first.json.next_cursor;
    while (cursor !== null) {
      const page = await call(s, 'GET', `${base}?count=2&cursor=${cursor}`);
      expect(page.json.total_count).toBeUndefined();
      names.push(...page.json.data.map((a: { name: string }) => a.name));
      cursor = page.json.next_cursor;
    }
    expect(names).toEqual(['Alpha', 'alpine', 'Beta', 'Alps', 'Gamma']);

    const prefixed = await call(s, 'GET', `${base}?q=ALP`);
    expect(prefixed.json.data.map((a: { name: string }) => a.name)).toEqual(['Alpha', 'alpine', 'Alps']);
    expect(prefixed.json.next_cursor).toBeNull();

    const ids = prefixed.json.data.slice(0, 2).map((a: { id: string }) => a.id);
    const byId = await call(s, 'GET', `${base}?custom_audience_ids=${ids.join(',')}`);
    expect(byId.json.data.map((a: { id: string }) => a.id)).toEqual(ids);

    const combo = await call(s, 'GET', `${base}?with_total_count=true&cursor=${first.json.next_cursor}`);
    expect(combo.status).toBe(400);
    expect(combo.json.errors[0]).toMatchObject({ code: 'INVALID_PARAMETER', parameter: 'with_total_count' });
  });

  it('hides deleted audiences unless with_deleted=true and returns deleted objects from DELETE', async () => {
    const s = await sandbox();
    const base = `/12/accounts/${s.accounts.primary}/custom_audiences`;
    const a = s.state.createCustomAudience(s.accounts.primary, 'Doomed');
    const updated = await call(s, 'PUT', `${base}/${a.id}?name=Renamed&description=new`);
    expect(updated.json.data).toMatchObject({
      name: 'Renamed',
      description: 'new',
      is_owner: true,
      audience_type: 'CUSTOM',
    });
    const del = await call(s, 'DELETE', `${base}/${a.id}`);
    expect(del.json.data).toMatchObject({ id: a.id, deleted: true });
    expect((await call(s, 'GET', base)).json.data).toEqual([]);
    expect((await call(s, 'GET', `${base}?with_deleted=true`)).json.data).toHaveLength(1);
    // Reading one back: with_deleted defaults to false, so a deleted audience is a 404 without it.
    expect((await call(s, 'GET', `${base}/${a.id}`)).status).toBe(404);
    const back = await call(s, 'GET', `${base}/${a.id}?with_deleted=true`);
    expect(back.json.data).toMatchObject({ id: a.id, deleted: true });
  });

  it('sorts the audience listing by sort_by (field-asc / field-desc)', async () => {
    const s = await sandbox();
    const base = `/12/accounts/${s.accounts.primary}/custom_audiences`;
    for (const name of ['b', 'c', 'a']) s.state.createCustomAudience(s.accounts.primary, name);
    const names = async (q: string) =>
      ((await call(s, 'GET', `${base}?${q}`)).json.data as Array<{ name: string }>).map((a) => a.name);
    expect(await names('sort_by=name-asc')).toEqual(['a', 'b', 'c']);
    expect(await names('sort_by=name-desc')).toEqual(['c', 'b', 'a']);
    expect((await call(s, 'GET', `${base}?sort_by=colour-asc`)).status).toBe(400);
  });

  it('refuses out-of-bounds counts, long id lists, bad cursors, bad booleans and unknown parameters', async () => {
    const s = await sandbox();
    const a = s.state.createCustomAudience(s.accounts.primary, 'A');
    const base = `/12/accounts/${s.accounts.primary}/custom_audiences`;
    const ids201 = Array.from({ length: 201 }, (_, i) => `id${i}`).join(',');
    const cases: Array<[string, string]> = [
      [`${base}?count=0`, 'count'],
      [`${base}?count=1001`, 'count'],
      [`${base}?count=abc`, 'count'],
      [`${base}?custom_audience_ids=${ids201}`, 'custom_audience_ids'],
      [`${base}?cursor=notacursor`, 'cursor'],
      [`${base}?with_deleted=yes`, 'with_deleted'],
      [`${base}?colour=blue`, 'colour'],
      [`${base}/${a.id}/permissions?count=1001`, 'count'],
      [`${base}/${a.id}/permissions?granted_account_ids=${ids201}`, 'granted_account_ids'],
      [`${base}/${a.id}/permissions?custom_audience_permission_ids=${ids201}`, 'custom_audience_permission_ids'],
      [
        `/5/accounts/${s.accounts.primary}/tailored_audiences/${a.id}/permissions?tailored_audience_permission_ids=${ids201}`,
        'tailored_audience_permission_ids',
      ],
      [`${base}/${a.id}/permissions?sort_by=nonsense`, 'sort_by'],
    ];
    for (const [path, parameter] of cases) {
      const r = await call(s, 'GET', path);
      expect(r.status, path).toBe(400);
      expect(r.json.errors[0]).toMatchObject({ code: 'INVALID_PARAMETER', parameter });
    }
    expect((await call(s, 'GET', `${base}?count=1000`)).status).toBe(200);
    const missing = await call(s, 'POST', base);
    expect(missing.status).toBe(400);
    expect(missing.json.errors[0]).toMatchObject({ code: 'MISSING_PARAMETER', parameter: 'name' });
  });
});

describe('sandbox: custom audience user batches', () => {
  it('adds and removes users, counts distinct users and answers success_count/total_count', async () => {
    const s = await sandbox();
    const a = s.state.createCustomAudience(s.accounts.primary, 'Users');
    const r = await call(s, 'POST', usersPath(s, a.id), batch([update(users(0, 150)), update(users(100, 10))]));
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual({ success_count: 160, total_count: 160 });
    expect(s.state.audienceSize(a.id)).toBe(150);
    // The same users with keys in another order and escaped JSON (general path) are the same users.
    const multi = { phone_number: [digest('p')], email: [digest(2), digest(1)] };
    const same = { email: [digest(1), digest(2)], phone_number: [digest('p')] };
    await call(s, 'POST', usersPath(s, a.id), batch([update([multi, same])]));
    expect(s.state.audienceSize(a.id)).toBe(151);
    const escaped = JSON.stringify([update([{ email: [digest(0)] }])]).replace('"email"', '"\\u0065mail"');
    await call(s, 'POST', usersPath(s, a.id), { body: escaped, contentType: 'application/json' });
    expect(s.state.audienceSize(a.id)).toBe(151);
    const del = await call(
      s,
      'POST',
      usersPath(s, a.id),
      batch([{ operation_type: 'Delete', params: { users: users(0, 20) } }]),
    );
    expect(del.json.data).toEqual({ success_count: 20, total_count: 20 });
    expect(s.state.audienceSize(a.id)).toBe(131);
    const log = s.state.requests.at(-1);
    expect(log).toMatchObject({ method: 'POST', status: 200, operations: 1, users: 20 });
    expect(log?.bytes).toBeGreaterThan(0);
  });

  it('requires application/json and refuses more than 2500 operations or 5,000,000 bytes', async () => {
    const s = await sandbox();
    const a = s.state.createCustomAudience(s.accounts.primary, 'Limits');
    const body = JSON.stringify([update(users(0, 1))]);
    const ct = await call(s, 'POST', usersPath(s, a.id), { body, contentType: 'text/plain' });
    expect(ct.status).toBe(400);
    expect(ct.json.errors[0].code).toBe('INVALID_CONTENT_TYPE');

    const many = Array.from({ length: 2501 }, (_, i) => update(users(i, 1)));
    const tooMany = await call(s, 'POST', usersPath(s, a.id), batch(many));
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.errors[0].code).toBe('TOO_MANY_OPERATIONS');
    expect(tooMany.json.operation_errors).toBeUndefined();
    expect((await call(s, 'POST', usersPath(s, a.id), batch(many.slice(0, 2500)))).status).toBe(200);

    const big = JSON.stringify([update(users(0, 2))]).padEnd(5_000_001, ' ');
    const tooLarge = await call(s, 'POST', usersPath(s, a.id), { body: big, contentType: 'application/json' });
    expect(tooLarge.status).toBe(400);
    expect(tooLarge.json.errors[0].code).toBe('REQUEST_TOO_LARGE');
    // Without Content-Length (chunked), the size is counted while streaming.
    const chunk = new TextEncoder().encode(' '.repeat(1_000_000));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode(JSON.stringify([update(users(0, 2))])));
        if (sent++ < 6) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const url = `${s.url}${usersPath(s, a.id)}`;
    const chunked = await fetch(url, {
      method: 'POST',
      body: stream,
      duplex: 'half',
      headers: {
        'content-type': 'application/json',
        authorization: oauth1Header({
          method: 'POST',
          url,
          consumerKey: s.credentials.consumerKey,
          consumerSecret: s.credentials.consumerSecret,
          token: s.credentials.accessToken,
          tokenSecret: s.credentials.accessTokenSecret,
        }),
      },
    } as RequestInit);
    expect(chunked.status).toBe(400);
    expect(((await chunked.json()) as { errors: Array<{ code: string }> }).errors[0]?.code).toBe('REQUEST_TOO_LARGE');
    expect(s.state.audienceSize(a.id)).toBe(2500);

    const exact = JSON.stringify([update(users(0, 2))]).padEnd(5_000_000, ' ');
    expect((await call(s, 'POST', usersPath(s, a.id), { body: exact, contentType: 'application/json' })).status).toBe(
      200,
    );
  });

  it('reports invalid identifiers as operation_errors with the operation index and user index, storing nothing', async () => {
    const s = await sandbox();
    const a = s.state.createCustomAudience(s.accounts.primary, 'Hex');
    const ops = [
      update(users(0, 3)),
      update([{ email: [digest(9)] }, { email: [digest(10).toUpperCase()] }]),
      update([{ phone_number: ['12345'] }]),
      update([{ partner_user_id: ['crm-42'] }, { nickname: ['x'] }]),
      update([{ email: digest(11) }]),
      { operation_type: 'Upsert', params: { users: users(0, 1) } },
    ];
    const r = await call(s, 'POST', usersPath(s, a.id), batch(ops));
    expect(r.status).toBe(400);
    expect(r.json.operation_errors).toEqual([
      expect.objectContaining({ index: 1, user_index: 1, code: 'INVALID_USER_DATA' }),
      expect.objectContaining({ index: 2, user_index: 0, code: 'INVALID_USER_DATA' }),
      expect.objectContaining({ index: 3, user_index: 1, code: 'INVALID_USER_DATA' }),
      expect.objectContaining({ index: 4, user_index: 0, code: 'INVALID_USER_DATA' }),
      expect.objectContaining({ index: 5, parameter: 'operation_type' }),
    ]);
    // Messages name the rule, never the value.
    expect(r.text).not.toContain(digest(10).toUpperCase());
    expect(s.state.audienceSize(a.id)).toBe(0);
    const partner = await call(s, 'POST', usersPath(s, a.id), batch([update([{ partner_user_id: ['crm-42'] }])]));
    expect(partner.status).toBe(200);
  });
});

describe('sandbox: do-not-reach lists', () => {
  it('creates, lists, uploads with per-operation counts and the request echo, and deletes', async () => {
    const now = Date.UTC(2030, 5, 15);
    const s = await sandbox({ now: () => now });
    const ts = Math.floor(now / 1000);
    const base = `/12/accounts/${s.accounts.primary}/do_not_reach_lists`;
    // Only description is documented on create: name is refused (the platform names every list).
    expect((await call(s, 'POST', `${base}?name=Suppress`, { timestamp: ts })).status).toBe(400);
    const created = await call(s, 'POST', `${base}?description=x`, { timestamp: ts });
    expect(created.status).toBe(201);
    const id: string = created.json.data.id;
    expect(created.json.data).toMatchObject({
      name: 'Do Not Reach List',
      description: 'x',
      list_size: null,
      deleted: false,
    });
    // At most one list per account.
    const second = await call(s, 'POST', `${base}?description=y`, { timestamp: ts });
    expect(second.status).toBe(400);
    expect(second.json.errors[0].message).toContain('at most one do-not-reach list');
    const expires = new Date(Date.UTC(2031, 6, 14)).toISOString();
    const r = await call(s, 'POST', dnrPath(s, id), {
      ...batch([
        update(users(0, 5), { expires_at: expires }),
        { operation_type: 'Delete', params: { users: users(0, 2) } },
      ]),
      timestamp: ts,
    });
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual([
      { success_count: 5, total_count: 5 },
      { success_count: 2, total_count: 2 },
    ]);
    expect(r.json.request).toEqual([
      {
        params: { account_id: s.accounts.primary, do_not_reach_list_id: id, expires_at: expires },
        operation_type: 'Update',
      },
      { params: { account_id: s.accounts.primary, do_not_reach_list_id: id }, operation_type: 'Delete' },
    ]);
    expect(s.state.dnrListSize(id)).toBe(3);
    // No GET of one list (405: the path has only DELETE); the listing takes only with_deleted.
    expect((await call(s, 'GET', `${base}/${id}`, { timestamp: ts })).status).toBe(405);
    expect((await call(s, 'GET', `${base}?count=10`, { timestamp: ts })).status).toBe(400);
    const listed = await call(s, 'GET', base, { timestamp: ts });
    expect(listed.json.data).toEqual([expect.objectContaining({ id, list_size: 3 })]);
    expect(listed.json.next_cursor).toBeNull();
    expect((await call(s, 'DELETE', `${base}/${id}`, { timestamp: ts })).json.data.deleted).toBe(true);
    expect((await call(s, 'GET', base, { timestamp: ts })).json.data).toHaveLength(0);
    expect((await call(s, 'GET', `${base}?with_deleted=true`, { timestamp: ts })).json.data).toHaveLength(1);
  });

  it('refuses effective_at and an expires_at more than 13 months ahead, naming the parameter', async () => {
    const now = Date.UTC(2030, 0, 31);
    const s = await sandbox({ now: () => now });
    const ts = Math.floor(now / 1000);
    const list = s.state.createDoNotReachList(s.accounts.primary, 'DNR');
    const effective = await call(s, 'POST', dnrPath(s, list.id), {
      ...batch([update(users(0, 1), { effective_at: '2030-02-01T00:00:00Z' })]),
      timestamp: ts,
    });
    expect(effective.status).toBe(400);
    expect(effective.json.errors[0].parameter).toBe('effective_at');
    expect(effective.json.operation_errors[0]).toMatchObject({ index: 0, parameter: 'effective_at' });
    const late = await call(s, 'POST', dnrPath(s, list.id), {
      ...batch([update(users(0, 1)), update(users(1, 1), { expires_at: '2031-03-02T00:00:00Z' })]),
      timestamp: ts,
    });
    expect(late.status).toBe(400);
    expect(late.json.operation_errors[0]).toMatchObject({ index: 1, parameter: 'expires_at' });
    const ok = await call(s, 'POST', dnrPath(s, list.id), {
      ...batch([update(users(1, 1), { expires_at: '2031-02-27T00:00:00Z' })]),
      timestamp: ts,
    });
    expect(ok.status).toBe(200);
  });
});

describe('sandbox: identifier types of do-not-reach lists', () => {
  it('accepts only email and phone_number, reporting others at their operation and user index', async () => {
    const s = await sandbox();
    const list = s.state.createDoNotReachList(s.accounts.primary, 'DNR types');
    const ok = await call(
      s,
      'POST',
      dnrPath(s, list.id),
      batch([update([{ email: [digest(1)], phone_number: [digest(2)] }])]),
    );
    expect(ok.status).toBe(200);
    const r = await call(
      s,
      'POST',
      dnrPath(s, list.id),
      batch([
        update(users(0, 2)),
        update([{ email: [digest(3)] }, { device_id: [digest(4)] }]),
        update([{ partner_user_id: ['crm-1'] }]),
        update([{ handle: [digest(5)], email: [digest(6)] }]),
        update([{ phone_number: [digest(7)], service_id: [digest(8)] }]),
      ]),
    );
    expect(r.status).toBe(400);
    const rejected = (type: string, index: number, user: number) =>
      expect.objectContaining({
        index,
        user_index: user,
        code: 'INVALID_USER_DATA',
        message: `identifier type ${type} is not accepted on do-not-reach lists; allowed: email, phone_number`,
      });
    expect(r.json.operation_errors).toEqual([
      rejected('device_id', 1, 1),
      rejected('partner_user_id', 2, 0),
      rejected('handle', 3, 0),
      rejected('service_id', 4, 0),
    ]);
    expect(s.state.dnrListSize(list.id)).toBe(1);
    // Custom audiences take all six types.
    const a = s.state.createCustomAudience(s.accounts.primary, 'All types');
    const all = [{ device_id: [digest(4)], handle: [digest(5)], service_id: [digest(8)], partner_user_id: ['crm-1'] }];
    expect((await call(s, 'POST', usersPath(s, a.id), batch([update(all)]))).status).toBe(200);
  });
});

describe('sandbox: audience size and targetability', () => {
  it('derives audience_size, TOO_SMALL under 100 users and PROCESSING for processingMs after an upload', async () => {
    let now = Date.UTC(2030, 0, 1);
    const s = await sandbox({ now: () => now, processingMs: 60_000 });
    const ts = (): number => Math.floor(now / 1000);
    const a = s.state.createCustomAudience(s.accounts.primary, 'Grow');
    const get = async (): Promise<Record<string, unknown>> =>
      (await call(s, 'GET', `/12/accounts/${s.accounts.primary}/custom_audiences/${a.id}`, { timestamp: ts() })).json
        .data;
    expect(await get()).toMatchObject({
      audience_size: null,
      targetable: false,
      reasons_not_targetable: ['TOO_SMALL'],
    });
    await call(s, 'POST', usersPath(s, a.id), { ...batch([update(users(0, 99))]), timestamp: ts() });
    expect(await get()).toMatchObject({
      audience_size: 99,
      targetable: false,
      reasons_not_targetable: ['PROCESSING', 'TOO_SMALL'],
    });
    await call(s, 'POST', usersPath(s, a.id), { ...batch([update(users(99, 1))]), timestamp: ts() });
    expect(await get()).toMatchObject({
      audience_size: 100,
      targetable: false,
      reasons_not_targetable: ['PROCESSING'],
    });
    now += 60_000;
    expect(await get()).toMatchObject({ audience_size: 100, targetable: true, reasons_not_targetable: [] });
  });
});

describe('sandbox: permissions', () => {
  it('lets only the owner grant and revoke; the grantee sees the shared audience; v5 and v12 share audiences', async () => {
    const s = await sandbox();
    const { primary, secondary, foreign } = s.accounts;
    const a = s.state.createCustomAudience(primary, 'Shared');
    const perms = `/12/accounts/${primary}/custom_audiences/${a.id}/permissions`;
    const grant = await call(s, 'POST', `${perms}?granted_account_id=${secondary}&permission_level=READ_ONLY`);
    expect(grant.status).toBe(201);
    expect(grant.json.data).toMatchObject({
      custom_audience_id: a.id,
      granted_account_id: secondary,
      permission_level: 'READ_ONLY',
      deleted: false,
    });

    // permission_scope defaults to OWNER, as documented: the grantee sees a shared audience only when it asks.
    expect((await call(s, 'GET', `/12/accounts/${secondary}/custom_audiences`)).json.data).toEqual([]);
    const seen = await call(s, 'GET', `/12/accounts/${secondary}/custom_audiences?permission_scope=SHARED`);
    expect(seen.json.data).toEqual([
      expect.objectContaining({ id: a.id, is_owner: false, permission_level: 'READ_ONLY', owner_account_id: primary }),
    ]);
    expect(seen.json.request.params).toMatchObject({ permission_scope: 'SHARED' });
    const owned = await call(s, 'GET', `/12/accounts/${primary}/custom_audiences?permission_scope=SHARED`);
    expect(owned.json.data).toEqual([]);
    expect((await call(s, 'GET', `/12/accounts/${secondary}/custom_audiences?permission_scope=ALL`)).status).toBe(400);
    // The reference spells the default OWNER (not OWNED).
    const mine = await call(s, 'GET', `/12/accounts/${primary}/custom_audiences?permission_scope=OWNER`);
    expect(mine.json.data).toEqual([expect.objectContaining({ id: a.id, is_owner: true })]);
    expect((await call(s, 'GET', `/12/accounts/${primary}/custom_audiences?permission_scope=OWNED`)).status).toBe(400);

    const byGrantee = await call(
      s,
      'POST',
      `/12/accounts/${secondary}/custom_audiences/${a.id}/permissions?granted_account_id=${secondary}&permission_level=READ_WRITE`,
    );
    expect(byGrantee.status).toBe(403);
    expect(byGrantee.json.errors[0]).toMatchObject({
      code: 'ACTION_NOT_ALLOWED',
      message: "Only the audience's owner account can manage its permissions",
    });
    const readOnlyUpload = await call(s, 'POST', usersPath(s, a.id, secondary), batch([update(users(0, 1))]));
    expect(readOnlyUpload.status).toBe(403);
    expect((await call(s, 'DELETE', `/12/accounts/${secondary}/custom_audiences/${a.id}`)).status).toBe(403);

    const outside = await call(s, 'POST', `${perms}?granted_account_id=${foreign}&permission_level=READ_ONLY`);
    expect(outside.status).toBe(400);
    expect(outside.json.errors[0].parameter).toBe('granted_account_id');
    const badLevel = await call(s, 'POST', `${perms}?granted_account_id=${secondary}&permission_level=OWNER`);
    expect(badLevel.json.errors[0].parameter).toBe('permission_level');

    const tailored = `/5/accounts/${primary}/tailored_audiences/${a.id}/permissions`;
    const listed = await call(s, 'GET', `${tailored}?with_total_count=true`);
    expect(listed.json.data).toEqual([expect.objectContaining({ id: grant.json.data.id, tailored_audience_id: a.id })]);
    expect(listed.json.total_count).toBe(1);

    const revokeByGrantee = await call(
      s,
      'DELETE',
      `/5/accounts/${secondary}/tailored_audiences/${a.id}/permissions/${grant.json.data.id}`,
    );
    expect(revokeByGrantee.status).toBe(403);
    const revoked = await call(s, 'DELETE', `${tailored}/${grant.json.data.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.json.data).toMatchObject({ id: grant.json.data.id, tailored_audience_id: a.id, deleted: true });
    expect((await call(s, 'GET', `/12/accounts/${secondary}/custom_audiences`)).json.data).toEqual([]);
    expect((await call(s, 'GET', perms)).json.data).toEqual([]);
    expect((await call(s, 'DELETE', `${perms}/${grant.json.data.id}`)).status).toBe(404);
  });
});

describe('sandbox: targeted campaigns', () => {
  it('lists servable line items by default, all with with_active=false, in pages of pageSize', async () => {
    const s = await sandbox({ pageSize: 2 });
    const { primary } = s.accounts;
    const a = s.state.createCustomAudience(primary, 'Targeted');
    s.state.addCampaign(primary, a.id, {
      name: 'Live',
      lineItems: [
        { name: 'on', servable: true },
        { name: null, servable: false },
      ],
    });
    s.state.addCampaign(primary, a.id, { name: 'Paused', lineItems: [{ name: 'off', servable: false }] });
    s.state.addCampaign(primary, a.id, { name: 'Live 2', lineItems: [{ name: 'on2', servable: true }] });
    const path = `/12/accounts/${primary}/custom_audiences/${a.id}/targeted`;
    const active = await call(s, 'GET', path);
    expect(active.json.data.map((c: { campaign_name: string }) => c.campaign_name)).toEqual(['Live', 'Live 2']);
    expect(active.json.data[0].line_items).toEqual([expect.objectContaining({ name: 'on', servable: true })]);
    expect(active.json.next_cursor).toBeNull();

    const all = await call(s, 'GET', `${path}?with_active=false`);
    expect(all.json.data.map((c: { campaign_name: string }) => c.campaign_name)).toEqual(['Live', 'Paused']);
    expect(all.json.data[0].line_items).toHaveLength(2);
    const rest = await call(s, 'GET', `${path}?with_active=false&cursor=${all.json.next_cursor}`);
    expect(rest.json.data.map((c: { campaign_name: string }) => c.campaign_name)).toEqual(['Live 2']);
    expect(rest.json.next_cursor).toBeNull();
  });
});

describe('sandbox: rate limits', () => {
  it('sends rate-limit headers and answers 429 past the user-batch window, resetting with the clock', async () => {
    let now = Date.UTC(2030, 0, 1, 0, 0, 0, 500);
    const s = await sandbox({ now: () => now, rateLimit: { limit: 3, windowMs: 2_000 } });
    const ts = (): number => Math.floor(now / 1000);
    const a = s.state.createCustomAudience(s.accounts.primary, 'Limited');
    const list = await call(s, 'GET', `/12/accounts/${s.accounts.primary}/custom_audiences`, { timestamp: ts() });
    expect(list.headers.get('x-rate-limit-limit')).toMatch(/^\d+$/);
    expect(list.headers.get('x-account-rate-limit-limit')).toBeNull();

    const send = (): Promise<Reply> =>
      call(s, 'POST', usersPath(s, a.id), { ...batch([update(users(0, 1))]), timestamp: ts() });
    const first = await send();
    expect(first.headers.get('x-account-rate-limit-limit')).toBe('3');
    expect(first.headers.get('x-account-rate-limit-remaining')).toBe('2');
    expect(first.headers.get('x-rate-limit-remaining')).toBe('2');
    expect(first.headers.get('x-account-rate-limit-reset')).toBe(String(Math.ceil((now + 2_000) / 1000)));
    now += 100;
    await send();
    await send();
    const over = await send();
    expect(over.status).toBe(429);
    expect(over.json.errors[0].code).toBe('TOO_MANY_REQUESTS');
    expect(over.headers.get('x-account-rate-limit-remaining')).toBe('0');
    expect(Number(over.headers.get('x-account-rate-limit-reset'))).toBe(Math.ceil((now - 100 + 2_000) / 1000));
    now += 1_950; // the first request left the window
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers.get('x-account-rate-limit-remaining')).toBe('0');
  });
});

describe('sandbox: windows that reject spend nothing', () => {
  it('counts a user batch in the account and the per-credentials windows only when both have room', async () => {
    const s = await sandbox({ rateLimit: { limit: 2, windowMs: 60_000 } });
    const { primary, secondary } = s.accounts;
    const other = await secondAccessToken(s);
    const a = s.state.createCustomAudience(primary, 'Primary');
    const b = s.state.createCustomAudience(secondary, 'Secondary');
    const send = (id: string, account: string, creds: CallOptions = {}): Promise<Reply> =>
      call(s, 'POST', usersPath(s, id, account), { ...batch([update(users(0, 1))]), ...creds });
    const remaining = (r: Reply): [string | null, string | null] => [
      r.headers.get('x-account-rate-limit-remaining'),
      r.headers.get('x-rate-limit-remaining'),
    ];
    // The first token fills its own window and the primary account's.
    expect((await send(a.id, primary)).status).toBe(200);
    expect((await send(a.id, primary)).status).toBe(200);
    // The second token on the full account: refused, and its own window stays untouched.
    const accountFull = await send(a.id, primary, other);
    expect(accountFull.status).toBe(429);
    expect(remaining(accountFull)).toEqual(['0', '2']);
    // The first token on the other account: its own window refuses, that account's stays untouched.
    const tokenFull = await send(b.id, secondary);
    expect(tokenFull.status).toBe(429);
    expect(remaining(tokenFull)).toEqual(['2', '0']);
    // So the second token still has the secondary account's whole quota.
    expect(remaining(await send(b.id, secondary, other))).toEqual(['1', '1']);
    expect(remaining(await send(b.id, secondary, other))).toEqual(['0', '0']);
  });

  it('holds with_total_count requests to their own lower limit across list endpoints, per credentials', async () => {
    expect(DEFAULT_SANDBOX_TOTAL_COUNT_RATE_LIMIT).toEqual({ limit: 200, windowMs: 15 * 60_000 });
    const s = await sandbox({ totalCountRateLimit: { limit: 2, windowMs: 60_000 } });
    const audiences = `/12/accounts/${s.accounts.primary}/custom_audiences`;
    const lists = `/12/accounts/${s.accounts.primary}/do_not_reach_lists`;
    const first = await call(s, 'GET', `${audiences}?with_total_count=true`);
    expect(first.status).toBe(200);
    expect([first.headers.get('x-rate-limit-limit'), first.headers.get('x-rate-limit-remaining')]).toEqual(['2', '1']);
    expect((await call(s, 'GET', `${lists}?with_total_count=true`)).headers.get('x-rate-limit-remaining')).toBe('0');
    const over = await call(s, 'GET', `${lists}?with_total_count=true&count=5`);
    expect(over.status).toBe(429);
    expect(over.json.errors[0]).toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      message: 'Rate limit exceeded: 2 with_total_count requests per 60 s',
    });
    // Without with_total_count, the endpoint's own (much larger) window applies.
    const plain = await call(s, 'GET', audiences);
    expect(plain.status).toBe(200);
    expect(plain.headers.get('x-rate-limit-limit')).toBe('10000');
    // Another token has its own with_total_count window.
    const other = await secondAccessToken(s);
    expect((await call(s, 'GET', `${audiences}?with_total_count=true`, other)).status).toBe(200);
  });
});

describe('sandbox: fault injection', () => {
  it('parses the spec syntax and explains bad items', () => {
    expect(parseFaultSpec('503=1@2,drop@4+6,mismatch%0.01, slow=25@1')).toEqual([
      { kind: '503', arg: 1, on: [2] },
      { kind: 'drop', on: [4, 6] },
      { kind: 'mismatch', rate: 0.01 },
      { kind: 'slow', arg: 25, on: [1] },
    ]);
    expect(parseFaultSpec('')).toEqual([]);
    expect(parseFaultSpec('500@1:all,drop%0.5:users,slow=5@2+3:all')).toEqual([
      { kind: '500', on: [1], route: 'all' },
      { kind: 'drop', rate: 0.5, route: 'users' },
      { kind: 'slow', arg: 5, on: [2, 3], route: 'all' },
    ]);
    const bad: Array<[string, RegExp]> = [
      ['500@1:everything', /item 1 "500@1:everything": unknown route "everything"; allowed: users, all/],
      ['500:all', /item 1 .*needs @N/],
      ['foo@1', /item 1 "foo@1": unknown kind "foo"; allowed: 500, 503, 429, drop, slow, mismatch, html/],
      ['500@1,drop', /item 2 "drop": needs @N/],
      ['500=3@1', /item 1 .*takes no =arg/],
      ['slow=fast@1', /item 1 .*whole number of milliseconds/],
      ['html@0', /item 1 .*request numbers >= 1/],
      ['429%1.5', /item 1 .*probability from 0 to 1/],
    ];
    for (const [spec, message] of bad) {
      const error = (() => {
        try {
          parseFaultSpec(spec);
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).code).toBe('sandbox_fault_spec_invalid');
      expect((error as ConfigError).message).toMatch(message);
      expect((error as ConfigError).fix).toContain('kind[=arg]@N');
    }
  });

  it('injects each kind on schedule; a faulted request changes no state except mismatch', async () => {
    const slept: number[] = [];
    const s = await sandbox({
      faults: '500@1,503=7@2,429@3,drop@4,html@5,mismatch@6,slow=30@7',
      sleep: async (ms) => {
        slept.push(ms);
      },
    });
    const a = s.state.createCustomAudience(s.accounts.primary, 'Faults');
    const send = (from: number): Promise<Reply> =>
      call(s, 'POST', usersPath(s, a.id), batch([update(users(from, 10))]));

    const r500 = await send(0);
    expect(r500.status).toBe(500);
    expect(r500.json.errors[0].code).toBe('INTERNAL_ERROR');
    const r503 = await send(0);
    expect(r503.status).toBe(503);
    expect(r503.headers.get('retry-after')).toBe('7');
    const r429 = await send(0);
    expect(r429.status).toBe(429);
    expect(r429.headers.get('x-account-rate-limit-remaining')).toBe('0');
    await expect(send(0)).rejects.toThrow();
    const html = await send(0);
    expect(html.status).toBe(502);
    expect(html.headers.get('content-type')).toContain('text/html');
    expect(html.text).toBe('<html>Service unavailable</html>');
    expect(s.state.audienceSize(a.id)).toBe(0);

    const mismatch = await send(0);
    expect(mismatch.status).toBe(200);
    expect(mismatch.json.data).toEqual({ success_count: 9, total_count: 10 });
    expect(s.state.audienceSize(a.id)).toBe(9);
    const slow = await send(0);
    expect(slow.json.data).toEqual({ success_count: 10, total_count: 10 });
    expect(s.state.audienceSize(a.id)).toBe(10);
    expect((await send(10)).status).toBe(200);
    expect(slept).toEqual([30]);

    const log = s.state.requests.filter((r) => r.path.endsWith('/users'));
    expect(log.map((r) => [r.status, r.fault])).toEqual([
      [500, '500'],
      [503, '503'],
      [429, '429'],
      [0, 'drop'],
      [502, 'html'],
      [200, 'mismatch'],
      [200, 'slow'],
      [200, undefined],
    ]);
  });

  it('injects faults by rate, identically for the same seed', async () => {
    const pattern = async (seed: number): Promise<number[]> => {
      const s = await sandbox({ seed, faults: '500%0.3,html%0.2' });
      const a = s.state.createCustomAudience(s.accounts.primary, 'Rate');
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++)
        statuses.push((await call(s, 'POST', usersPath(s, a.id), batch([update(users(i, 1))]))).status);
      return statuses;
    };
    const one = await pattern(7);
    expect(await pattern(7)).toEqual(one);
    expect(one).toContain(500);
    expect(one).toContain(502);
    expect(one).toContain(200);
    expect(new Set(one)).toEqual(new Set([200, 500, 502]));
  });

  it('hits every ads request with :all rules, numbering them apart from the user batches', async () => {
    const s = await sandbox({ faults: '500@2:all,503@1,drop@5:all' });
    const a = s.state.createCustomAudience(s.accounts.primary, 'All routes');
    const base = `/12/accounts/${s.accounts.primary}/custom_audiences`;
    expect((await call(s, 'GET', base)).status).toBe(200);
    expect((await call(s, 'GET', `${base}/${a.id}`)).status).toBe(500);
    // The third ads request, but the first user batch: 503@1 is the one that hits it.
    expect((await call(s, 'POST', usersPath(s, a.id), batch([update(users(0, 1))]))).status).toBe(503);
    expect((await call(s, 'GET', `${base}/${a.id}`)).status).toBe(200);
    await expect(call(s, 'DELETE', `${base}/${a.id}`)).rejects.toThrow();
    expect((await call(s, 'GET', base)).json.data).toHaveLength(1);
    // The OAuth endpoints are not ads requests: no rule counts or hits them.
    expect(
      (await call(s, 'POST', '/oauth/request_token', { token: null, oauthParams: { oauth_callback: 'oob' } })).status,
    ).toBe(200);
    expect(
      s.state.requests.filter((r) => !r.path.startsWith('/oauth/')).map((r) => [r.method, r.status, r.fault]),
    ).toEqual([
      ['GET', 200, undefined],
      ['GET', 500, '500'],
      ['POST', 503, '503'],
      ['GET', 200, undefined],
      ['DELETE', 0, 'drop'],
      ['GET', 200, undefined],
    ]);
  });

  it('replaces rules with setFaults and validates rule objects', async () => {
    const s = await sandbox();
    const a = s.state.createCustomAudience(s.accounts.primary, 'Set');
    s.setFaults([{ kind: '503', on: [2] }]);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await call(s, 'POST', usersPath(s, a.id), batch([update(users(i, 1))]))).status);
    expect(statuses).toEqual([200, 503, 200]);
    expect(() => s.setFaults([{ kind: '503', on: [0] }])).toThrow(ConfigError);
    expect(() => s.setFaults([{ kind: '503', on: [1], route: 'oauth' as 'all' }])).toThrow(
      /route must be one of users, all/,
    );
    await expect(startSandbox({ faults: 'nope@1' })).rejects.toThrow(/unknown kind "nope"/);
    await expect(startSandbox({ port: 70000 })).rejects.toThrow(/Sandbox option port is invalid/);
  });
});

describe('sandbox: OAuth PIN flow', () => {
  it('issues a request token, auto-approves with a PIN and exchanges it for working credentials', async () => {
    const s = await sandbox();
    const noCallback = await call(s, 'POST', '/oauth/request_token', { token: null });
    expect(noCallback.status).toBe(400);
    const rt = await call(s, 'POST', '/oauth/request_token', { token: null, oauthParams: { oauth_callback: 'oob' } });
    expect(rt.status).toBe(200);
    const form = new URLSearchParams(rt.text);
    expect(form.get('oauth_callback_confirmed')).toBe('true');
    const requestToken = form.get('oauth_token') ?? '';
    const requestSecret = form.get('oauth_token_secret') ?? '';

    // A request token is not an access token.
    expect(
      (
        await call(s, 'GET', `/12/accounts/${s.accounts.primary}/custom_audiences`, {
          token: requestToken,
          tokenSecret: requestSecret,
        })
      ).status,
    ).toBe(401);

    const page = await fetch(`${s.url}/oauth/authorize?oauth_token=${requestToken}`);
    expect(page.headers.get('content-type')).toContain('text/html');
    const pin = /<code id="oauth_pin">(\d{7})<\/code>/.exec(await page.text())?.[1] ?? '';
    expect(pin).toMatch(/^\d{7}$/);

    const wrong = await call(s, 'POST', '/oauth/access_token', {
      token: requestToken,
      tokenSecret: requestSecret,
      oauthParams: { oauth_verifier: pin === '1234567' ? '7654321' : '1234567' },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.json.errors[0].code).toBe('UNAUTHORIZED_ACCESS');

    const at = await call(s, 'POST', '/oauth/access_token', {
      token: requestToken,
      tokenSecret: requestSecret,
      form: { oauth_verifier: pin },
    });
    expect(at.status).toBe(200);
    const access = new URLSearchParams(at.text);
    expect(access.get('user_id')).toBe(s.user.id);
    expect(access.get('screen_name')).toBe(s.user.screenName);
    const token = access.get('oauth_token') ?? '';
    const tokenSecret = access.get('oauth_token_secret') ?? '';
    expect(token).not.toBe(s.credentials.accessToken);
    const listed = await call(s, 'GET', `/12/accounts/${s.accounts.primary}/custom_audiences`, { token, tokenSecret });
    expect(listed.status).toBe(200);
    // The request token is single-use.
    const reuse = await call(s, 'POST', '/oauth/access_token', {
      token: requestToken,
      tokenSecret: requestSecret,
      form: { oauth_verifier: pin },
    });
    expect(reuse.status).toBe(401);
  });
});

describe('sandbox: listening address', () => {
  it('addresses a wildcard bind through loopback and says it is reachable beyond it', async () => {
    const everywhere = await sandbox({ host: '0.0.0.0' });
    expect(everywhere.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(everywhere.adsBaseUrl).toBe(everywhere.url);
    expect(everywhere.loopbackOnly).toBe(false);
    expect((await call(everywhere, 'GET', `/12/accounts/${everywhere.accounts.primary}/custom_audiences`)).status).toBe(
      200,
    );
    expect((await sandbox()).loopbackOnly).toBe(true);
  });
});

describe('sandbox: lifecycle', () => {
  it('gives each start its own credentials and port unless seeded', async () => {
    const a = await startSandbox();
    const b = await startSandbox();
    open.push(a, b);
    expect(a.credentials.consumerSecret).not.toBe(b.credentials.consumerSecret);
    expect(a.url).not.toBe(b.url);
    const c = await sandbox({ seed: 9 });
    const d = await sandbox({ seed: 9 });
    expect(c.credentials).toEqual(d.credentials);
    expect(c.accounts).toEqual(d.accounts);
    // close() also ends keep-alive connections, so it resolves promptly.
    await call(c, 'GET', `/12/accounts/${c.accounts.primary}/custom_audiences`);
    await c.close();
    await expect(fetch(`${c.url}/12/x`)).rejects.toThrow();
  });
});

describe('UserKeySet (audience membership)', () => {
  it('adds, deletes and re-adds 53-bit keys through growth and tombstones, like a Set', () => {
    const keys = new UserKeySet();
    const reference = new Set<number>();
    const rand = mulberry32(7);
    for (let i = 0; i < 50_000; i++) {
      // Two draws: one 32-bit draw scaled to 53 bits has its low 21 bits zero, which piled every
      // key into one probe run (seconds of CPU); real keys are hashes, random in every bit.
      const key = Math.floor(rand() * 2 ** 21) * 2 ** 32 + Math.floor(rand() * 2 ** 32);
      keys.add(key);
      reference.add(key);
      if (i % 3 === 0) {
        keys.add(key); // a duplicate changes nothing
        keys.delete(key);
        reference.delete(key);
      }
    }
    keys.delete(12345); // absent: no change
    expect(keys.size).toBe(reference.size);
    for (const key of reference) {
      keys.add(key);
      keys.delete(key);
    }
    expect(keys.size).toBe(0);
    keys.add(0);
    expect(keys.size).toBe(1);
  });
});
