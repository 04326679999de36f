/**
 * Connection options shared by every command that talks to the platform (`upload` too):
 * the flags, their resolution through the config module (flags > environment > config file)
 * and the client they produce, with `--debug` request lines that carry no headers or bodies.
 */
import { givenLabel } from '../identifiers/labels.js';
import type { Argv } from 'yargs';
import { ConfigError } from '../errors.js';
import { resolveConnectionConfig, type ConnectionValues, type ResolvedConnectionConfig } from '../api/config.js';
import {
  CONNECTION_ARGS,
  CONNECTION_ENV_VARS,
  CONNECTION_FIELDS,
  CONNECTION_FLAG_NAMES,
} from '../platform/credentials.js';
import { MAX_ATTEMPTS_LIMIT, type AdsClient, type ClientOptions } from '../api/client.js';
import type { CliContext } from './context.js';
import { createCliClient } from './proxy.js';
import { writeLine, type GlobalArgs } from './output.js';
import type { CliErrorCode } from './exit-codes.js';

export interface ConnectionArgs extends GlobalArgs {
  baseUrl?: string;
  apiBaseUrl?: string;
  consumerKey?: string;
  consumerSecret?: string;
  accessToken?: string;
  accessTokenSecret?: string;
  profile?: string;
  maxAttempts?: string;
  requestTimeout?: string;
}

export const CONNECTION_GROUP = 'Connection (flags > environment > config file):';

/**
 * The connection flags of the OAuth login: everything but the user's access token, which is
 * what the login obtains.
 */
export function withAppConnectionOptions<T>(yargs: Argv<T>): Argv<T & ConnectionArgs> {
  return yargs
    .option('base-url', {
      type: 'string',
      describe: `Ads API base URL, no version segment [env ${CONNECTION_ENV_VARS.adsBaseUrl}]`,
    })
    .option('api-base-url', {
      type: 'string',
      describe: `Core API base URL for the OAuth endpoints; defaults to --base-url [env ${CONNECTION_ENV_VARS.apiBaseUrl}]`,
    })
    .option('consumer-key', { type: 'string', describe: `App consumer key [env ${CONNECTION_ENV_VARS.consumerKey}]` })
    .option('consumer-secret', {
      type: 'string',
      describe: `App consumer secret; prefer the env variable or \`auth login\` (flags show in the process list) [env ${CONNECTION_ENV_VARS.consumerSecret}]`,
    })
    .option('profile', {
      type: 'string',
      describe: 'Stored credential set in the config file [env AUDIENCE_KIT_PROFILE] (default: "default")',
    })
    .option('max-attempts', {
      type: 'string',
      requiresArg: true,
      describe: `HTTP attempts per request, retries included, 1 to ${MAX_ATTEMPTS_LIMIT} (default: client default)`,
    })
    .option('request-timeout', {
      type: 'string',
      describe: 'Headers and body timeout per attempt, e.g. 30s, 2m (default: client default)',
    })
    .group(
      ['base-url', 'api-base-url', 'consumer-key', 'consumer-secret', 'profile', 'max-attempts', 'request-timeout'],
      CONNECTION_GROUP,
    ) as unknown as Argv<T & ConnectionArgs>;
}

/** Add the connection flags to a command's builder. */
export function withConnectionOptions<T>(yargs: Argv<T>): Argv<T & ConnectionArgs> {
  return withAppConnectionOptions(yargs)
    .option('access-token', { type: 'string', describe: `User access token [env ${CONNECTION_ENV_VARS.accessToken}]` })
    .option('access-token-secret', {
      type: 'string',
      describe: `User access token secret; prefer the env variable or \`auth login\` [env ${CONNECTION_ENV_VARS.accessTokenSecret}]`,
    })
    .group(['access-token', 'access-token-secret'], CONNECTION_GROUP);
}

/** The connection flags given on the command line, as config-module values. */
export function connectionFlags(args: ConnectionArgs): ConnectionValues {
  const flags: ConnectionValues = {};
  for (const field of CONNECTION_FIELDS) {
    const value = args[CONNECTION_ARGS[field]];
    if (value !== undefined) flags[field] = value;
  }
  return flags;
}

/** Resolve the configuration of the command's profile (flags > env > file). */
export function connectionConfigFromArgs(
  ctx: CliContext,
  args: ConnectionArgs,
  need: 'user' | 'app' = 'user',
): Promise<ResolvedConnectionConfig> {
  return resolveConnectionConfig({
    flags: connectionFlags(args),
    env: ctx.env,
    ...(args.profile === undefined ? {} : { profile: args.profile }),
    need,
  });
}

export interface ConnectedClient {
  client: AdsClient;
  config: ResolvedConnectionConfig;
}

/**
 * Resolve the configuration and create the client. With --debug every attempt is logged to
 * stderr as `debug: METHOD /path STATUS MSms` (no query string, headers or bodies).
 */
export async function clientFromArgs(
  ctx: CliContext,
  args: ConnectionArgs,
  options: { need?: 'user' | 'app'; extra?: Partial<ClientOptions> } = {},
): Promise<ConnectedClient> {
  const config = await connectionConfigFromArgs(ctx, args, options.need ?? 'user');
  const clientOptions = withTransportFlags(ctx, args, { ...config.options, ...options.extra });
  return { client: createCliClient(ctx.env, withDebugLines(ctx, args, clientOptions)), config };
}

/**
 * The flags that shape every request whatever the platform (a real one or the embedded sandbox):
 * --max-attempts, --request-timeout, and the platform's warnings printed on stderr.
 */
export function withTransportFlags<T extends Partial<ClientOptions>>(
  ctx: CliContext,
  args: ConnectionArgs,
  base: T,
): T {
  const clientOptions: T = { ...base };
  if (args.maxAttempts !== undefined) {
    clientOptions.maxAttempts = parseWholeNumber(
      args.maxAttempts,
      '--max-attempts',
      1,
      MAX_ATTEMPTS_LIMIT,
      'pass for example --max-attempts 5',
    );
  }
  if (args.requestTimeout !== undefined) {
    const ms = parseDuration(args.requestTimeout, '--request-timeout');
    clientOptions.headersTimeoutMs = ms;
    clientOptions.bodyTimeoutMs = ms;
  }
  // The platform's warnings on successful responses (deprecations, ignored parameters) reach the user.
  clientOptions.onWarn ??= (warning, at) =>
    writeLine(ctx.stderr, `warning: platform: ${warning} (${at.method} ${at.path})`);
  return clientOptions;
}

/** Connection flags that choose the platform or its credentials: the embedded sandbox has its own. */
const PLATFORM_FLAGS: readonly (readonly [keyof ConnectionArgs, string])[] = [
  ...CONNECTION_FIELDS.map((f) => [CONNECTION_ARGS[f], CONNECTION_FLAG_NAMES[f]] as const),
  ['profile', '--profile'],
];

/** Refuse, rather than ignore, a flag that cannot apply to the embedded sandbox. */
export function checkSandboxConnectionFlags(args: ConnectionArgs): void {
  const given = PLATFORM_FLAGS.filter(([key]) => args[key] !== undefined).map(([, flag]) => flag);
  if (given.length === 0) return;
  throw new ConfigError(
    'invalid_option',
    `${given.join(', ')} cannot apply with --sandbox (it has its own URL and credentials)`,
    {
      fix: `drop ${given.join(', ')}, or drop --sandbox to use that platform`,
    },
  );
}

/** With --debug, client options that log each attempt and wait to stderr (paths only: no query, headers or bodies). */
export function withDebugLines(ctx: CliContext, args: GlobalArgs, clientOptions: ClientOptions): ClientOptions {
  if (args.debug !== true) return clientOptions;
  const { onRequest, onWait } = clientOptions;
  return {
    ...clientOptions,
    onRequest: (e) => {
      writeLine(
        ctx.stderr,
        `debug: ${e.method} ${e.path.split('?')[0] ?? ''} ${e.status} ${Math.round(e.ms)}ms (attempt ${e.attempt})`,
      );
      onRequest?.(e);
    },
    onWait: (e) => {
      writeLine(ctx.stderr, `debug: waiting ${Math.round(e.ms)}ms (${e.reason}) before ${e.path.split('?')[0] ?? ''}`);
      onWait?.(e);
    },
  };
}

/** Run `fn` with a connected client and always close the client's connection pool. */
export async function withClient<T>(
  ctx: CliContext,
  args: ConnectionArgs,
  fn: (client: AdsClient, config: ResolvedConnectionConfig) => Promise<T>,
  options: { need?: 'user' | 'app'; extra?: Partial<ClientOptions> } = {},
): Promise<T> {
  const { client, config } = await clientFromArgs(ctx, args, options);
  try {
    return await fn(client, config);
  } finally {
    await client.close();
  }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `90s`, `30m`, `1h`, `1h30m`, `250ms`; a bare number is seconds. Returns milliseconds.
 * `option` names the flag in the error.
 */
export function parseDuration(text: string, option: string): number {
  const trimmed = String(text).trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
  let total = 0;
  let consumed = 0;
  for (const match of trimmed.matchAll(part)) {
    if (match.index !== consumed) break;
    total += Number(match[1]) * (DURATION_UNITS[match[2] ?? ''] ?? Number.NaN);
    consumed += match[0].length;
  }
  if (trimmed === '' || consumed !== trimmed.length || !Number.isFinite(total)) {
    throw new ConfigError<CliErrorCode>(
      'invalid_duration',
      `${option} must be a duration such as 90s, 30m, 1h or 1h30m, got ${givenLabel(text)}`,
      {
        fix: `pass for example ${option} 30m (units: ms, s, m, h, d; a bare number is seconds)`,
      },
    );
  }
  return Math.round(total);
}

/**
 * A whole number within min..max from a flag's raw text (yargs would turn `abc` into NaN and
 * `1e3` into 1000); the message echoes what was typed.
 */
export function parseWholeNumber(text: string, option: string, min: number, max: number, fix: string): number {
  const trimmed = String(text).trim();
  const value = /^\d+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw new ConfigError(
      'invalid_option',
      `${option} must be a whole number from ${min} to ${max}, got ${givenLabel(text)}`,
      {
        fix,
      },
    );
  }
  return value;
}
