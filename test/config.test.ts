import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../src/errors.js';
import {
  configDirPath,
  configFilePath,
  inspectConnectionConfig,
  loadConfigFile,
  removeProfileCredentials,
  resolveConnectionConfig,
  resolveProfileName,
  saveProfileCredentials,
} from '../src/api/config.js';

const FILE_VALUES = {
  adsBaseUrl: 'http://127.0.0.1:1/file',
  consumerKey: 'file-ck',
  consumerSecret: 'file-cs-SECRET',
  accessToken: 'file-at',
  accessTokenSecret: 'file-ats-SECRET',
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ak-config-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function errorOf(p: Promise<unknown>): Promise<ConfigError> {
  try {
    await p;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('config location', () => {
  it('uses AUDIENCE_KIT_CONFIG_DIR, then XDG_CONFIG_HOME, then APPDATA on Windows', () => {
    expect(configDirPath({ env: { AUDIENCE_KIT_CONFIG_DIR: '/x/ak' } })).toBe('/x/ak');
    expect(configDirPath({ env: { XDG_CONFIG_HOME: '/xdg' }, platform: 'linux' })).toBe(join('/xdg', 'audience-kit'));
    expect(configDirPath({ env: { APPDATA: '/appdata', XDG_CONFIG_HOME: '/xdg' }, platform: 'win32' })).toBe(
      join('/appdata', 'audience-kit'),
    );
    expect(configDirPath({ env: {}, platform: 'linux' })).toMatch(/\.config[\\/]audience-kit$/);
    expect(configFilePath({ configDir: '/c' })).toBe(join('/c', 'config.json'));
  });

  it('selects the profile: explicit, then AUDIENCE_KIT_PROFILE, then default; refuses odd names', () => {
    expect(resolveProfileName(undefined, {})).toBe('default');
    expect(resolveProfileName(undefined, { AUDIENCE_KIT_PROFILE: 'ci' })).toBe('ci');
    expect(resolveProfileName('prod', { AUDIENCE_KIT_PROFILE: 'ci' })).toBe('prod');
    expect(() => resolveProfileName('../etc', {})).toThrow(ConfigError);
  });
});

describe('precedence flags > env > file', () => {
  it('takes each field from the highest source that has it and reports the source', async () => {
    await saveProfileCredentials({ configDir: dir, env: {}, values: FILE_VALUES });
    const env = { AUDIENCE_KIT_CONSUMER_KEY: 'env-ck', AUDIENCE_KIT_ACCESS_TOKEN: 'env-at' };
    const r = await resolveConnectionConfig({ configDir: dir, env, flags: { accessToken: 'flag-at' } });
    expect(r.options).toEqual({
      adsBaseUrl: 'http://127.0.0.1:1/file',
      apiBaseUrl: 'http://127.0.0.1:1/file',
      credentials: {
        consumerKey: 'env-ck',
        consumerSecret: 'file-cs-SECRET',
        accessToken: 'flag-at',
        accessTokenSecret: 'file-ats-SECRET',
      },
    });
    expect(r.sources).toEqual({
      adsBaseUrl: 'file',
      apiBaseUrl: 'default',
      consumerKey: 'env',
      consumerSecret: 'file',
      accessToken: 'flag',
      accessTokenSecret: 'file',
    });
    expect(r.profile).toBe('default');
  });

  it('treats empty flags and variables as unset', async () => {
    await saveProfileCredentials({ configDir: dir, env: {}, values: FILE_VALUES });
    const r = await resolveConnectionConfig({
      configDir: dir,
      env: { AUDIENCE_KIT_CONSUMER_KEY: '' },
      flags: { consumerKey: ' ' },
    });
    expect(r.sources.consumerKey).toBe('file');
  });

  it('reads the profile named by AUDIENCE_KIT_PROFILE and keeps profiles apart', async () => {
    await saveProfileCredentials({ configDir: dir, env: {}, values: FILE_VALUES });
    await saveProfileCredentials({
      configDir: dir,
      env: {},
      profile: 'other',
      values: { ...FILE_VALUES, consumerKey: 'other-ck' },
    });
    const r = await resolveConnectionConfig({ configDir: dir, env: { AUDIENCE_KIT_PROFILE: 'other' } });
    expect(r.options.credentials.consumerKey).toBe('other-ck');
    expect(r.profile).toBe('other');
  });

  it('needs only the consumer credentials for the login flow', async () => {
    const r = await resolveConnectionConfig({
      configDir: dir,
      env: {},
      flags: { adsBaseUrl: 'http://127.0.0.1:1', consumerKey: 'ck', consumerSecret: 'cs' },
      need: 'app',
    });
    expect(r.options.credentials).toEqual({ consumerKey: 'ck', consumerSecret: 'cs' });
  });
});

describe('missing configuration', () => {
  it('names the base URL variable and flag', async () => {
    const e = await errorOf(resolveConnectionConfig({ configDir: dir, env: {} }));
    expect(e.code).toBe('config_missing_base_url');
    expect(`${e.message} ${e.fix}`).toContain('AUDIENCE_KIT_ADS_BASE_URL');
    expect(e.fix).toContain('--base-url');
  });

  it('names the variable, the flag and auth login for each missing credential, never a value', async () => {
    const e = await errorOf(
      resolveConnectionConfig({
        configDir: dir,
        env: { AUDIENCE_KIT_CONSUMER_SECRET: 'present-SECRET' },
        flags: { adsBaseUrl: 'http://127.0.0.1:1', consumerKey: 'ck' },
        profile: 'ci',
      }),
    );
    expect(e.code).toBe('config_missing_credential');
    expect(e.message).toContain('AUDIENCE_KIT_ACCESS_TOKEN (--access-token)');
    expect(e.message).toContain('AUDIENCE_KIT_ACCESS_TOKEN_SECRET (--access-token-secret)');
    expect(e.message).not.toContain('CONSUMER_SECRET');
    expect(e.fix).toContain('audience-kit auth login --profile ci');
    expect(`${e.message}${e.fix}`).not.toContain('SECRET"');
    expect(`${e.message}${e.fix}`).not.toContain('present-SECRET');
  });
});

describe('config file', () => {
  it('is written 0600 in a 0700 directory, atomically, and merged per profile', async () => {
    const configDir = join(dir, 'nested', 'audience-kit');
    const file = await saveProfileCredentials({ configDir, env: {}, values: FILE_VALUES });
    expect(file).toBe(join(configDir, 'config.json'));
    if (process.platform !== 'win32') {
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect((await stat(configDir)).mode & 0o777).toBe(0o700);
    }
    await saveProfileCredentials({ configDir, env: {}, values: { accessToken: 'new-at', consumerKey: null } });
    const data = await loadConfigFile(file);
    expect(data.profiles.default).toEqual({ ...FILE_VALUES, accessToken: 'new-at', consumerKey: undefined });
    expect(Object.keys(data.profiles.default ?? {})).not.toContain('consumerKey');
    expect(await readdir(configDir)).toEqual(['config.json']);
  });

  it('logout removes the credentials of one profile and keeps its base URL and other profiles', async () => {
    await saveProfileCredentials({ configDir: dir, env: {}, values: FILE_VALUES });
    await saveProfileCredentials({ configDir: dir, env: {}, profile: 'keep', values: FILE_VALUES });
    expect(await removeProfileCredentials({ configDir: dir, env: {} })).toMatchObject({ removed: true });
    expect(await removeProfileCredentials({ configDir: dir, env: {} })).toMatchObject({ removed: false });
    const data = await loadConfigFile(join(dir, 'config.json'));
    expect(data.profiles.default).toEqual({ adsBaseUrl: FILE_VALUES.adsBaseUrl });
    expect(data.profiles.keep).toEqual(FILE_VALUES);
  });

  it('a missing file is an empty configuration', async () => {
    const r = await inspectConnectionConfig({ configDir: join(dir, 'none'), env: {} });
    expect(Object.values(r.sources).every((s) => s === 'missing')).toBe(true);
  });

  it('says which field of which profile is wrong', async () => {
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ profiles: { prod: { adsBaseUrl: 'not a url', consumerKey: 'x' } } }));
    const e = await errorOf(inspectConnectionConfig({ configDir: dir, env: {}, profile: 'prod' }));
    expect(e.code).toBe('config_file_invalid');
    expect(e.message).toContain('field "adsBaseUrl" of profile "prod"');

    await writeFile(file, JSON.stringify({ profiles: { prod: { consumer_secret: 'typo-SECRET' } } }));
    const typo = await errorOf(inspectConnectionConfig({ configDir: dir, env: {} }));
    expect(typo.message).toContain('profile "prod"');
    expect(typo.message).toContain('consumer_secret');
    expect(typo.message).not.toContain('typo-SECRET');
  });

  it('never quotes the file text when the JSON is broken', async () => {
    await writeFile(join(dir, 'config.json'), '{"profiles": {"default": {"consumerSecret": "leak-SECRET" ');
    const e = await errorOf(inspectConnectionConfig({ configDir: dir, env: {} }));
    expect(e.code).toBe('config_file_invalid');
    expect(`${e.message}${e.fix}`).not.toContain('leak-SECRET');
    expect(await readFile(join(dir, 'config.json'), 'utf8')).toContain('leak-SECRET');
  });
});
