/**
 * Every endpoint function against the REAL embedded sandbox on port 0, and each fault kind
 * recovered from. Sleeps go through an injected clock, so retries cost no wall time.
 */
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthError, ConfigError, HttpError } from '../src/errors.js';
import {
  accessToken,
  authorizeUrl,
  createCustomAudience,
  createDoNotReachList,
  deleteCustomAudience,
  deleteDoNotReachList,
  getCustomAudience,
  findDoNotReachList,
  grantAudiencePermission,
  listAudiencePermissions,
  listCustomAudiences,
  listDoNotReachLists,
  listTargetedCampaigns,
  postCustomAudienceUsers,
  postDoNotReachListUsers,
  requestToken,
  revokeAudiencePermission,
  updateCustomAudience,
  type UserOperation,
} from '../src/api/endpoints.js';
import {
  createClient,
  type AdsClient,
  type ClientOptions,
  type RequestEvent as ClientRequestEvent,
  type WaitEvent as ClientWaitEvent,
} from '../src/api/client.js';
import { paginate } from '../src/api/pagination.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';

const sha = (v: string) => createHash('sha256').update(v).digest('hex');
const emails = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ email: [sha(`user${from + i}@example.com`)] }));

function instantClock() {
  let t = Date.now();
  return {
    now: () => Math.max(t, Date.now()),
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      t = Math.max(t, Date.now()) + ms;
      await Promise.resolve();
    },
  };
}

let sandbox: Sandbox;
let client: AdsClient;
const waits: ClientWaitEvent[] = [];
const events: ClientRequestEvent[] = [];
const errors: unknown[] = [];
const clients: AdsClient[] = [];

function makeClient(s: Sandbox, extra: Partial<ClientOptions> = {}): AdsClient {
  const c = createClient({
    adsBaseUrl: s.adsBaseUrl,
    apiBaseUrl: s.apiBaseUrl,
    credentials: s.credentials,
    clock: instantClock(),
    onWait: (e) => waits.push(e),
    onRequest: (e) => events.push(e),
    ...extra,
  });
  clients.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    errors.push(e);
    return e as Error;
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 7 });
  client = makeClient(sandbox);
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await sandbox.close();
});

describe('custom audiences', () => {
  it('create, get, update, list (q, count, total, deleted), paginate, delete', async () => {
    const acc = sandbox.accounts.primary;
    const a = await createCustomAudience(client, { accountId: acc, name: 'Buyers 2024', description: 'crm' });
    expect(a).toMatchObject({ name: 'Buyers 2024', description: 'crm', deleted: false });
    const b = await createCustomAudience(client, { accountId: acc, name: 'buyers lapsed' });
    await createCustomAudience(client, { accountId: acc, name: 'Newsletter' });

    expect((await getCustomAudience(client, { accountId: acc, customAudienceId: a.id })).id).toBe(a.id);
    const u = await updateCustomAudience(client, { accountId: acc, customAudienceId: a.id, name: 'Buyers 2025' });
    expect(u.name).toBe('Buyers 2025');

    const page = await listCustomAudiences(client, { accountId: acc, q: 'BUYERS', withTotalCount: true, count: 1 });
    expect(page.data).toHaveLength(1);
    expect(page.total_count).toBe(2);
    expect(page.next_cursor).not.toBeNull();

    const names: string[] = [];
    for await (const x of paginate((cursor) =>
      listCustomAudiences(client, {
        accountId: acc,
        q: 'buyers',
        count: 1,
        ...(cursor === undefined ? {} : { cursor }),
      }),
    )) {
      names.push(x.name);
    }
    expect(names.sort()).toEqual(['Buyers 2025', 'buyers lapsed']);

    const byId = await listCustomAudiences(client, { accountId: acc, customAudienceIds: [b.id] });
    expect(byId.data.map((x) => x.id)).toEqual([b.id]);

    const d = await deleteCustomAudience(client, { accountId: acc, customAudienceId: b.id });
    expect(d.deleted).toBe(true);
    const without = await listCustomAudiences(client, { accountId: acc, q: 'buyers' });
    expect(without.data.map((x) => x.id)).not.toContain(b.id);
    const withDeleted = await listCustomAudiences(client, { accountId: acc, q: 'buyers', withDeleted: true });
    expect(withDeleted.data.map((x) => x.id)).toContain(b.id);
  });

  it('404 for an unknown id, 403 for a foreign account', async () => {
    const nf = (await failure(
      getCustomAudience(client, { accountId: sandbox.accounts.primary, customAudienceId: 'nope' }),
    )) as HttpError;
    expect(nf.status).toBe(404);
    expect(nf.code).toBe('api_not_found');
    expect(nf.errors[0]?.code).toBe('NOT_FOUND');
    const fb = await failure(listCustomAudiences(client, { accountId: sandbox.accounts.foreign }));
    expect(fb).toBeInstanceOf(AuthError);
    expect((fb as AuthError).status).toBe(403);
  });
});

describe('user batches', () => {
  it('adds and removes users in a custom audience (operations or a pre-serialized body)', async () => {
    const acc = sandbox.accounts.primary;
    const a = await createCustomAudience(client, { accountId: acc, name: 'Upload target' });
    const ops: UserOperation[] = [{ operation_type: 'Update', params: { users: emails(150) } }];
    const r = await postCustomAudienceUsers(client, { accountId: acc, customAudienceId: a.id, operations: ops });
    expect(r).toEqual({ success_count: 150, total_count: 150 });
    expect(sandbox.state.audienceSize(a.id)).toBe(150);

    const body = JSON.stringify([{ operation_type: 'Delete', params: { users: emails(50) } }]);
    const d = await postCustomAudienceUsers(client, { accountId: acc, customAudienceId: a.id, body });
    expect(d.success_count).toBe(50);
    expect(sandbox.state.audienceSize(a.id)).toBe(100);
    const got = await getCustomAudience(client, { accountId: acc, customAudienceId: a.id });
    expect(got.targetable).toBe(true);
  });

  it('reports operation_errors with their index', async () => {
    const acc = sandbox.accounts.primary;
    const a = await createCustomAudience(client, { accountId: acc, name: 'Bad data' });
    const e = (await failure(
      postCustomAudienceUsers(client, {
        accountId: acc,
        customAudienceId: a.id,
        operations: [
          { operation_type: 'Update', params: { users: emails(2) } },
          { operation_type: 'Update', params: { users: [{ email: ['NOT-HEX'] }] } },
        ],
      }),
    )) as HttpError;
    expect(e.status).toBe(400);
    expect(e.operationErrors[0]?.index).toBe(1);
    expect(e.message).toContain('operation 1');
    expect(e.message).not.toContain('NOT-HEX');
  });

  it('do-not-reach lists: create (description only, one per account), find through the list, upload (array result), delete', async () => {
    const acc = sandbox.accounts.primary;
    const l = await createDoNotReachList(client, { accountId: acc, description: 'support' });
    expect(l).toMatchObject({ name: 'Do Not Reach List', description: 'support' });
    const second = (await failure(createDoNotReachList(client, { accountId: acc, description: 'again' }))) as HttpError;
    expect(second.status).toBe(400);
    expect(second.message).toContain('at most one do-not-reach list');
    expect(await findDoNotReachList(client, { accountId: acc, doNotReachListId: l.id })).toMatchObject({
      id: l.id,
      description: 'support',
    });
    expect(await findDoNotReachList(client, { accountId: acc, doNotReachListId: 'nosuch' })).toBeUndefined();
    const page = await listDoNotReachLists(client, { accountId: acc });
    expect(page.data.map((x) => x.id)).toEqual([l.id]);
    const r = await postDoNotReachListUsers(client, {
      accountId: acc,
      doNotReachListId: l.id,
      operations: [
        { operation_type: 'Update', params: { users: emails(3) } },
        { operation_type: 'Update', params: { users: emails(2, 10) } },
      ],
    });
    expect(r).toEqual([
      { success_count: 3, total_count: 3 },
      { success_count: 2, total_count: 2 },
    ]);
    expect(sandbox.state.dnrListSize(l.id)).toBe(5);
    expect((await deleteDoNotReachList(client, { accountId: acc, doNotReachListId: l.id })).deleted).toBe(true);
    expect(await findDoNotReachList(client, { accountId: acc, doNotReachListId: l.id })).toBeUndefined();
    expect(
      await findDoNotReachList(client, { accountId: acc, doNotReachListId: l.id, withDeleted: true }),
    ).toMatchObject({ id: l.id, deleted: true });
    // The one list of the account was deleted: a new one may be created.
    const next = await createDoNotReachList(client, { accountId: acc });
    expect((await deleteDoNotReachList(client, { accountId: acc, doNotReachListId: next.id })).deleted).toBe(true);
  });
});

describe('permissions and targeting', () => {
  it.each(['custom', 'tailored'] as const)('%s audience permissions: grant, list, revoke; owner only', async (kind) => {
    const acc = sandbox.accounts.primary;
    const a = await createCustomAudience(client, { accountId: acc, name: `Shared ${kind}` });
    const p = await grantAudiencePermission(client, {
      kind,
      accountId: acc,
      audienceId: a.id,
      grantedAccountId: sandbox.accounts.secondary,
      permissionLevel: 'READ_ONLY',
    });
    expect(p).toMatchObject({ granted_account_id: sandbox.accounts.secondary, permission_level: 'READ_ONLY' });
    const list = await listAudiencePermissions(client, {
      kind,
      accountId: acc,
      audienceId: a.id,
      withTotalCount: true,
      count: 10,
    });
    expect(list.data.map((x) => x.id)).toEqual([p.id]);
    const filtered = await listAudiencePermissions(client, {
      kind,
      accountId: acc,
      audienceId: a.id,
      permissionIds: [p.id],
      grantedAccountIds: [sandbox.accounts.secondary],
    });
    expect(filtered.data).toHaveLength(1);

    const denied = (await failure(
      grantAudiencePermission(client, {
        kind,
        accountId: sandbox.accounts.secondary,
        audienceId: a.id,
        grantedAccountId: acc,
        permissionLevel: 'READ_WRITE',
      }),
    )) as HttpError;
    expect(denied).toBeInstanceOf(AuthError);
    expect(denied.status).toBe(403);

    const r = await revokeAudiencePermission(client, { kind, accountId: acc, audienceId: a.id, permissionId: p.id });
    expect(r.deleted).toBe(true);
  });

  it('targeted campaigns with with_active and cursor pages', async () => {
    const small = await startSandbox({ port: 0, seed: 8, pageSize: 1 });
    try {
      const c = makeClient(small);
      const acc = small.accounts.primary;
      const a = await createCustomAudience(c, { accountId: acc, name: 'Targeted' });
      small.state.addCampaign(acc, a.id, {
        name: 'Spring',
        lineItems: [
          { name: 'li1', servable: true },
          { name: null, servable: false },
        ],
      });
      small.state.addCampaign(acc, a.id, { name: 'Summer', lineItems: [{ name: 'li2', servable: true }] });
      const all = [];
      for await (const t of paginate((cursor) =>
        listTargetedCampaigns(c, {
          accountId: acc,
          customAudienceId: a.id,
          withActive: false,
          ...(cursor === undefined ? {} : { cursor }),
        }),
      )) {
        all.push(t);
      }
      expect(all.map((t) => t.campaign_name)).toEqual(['Spring', 'Summer']);
      expect(all[0]?.line_items).toHaveLength(2);
      const active = await listTargetedCampaigns(c, { accountId: acc, customAudienceId: a.id });
      expect(active.data[0]?.line_items.every((li) => li.servable)).toBe(true);
    } finally {
      await small.close();
    }
  });
});

describe('OAuth PIN flow', () => {
  it('request_token (consumer key only + oauth_callback), authorize, access_token; the new token works', async () => {
    const bare = makeClient(sandbox, {
      credentials: { consumerKey: sandbox.credentials.consumerKey, consumerSecret: sandbox.credentials.consumerSecret },
    });
    const rt = await requestToken(bare, { callback: 'oob' });
    expect(rt.oauth_callback_confirmed).toBe(true);
    const url = authorizeUrl(sandbox.apiBaseUrl, rt.oauth_token);
    expect(url).toBe(`${sandbox.apiBaseUrl}/oauth/authorize?oauth_token=${encodeURIComponent(rt.oauth_token)}`);
    const html = await (await fetch(url)).text();
    const pin = /<code id="oauth_pin">([^<]+)<\/code>/.exec(html)?.[1];
    expect(pin).toBeDefined();
    const at = await accessToken(bare, {
      oauthToken: rt.oauth_token,
      oauthTokenSecret: rt.oauth_token_secret,
      verifier: pin ?? '',
    });
    expect(at.user_id).toBe(sandbox.user.id);
    expect(at.screen_name).toBe(sandbox.user.screenName);

    const fresh = makeClient(sandbox, {
      credentials: { ...sandbox.credentials, accessToken: at.oauth_token, accessTokenSecret: at.oauth_token_secret },
    });
    const page = await listCustomAudiences(fresh, { accountId: sandbox.accounts.primary });
    expect(Array.isArray(page.data)).toBe(true);

    const wrongPin = await failure(
      accessToken(bare, { oauthToken: rt.oauth_token, oauthTokenSecret: rt.oauth_token_secret, verifier: 'nope' }),
    );
    expect(wrongPin).toBeInstanceOf(HttpError);
  });

  it('a wrong consumer secret is a 401 AuthError with the credentials fix', async () => {
    const bad = makeClient(sandbox, {
      credentials: { ...sandbox.credentials, consumerSecret: 'definitely-wrong-secret' },
    });
    const e = (await failure(listCustomAudiences(bad, { accountId: sandbox.accounts.primary }))) as AuthError;
    expect(e).toBeInstanceOf(AuthError);
    expect(e.status).toBe(401);
    expect(e.errors[0]?.code).toBe('UNAUTHORIZED_ACCESS');
    expect(e.fix).toContain('OAuth PIN flow');
    expect(inspect(e, { depth: Infinity })).not.toContain('definitely-wrong-secret');
  });

  it('bounds are refused before sending', async () => {
    const before = sandbox.state.requests.length;
    const e = await failure(
      listAudiencePermissions(client, { kind: 'custom', accountId: 'a', audienceId: 'b', count: 1001 }),
    );
    expect(e).toBeInstanceOf(ConfigError);
    expect(sandbox.state.requests.length).toBe(before);
  });
});

describe('faults', () => {
  it('recovers from 500, 503 (retry-after), 429, dropped connections, HTML bodies and slow answers', async () => {
    // The slow answer waits on the test, not on a timer: it is released once the client has given up on it.
    const slow: Array<{ ms: number; release: () => void }> = [];
    const s = await startSandbox({
      port: 0,
      seed: 9,
      faults: '500@1,503=2@2,429@3,drop@4,html@5,slow=1500@6',
      sleep: (ms) => new Promise((release) => slow.push({ ms, release })),
    });
    try {
      const before = waits.length;
      const c = makeClient(s, { maxAttempts: 8, headersTimeoutMs: 50 });
      const acc = s.accounts.primary;
      const a = await createCustomAudience(c, { accountId: acc, name: 'Faulty' });
      const r = await postCustomAudienceUsers(c, {
        accountId: acc,
        customAudienceId: a.id,
        operations: [{ operation_type: 'Update', params: { users: emails(120) } }],
      });
      expect(r).toEqual({ success_count: 120, total_count: 120 });
      expect(s.state.audienceSize(a.id)).toBe(120);
      expect(slow.map((x) => x.ms)).toEqual([1500]);
      for (const x of slow) x.release();
      // The slow answer is logged when the sandbox finally answers, after the client moved on.
      const users = () => s.state.requests.filter((l) => l.path.endsWith('/users'));
      for (let i = 0; i < 100 && users().length < 7; i++) await new Promise((r) => setTimeout(r, 5));
      const faults = users().map((l) => l.fault ?? 'none');
      expect(faults.sort()).toEqual(['429', '500', '503', 'drop', 'html', 'none', 'slow']);
      const mine = waits.slice(before);
      expect(mine.some((w) => w.reason === 'retry' && w.ms === 2000)).toBe(true); // 503's retry-after
      expect(mine.some((w) => w.reason === 'server_reset')).toBe(true); // 429's reset
      expect(c.stats().retries).toBe(6);
    } finally {
      await s.close();
    }
  });

  it('retries lists, reads, updates and deletes through faults on every route (:all)', async () => {
    const s = await startSandbox({
      port: 0,
      seed: 12,
      faults: '500@1+5:all,drop@2+8:all,503=1@4:all,429@7:all,html@10:all',
    });
    try {
      const c = makeClient(s, { maxAttempts: 4 });
      const acc = s.accounts.primary;
      const a = s.state.createCustomAudience(acc, 'Flaky reads');
      const l = s.state.createDoNotReachList(acc, 'Flaky list');
      expect((await listCustomAudiences(c, { accountId: acc })).data.map((x) => x.id)).toContain(a.id); // 500, drop, ok
      expect((await getCustomAudience(c, { accountId: acc, customAudienceId: a.id })).name).toBe('Flaky reads'); // 503, 500, ok
      expect((await updateCustomAudience(c, { accountId: acc, customAudienceId: a.id, name: 'Renamed' })).name).toBe(
        'Renamed',
      ); // 429, drop, ok
      expect((await deleteDoNotReachList(c, { accountId: acc, doNotReachListId: l.id })).deleted).toBe(true); // html, ok
      expect(s.state.requests.map((r) => r.fault ?? 'none')).toEqual([
        '500',
        'drop',
        'none',
        '503',
        '500',
        'none',
        '429',
        'drop',
        'none',
        'html',
        'none',
      ]);
      expect(waits.some((w) => w.reason === 'retry' && w.ms === 1000)).toBe(true); // the 503's retry-after
      expect(c.stats().retries).toBe(7);
    } finally {
      await s.close();
    }
  });

  it('a count mismatch is returned, not thrown (verification is the uploader’s job)', async () => {
    const s = await startSandbox({ port: 0, seed: 10, faults: 'mismatch@1' });
    try {
      const c = makeClient(s);
      const acc = s.accounts.primary;
      const a = await createCustomAudience(c, { accountId: acc, name: 'Mismatch' });
      const r = await postCustomAudienceUsers(c, {
        accountId: acc,
        customAudienceId: a.id,
        operations: [{ operation_type: 'Update', params: { users: emails(10) } }],
      });
      expect(r.success_count).toBe(r.total_count - 1);
    } finally {
      await s.close();
    }
  });
});

describe('rate limit against the sandbox', () => {
  it('a scaled-down policy (30 per 400 ms) gets zero 429s from a sandbox enforcing the same cap', async () => {
    const s = await startSandbox({ port: 0, seed: 11, rateLimit: { limit: 30, windowMs: 400 } });
    try {
      const c = createClient({
        adsBaseUrl: s.adsBaseUrl,
        credentials: s.credentials,
        maxAttempts: 1,
        rateLimitPolicy: {
          rules: [
            {
              name: 'audience_users',
              endpoints: [
                { method: 'POST', path: '^/12/accounts/[^/]+/custom_audiences/[^/]+/users$' },
                { method: 'POST', path: '^/12/batch/accounts/[^/]+/do_not_reach_lists/[^/]+/users$' },
              ],
              limit: 30,
              windowMs: 400,
            },
          ],
          safetyMarginMs: 0,
          resetJitterMs: 0,
          maxServerWaitMs: 60_000,
        },
      });
      clients.push(c);
      const acc = s.accounts.primary;
      const a = await createCustomAudience(c, { accountId: acc, name: 'Paced' });
      const l = await createDoNotReachList(c, { accountId: acc, description: 'Paced DNR' });
      await Promise.all(
        Array.from({ length: 80 }, (_, i) =>
          i % 4 === 0
            ? postDoNotReachListUsers(c, {
                accountId: acc,
                doNotReachListId: l.id,
                operations: [{ operation_type: 'Update', params: { users: emails(1, i) } }],
              })
            : postCustomAudienceUsers(c, {
                accountId: acc,
                customAudienceId: a.id,
                operations: [{ operation_type: 'Update', params: { users: emails(1, i) } }],
              }),
        ),
      );
      expect(s.state.requests.filter((r) => r.status === 429)).toHaveLength(0);
      expect(c.stats()).toMatchObject({ rateLimited: 0, retries: 0 });
      expect(c.stats().rateLimitWaits).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });
});

describe('with_total_count against the sandbox', () => {
  it('a client under the same lower limit as the sandbox gets no 429 (shared virtual clock)', async () => {
    // Virtual time for both sides: the windows pass without real waiting, within the OAuth clock tolerance.
    let t = Date.now();
    const clock = {
      now: () => t,
      sleep: async (ms: number) => {
        t += ms;
        await Promise.resolve();
      },
    };
    const s = await startSandbox({
      port: 0,
      seed: 13,
      now: () => t,
      totalCountRateLimit: { limit: 3, windowMs: 60_000 },
    });
    try {
      const c = makeClient(s, {
        clock,
        rateLimitPolicy: {
          rules: [
            {
              name: 'with_total_count',
              endpoints: [{ method: 'GET', path: '^/', query: { with_total_count: 'true' } }],
              limit: 3,
              windowMs: 60_000,
            },
          ],
          safetyMarginMs: 0,
          resetJitterMs: 0,
          maxServerWaitMs: 120_000,
        },
        maxAttempts: 1,
      });
      const acc = s.accounts.primary;
      for (const name of ['prospects', 'Past buyers', 'newsletter']) s.state.createCustomAudience(acc, name);
      // Another account's audience is never counted.
      s.state.createCustomAudience(s.accounts.secondary, 'partners');
      for (let i = 0; i < 7; i++) {
        const page =
          i % 2 === 0
            ? await listCustomAudiences(c, { accountId: acc, withTotalCount: true })
            : await listCustomAudiences(c, { accountId: acc, withTotalCount: true, q: 'p' });
        // q is a case-insensitive name prefix: 'p' matches prospects and Past buyers.
        expect(page.total_count, `request ${i + 1}`).toBe(i % 2 === 0 ? 3 : 2);
        expect(page.data.map((a) => a.name).sort()).toEqual(
          i % 2 === 0 ? ['Past buyers', 'newsletter', 'prospects'] : ['Past buyers', 'prospects'],
        );
      }
      expect(s.state.requests.filter((r) => r.status === 429)).toHaveLength(0);
      expect(c.stats().rateLimited).toBe(0);
      // Windows of 60 s: the 4th and the 7th request wait (plus, at most, the rest of a reset second).
      expect(c.stats().rateLimitWaits).toBeGreaterThanOrEqual(2);
    } finally {
      await s.close();
    }
  });
});

describe('secrets', () => {
  it('appear in no error (message, JSON, stack, inspect) and no request or wait event', () => {
    expect(errors.length).toBeGreaterThan(5);
    const texts = [
      ...errors.flatMap((e) => [
        String((e as Error).message),
        JSON.stringify(e),
        String((e as Error).stack),
        inspect(e, { depth: Infinity, showHidden: true }),
      ]),
      JSON.stringify(events),
      JSON.stringify(waits),
    ];
    for (const t of texts) {
      expect(t).not.toContain(sandbox.credentials.consumerSecret);
      expect(t).not.toContain(sandbox.credentials.accessTokenSecret);
      expect(t).not.toContain('oauth_signature');
    }
  });
});
