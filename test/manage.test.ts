import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../src/api/client.js';
import { postCustomAudienceUsers } from '../src/api/endpoints.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { runCli, type CliResult } from './helpers/cli.js';

// The CLI in-process against a real sandbox.

let sb: Sandbox;
let configDir: string;
let env: NodeJS.ProcessEnv;
const outputs: string[] = [];

beforeAll(async () => {
  // pageSize: targeted campaigns come in pages of 2 (for cursor following).
  sb = await startSandbox({ port: 0, pageSize: 2 });
  configDir = await mkdtemp(join(tmpdir(), 'ak-manage-'));
  env = { ...sandboxEnv(sb), AUDIENCE_KIT_CONFIG_DIR: configDir };
});

afterAll(async () => {
  await sb.close();
  await rm(configDir, { recursive: true, force: true });
});

/** The environment that points the CLI at `sandbox` (the shared one unless a test has its own). */
function sandboxEnv(sandbox: Sandbox): NodeJS.ProcessEnv {
  return {
    AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
    AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
    AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
    AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
    AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
  };
}

/** Uploads `count` matched users straight through the client (starts the PROCESSING period). */
async function uploadUsers(sandbox: Sandbox, accountId: string, audienceId: string, count: number): Promise<void> {
  const client = createClient({ adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials });
  try {
    const users = Array.from({ length: count }, (_, i) => ({
      email: [createHash('sha256').update(`user${i}@example.com`).digest('hex')],
    }));
    await postCustomAudienceUsers(client, {
      accountId,
      customAudienceId: audienceId,
      operations: [{ operation_type: 'Update', params: { users } }],
    });
  } finally {
    await client.close();
  }
}

async function ak(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const r = await runCli(args, { env: { ...env, ...extraEnv } });
  outputs.push(r.stdout, r.stderr);
  return r;
}

async function akJson<T = Record<string, unknown>>(args: string[]): Promise<T> {
  const r = await ak([...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

const primary = (): string => sb.accounts.primary;
const secondary = (): string => sb.accounts.secondary;
const requestCount = (): number => sb.state.requests.length;

interface Listing<T> {
  data: T[];
  next_cursor: string | null;
  total_count?: number;
}
interface AudienceJson {
  id: string;
  name: string;
  targetable: boolean;
  reasons_not_targetable: string[];
  deleted: boolean;
  is_owner: boolean;
  owner_account_id: string;
}

describe('audiences', () => {
  it('creates, gets, updates in both formats', async () => {
    const created = await akJson<AudienceJson>([
      'audiences',
      'create',
      '--account',
      primary(),
      '--name',
      'CRM buyers',
      '--description',
      'Q3',
    ]);
    expect(created).toMatchObject({ name: 'CRM buyers', deleted: false, is_owner: true });

    const table = await ak(['audiences', 'get', '--account', primary(), '--audience', created.id]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^id\s+\S+$/m);
    expect(table.stdout).toMatch(/^targetable\s+false$/m);
    expect(table.stdout).toMatch(/^reasons_not_targetable\s+TOO_SMALL$/m);
    expect(table.stdout).toMatch(new RegExp(`^owner_account_id\\s+${primary()}$`, 'm'));

    const updated = await akJson<AudienceJson>([
      'audiences',
      'update',
      '--account',
      primary(),
      '--audience',
      created.id,
      '--name',
      'CRM buyers 2',
    ]);
    expect(updated.name).toBe('CRM buyers 2');

    const nothing = await ak(['audiences', 'update', '--account', primary(), '--audience', created.id]);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('fix: pass --name and/or --description');
  });

  it('lists one page with a cursor hint, and every page with --all', async () => {
    const names = ['page-a', 'page-b', 'page-c', 'page-d', 'page-e'];
    for (const name of names) sb.state.createCustomAudience(secondary(), name);

    const first = await ak(['audiences', 'list', '--account', secondary(), '--count', '2']);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^ID\s+NAME\s+SIZE\s+TARGETABLE\s+REASONS\s+OWNER\s+UPDATED$/m);
    expect(first.stdout).toMatch(/^more: add --cursor \S+ \(or --all\)$/m);

    const before = requestCount();
    const all = await akJson<Listing<AudienceJson>>([
      'audiences',
      'list',
      '--account',
      secondary(),
      '--count',
      '2',
      '--all',
      '--with-total-count',
    ]);
    expect(all.data.map((a) => a.name)).toEqual(names);
    expect(all.next_cursor).toBeNull();
    expect(all.total_count).toBe(5);
    const pages = sb.state.requests
      .slice(before)
      .filter((r) => r.method === 'GET' && r.path.endsWith('/custom_audiences'));
    expect(pages.length).toBe(3);

    const query = await akJson<Listing<AudienceJson>>([
      'audiences',
      'list',
      '--account',
      secondary(),
      '--query',
      'PAGE-A',
    ]);
    expect(query.data.map((a) => a.name)).toEqual(['page-a']);
  });

  it('--with-deleted lists deleted audiences with a DELETED column', async () => {
    const gone = sb.state.createCustomAudience(primary(), 'wd-gone');
    sb.state.createCustomAudience(primary(), 'wd-kept');
    expect((await ak(['audiences', 'delete', '--account', primary(), '--audience', gone.id, '--yes'])).code).toBe(0);

    const without = await ak(['audiences', 'list', '--account', primary(), '--query', 'wd-']);
    expect(without.stdout).not.toContain('wd-gone');
    expect(without.stdout).not.toMatch(/DELETED/);

    const table = await ak(['audiences', 'list', '--account', primary(), '--query', 'wd-', '--with-deleted']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+.*\s+UPDATED\s+DELETED$/m);
    expect(table.stdout).toMatch(/\swd-gone\s.*\strue$/m);
    expect(table.stdout).toMatch(/\swd-kept\s.*\sfalse$/m);
    const json = await akJson<Listing<AudienceJson>>([
      'audiences',
      'list',
      '--account',
      primary(),
      '--query',
      'wd-',
      '--with-deleted',
    ]);
    expect(json.data.map((a) => [a.name, a.deleted])).toEqual([
      ['wd-gone', true],
      ['wd-kept', false],
    ]);
  });

  it('refuses out-of-bounds options before sending anything', async () => {
    const ids201 = Array.from({ length: 201 }, (_, i) => `id${i}`).join(',');
    const cases: Array<[string[], RegExp]> = [
      [
        ['audiences', 'list', '--account', primary(), '--count', '0'],
        /--count must be a whole number from 1 to 1000, got "0"/,
      ],
      [['audiences', 'list', '--account', primary(), '--count', '1001'], /--count must be .* got "1001"/],
      [
        ['audiences', 'list', '--account', primary(), '--count', 'abc'],
        /--count must be a whole number from 1 to 1000, got "abc"$/m,
      ],
      [['audiences', 'list', '--account', primary(), '--ids', ids201], /--ids takes at most 200 ids, got 201/],
      [
        ['audiences', 'list', '--account', primary(), '--cursor', 'abc', '--with-total-count'],
        /--with-total-count cannot be combined with --cursor/,
      ],
      [
        ['audiences', 'list', '--account', primary(), '--max-attempts', '0'],
        /--max-attempts must be a whole number from 1 to 20, got "0"/,
      ],
      [['audiences', 'list', '--account', primary(), '--max-attempts', '21'], /--max-attempts must be .* got "21"/],
      [['audiences', 'list', '--account', primary(), '--max-attempts', 'many'], /--max-attempts must be .* got "many"/],
      [['audiences', 'create', '--account', primary(), '--name', ''], /--name must not be empty/],
      [['audiences', 'update', '--account', primary(), '--audience', 'x', '--name', ' '], /--name must not be empty/],
      [['do-not-reach', 'create', '--account', primary(), '--name', ''], /--description must not be empty/],
      [
        ['permissions', 'list', '--account', primary(), '--audience', 'x', '--granted-account', ids201],
        /--granted-account takes at most 200/,
      ],
      [
        ['permissions', 'list', '--account', primary(), '--audience', 'x', '--permission-id', ids201],
        /--permission-id takes at most 200/,
      ],
      [['permissions', 'list', '--account', primary(), '--audience', 'x', '--count', '5000'], /--count must be/],
      // The platform's do-not-reach listing takes only with_deleted: there is no paging to ask for.
      [
        ['do-not-reach', 'list', '--account', primary(), '--count', '2'],
        /unknown option --count for do-not-reach list/,
      ],
      [
        ['audiences', 'wait', '--account', primary(), '--audience', 'x', '--timeout', 'soon'],
        /--timeout must be a duration/,
      ],
      // Parser errors: missing or unknown options.
      [['audiences', 'delete', '--account', primary()], /^error: Missing required argument: audience$/m],
      [['permissions', 'grant', '--account', primary(), '--audience', 'x'], /Missing required argument: to/],
      [
        ['do-not-reach', 'delete', '--account', primary(), '--list', 'x', '--forse'],
        /unknown option --forse for do-not-reach delete/,
      ],
      [['auth', 'login', '--access-token', 'x'], /unknown option --access-token for auth login/],
    ];
    const before = requestCount();
    for (const [args, message] of cases) {
      const r = await ak(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(2);
      expect(r.stderr).toMatch(/^ {2}fix: /m);
      expect(r.stdout).toBe('');
    }
    expect(requestCount()).toBe(before);
  });

  it('delete lists every targeting campaign first and refuses while an active line item uses it, unless --force', async () => {
    const audience = sb.state.createCustomAudience(primary(), 'in use');
    sb.state.addCampaign(primary(), audience.id, {
      name: 'Paused spring',
      lineItems: [{ name: 'li paused', servable: false }],
    });
    sb.state.addCampaign(primary(), audience.id, {
      name: 'Summer sale',
      lineItems: [{ name: 'li 1', servable: true }],
    });

    const before = requestCount();
    const refused = await ak(['audiences', 'delete', '--account', primary(), '--audience', audience.id, '--yes']);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/^CAMPAIGN\s+CAMPAIGN NAME\s+LINE ITEM\s+LINE ITEM NAME\s+SERVABLE$/m);
    expect(refused.stderr).toMatch(/Paused spring\s+\S+\s+li paused\s+false/);
    expect(refused.stderr).toMatch(/Summer sale\s+\S+\s+li 1\s+true/);
    expect(refused.stderr).toMatch(
      /^error: audience \S+ is targeted by 1 active line item\(s\) in 1 campaign\(s\) \(listed above\); not deleted$/m,
    );
    expect(refused.stderr).toMatch(/^ {2}fix: .*--force/m);
    const targeted = sb.state.requests.slice(before).filter((r) => r.path.endsWith('/targeted'));
    expect(targeted.length).toBeGreaterThan(0);
    expect(sb.state.requests.slice(before).some((r) => r.method === 'DELETE')).toBe(false);
    expect(
      (await akJson<AudienceJson>(['audiences', 'get', '--account', primary(), '--audience', audience.id])).deleted,
    ).toBe(false);

    // --force still shows what is affected.
    const forced = await ak([
      'audiences',
      'delete',
      '--account',
      primary(),
      '--audience',
      audience.id,
      '--force',
      '--yes',
      '--json',
    ]);
    expect(forced.code).toBe(0);
    expect((JSON.parse(forced.stdout) as AudienceJson).deleted).toBe(true);
    expect(forced.stderr).toMatch(/Summer sale\s+\S+\s+li 1\s+true/);
    expect(forced.stderr).toContain('2 campaign(s), 2 line item(s), 1 servable');

    const again = await ak([
      'audiences',
      'delete',
      '--account',
      primary(),
      '--audience',
      audience.id,
      '--force',
      '--yes',
    ]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/^error: audience \S+ is already deleted$/m);
    expect(again.stderr).toContain('--with-deleted');

    const unused = sb.state.createCustomAudience(primary(), 'paused only');
    sb.state.addCampaign(primary(), unused.id, { name: 'Paused', lineItems: [{ name: null, servable: false }] });
    const ok = await ak(['audiences', 'delete', '--account', primary(), '--audience', unused.id, '--yes']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^deleted\s+true$/m);
    expect(ok.stderr).toContain('1 campaign(s), 1 line item(s), 0 servable');

    const untargeted = sb.state.createCustomAudience(primary(), 'untargeted');
    const quiet = await ak(['audiences', 'delete', '--account', primary(), '--audience', untargeted.id, '--yes']);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe(`no line items target audience ${untargeted.id}\n`);
  });

  it('deleting commands ask on a terminal, take --yes, and refuse to run unasked without a terminal', async () => {
    const audience = sb.state.createCustomAudience(primary(), 'asked');
    const ids = ['audiences', 'delete', '--account', primary(), '--audience', audience.id];
    const deleteSent = (): boolean =>
      sb.state.requests.some((r) => r.method === 'DELETE' && r.path.endsWith(`/custom_audiences/${audience.id}`));
    const unasked = await ak(ids);
    expect(unasked.code).toBe(2);
    expect(unasked.stderr).toContain(
      `error: delete audience ${audience.id} "asked": confirmation needed, and no terminal to ask on`,
    );
    expect(unasked.stderr).toContain('fix: pass --yes to delete without asking');
    for (const answer of ['n\n', '\n', 'maybe\n']) {
      const no = await runCli(ids, { env, tty: true, input: answer });
      expect(no.code).toBe(2);
      expect(no.stderr).toContain(`delete audience ${audience.id} "asked"? [y/N] `);
      expect(no.stderr).toContain(`error: not deleted: audience ${audience.id}`);
    }
    expect(deleteSent()).toBe(false);
    const yes = await runCli(ids, { env, tty: true, input: 'y\n' });
    expect(yes.code, yes.stderr).toBe(0);
    expect(yes.stdout).toMatch(/^deleted\s+true$/m);
    expect(deleteSent()).toBe(true);
    // The other deleting commands: refused unasked, before any request.
    const before = sb.state.requests.length;
    const list = await ak(['do-not-reach', 'delete', '--account', primary(), '--list', 'x1']);
    expect(list.stderr).toContain('error: delete do-not-reach list x1 of account');
    const revoke = await ak([
      'permissions',
      'revoke',
      '--account',
      primary(),
      '--audience',
      'a1',
      '--permission-id',
      'p1',
    ]);
    expect(revoke.stderr).toContain('error: revoke permission p1 of audience a1: confirmation needed');
    expect([list.code, revoke.code]).toEqual([2, 2]);
    expect(sb.state.requests.length).toBe(before);
  });

  it('update and delete by a READ_WRITE grantee: only the owner account may', async () => {
    const audience = sb.state.createCustomAudience(primary(), 'shared rw');
    const grant = await ak([
      'permissions',
      'grant',
      '--account',
      primary(),
      '--audience',
      audience.id,
      '--to',
      secondary(),
      '--level',
      'read-write',
    ]);
    expect(grant.code, grant.stderr).toBe(0);
    const asGrantee = ['--account', secondary(), '--audience', audience.id];
    for (const [args, action] of [
      [['audiences', 'update', ...asGrantee, '--name', 'renamed'], 'update it'],
      [['audiences', 'delete', ...asGrantee, '--yes'], 'delete it'],
    ] as const) {
      const r = await ak([...args]);
      expect(r.code, r.stderr).toBe(4);
      expect(r.stderr).toMatch(
        new RegExp(
          `^error: only the audience's owner account can ${action}, and account ${secondary()} does not own audience ${audience.id}$`,
          'm',
        ),
      );
      expect(r.stderr).toContain(`audience-kit audiences get --account ${secondary()} --audience ${audience.id}`);
      expect(r.stderr).not.toContain('is not yours');
    }
    const still = await akJson<AudienceJson>(['audiences', 'get', '--account', primary(), '--audience', audience.id]);
    expect(still).toMatchObject({ name: 'shared rw', deleted: false });
  });

  it('--scope owned (default) | shared | all sends permission_scope; --sort-by sends sort_by', async () => {
    const a = sb.state.createCustomAudience(primary(), 'sc-b');
    const b = sb.state.createCustomAudience(primary(), 'sc-a');
    sb.state.createCustomAudience(secondary(), 'sc-own');
    const as = ['--account', secondary(), '--query', 'sc-'];
    const grant = ['permissions', 'grant', '--account', primary(), '--to', secondary()];
    for (const id of [a.id, b.id]) expect((await ak([...grant, '--audience', id])).code).toBe(0);
    const names = async (...extra: string[]) => {
      const r = await ak(['audiences', 'list', ...as, '--json', ...extra]);
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as Listing<AudienceJson>).data.map((x) => x.name);
    };
    expect(await names()).toEqual(['sc-own']);
    expect(await names('--scope', 'owned')).toEqual(['sc-own']);
    expect(await names('--scope', 'shared', '--sort-by', 'name-asc')).toEqual(['sc-a', 'sc-b']);
    expect(await names('--scope', 'shared', '--sort-by', 'name-desc')).toEqual(['sc-b', 'sc-a']);
    expect(await names('--scope', 'all', '--count', '1')).toEqual(['sc-own', 'sc-b', 'sc-a']);
    const cursor = await ak(['audiences', 'list', ...as, '--scope', 'all', '--cursor', 'abc']);
    expect(cursor.code).toBe(2);
    expect(cursor.stderr).toContain('--cursor cannot be combined with --scope all');
    const table = await ak(['audiences', 'list', ...as, '--scope', 'shared']);
    expect(table.stdout).toContain(primary());
  });

  it('reads a deleted audience back with with_deleted=true: get --with-deleted, delete says already deleted', async () => {
    const gone = sb.state.createCustomAudience(primary(), 'rd-gone');
    const ids = ['--account', primary(), '--audience', gone.id];
    expect((await ak(['audiences', 'delete', ...ids, '--yes'])).code).toBe(0);
    const plain = await ak(['audiences', 'get', ...ids]);
    expect(plain.code).toBe(6);
    expect(plain.stderr).toContain('HTTP 404');
    expect(plain.stderr).toContain(
      `a deleted audience shows only with \`audience-kit audiences get ${ids.join(' ')} --with-deleted\``,
    );
    expect(await akJson<AudienceJson>(['audiences', 'get', ...ids, '--with-deleted'])).toMatchObject({
      id: gone.id,
      deleted: true,
    });
    const again = await ak(['audiences', 'delete', ...ids, '--yes']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`audience ${gone.id} is already deleted`);
  });
});

describe('audiences wait', () => {
  const PROCESSING_MS = 60_000;
  let wsb: Sandbox;
  // The wait sandbox's clock jumps past the PROCESSING period while `jumped()` holds
  // (within the 300 s OAuth timestamp window), so no test sleeps through it.
  let jumped: () => boolean = () => false;

  beforeAll(async () => {
    wsb = await startSandbox({
      port: 0,
      processingMs: PROCESSING_MS,
      now: () => Date.now() + (jumped() ? PROCESSING_MS + 1000 : 0),
    });
  });
  afterAll(async () => {
    jumped = () => false;
    await wsb.close();
  });

  const account = (): string => wsb.accounts.primary;
  const wait = (audienceId: string, ...extra: string[]): Promise<CliResult> =>
    ak(
      ['audiences', 'wait', '--account', account(), '--audience', audienceId, '--poll-interval', '20ms', ...extra],
      sandboxEnv(wsb),
    );
  interface WaitJson {
    audience: { id: string; audience_size: number | null; reasons_not_targetable: string[] } | null;
    targetable: boolean;
    timed_out: boolean;
    stop_reason: string | null;
    last_error: string | null;
    polls: number;
  }

  it('observes PROCESSING, then exits 0 once targetable', async () => {
    const audience = wsb.state.createCustomAudience(account(), 'processing');
    await uploadUsers(wsb, account(), audience.id, 120);
    const path = `/12/accounts/${account()}/custom_audiences/${audience.id}`;
    jumped = () => wsb.state.requests.filter((r) => r.method === 'GET' && r.path === path).length >= 2;
    const r = await wait(audience.id, '--timeout', '30s', '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      new RegExp(`^waiting: audience ${audience.id} not targetable yet \\(PROCESSING; size 120\\)$`, 'm'),
    );
    const out = JSON.parse(r.stdout) as WaitJson;
    expect(out).toMatchObject({
      targetable: true,
      timed_out: false,
      stop_reason: null,
      audience: { audience_size: 120 },
    });
    expect(out.polls).toBeGreaterThanOrEqual(2);
  });

  it('times out (exit 7) while PROCESSING, in both formats', async () => {
    jumped = () => false;
    const audience = wsb.state.createCustomAudience(account(), 'slow');
    await uploadUsers(wsb, account(), audience.id, 120);
    const table = await wait(audience.id, '--timeout', '200ms');
    expect(table.code).toBe(7);
    expect(table.stderr).toMatch(/^error: audience \S+ is still not targetable after \S+: PROCESSING$/m);
    expect(table.stderr).toMatch(/^ {2}fix: PROCESSING: the platform is still matching; wait longer \(--timeout\)$/m);

    const json = await wait(audience.id, '--timeout', '200ms', '--json');
    expect(json.code).toBe(7);
    const out = JSON.parse(json.stdout) as WaitJson;
    expect(out).toMatchObject({ targetable: false, timed_out: true, stop_reason: null, last_error: null });
    expect(out.audience?.reasons_not_targetable).toEqual(['PROCESSING']);
    expect(out.polls).toBeGreaterThanOrEqual(1);
    expect(json.stderr).toMatch(/^error: audience \S+ is still not targetable/m);
  });

  it('stops at once (exit 2) when waiting cannot help: TOO_SMALL without PROCESSING, or deleted', async () => {
    const small = wsb.state.createCustomAudience(account(), 'too small');
    const r = await wait(small.id, '--timeout', '30s');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^error: audience \S+ is TOO_SMALL and not PROCESSING \(size -\): waiting cannot make it targetable$/m,
    );
    expect(r.stderr).toMatch(/^ {2}fix: TOO_SMALL: upload more matched users/m);
    const json = JSON.parse((await wait(small.id, '--timeout', '30s', '--json')).stdout) as WaitJson;
    expect(json).toMatchObject({ targetable: false, timed_out: false, stop_reason: 'too_small', polls: 1 });

    const gone = wsb.state.createCustomAudience(account(), 'gone');
    expect(
      (await ak(['audiences', 'delete', '--account', account(), '--audience', gone.id, '--yes'], sandboxEnv(wsb))).code,
    ).toBe(0);
    const deleted = await wait(gone.id, '--timeout', '30s');
    expect(deleted.code).toBe(2);
    expect(deleted.stderr).toMatch(/^error: audience \S+ is deleted, so it will never be targetable$/m);
  });

  it('keeps polling through 5xx and dropped connections', async () => {
    const audience = wsb.state.createCustomAudience(account(), 'flaky');
    await uploadUsers(wsb, account(), audience.id, 150);
    jumped = () => true;
    wsb.setFaults('500@1:all,drop@2:all,503=0@3:all');
    try {
      const r = await wait(audience.id, '--timeout', '30s', '--max-attempts', '1');
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/^waiting: poll failed, trying again: .*HTTP 500/m);
      expect(r.stderr).toMatch(/^waiting: poll failed, trying again: .*HTTP 503/m);
      expect(r.stdout).toMatch(/^audience \S+ is targetable \(size 150, waited \S+\)$/m);
    } finally {
      wsb.setFaults('');
      jumped = () => false;
    }
  });

  it('--timeout bounds a wait that only meets failures', async () => {
    const audience = wsb.state.createCustomAudience(account(), 'unreachable');
    wsb.setFaults('500%1:all');
    try {
      const r = await wait(audience.id, '--timeout', '300ms', '--max-attempts', '1', '--json');
      expect(r.code).toBe(7);
      const out = JSON.parse(r.stdout) as WaitJson;
      expect(out).toMatchObject({ audience: null, timed_out: true });
      expect(out.last_error).toMatch(/HTTP 500/);
      expect(r.stderr).toMatch(
        /^error: audience \S+ is still not targetable after \S+: the last poll failed: .*HTTP 500/m,
      );
    } finally {
      wsb.setFaults('');
    }
  });
});

describe('targeted', () => {
  it('follows cursors over several pages; --include-inactive adds non-servable line items', async () => {
    const audience = sb.state.createCustomAudience(primary(), 'targeted');
    for (let i = 1; i <= 3; i += 1) {
      sb.state.addCampaign(primary(), audience.id, {
        name: `Campaign ${i}`,
        lineItems: [{ name: `li ${i}`, servable: true }],
      });
    }
    sb.state.addCampaign(primary(), audience.id, { name: 'Paused', lineItems: [{ name: 'li p', servable: false }] });

    const active = await akJson<{ data: Array<{ campaign_name: string }> }>([
      'targeted',
      '--account',
      primary(),
      '--audience',
      audience.id,
    ]);
    expect(active.data.map((c) => c.campaign_name)).toEqual(['Campaign 1', 'Campaign 2', 'Campaign 3']);

    const all = await ak(['targeted', '--account', primary(), '--audience', audience.id, '--include-inactive']);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^CAMPAIGN\s+CAMPAIGN NAME\s+LINE ITEM\s+LINE ITEM NAME\s+SERVABLE$/m);
    expect(all.stdout).toMatch(/Paused\s+\S+\s+li p\s+false/);
    expect(all.stdout).toContain('4 campaign(s), 4 line item(s), 3 servable');
  });
});

describe('permissions', () => {
  it('grants, lists, revokes (custom and tailored); only the owner may grant or revoke', async () => {
    const audience = sb.state.createCustomAudience(primary(), 'shared');
    const base = ['--account', primary(), '--audience', audience.id];
    const granted = await akJson<{ id: string; granted_account_id: string; permission_level: string }>([
      'permissions',
      'grant',
      ...base,
      '--to',
      secondary(),
      '--level',
      'read-write',
    ]);
    expect(granted).toMatchObject({ granted_account_id: secondary(), permission_level: 'READ_WRITE' });

    const table = await ak(['permissions', 'list', ...base]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^${granted.id}\\s+${secondary()}\\s+READ_WRITE\\s+false`, 'm'));
    const tailored = await akJson<Listing<{ id: string }>>([
      'permissions',
      'list',
      ...base,
      '--tailored',
      '--all',
      '--with-total-count',
    ]);
    expect(tailored.data.map((p) => p.id)).toEqual([granted.id]);
    expect(tailored.total_count).toBe(1);

    const notOwner = ['--account', secondary(), '--audience', audience.id];
    for (const args of [
      ['permissions', 'grant', ...notOwner, '--to', primary()],
      ['permissions', 'revoke', ...notOwner, '--permission-id', granted.id, '--yes'],
    ]) {
      const r = await ak(args);
      expect(r.code).toBe(4);
      expect(r.stderr).toMatch(/^error: only the audience's owner account can (grant|revoke) its permissions/m);
      expect(r.stderr).toContain(`audience-kit audiences get --account ${secondary()} --audience ${audience.id}`);
      expect(r.stderr).toContain('owner_account_id');
    }

    const revoked = await ak(['permissions', 'revoke', ...base, '--permission-id', granted.id, '--yes']);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/^deleted\s+true$/m);
    expect(revoked.stdout).toContain('campaigns already using it keep running');

    expect(revoked.stdout).toMatch(new RegExp(`^custom_audience_id\\s+${audience.id}$`, 'm'));
    expect(revoked.stdout).not.toContain('tailored_audience_id');

    const tailoredGrant = await ak(['permissions', 'grant', ...base, '--to', secondary(), '--tailored']);
    expect(tailoredGrant.stdout).toMatch(new RegExp(`^tailored_audience_id\\s+${audience.id}$`, 'm'));
    expect(tailoredGrant.stdout).not.toContain('custom_audience_id');
    expect(tailoredGrant.stdout).toMatch(/^permission_level\s+READ_ONLY$/m);
    const second = /^id\s+(\S+)$/m.exec(tailoredGrant.stdout)?.[1] ?? '';
    const r = await ak(['permissions', 'revoke', ...base, '--tailored', '--permission-id', second, '--json', '--yes']);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: second, deleted: true });
    expect(r.stderr).toContain('keep running');
  });

  it('lists every page with --all (more grants than --count)', async () => {
    // The sandbox's business starts with two accounts: open more to share with.
    const grantees = [secondary(), sb.state.createAccount(), sb.state.createAccount()];
    const audience = sb.state.createCustomAudience(primary(), 'widely shared');
    const base = ['--account', primary(), '--audience', audience.id];
    for (const to of grantees) expect((await ak(['permissions', 'grant', ...base, '--to', to])).code).toBe(0);

    const first = await ak(['permissions', 'list', ...base, '--count', '2']);
    expect(first.stdout).toContain('permissions: 2');
    expect(first.stdout).toMatch(/^more: add --cursor \S+ \(or --all\)$/m);
    const before = requestCount();
    const all = await akJson<Listing<{ granted_account_id: string }>>([
      'permissions',
      'list',
      ...base,
      '--count',
      '2',
      '--all',
      '--with-total-count',
    ]);
    expect(all.data.map((p) => p.granted_account_id).sort()).toEqual([...grantees].sort());
    expect(all).toMatchObject({ next_cursor: null, total_count: 3 });
    expect(sb.state.requests.slice(before).filter((r) => r.path.endsWith('/permissions')).length).toBe(2);
  });

  it('refuses an account outside the business, saying sharing stays within it', async () => {
    const audience = sb.state.createCustomAudience(primary(), 'not for outsiders');
    const r = await ak([
      'permissions',
      'grant',
      '--account',
      primary(),
      '--audience',
      audience.id,
      '--to',
      sb.accounts.foreign,
    ]);
    expect(r.code).toBe(6);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^error: POST \S+ failed with HTTP 400: INVALID_PARAMETER: .* \(parameter granted_account_id\)$/,
    );
    expect(lines[1]).toMatch(
      /^ {2}fix: check --to \S+: audiences are shared only with ad accounts of the owner's business .*SHARE_AUDIENCE_OUTSIDE_BUSINESS/,
    );
  });
});

describe('do-not-reach', () => {
  it('creates (description only; --name an alias), lists, refuses a second list, deletes', async () => {
    const account = sb.state.createAccount();
    const created = await akJson<{ id: string; name: string; description: string }>([
      'do-not-reach',
      'create',
      '--account',
      account,
      '--name',
      'Opt-outs',
    ]);
    expect(created).toMatchObject({ name: 'Do Not Reach List', description: 'Opt-outs' });
    const table = await ak(['do-not-reach', 'list', '--account', account]);
    expect(table.stdout).toMatch(new RegExp(`^${created.id}\\s+Do Not Reach List\\s+`, 'm'));
    const before = requestCount();
    const second = await ak(['do-not-reach', 'create', '--account', account, '--description', 'again']);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`account ${account} already has do-not-reach list ${created.id}`);
    expect(second.stderr).toContain(`--do-not-reach-list ${created.id}`);
    // The check is the listing: no POST was sent.
    expect(sb.state.requests.slice(before).map((r) => r.method)).toEqual(['GET']);
    const deleted = await ak(['do-not-reach', 'delete', '--account', account, '--list', created.id, '--yes']);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toMatch(/^deleted\s+true$/m);
    expect((await akJson<Listing<unknown>>(['do-not-reach', 'list', '--account', account])).data).toEqual([]);
    const withDeleted = await akJson<Listing<{ id: string; deleted: boolean }>>([
      'do-not-reach',
      'list',
      '--account',
      account,
      '--with-deleted',
    ]);
    expect(withDeleted.data).toEqual([expect.objectContaining({ id: created.id, deleted: true })]);
  });
});

describe('configuration errors and diagnostics', () => {
  it('names the missing variable, flag and auth login; exit 2', async () => {
    const r = await ak(['audiences', 'list', '--account', primary()], { AUDIENCE_KIT_ACCESS_TOKEN_SECRET: '' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('AUDIENCE_KIT_ACCESS_TOKEN_SECRET (--access-token-secret)');
    expect(r.stderr).toContain('audience-kit auth login');
    const noUrl = await ak(['audiences', 'list', '--account', primary()], { AUDIENCE_KIT_ADS_BASE_URL: '' });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('AUDIENCE_KIT_ADS_BASE_URL');
    expect(noUrl.stderr).toContain('--base-url');
  });

  it('flags beat the environment: a wrong secret given as a flag is used and refused (exit 4), in two lines', async () => {
    const r = await ak([
      'audiences',
      'list',
      '--account',
      primary(),
      '--access-token-secret',
      'wrong-flag-secret-value',
    ]);
    expect(r.code).toBe(4);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^error: GET \S+ failed with HTTP 401: UNAUTHORIZED_ACCESS: /);
    expect(lines[1]).toMatch(/^ {2}fix: /);
    expect(r.stderr).not.toContain('wrong-flag-secret-value');
  });

  it('--debug error output (stack traces included) carries no secret', async () => {
    const flagSecret = 'debug-flag-secret-value-9876';
    const refused = await ak([
      'audiences',
      'get',
      '--account',
      primary(),
      '--audience',
      'nope',
      '--access-token-secret',
      flagSecret,
      '--debug',
    ]);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/^\s+at /m);
    expect(refused.stderr).not.toContain(flagSecret);

    const audience = sb.state.createCustomAudience(primary(), 'debug owner');
    expect(
      (await ak(['permissions', 'grant', '--account', primary(), '--audience', audience.id, '--to', secondary()])).code,
    ).toBe(0);
    const notOwner = await ak([
      'permissions',
      'grant',
      '--account',
      secondary(),
      '--audience',
      audience.id,
      '--to',
      primary(),
      '--debug',
    ]);
    expect(notOwner.code).toBe(4);
    expect(notOwner.stderr).toMatch(/^debug: /m);
    expect(notOwner.stderr).toMatch(/^\s+at /m);
    for (const secret of [
      flagSecret,
      sb.credentials.consumerSecret,
      sb.credentials.accessTokenSecret,
      sb.credentials.accessToken,
    ]) {
      expect(refused.stderr + notOwner.stderr).not.toContain(secret);
    }
  });

  it('--debug logs method, path, status and time per request, nothing else', async () => {
    const r = await ak(['audiences', 'list', '--account', primary(), '--debug']);
    expect(r.code).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines)
      expect(line).toMatch(/^debug: GET \/12\/accounts\/\S+\/custom_audiences 200 \d+ms \(attempt 1\)$/);
  });

  it('prints help with examples and exit codes for each command', async () => {
    for (const args of [
      ['audiences', 'list'],
      ['audiences', 'delete'],
      ['audiences', 'wait'],
      ['do-not-reach', 'list'],
      ['do-not-reach', 'create'],
      ['do-not-reach', 'delete'],
      ['permissions', 'list'],
      ['permissions', 'grant'],
      ['permissions', 'revoke'],
      ['targeted'],
      ['auth', 'login'],
      ['auth', 'status'],
      ['auth', 'logout'],
      ['audiences'],
      ['do-not-reach'],
      ['permissions'],
      ['auth'],
    ]) {
      const r = await ak([...args, '--help']);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout, args.join(' ')).toContain('Examples:');
      expect(r.stdout, args.join(' ')).toMatch(/^Exit codes: 0 ok; 2\s[^]*; 4\s[^]*; 6\s/m);
    }
    const login = await ak(['auth', 'login', '--help']);
    expect(login.stdout).not.toContain('--access-token');
    expect(login.stdout).toContain('--consumer-key');
    expect((await ak(['auth', 'status', '--help'])).stdout).toContain('--access-token-secret');
  });
});

describe('secrets', () => {
  it('never appear in any output of this file', () => {
    const secrets = [sb.credentials.consumerSecret, sb.credentials.accessTokenSecret, sb.credentials.accessToken];
    expect(outputs.length).toBeGreaterThan(40);
    for (const text of outputs) {
      for (const secret of secrets) expect(text.includes(secret)).toBe(false);
      expect(text).not.toMatch(/oauth_signature|Authorization:/i);
    }
  });
});
