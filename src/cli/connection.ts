/**
 * Connection options shared by every command that talks to the platform (`upload` too):
 * the flags, their resolution through the config module (flags > environment > config file)
 * and the client they produce, with `--debug` request lines that carry no headers or bodies.
 */
import type { Argv } from 'yargs';
import {
  ConfigError,
  CONNECTION_ENV_VARS,
  createClient,
  ID_LIST_MAX,
  LIST_COUNT_MAX,
  paginate,
  resolveConnectionConfig,
  type AdsClient,
  type Page,
  type ClientOptions,
  type ConnectionValues,
  type ResolvedConnectionConfig,
} from '../index.js';
import type { CliContext } from './context.js';
import { renderFields, renderTable, writeJson, writeLine, type Column, type GlobalArgs } from './output.js';

export interface ConnectionArgs extends GlobalArgs {
  baseUrl?: string;
  apiBaseUrl?: string;
  consumerKey?: string;
  consumerSecret?: string;
  accessToken?: string;
  accessTokenSecret?: string;
  profile?: string;
  maxAttempts?: number;
  requestTimeout?: string;
}

export const CONNECTION_GROUP = 'Connection (flags > environment > config file):';

/** Add the connection flags to a command's builder. */
export function withConnectionOptions<T>(yargs: Argv<T>): Argv<T & ConnectionArgs> {
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
    .option('access-token', { type: 'string', describe: `User access token [env ${CONNECTION_ENV_VARS.accessToken}]` })
    .option('access-token-secret', {
      type: 'string',
      describe: `User access token secret; prefer the env variable or \`auth login\` [env ${CONNECTION_ENV_VARS.accessTokenSecret}]`,
    })
    .option('profile', {
      type: 'string',
      describe: 'Stored credential set in the config file [env AUDIENCE_KIT_PROFILE] (default: "default")',
    })
    .option('max-attempts', { type: 'number', describe: 'HTTP attempts per request, retries included (default: client default)' })
    .option('request-timeout', { type: 'string', describe: 'Headers and body timeout per attempt, e.g. 30s, 2m (default: client default)' })
    .group(
      ['base-url', 'api-base-url', 'consumer-key', 'consumer-secret', 'access-token', 'access-token-secret', 'profile', 'max-attempts', 'request-timeout'],
      CONNECTION_GROUP,
    ) as unknown as Argv<T & ConnectionArgs>;
}

/** The connection flags given on the command line, as config-module values. */
export function connectionFlags(args: ConnectionArgs): ConnectionValues {
  const flags: ConnectionValues = {};
  if (args.baseUrl !== undefined) flags.adsBaseUrl = args.baseUrl;
  if (args.apiBaseUrl !== undefined) flags.apiBaseUrl = args.apiBaseUrl;
  if (args.consumerKey !== undefined) flags.consumerKey = args.consumerKey;
  if (args.consumerSecret !== undefined) flags.consumerSecret = args.consumerSecret;
  if (args.accessToken !== undefined) flags.accessToken = args.accessToken;
  if (args.accessTokenSecret !== undefined) flags.accessTokenSecret = args.accessTokenSecret;
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
  const clientOptions: ClientOptions = { ...config.options, ...options.extra };
  if (args.maxAttempts !== undefined) {
    if (!Number.isInteger(args.maxAttempts) || args.maxAttempts < 1) {
      throw new ConfigError('invalid_option', `--max-attempts must be a whole number >= 1, got ${args.maxAttempts}`, {
        fix: 'pass for example --max-attempts 5',
      });
    }
    clientOptions.maxAttempts = args.maxAttempts;
  }
  if (args.requestTimeout !== undefined) {
    const ms = parseDuration(args.requestTimeout, '--request-timeout');
    clientOptions.headersTimeoutMs = ms;
    clientOptions.bodyTimeoutMs = ms;
  }
  if (args.debug === true) {
    const previous = clientOptions.onRequest;
    clientOptions.onRequest = (e) => {
      const path = e.path.split('?')[0] ?? '';
      writeLine(ctx.stderr, `debug: ${e.method} ${path} ${e.status} ${Math.round(e.ms)}ms (attempt ${e.attempt})`);
      previous?.(e);
    };
    const previousWait = clientOptions.onWait;
    clientOptions.onWait = (e) => {
      writeLine(ctx.stderr, `debug: waiting ${Math.round(e.ms)}ms (${e.reason}) before ${e.path.split('?')[0] ?? ''}`);
      previousWait?.(e);
    };
  }
  return { client: createClient(clientOptions), config };
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
    throw new ConfigError('invalid_duration', `${option} must be a duration such as 90s, 30m, 1h or 1h30m, got "${text}"`, {
      fix: `pass for example ${option} 30m (units: ms, s, m, h, d; a bare number is seconds)`,
    });
  }
  return Math.round(total);
}

// ---- Shared by the management commands (audiences, do-not-reach, permissions, targeted) ----

export interface AccountArgs extends ConnectionArgs {
  account: string;
}

/** `--account ID`, required by every management command. */
export function withAccountOption<T>(yargs: Argv<T>): Argv<T & AccountArgs> {
  return withConnectionOptions(yargs).option('account', {
    type: 'string',
    demandOption: true,
    requiresArg: true,
    describe: 'Ad account id the request is made for',
  }) as unknown as Argv<T & AccountArgs>;
}

/**
 * `--count`: a whole number within 1..1000, refused before anything is sent. The client checks
 * the same bounds; checking here lets the message name the flag.
 */
export function checkCount(count: number | undefined, option = '--count'): number | undefined {
  if (count === undefined) return undefined;
  if (!Number.isInteger(count) || count < 1 || count > LIST_COUNT_MAX) {
    throw new ConfigError('invalid_parameter', `${option} must be a whole number from 1 to ${LIST_COUNT_MAX}, got ${count}`, {
      fix: `pass ${option} between 1 and ${LIST_COUNT_MAX}, or --all to follow every page`,
    });
  }
  return count;
}

/**
 * Ids from repeated and/or comma-separated flag values, deduplicated, at most 200 (the
 * platform's bound), refused before anything is sent.
 */
export function parseIdList(values: ReadonlyArray<string | number> | string | undefined, option: string): string[] | undefined {
  if (values === undefined) return undefined;
  const list = (Array.isArray(values) ? values : [values]).flatMap((v) => String(v).split(','));
  const ids = [...new Set(list.map((v) => v.trim()).filter((v) => v !== ''))];
  if (ids.length === 0) {
    throw new ConfigError('invalid_parameter', `${option} needs at least one id`, {
      fix: `pass ${option} ID[,ID...]`,
    });
  }
  if (ids.length > ID_LIST_MAX) {
    throw new ConfigError('invalid_parameter', `${option} takes at most ${ID_LIST_MAX} ids, got ${ids.length}`, {
      fix: `split the ids into several calls of at most ${ID_LIST_MAX}`,
    });
  }
  return ids;
}

/** The platform refuses `with_total_count` together with a cursor. */
export function checkTotalCountCursor(withTotalCount: boolean | undefined, cursor: string | undefined): void {
  if (withTotalCount === true && cursor !== undefined) {
    throw new ConfigError('invalid_parameter', '--with-total-count cannot be combined with --cursor (the platform refuses it)', {
      fix: 'drop --with-total-count when paging with --cursor; the first page (no --cursor) carries the total',
    });
  }
}

export interface ListResult<T> {
  data: T[];
  next_cursor: string | null;
  total_count?: number;
}

/**
 * One page (`--cursor`) or every page (`--all`, through the client's paginate). With --all the
 * total count is asked on the first page only, since later pages carry a cursor.
 */
export async function listPages<T>(
  fetchPage: (cursor: string | undefined, withTotalCount: boolean) => Promise<Page<T>>,
  opts: { all: boolean; cursor?: string | undefined; withTotalCount?: boolean | undefined },
): Promise<ListResult<T>> {
  checkTotalCountCursor(opts.withTotalCount, opts.cursor);
  const wantTotal = opts.withTotalCount === true;
  if (!opts.all) {
    const page = await fetchPage(opts.cursor, wantTotal);
    return withTotal({ data: page.data, next_cursor: page.next_cursor ?? null }, page.total_count);
  }
  let total: number | undefined;
  const data: T[] = [];
  let first = true;
  for await (const item of paginate<T>(async (cursor) => {
    const page = await fetchPage(cursor ?? (first ? opts.cursor : undefined), first && wantTotal);
    if (first) total = page.total_count;
    first = false;
    return page;
  })) {
    data.push(item);
  }
  return withTotal({ data, next_cursor: null }, total);
}

function withTotal<T>(result: ListResult<T>, total: number | undefined): ListResult<T> {
  return total === undefined ? result : { ...result, total_count: total };
}

/** Print a list: JSON document, or table + paging hints. */
export function printList<T>(
  ctx: CliContext,
  args: GlobalArgs,
  result: ListResult<T>,
  columns: readonly Column<T>[],
  what: string,
): void {
  if (args.json === true) {
    writeJson(ctx, result);
    return;
  }
  if (result.data.length > 0) writeLine(ctx.stdout, renderTable(result.data, columns));
  const total = result.total_count === undefined ? '' : ` of ${result.total_count}`;
  writeLine(ctx.stdout, `${what}: ${result.data.length}${total}`);
  if (result.next_cursor !== null) writeLine(ctx.stdout, `more: add --cursor ${result.next_cursor} (or --all)`);
}

/** Print one object: JSON document, or key/value lines. */
export function printObject(
  ctx: CliContext,
  args: GlobalArgs,
  value: Record<string, unknown>,
  fields: readonly string[],
): void {
  if (args.json === true) {
    writeJson(ctx, value);
    return;
  }
  writeLine(ctx.stdout, renderFields(fields.map((f) => [f, value[f]] as const)));
}

/** Drop undefined members, so optional flags map onto exact optional parameters. */
export function definedOnly<T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
