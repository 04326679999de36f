import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { runCli, startCli, type CliResult } from './helpers/cli.js';

let sb: Sandbox;
let root: string;
const outputs: string[] = [];
const issuedSecrets: string[] = [];

beforeAll(async () => {
  sb = await startSandbox({ port: 0 });
  root = await mkdtemp(join(tmpdir(), 'ak-auth-'));
});

afterAll(async () => {
  await sb.close();
  await rm(root, { recursive: true, force: true });
});

/** Environment with the app's consumer credentials only: what a user has before logging in. */
function appEnv(configDir: string): NodeJS.ProcessEnv {
  return {
    AUDIENCE_KIT_ADS_BASE_URL: sb.adsBaseUrl,
    AUDIENCE_KIT_CONSUMER_KEY: sb.credentials.consumerKey,
    AUDIENCE_KIT_CONSUMER_SECRET: sb.credentials.consumerSecret,
    AUDIENCE_KIT_CONFIG_DIR: configDir,
  };
}

async function ak(args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<CliResult> {
  const r = await runCli(args, { env, ...(input === undefined ? {} : { input }) });
  outputs.push(r.stdout, r.stderr);
  return r;
}

const AUTHORIZE_URL = /(https?:\/\/\S+\/oauth\/authorize\?oauth_token=\S+)/;

async function pinFrom(url: string): Promise<string> {
  const html = await (await fetch(url)).text();
  const pin = /<code id="oauth_pin">([^<]+)<\/code>/.exec(html)?.[1];
  if (pin === undefined) throw new Error('no PIN in the authorize page');
  return pin;
}

/**
 * `auth login` as a user runs it: wait for the authorize URL on stderr, "approve" it (GET,
 * which the sandbox auto-approves), then type the PIN on stdin.
 */
async function interactiveLogin(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const stdin = new PassThrough();
  const run = await startCli(
    ['auth', 'login', ...args],
    (_stdout, stderr) => AUTHORIZE_URL.test(stderr) && stderr.includes('PIN'),
    { env, stdin },
  );
  stdin.end(`${await pinFrom(AUTHORIZE_URL.exec(run.stderr())?.[1] ?? '')}\n`);
  const r = await run.done;
  outputs.push(r.stdout, r.stderr);
  return r;
}

async function storedProfile(configDir: string, profile: string): Promise<Record<string, string> | undefined> {
  const data = JSON.parse(await readFile(join(configDir, 'config.json'), 'utf8')) as {
    profiles: Record<string, Record<string, string>>;
  };
  return data.profiles[profile];
}

describe('auth login (PIN flow against the sandbox)', () => {
  it('prints the authorize URL, reads the PIN, stores the credentials 0600 and they work', async () => {
    const configDir = join(root, 'interactive');
    const login = await interactiveLogin(['--profile', 'work'], appEnv(configDir));
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toMatch(AUTHORIZE_URL);
    expect(login.stdout).toContain(`logged in as @${sb.user.screenName} (user id ${sb.user.id})`);
    expect(login.stdout).toContain('credentials stored for profile "work"');

    const file = join(configDir, 'config.json');
    if (process.platform !== 'win32') {
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect((await stat(configDir)).mode & 0o777).toBe(0o700);
    }
    const stored = await storedProfile(configDir, 'work');
    expect(stored).toMatchObject({
      adsBaseUrl: sb.adsBaseUrl,
      consumerKey: sb.credentials.consumerKey,
      consumerSecret: sb.credentials.consumerSecret,
    });
    expect(stored?.accessToken).toMatch(/\S/);
    expect(stored?.pendingRequestToken).toBeUndefined();
    issuedSecrets.push(stored?.accessTokenSecret ?? '', stored?.accessToken ?? '');

    // Only the config dir in the environment: everything comes from the stored profile.
    const onlyFile = { AUDIENCE_KIT_CONFIG_DIR: configDir, AUDIENCE_KIT_PROFILE: 'work' };
    const list = await ak(['audiences', 'list', '--account', sb.accounts.primary], onlyFile);
    expect(list.code, list.stderr).toBe(0);

    const status = await ak(['auth', 'status', '--json'], onlyFile);
    expect(status.code).toBe(0);
    const report = JSON.parse(status.stdout) as {
      profile: string;
      complete: boolean;
      config_file_mode: string;
      fields: Record<string, { source: string; value: string | null }>;
    };
    expect(report).toMatchObject({ profile: 'work', complete: true });
    if (process.platform !== 'win32') expect(report.config_file_mode).toBe('0600');
    expect(Object.values(report.fields).map((f) => f.source)).toEqual([
      'file',
      'default',
      'file',
      'file',
      'file',
      'file',
    ]);
    expect(report.fields.consumer_secret?.value).toBe('set (hidden)');
    expect(report.fields.access_token_secret?.value).toBe('set (hidden)');

    const logout = await ak(['auth', 'logout', '--profile', 'work'], { AUDIENCE_KIT_CONFIG_DIR: configDir });
    expect(logout.code).toBe(0);
    expect(logout.stdout).toContain('removed the stored credentials of profile "work"');
    expect(await storedProfile(configDir, 'work')).toEqual({ adsBaseUrl: sb.adsBaseUrl });
    const again = await ak(['auth', 'logout', '--profile', 'work', '--json'], { AUDIENCE_KIT_CONFIG_DIR: configDir });
    expect(JSON.parse(again.stdout)).toMatchObject({ profile: 'work', removed: false });

    const after = await ak(['auth', 'status'], onlyFile);
    expect(after.stdout).toMatch(/^consumerSecret\s+missing\s+set AUDIENCE_KIT_CONSUMER_SECRET or --consumer-secret/m);
    expect(after.stdout).toContain('incomplete: run `audience-kit auth login --profile work`');
    const refused = await ak(['audiences', 'list', '--account', sb.accounts.primary], onlyFile);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('audience-kit auth login --profile work');
  });

  it('without a PIN on stdin keeps the login pending; --pin finishes it', async () => {
    const configDir = join(root, 'two-step');
    const first = await ak(['auth', 'login'], appEnv(configDir), '');
    expect(first.code).toBe(2);
    expect(first.stderr).toContain('no PIN was entered; the login stays pending for profile "default"');
    expect(first.stderr).toContain('audience-kit auth login --pin PIN');
    const url = AUTHORIZE_URL.exec(first.stderr)?.[1];
    expect(url).toBeDefined();

    const status = await ak(['auth', 'status'], appEnv(configDir));
    expect(status.stdout).toContain('a login is pending');

    const pin = await pinFrom(url ?? '');
    const second = await ak(['auth', 'login', '--pin', pin, '--json'], appEnv(configDir));
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({
      user_id: sb.user.id,
      screen_name: sb.user.screenName,
      profile: 'default',
    });
    const stored = await storedProfile(configDir, 'default');
    expect(stored?.pendingRequestToken).toBeUndefined();
    issuedSecrets.push(stored?.accessTokenSecret ?? '', stored?.accessToken ?? '');

    const stray = await ak(['auth', 'login', '--pin', '123'], appEnv(join(root, 'empty')));
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('no login is pending for profile "default"');
  });

  it('a wrong PIN is refused (exit 4) with how to retry; the login stays pending for --pin', async () => {
    const configDir = join(root, 'wrong-pin');
    const wrong = await ak(['auth', 'login'], appEnv(configDir), '0000000\n');
    expect(wrong.code).toBe(4);
    expect(wrong.stderr).toMatch(/^error: the platform refused the PIN: it was wrong, or the login request expired$/m);
    expect(wrong.stderr).toMatch(
      /^ {2}fix: run `audience-kit auth login --pin PIN` with the PIN exactly as shown, or `audience-kit auth login` for a new one$/m,
    );
    expect(wrong.stderr).not.toContain('Check the four credentials');
    expect((await storedProfile(configDir, 'default'))?.pendingRequestToken).toMatch(/\S/);

    const url = AUTHORIZE_URL.exec(wrong.stderr)?.[1] ?? '';
    const pin = await pinFrom(url);
    const again = await ak(['auth', 'login', '--pin', `${pin}9`], appEnv(configDir));
    expect(again.code).toBe(4);
    expect(again.stderr).toContain('the platform refused the PIN');

    const right = await ak(['auth', 'login', '--pin', pin], appEnv(configDir));
    expect(right.code, right.stderr).toBe(0);
    expect(right.stderr).toBe('');
    const stored = await storedProfile(configDir, 'default');
    expect(stored?.pendingRequestToken).toBeUndefined();
    issuedSecrets.push(stored?.accessTokenSecret ?? '', stored?.accessToken ?? '');
  });

  it('warns when access tokens in the environment will win over the stored ones', async () => {
    const configDir = join(root, 'env-wins');
    const env = {
      ...appEnv(configDir),
      AUDIENCE_KIT_ACCESS_TOKEN: sb.credentials.accessToken,
      AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sb.credentials.accessTokenSecret,
    };
    const login = await interactiveLogin(['--json'], env);
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toMatch(
      /^warning: AUDIENCE_KIT_ACCESS_TOKEN, AUDIENCE_KIT_ACCESS_TOKEN_SECRET are set in the environment and will be used instead of the stored credentials; unset them to use this login$/m,
    );
    expect(JSON.parse(login.stdout)).toMatchObject({
      overridden_by_environment: ['AUDIENCE_KIT_ACCESS_TOKEN', 'AUDIENCE_KIT_ACCESS_TOKEN_SECRET'],
    });
    const stored = await storedProfile(configDir, 'default');
    issuedSecrets.push(stored?.accessTokenSecret ?? '', stored?.accessToken ?? '');

    const status = await ak(['auth', 'status', '--json'], env);
    const report = JSON.parse(status.stdout) as { fields: Record<string, { source: string }> };
    expect(report.fields.access_token?.source).toBe('env');

    const quiet = await interactiveLogin([], appEnv(configDir));
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).not.toContain('warning:');
    issuedSecrets.push((await storedProfile(configDir, 'default'))?.accessTokenSecret ?? '');
  });

  it('refuses to log in without the consumer credentials, naming them', async () => {
    const r = await ak(['auth', 'login'], {
      AUDIENCE_KIT_ADS_BASE_URL: sb.adsBaseUrl,
      AUDIENCE_KIT_CONFIG_DIR: join(root, 'none'),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'AUDIENCE_KIT_CONSUMER_KEY (--consumer-key), AUDIENCE_KIT_CONSUMER_SECRET (--consumer-secret)',
    );
  });
});

describe('auth status', () => {
  it('reports flag > env > file per field without printing secrets', async () => {
    const configDir = join(root, 'status');
    // A profile in the file: login writes it.
    const login = await interactiveLogin([], appEnv(configDir));
    expect(login.code, login.stderr).toBe(0);
    issuedSecrets.push(((await storedProfile(configDir, 'default')) ?? {}).accessTokenSecret ?? '');

    const r = await ak(['auth', 'status', '--access-token', 'flag-token-value-1234'], {
      AUDIENCE_KIT_CONFIG_DIR: configDir,
      AUDIENCE_KIT_CONSUMER_KEY: 'env-consumer-key-5678',
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^adsBaseUrl\s+file\s+profile "default"\s+http:\/\/127\.0\.0\.1:\d+$/m);
    expect(r.stdout).toMatch(/^consumerKey\s+env\s+AUDIENCE_KIT_CONSUMER_KEY\s+env-…\(21 chars\)$/m);
    expect(r.stdout).toMatch(/^consumerSecret\s+file\s+profile "default"\s+set \(hidden\)$/m);
    expect(r.stdout).toMatch(/^accessToken\s+flag\s+--access-token\s+flag…\(21 chars\)$/m);
    expect(r.stdout).toMatch(/^accessTokenSecret\s+file\s+profile "default"\s+set \(hidden\)$/m);
    expect(r.stdout).toContain('complete: ready to call the API');
    expect(r.stdout).not.toContain('flag-token-value-1234');

    // A base URL's password and query (a gateway's key) are not shown either.
    const url = await ak(['auth', 'status', '--json'], {
      AUDIENCE_KIT_CONFIG_DIR: configDir,
      AUDIENCE_KIT_ADS_BASE_URL: 'https://gw:Pw-91ac@127.0.0.1:5998/ads?key=Key-44d1',
    });
    expect(url.stdout).toContain('https://gw:hidden@127.0.0.1:5998/ads?hidden');
    expect(url.stdout).not.toMatch(/Pw-91ac|Key-44d1/);
  });
});

describe('secrets', () => {
  it('never appear in any output of this file', () => {
    const secrets = [sb.credentials.consumerSecret, sb.credentials.accessTokenSecret, ...issuedSecrets].filter(
      (s) => s !== '',
    );
    expect(secrets.length).toBeGreaterThanOrEqual(5);
    expect(outputs.length).toBeGreaterThan(10);
    for (const text of outputs) {
      for (const secret of secrets) expect(text.includes(secret)).toBe(false);
    }
  });
});
