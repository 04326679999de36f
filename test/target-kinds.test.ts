/**
 * Issue #35: a new target kind is a change in src/platform/ alone. A fake third kind, declared
 * in helpers/fake-kind.ts as platform/kinds/*.ts declare theirs, is added to the registry (platform/targets.ts's
 * TARGET_KINDS, replaced for this file by vi.doMock, the modules loaded afresh), and what tells the kinds apart above the
 * platform folder takes it without a change: describeTarget, the upload against a stub client,
 * a new target made like it, the rate limit of user batches, and the CLI's target flags, their help, checks and conflicts.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AdsClient, ApiRequest } from '../src/api/client.js';
import type { UploadArgs } from '../src/cli/send-options.js';
import type { UploadTarget } from '../src/platform/targets.js';
import { FAKE_LIST } from './helpers/fake-kind.js';
import { setMembers } from './helpers/sync.js';

const REGISTRY = '../src/platform/targets.js';

/** The modules under test, loaded afresh over the registry with the fake kind (tests share modules: isolate is off). */
async function withFakeKind() {
  vi.resetModules();
  vi.doMock(REGISTRY, async (importOriginal) => {
    const real = await importOriginal<typeof import('../src/platform/targets.js')>();
    return { ...real, TARGET_KINDS: [...real.TARGET_KINDS, FAKE_LIST] };
  });
  return {
    ...(await import('../src/platform/targets.js')),
    ...(await import('../src/upload/target.js')),
    ...(await import('../src/api/rate-limit.js')),
    ...(await import('../src/upload/upload.js')),
    ...(await import('../src/cli/send-options.js')),
    ...(await import('./helpers/cli.js')),
  };
}

let m: Awaited<ReturnType<typeof withFakeKind>>;
beforeAll(async () => {
  m = await withFakeKind();
});
afterAll(() => {
  vi.doUnmock(REGISTRY);
  vi.resetModules();
});

const fake = { fakeListId: 'f/1' } as unknown as UploadTarget;

/** A client that answers every request with the counts of the users its body holds. */
function stubClient() {
  const sent: string[] = [];
  const request = (req: ApiRequest<unknown>) => {
    const query = new URLSearchParams(req.query as Record<string, string> | undefined).toString();
    sent.push(`${req.method} ${req.path}${query === '' ? '' : `?${query}`}`);
    const ops = req.json === undefined ? [] : (JSON.parse(String(req.json)) as { params: { users: unknown[] } }[]);
    const users = ops.reduce((n, op) => n + op.params.users.length, 0);
    const body = req.schema.parse({ data: { success_count: users, total_count: users } });
    return Promise.resolve({ status: 200, body, apiWarn: undefined });
  };
  const stats = () => ({ requests: sent.length, retries: 0, waitedMs: 0, rateLimitWaits: 0, rateLimited: 0 });
  const client = { request, stats } as unknown as AdsClient;
  return { client, sent };
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('a target kind declared in src/platform alone', () => {
  it('is in the registry the rest of the library reads', () => {
    expect(m.TARGET_KINDS.map((k) => k.kind)).toEqual(['custom_audience', 'do_not_reach_list', 'fake_list']);
  });

  it('is described, read back and made like another from its declaration', async () => {
    const target = m.describeTarget(fake);
    expect(target).toMatchObject({ kind: 'fake_list', id: 'f/1', named: fake, types: ['email'], noun: 'fake' });
    const { client, sent } = stubClient();
    expect(await target.readBack(client, 'acc')).toBe('writable');
    const made = await m.createTargetLike(target, client, 'acc', 'new one');
    expect(made).toMatchObject({ kind: 'fake_list', id: 'new-fake', named: { fakeListId: 'new-fake' } });
    expect(sent).toEqual(['GET /12/accounts/acc/fake_lists/f%2F1', 'POST /12/accounts/acc/fake_lists?name=new+one']);
  });

  it('takes an upload: its batches go to its endpoint and its counts are verified', async () => {
    const { client, sent } = stubClient();
    const users = Array.from({ length: 30 }, (_, i) => ({ email: [sha(`u${i}@example.com`)] }));
    const report = await m.uploadAudience({
      client,
      accountId: 'acc',
      target: fake,
      users,
      limits: { maxUsersPerOperation: 10, maxOperations: 1 },
    });
    expect(report).toMatchObject({ status: 'completed', batches: 3, users_confirmed: 30 });
    expect(sent).toEqual(Array.from({ length: 3 }, () => 'POST /12/accounts/acc/fake_lists/f%2F1/users'));
    // Its user batches count in the window of the audience users endpoints, as every kind's do.
    const rules = m.findRateLimitRules(m.DEFAULT_RATE_LIMIT_POLICY, 'POST', '/12/accounts/acc/fake_lists/f%2F1/users');
    expect(rules.map((r) => r.name)).toEqual(['audience_users']);
  });

  it('is named by its own CLI flag, with its help, in the usage check and the conflicts', async () => {
    expect(m.UPLOAD_OPTIONS['fake-list']).toMatchObject({ type: 'string', describe: 'Fake list id (a test kind)' });
    expect(m.targetOf({ 'fake-list': 'f1' } as unknown as UploadArgs)).toEqual({ fakeListId: 'f1' });
    expect(() => m.checkUsage({ account: 'acc' } as UploadArgs)).toThrow(
      'upload needs --audience or --do-not-reach-list or --fake-list (or --sandbox)',
    );
    const help = await m.runCli(['upload', '--help']);
    expect(help.stdout).toMatch(/--fake-list +Fake list id \(a test kind\)/);
    const both = await m.runCli(['upload', 'x.csv', '--account', 'a', '--audience', 'b', '--fake-list', 'c']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/audience and fake-list are mutually exclusive/);
  });
});

describe("the sandbox, the platform's independent judge, counts a target by the kind's name", () => {
  it('answers for the kinds it holds and refuses one it does not (it learns a new kind on its own)', async () => {
    const { startSandbox } = await import('../src/sandbox/index.js');
    const sandbox = await startSandbox({ seed: 3 });
    try {
      const account = sandbox.accounts.primary;
      const audience = sandbox.state.createCustomAudience(account, 'a').id;
      const list = sandbox.state.createDoNotReachList(account).id;
      // Sizes that differ (3 and 0), so a kind answered with the other kind's count fails.
      setMembers(sandbox, audience, [1, 2, 3]);
      expect(sandbox.state.targetSize('custom_audience', audience)).toBe(3);
      expect(sandbox.state.targetSize('custom_audience', audience)).toBe(sandbox.state.audienceSize(audience));
      expect(sandbox.state.targetSize('do_not_reach_list', list)).toBe(0);
      expect(sandbox.state.targetSize('do_not_reach_list', list)).toBe(sandbox.state.dnrListSize(list));
      expect(() => sandbox.state.targetSize(FAKE_LIST.kind, 'x')).toThrow(/holds no targets of kind fake_list/);
    } finally {
      await sandbox.close();
    }
  });
});
