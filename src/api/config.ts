/**
 * Client configuration: base URLs and OAuth 1.0a credentials, resolved per profile with the
 * precedence flags > environment > config file. The config file holds user credentials, so it
 * is written 0600 inside a 0700 directory, atomically, and no message built here ever
 * contains a credential value (only field names, variable names and the file path).
 */
import { randomBytes } from 'node:crypto';
import { chmod, open, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { makeDirs } from '../util/make-dirs.js';
import {
  CONNECTION_ENV_VARS,
  CONNECTION_FIELDS,
  CONNECTION_FLAG_NAMES,
  credentialsNeeded,
  type ConnectionField,
} from '../platform/credentials.js';

/** Where a resolved value came from; `default` is apiBaseUrl falling back to adsBaseUrl. */
export type ConnectionSource = 'flag' | 'env' | 'file' | 'default' | 'missing';

export const CONFIG_DIR_ENV = 'AUDIENCE_KIT_CONFIG_DIR';
export const PROFILE_ENV = 'AUDIENCE_KIT_PROFILE';
export const DEFAULT_PROFILE = 'default';
export const CONFIG_FILE_NAME = 'config.json';

export type ConnectionValues = Partial<Record<ConnectionField, string>>;
type EnvLike = Readonly<Record<string, string | undefined>>;

const PROFILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

const nonEmpty = z.string().min(1, 'must not be empty');
const storedProfileSchema = z.strictObject({
  adsBaseUrl: z.url().optional(),
  apiBaseUrl: z.url().optional(),
  consumerKey: nonEmpty.optional(),
  consumerSecret: nonEmpty.optional(),
  accessToken: nonEmpty.optional(),
  accessTokenSecret: nonEmpty.optional(),
  /** A request token waiting for `auth login --pin` (non-interactive two-step login). */
  pendingRequestToken: nonEmpty.optional(),
  pendingRequestTokenSecret: nonEmpty.optional(),
});
// Unknown top-level keys are kept so a newer version's file still loads.
const configFileSchema = z.looseObject({
  profiles: z.record(z.string(), storedProfileSchema).default({}),
});

export type StoredProfile = z.infer<typeof storedProfileSchema>;
export type StoredProfileField = keyof StoredProfile;
export type AudienceKitConfigFile = z.infer<typeof configFileSchema>;

export interface ConfigLocationInput {
  /** Explicit directory (tests, library users); beats AUDIENCE_KIT_CONFIG_DIR. */
  configDir?: string;
  /** Defaults to process.env. */
  env?: EnvLike;
  /** Defaults to process.platform (only `win32` changes the default directory). */
  platform?: NodeJS.Platform;
}

/** `$AUDIENCE_KIT_CONFIG_DIR`, else `%APPDATA%\audience-kit` on Windows, else `$XDG_CONFIG_HOME/audience-kit` or `~/.config/audience-kit`. */
export function configDirPath(input: ConfigLocationInput = {}): string {
  if (input.configDir !== undefined) return input.configDir;
  const env = input.env ?? process.env;
  const explicit = present(env[CONFIG_DIR_ENV]);
  if (explicit !== undefined) return explicit;
  const platform = input.platform ?? process.platform;
  const appData = present(env.APPDATA);
  if (platform === 'win32' && appData !== undefined) return join(appData, 'audience-kit');
  const xdg = present(env.XDG_CONFIG_HOME);
  return join(xdg ?? join(homedir(), '.config'), 'audience-kit');
}

export function configFilePath(input: ConfigLocationInput = {}): string {
  return join(configDirPath(input), CONFIG_FILE_NAME);
}

/** Profile from the explicit value, else AUDIENCE_KIT_PROFILE, else `default`; validated. */
export function resolveProfileName(profile: string | undefined, env: EnvLike = process.env): string {
  const name = present(profile) ?? present(env[PROFILE_ENV]) ?? DEFAULT_PROFILE;
  if (!PROFILE_NAME.test(name)) {
    throw new ConfigError('config_invalid_profile', `invalid profile name "${name}"`, {
      fix: 'use 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit (--profile or AUDIENCE_KIT_PROFILE)',
    });
  }
  return name;
}

/** Read and validate the config file; a missing file is an empty configuration. */
export async function loadConfigFile(file: string): Promise<AudienceKitConfigFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return { profiles: {} };
    throw new ConfigError('config_file_unreadable', `cannot read the config file ${file}`, {
      fix: 'check the file permissions, or point AUDIENCE_KIT_CONFIG_DIR at another directory',
      cause: error,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    // JSON.parse messages quote the surrounding text, which may be a secret: never pass them on.
    throw new ConfigError('config_file_invalid', `the config file ${file} is not valid JSON`, {
      fix: 'fix the JSON by hand, or delete the file and run `audience-kit auth login` again',
    });
  }
  const parsed = configFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined ? '' : describeIssuePath(issue.path);
    throw new ConfigError(
      'config_file_invalid',
      `the config file ${file} is invalid: ${where}${issue?.message ?? 'unexpected shape'}`,
      {
        fix: `fields of a profile: ${[...CONNECTION_FIELDS].join(', ')} (strings; base URLs absolute)`,
      },
    );
  }
  return parsed.data;
}

function describeIssuePath(path: readonly PropertyKey[]): string {
  if (path[0] === 'profiles' && path.length >= 2) {
    const field = path.length >= 3 ? `field "${path.slice(2).map(String).join('.')}" of ` : '';
    return `${field}profile "${String(path[1])}": `;
  }
  return path.length === 0 ? '' : `"${path.map(String).join('.')}": `;
}

export interface ConnectionConfigInput extends ConfigLocationInput {
  /** Values from command-line flags (highest precedence). */
  flags?: ConnectionValues;
  /** Profile name; defaults to AUDIENCE_KIT_PROFILE, then `default`. */
  profile?: string;
}

export interface ConnectionConfigReport {
  profile: string;
  configFile: string;
  values: ConnectionValues;
  sources: Record<ConnectionField, ConnectionSource>;
  /** Stored profile as read (includes a pending login, if any). */
  stored: StoredProfile | undefined;
}

/**
 * Every field with its source, without requiring anything: for `auth status` and as the
 * base of `resolveConnectionConfig`. Throws only for an invalid profile name or config file.
 */
export async function inspectConnectionConfig(input: ConnectionConfigInput = {}): Promise<ConnectionConfigReport> {
  const env = input.env ?? process.env;
  const profile = resolveProfileName(input.profile, env);
  const configFile = configFilePath({ ...input, env });
  const stored = (await loadConfigFile(configFile)).profiles[profile];
  const values: ConnectionValues = {};
  const sources = {} as Record<ConnectionField, ConnectionSource>;
  for (const field of CONNECTION_FIELDS) {
    const candidates: Array<[ConnectionSource, string | undefined]> = [
      ['flag', input.flags?.[field]],
      ['env', env[CONNECTION_ENV_VARS[field]]],
      ['file', stored?.[field]],
    ];
    const hit = candidates.find(([, v]) => present(v) !== undefined);
    if (hit?.[1] !== undefined) {
      values[field] = hit[1].trim();
      sources[field] = hit[0];
    } else {
      sources[field] = 'missing';
    }
  }
  if (values.apiBaseUrl === undefined && values.adsBaseUrl !== undefined) {
    values.apiBaseUrl = values.adsBaseUrl;
    sources.apiBaseUrl = 'default';
  }
  return { profile, configFile, values, sources, stored };
}

/** What `createClient` needs (structurally a subset of the client's options). */
export interface ConnectionClientOptions {
  adsBaseUrl: string;
  apiBaseUrl: string;
  credentials: {
    consumerKey: string;
    consumerSecret: string;
    accessToken?: string;
    accessTokenSecret?: string;
  };
}

export interface ResolvedConnectionConfig extends ConnectionConfigReport {
  options: ConnectionClientOptions;
}

export interface ResolveConnectionInput extends ConnectionConfigInput {
  /**
   * `user` (default): consumer and access token credentials, for the ads endpoints.
   * `app`: consumer credentials only, for the OAuth login flow.
   */
  need?: 'user' | 'app';
}

/**
 * Resolve the client configuration for a profile. Missing values give a ConfigError naming
 * the environment variable, the flag and `audience-kit auth login`; never a value.
 */
export async function resolveConnectionConfig(input: ResolveConnectionInput = {}): Promise<ResolvedConnectionConfig> {
  const report = await inspectConnectionConfig(input);
  const { values, profile } = report;
  const profileFlag = profile === DEFAULT_PROFILE ? '' : ` --profile ${profile}`;
  if (values.adsBaseUrl === undefined) {
    throw new ConfigError('config_missing_base_url', `no ads API base URL configured (profile "${profile}")`, {
      fix: `set ${CONNECTION_ENV_VARS.adsBaseUrl} or pass ${CONNECTION_FLAG_NAMES.adsBaseUrl} (for a local try: \`audience-kit sandbox\` prints one)`,
    });
  }
  const needed = credentialsNeeded(input.need ?? 'user');
  const missing = needed.filter((f) => values[f] === undefined);
  if (missing.length > 0) {
    const names = missing.map((f) => `${CONNECTION_ENV_VARS[f]} (${CONNECTION_FLAG_NAMES[f]})`).join(', ');
    const appOnly = missing.every((f) => f === 'consumerKey' || f === 'consumerSecret');
    throw new ConfigError(
      'config_missing_credential',
      `missing credential${missing.length > 1 ? 's' : ''} for profile "${profile}": ${names}`,
      {
        fix: appOnly
          ? `set the environment variable or pass the flag with your app's consumer key and secret; \`audience-kit auth login${profileFlag}\` then stores them`
          : `set the environment variable or pass the flag, or run \`audience-kit auth login${profileFlag}\` to store user credentials`,
      },
    );
  }
  const credentials: ConnectionClientOptions['credentials'] = {
    consumerKey: values.consumerKey as string,
    consumerSecret: values.consumerSecret as string,
  };
  if (input.need !== 'app') {
    credentials.accessToken = values.accessToken as string;
    credentials.accessTokenSecret = values.accessTokenSecret as string;
  }
  return {
    ...report,
    options: { adsBaseUrl: values.adsBaseUrl, apiBaseUrl: values.apiBaseUrl ?? values.adsBaseUrl, credentials },
  };
}

export interface ProfileUpdateInput extends ConfigLocationInput {
  profile?: string;
}

/**
 * Merge values into a stored profile (`null` deletes a field, `undefined` leaves it) and write the file atomically
 * with mode 0600. Returns the file path.
 */
export async function saveProfileCredentials(
  input: ProfileUpdateInput & { values: { [K in StoredProfileField]?: string | null | undefined } },
): Promise<string> {
  return updateStoredProfile(input, (current) => {
    const next: Record<string, string | undefined> = { ...current };
    for (const [key, value] of Object.entries(input.values)) {
      if (value === null) delete next[key];
      else if (value !== undefined) next[key] = value;
    }
    return next;
  });
}

/**
 * Remove the stored credentials (and any pending login) of a profile; base URLs stay.
 * Returns whether anything was removed.
 */
export async function removeProfileCredentials(
  input: ProfileUpdateInput = {},
): Promise<{ file: string; removed: boolean }> {
  let removed = false;
  const secretish: StoredProfileField[] = [
    ...credentialsNeeded('user'),
    'pendingRequestToken',
    'pendingRequestTokenSecret',
  ];
  const file = await updateStoredProfile(input, (current) => {
    if (current === undefined) return undefined;
    const next: Record<string, string | undefined> = { ...current };
    for (const key of secretish) {
      if (key in next) {
        removed = true;
        delete next[key];
      }
    }
    return next;
  });
  return { file, removed };
}

async function updateStoredProfile(
  input: ProfileUpdateInput,
  change: (current: StoredProfile | undefined) => Record<string, string | undefined> | undefined,
): Promise<string> {
  const env = input.env ?? process.env;
  const profile = resolveProfileName(input.profile, env);
  const dir = configDirPath({ ...input, env });
  const file = join(dir, CONFIG_FILE_NAME);
  const config = await loadConfigFile(file);
  const changed = change(config.profiles[profile]);
  const next = Object.entries(changed ?? {}).filter(([, v]) => v !== undefined);
  const profiles: Record<string, StoredProfile> = { ...config.profiles };
  if (next.length === 0) delete profiles[profile];
  else profiles[profile] = parseStoredProfile(profile, Object.fromEntries(next));
  await writeConfigAtomically(dir, file, { ...config, profiles });
  return file;
}

function parseStoredProfile(profile: string, value: unknown): StoredProfile {
  const parsed = storedProfileSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new ConfigError(
    'config_invalid_value',
    `cannot store profile "${profile}": ${issue === undefined ? '' : describeIssuePath(['profiles', profile, ...issue.path])}${issue?.message ?? 'invalid value'}`,
    { fix: 'pass a non-empty value (base URLs as absolute URLs such as https://host)' },
  );
}

async function writeConfigAtomically(dir: string, file: string, config: AudienceKitConfigFile): Promise<void> {
  // A temp file in the same directory, created 0600 before any byte is written, then renamed
  // over the old file: readers see either the old or the new file, never a partial one.
  const tmp = join(dir, `.${CONFIG_FILE_NAME}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    makeDirs(dir, 0o700);
    const handle = await open(tmp, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(config, null, 2)}\n`, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  } catch (error) {
    await rm(tmp, { force: true });
    throw new ConfigError('config_file_unwritable', `cannot write the config file ${file}`, {
      fix: 'check the directory permissions, or point AUDIENCE_KIT_CONFIG_DIR at another directory',
      cause: error,
    });
  }
}

function present(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
