import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, postCustomAudienceUsers } from '../src/api/index.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { runCli, type CliResult } from './helpers/cli.js';

// Built CLI as a real process against a real sandbox (`npm test` builds dist first).

let sb: Sandbox;
let configDir: string;
let env: NodeJS.ProcessEnv;
const outputs: string[] = [];

beforeAll(async () => {
  // processingMs: an upload leaves the audience PROCESSING briefly (for `audiences wait`);
  // pageSize: targeted campaigns come in pages of 2 (for cursor following).
  sb = await startSandbox({ port: 0, pageSize: 2, processingMs: 300 });
  configDir = await mkdtemp(join(tmpdir(), 'ak-manage-'));
  env = {
    AUDIENCE_KIT_ADS_BASE_URL: sb.adsBaseUrl,
    AUDIENCE_KIT_CONSUMER_KEY: sb.credentials.consumerKey,
    AUDIENCE_KIT_CONSUMER_SECRET: sb.credentials.consumerSecret,
    AUDIENCE_KIT_ACCESS_TOKEN: sb.credentials.accessToken,
    AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sb.credentials.accessTokenSecret,
    AUDIENCE_KIT_CONFIG_DIR: configDir,
  };
});

afterAll(async () => {
  await sb.close();
  await rm(configDir, { recursive: true, force: true });
});

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
    const created = await akJson<AudienceJson>(['audiences', 'create', '--account', primary(), '--name', 'CRM buyers', '--description', 'Q3']);
    expect(created).toMatchObject({ name: 'CRM buyers', deleted: false, is_owner: true });

    const table = await ak(['audiences', 'get', '--account', primary(), '--audience', created.id]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^id\s+\S+$/m);
    expect(table.stdout).toMatch(/^targetable\s+false$/m);
    expect(table.stdout).toMatch(/^reasons_not_targetable\s+TOO_SMALL$/m);
    expect(table.stdout).toMatch(new RegExp(`^owner_account_id\\s+${primary()}$`, 'm'));

    const updated = await akJson<AudienceJson>(['audiences', 'update', '--account', primary(), '--audience', created.id, '--name', 'CRM buyers 2']);
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
    expect(first.stdout).toMatch(/^ID\s+NAME\s+SIZE\s+TARGETABLE/m);
    expect(first.stdout).toMatch(/^more: add --cursor \S+ \(or --all\)$/m);

    const before = requestCount();
    const all = await akJson<Listing<AudienceJson>>(['audiences', 'list', '--account', secondary(), '--count', '2', '--all', '--with-total-count']);
    expect(all.data.map((a) => a.name)).toEqual(names);
    expect(all.next_cursor).toBeNull();
    expect(all.total_count).toBe(5);
    const pages = sb.state.requests.slice(before).filter((r) => r.method === 'GET' && r.path.endsWith('/custom_audiences'));
    expect(pages.length).toBe(3);

    const query = await akJson<Listing<AudienceJson>>(['audiences', 'list', '--account', secondary(), '--query', 'PAGE-A']);
    expect(query.data.map((a) => a.name)).toEqual(['page-a']);
  });

  it('refuses out-of-bounds options before sending anything', async () => {
    const ids201 = Array.from({ length: 201 }, (_, i) => `id${i}`).join(',');
    const cases: Array<[string[], RegExp]> = [
      [['audiences', 'list', '--account', primary(), '--count', '0'], /--count must be a whole number from 1 to 1000, got 0/],
      [['audiences', 'list', '--account', primary(), '--count', '1001'], /--count must be .* got 1001/],
      [['audiences', 'list', '--account', primary(), '--ids', ids201], /--ids takes at most 200 ids, got 201/],
      [['audiences', 'list', '--account', primary(), '--cursor', 'abc', '--with-total-count'], /--with-total-count cannot be combined with --cursor/],
      [['permissions', 'list', '--account', primary(), '--audience', 'x', '--granted-account', ids201], /--granted-account takes at most 200/],
      [['permissions', 'list', '--account', primary(), '--audience', 'x', '--permission-id', ids201], /--permission-id takes at most 200/],
      [['permissions', 'list', '--account', primary(), '--audience', 'x', '--count', '5000'], /--count must be/],
      [['do-not-reach', 'list', '--account', primary(), '--count', '1.5'], /--count must be/],
      [['audiences', 'wait', '--account', primary(), '--audience', 'x', '--timeout', 'soon'], /--timeout must be a duration/],
    ];
    const before = requestCount();
    for (const [args, message] of cases) {
      const r = await ak(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).toMatch(/^ {2}fix: /m);
      expect(r.stdout).toBe('');
    }
    expect(requestCount()).toBe(before);
  });

  it('refuses to delete while an active line item targets the audience, unless --force', async () => {
    const audience = sb.state.createCustomAudience(primary(), 'in use');
    sb.state.addCampaign(primary(), audience.id, { name: 'Paused spring', lineItems: [{ name: 'li paused', servable: false }] });
    sb.state.addCampaign(primary(), audience.id, { name: 'Summer sale', lineItems: [{ name: 'li 1', servable: true }] });

    const refused = await ak(['audiences', 'delete', '--account', primary(), '--audience', audience.id]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error: audience \S+ is targeted by 1 active line item\(s\) in 1 campaign\(s\): \S+ "Summer sale"; not deleted$/m);
    expect(refused.stderr).toContain('--force');
    expect((await akJson<AudienceJson>(['audiences', 'get', '--account', primary(), '--audience', audience.id])).deleted).toBe(false);

    const forced = await akJson<AudienceJson>(['audiences', 'delete', '--account', primary(), '--audience', audience.id, '--force']);
    expect(forced.deleted).toBe(true);

    const unused = sb.state.createCustomAudience(primary(), 'paused only');
    sb.state.addCampaign(primary(), unused.id, { name: 'Paused', lineItems: [{ name: null, servable: false }] });
    const ok = await ak(['audiences', 'delete', '--account', primary(), '--audience', unused.id]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^deleted\s+true$/m);
  });

  it('wait: exits 7 with the last reasons on timeout, 0 once targetable', async () => {
    const small = sb.state.createCustomAudience(primary(), 'too small');
    const timedOut = await ak(['audiences', 'wait', '--account', primary(), '--audience', small.id, '--timeout', '200ms', '--poll-interval', '20ms']);
    expect(timedOut.code).toBe(7);
    expect(timedOut.stderr).toMatch(/^error: audience \S+ is still not targetable after \S+: TOO_SMALL$/m);
    expect(timedOut.stderr).toMatch(/fix: TOO_SMALL: upload more matched users/);

    const audience = sb.state.createCustomAudience(primary(), 'big enough');
    const client = createClient({ adsBaseUrl: sb.adsBaseUrl, credentials: sb.credentials });
    try {
      const users = Array.from({ length: 120 }, (_, i) => ({
        email: [createHash('sha256').update(`user${i}@example.com`).digest('hex')],
      }));
      await postCustomAudienceUsers(client, {
        accountId: primary(),
        customAudienceId: audience.id,
        operations: [{ operation_type: 'Update', params: { users } }],
      });
    } finally {
      await client.close();
    }
    const r = await ak(['audiences', 'wait', '--account', primary(), '--audience', audience.id, '--timeout', '30s', '--poll-interval', '20ms', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { targetable: boolean; timed_out: boolean; audience: { audience_size: number } };
    expect(out).toMatchObject({ targetable: true, timed_out: false, audience: { audience_size: 120 } });
    if (r.stderr !== '') expect(r.stderr).toMatch(/^waiting: audience \S+ not targetable yet \(PROCESSING/);
  });
});

describe('targeted', () => {
  it('follows cursors over several pages; --include-inactive adds non-servable line items', async () => {
    const audience = sb.state.createCustomAudience(primary(), 'targeted');
    for (let i = 1; i <= 3; i += 1) {
      sb.state.addCampaign(primary(), audience.id, { name: `Campaign ${i}`, lineItems: [{ name: `li ${i}`, servable: true }] });
    }
    sb.state.addCampaign(primary(), audience.id, { name: 'Paused', lineItems: [{ name: 'li p', servable: false }] });

    const active = await akJson<{ data: Array<{ campaign_name: string }> }>(['targeted', '--account', primary(), '--audience', audience.id]);
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
      'permissions', 'grant', ...base, '--to', secondary(), '--level', 'read-write',
    ]);
    expect(granted).toMatchObject({ granted_account_id: secondary(), permission_level: 'READ_WRITE' });

    const table = await ak(['permissions', 'list', ...base]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^${granted.id}\\s+${secondary()}\\s+READ_WRITE\\s+false`, 'm'));
    const tailored = await akJson<Listing<{ id: string }>>(['permissions', 'list', ...base, '--tailored', '--all', '--with-total-count']);
    expect(tailored.data.map((p) => p.id)).toEqual([granted.id]);
    expect(tailored.total_count).toBe(1);

    const notOwner = ['--account', secondary(), '--audience', audience.id];
    for (const args of [
      ['permissions', 'grant', ...notOwner, '--to', primary()],
      ['permissions', 'revoke', ...notOwner, '--permission-id', granted.id],
    ]) {
      const r = await ak(args);
      expect(r.code).toBe(4);
      expect(r.stderr).toMatch(/^error: only the audience's owner account can (grant|revoke) its permissions/m);
      expect(r.stderr).toContain(`audience-kit audiences get --account ${secondary()} --audience ${audience.id}`);
      expect(r.stderr).toContain('owner_account_id');
    }

    const revoked = await ak(['permissions', 'revoke', ...base, '--permission-id', granted.id]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/^deleted\s+true$/m);
    expect(revoked.stdout).toContain('campaigns already using it keep running');

    const revokedJson = await ak(['permissions', 'grant', ...base, '--to', secondary(), '--tailored', '--json']);
    const second = JSON.parse(revokedJson.stdout) as { id: string; permission_level: string };
    expect(second.permission_level).toBe('READ_ONLY');
    const r = await ak(['permissions', 'revoke', ...base, '--tailored', '--permission-id', second.id, '--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: second.id, deleted: true });
    expect(r.stderr).toContain('keep running');
  });
});

describe('do-not-reach', () => {
  it('creates, lists and deletes lists', async () => {
    const created = await akJson<{ id: string; name: string }>(['do-not-reach', 'create', '--account', primary(), '--name', 'Opt-outs']);
    expect(created.name).toBe('Opt-outs');
    const table = await ak(['do-not-reach', 'list', '--account', primary(), '--all']);
    expect(table.stdout).toMatch(new RegExp(`^${created.id}\\s+Opt-outs\\s+`, 'm'));
    const deleted = await ak(['do-not-reach', 'delete', '--account', primary(), '--list', created.id]);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toMatch(/^deleted\s+true$/m);
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

  it('flags beat the environment: a wrong secret given as a flag is used and refused (exit 4)', async () => {
    const r = await ak(['audiences', 'list', '--account', primary(), '--access-token-secret', 'wrong-flag-secret-value']);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/401/);
    expect(r.stderr).not.toContain('wrong-flag-secret-value');
  });

  it('--debug logs method, path, status and time per request, nothing else', async () => {
    const r = await ak(['audiences', 'list', '--account', primary(), '--debug']);
    expect(r.code).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line).toMatch(/^debug: GET \/12\/accounts\/\S+\/custom_audiences 200 \d+ms \(attempt 1\)$/);
  });

  it('prints help with examples for each command', async () => {
    for (const args of [
      ['audiences', 'list'], ['audiences', 'delete'], ['audiences', 'wait'], ['do-not-reach', 'create'],
      ['permissions', 'grant'], ['permissions', 'revoke'], ['targeted'], ['auth', 'login'],
    ]) {
      const r = await ak([...args, '--help']);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toContain('Examples:');
    }
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
