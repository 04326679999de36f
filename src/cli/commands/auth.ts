import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Argv, CommandModule } from 'yargs';
import { accessToken, authorizeUrl, requestToken } from '../../api/endpoints.js';
import { AuthError, ConfigError } from '../../errors.js';
import {
  inspectConnectionConfig,
  removeProfileCredentials,
  saveProfileCredentials,
  type ConnectionConfigReport,
  type ResolvedConnectionConfig,
} from '../../api/config.js';
import {
  CONNECTION_ENV_VARS,
  CONNECTION_FIELDS,
  CONNECTION_FLAG_NAMES,
  SECRET_CONNECTION_FIELDS,
  type ConnectionField,
} from '../../platform/credentials.js';
import type { AccessTokenResponse } from '../../api/schemas.js';
import type { AdsClient } from '../../api/client.js';
import {
  connectionFlags,
  withAppConnectionOptions,
  withClient,
  withConnectionOptions,
  type ConnectionArgs,
} from '../connection.js';
import type { CliContext } from '../context.js';
import { commandGroup, rephrase } from '../manage.js';
import { handle, renderTable, writeJson, writeLine, type GlobalArgs } from '../output.js';
import type { CliErrorCode } from '../exit-codes.js';

interface LoginArgs extends ConnectionArgs {
  pin?: string;
}

const profileHint = (profile: string): string => (profile === 'default' ? '' : ` --profile ${profile}`);

/** The environment variables among `fields` that win over what the profile stores (flags > environment > file). */
function setInEnvironment(report: ConnectionConfigReport, fields: readonly ConnectionField[]): string[] {
  return fields.filter((f) => report.sources[f] === 'env').map((f) => CONNECTION_ENV_VARS[f]);
}

/** First non-empty line of the stream, or undefined at end of input. */
async function readLine(input: Readable): Promise<string | undefined> {
  const rl = createInterface({ input, terminal: false });
  try {
    for await (const line of rl) {
      if (line.trim() !== '') return line.trim();
    }
    return undefined;
  } finally {
    rl.close();
  }
}

type RequestTokenPair = { key: string; secret: string };

interface LoginResult {
  user_id: string;
  screen_name: string;
  profile: string;
  config_file: string;
  overridden_by_environment: string[];
}

/**
 * The request token to finish and its PIN: with --pin, the login left pending; otherwise a new
 * request token, its URL printed and the PIN read from stdin (no PIN: kept pending for --pin).
 */
async function tokenAndPin(
  ctx: CliContext,
  client: AdsClient,
  config: ResolvedConnectionConfig,
  pinArg: string | undefined,
  keepPending: (t: RequestTokenPair) => Promise<string>,
): Promise<{ token: RequestTokenPair; pin: string }> {
  const { profile, stored: pending } = config;
  if (pinArg !== undefined) {
    if (pending?.pendingRequestToken === undefined || pending.pendingRequestTokenSecret === undefined) {
      throw new ConfigError<CliErrorCode>(
        'auth_no_pending_login',
        `no login is pending for profile "${profile}", so --pin has nothing to finish`,
        {
          fix: `run \`audience-kit auth login${profileHint(profile)}\` without --pin, open the URL it prints and enter the PIN`,
        },
      );
    }
    return { token: { key: pending.pendingRequestToken, secret: pending.pendingRequestTokenSecret }, pin: pinArg };
  }
  const rt = await requestToken(client, { callback: 'oob' });
  const token = { key: rt.oauth_token, secret: rt.oauth_token_secret };
  writeLine(ctx.stderr, 'Open this URL in a browser, sign in as the user who manages the ad accounts, and approve:');
  writeLine(ctx.stderr, `  ${authorizeUrl(config.options.apiBaseUrl, rt.oauth_token)}`);
  ctx.stderr.write('Then enter the PIN shown: ');
  const pin = await readLine(ctx.stdin);
  writeLine(ctx.stderr);
  if (pin === undefined) {
    await keepPending(token);
    throw new ConfigError<CliErrorCode>(
      'auth_pin_missing',
      `no PIN was entered; the login stays pending for profile "${profile}"`,
      {
        fix: `open the URL above, approve, then run \`audience-kit auth login${profileHint(profile)} --pin PIN\``,
      },
    );
  }
  return { token, pin };
}

/** The access token for a PIN; a refused PIN keeps the login pending, since --pin can still finish a mistyped one. */
async function exchangePin(
  client: AdsClient,
  token: RequestTokenPair,
  pin: string,
  profile: string,
  keepPending: (t: RequestTokenPair) => Promise<string>,
): Promise<AccessTokenResponse> {
  return accessToken(client, { oauthToken: token.key, oauthTokenSecret: token.secret, verifier: pin }).catch(
    async (error: unknown) => {
      if (!(error instanceof AuthError && error.status === 401)) throw error;
      await keepPending(token);
      throw rephrase(error, {
        as: AuthError,
        code: 'auth_pin_refused',
        message: 'the platform refused the PIN: it was wrong, or the login request expired',
        fix: `run \`audience-kit auth login${profileHint(profile)} --pin PIN\` with the PIN exactly as shown, or \`audience-kit auth login${profileHint(profile)}\` for a new one`,
      });
    },
  );
}

/** Store the user's tokens in the profile (the pending login cleared) and say where. */
async function storeLogin(
  ctx: CliContext,
  config: ResolvedConnectionConfig,
  at: AccessTokenResponse,
): Promise<LoginResult> {
  const { profile, values, sources } = config;
  const file = await saveProfileCredentials({
    env: ctx.env,
    profile,
    values: {
      // Tokens belong to one platform: keep its URLs with them (unless they are only implied).
      adsBaseUrl: values.adsBaseUrl,
      apiBaseUrl: sources.apiBaseUrl === 'default' ? undefined : values.apiBaseUrl,
      consumerKey: values.consumerKey,
      consumerSecret: values.consumerSecret,
      accessToken: at.oauth_token,
      accessTokenSecret: at.oauth_token_secret,
      pendingRequestToken: null,
      pendingRequestTokenSecret: null,
    },
  });
  return {
    user_id: at.user_id,
    screen_name: at.screen_name,
    profile,
    config_file: file,
    overridden_by_environment: setInEnvironment(config, ['accessToken', 'accessTokenSecret']),
  };
}

function printLogin(ctx: CliContext, json: boolean, result: LoginResult): void {
  const overriding = result.overridden_by_environment;
  if (overriding.length > 0) {
    writeLine(
      ctx.stderr,
      `warning: ${overriding.join(', ')} ${overriding.length > 1 ? 'are' : 'is'} set in the environment and will be used instead of the stored credentials; unset ${overriding.length > 1 ? 'them' : 'it'} to use this login`,
    );
  }
  if (json) {
    writeJson(ctx, result);
    return;
  }
  writeLine(ctx.stdout, `logged in as @${result.screen_name} (user id ${result.user_id})`);
  writeLine(ctx.stdout, `credentials stored for profile "${result.profile}" in ${result.config_file} (mode 0600)`);
}

function loginCommand(ctx: CliContext): CommandModule<GlobalArgs, LoginArgs> {
  return {
    command: 'login',
    describe: 'Get user credentials with the PIN flow and store them (0600) under the profile',
    builder: (y) =>
      withAppConnectionOptions(y)
        .option('pin', {
          type: 'string',
          requiresArg: true,
          describe: 'Finish a pending login (no PIN entered, or the PIN refused) with the PIN shown after approval',
        })
        .example(
          'AUDIENCE_KIT_CONSUMER_KEY=... AUDIENCE_KIT_CONSUMER_SECRET=... $0 auth login --base-url https://ads-api.example.com',
          'Prints a URL, then asks for the PIN',
        )
        .example(
          '$0 auth login --profile sandbox --pin 1234567',
          'Finish a pending non-interactive login',
        ) as unknown as Argv<LoginArgs>,
    handler: handle(ctx, async (args: LoginArgs) => {
      const result = await withClient(
        ctx,
        args,
        async (client, config) => {
          const keepPending = (t: RequestTokenPair): Promise<string> =>
            saveProfileCredentials({
              env: ctx.env,
              profile: config.profile,
              values: { pendingRequestToken: t.key, pendingRequestTokenSecret: t.secret },
            });
          const { token, pin } = await tokenAndPin(ctx, client, config, args.pin?.trim(), keepPending);
          const at = await exchangePin(client, token, pin, config.profile, keepPending);
          return storeLogin(ctx, config, at);
        },
        { need: 'app' },
      );
      printLogin(ctx, args.json === true, result);
    }),
  };
}

/** Enough of a key to recognize it, never enough to use it; secrets are never shown at all. */
function maskValue(field: ConnectionField, value: string | undefined): string | null {
  if (value === undefined) return null;
  if (SECRET_CONNECTION_FIELDS.includes(field)) return 'set (hidden)';
  if (field === 'adsBaseUrl' || field === 'apiBaseUrl') return baseUrlShown(value);
  return value.length >= 12 ? `${value.slice(0, 4)}…(${value.length} chars)` : `…(${value.length} chars)`;
}

/** A base URL as shown: a password and a query (where a proxy's or gateway's key may sit) left out. */
function baseUrlShown(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return `…(${value.length} chars, not a URL)`;
  }
  if (u.password === '' && u.search === '') return value;
  if (u.password !== '') u.password = 'hidden';
  if (u.search !== '') u.search = '?hidden';
  return u.toString();
}

/** One connection value's row of `auth status`: where it comes from, masked. */
interface StatusRow {
  field: ConnectionField;
  source: string;
  from: string;
  value: string | null;
}

/** What `auth status` reports: the profile, the config file and its mode, and each value's row. */
interface AuthStatus {
  profile: string;
  configFile: string;
  fileMode: number | undefined;
  rows: StatusRow[];
  complete: boolean;
  pending: boolean;
}

async function authStatus(ctx: CliContext, args: ConnectionArgs): Promise<AuthStatus> {
  const report = await inspectConnectionConfig({
    flags: connectionFlags(args),
    env: ctx.env,
    ...(args.profile === undefined ? {} : { profile: args.profile }),
  });
  const fileMode = await stat(report.configFile).then(
    (s) => s.mode & 0o777,
    () => undefined,
  );
  const rows = CONNECTION_FIELDS.map((field) => ({
    field,
    source: report.sources[field],
    from: sourceText(field, report.sources[field], report.profile),
    value: maskValue(field, report.values[field]),
  }));
  return {
    profile: report.profile,
    configFile: report.configFile,
    fileMode,
    rows,
    complete: rows.every((r) => r.source !== 'missing'),
    pending: report.stored?.pendingRequestToken !== undefined,
  };
}

/** Where a value comes from, as the user would set it (or how to set a missing one). */
function sourceText(field: ConnectionField, source: string, profile: string): string {
  switch (source) {
    case 'env':
      return CONNECTION_ENV_VARS[field];
    case 'flag':
      return CONNECTION_FLAG_NAMES[field];
    case 'file':
      return `profile "${profile}"`;
    case 'default':
      return 'same as adsBaseUrl';
    default:
      return `set ${CONNECTION_ENV_VARS[field]} or ${CONNECTION_FLAG_NAMES[field]}`;
  }
}

function printStatusJson(ctx: CliContext, st: AuthStatus): void {
  writeJson(ctx, {
    profile: st.profile,
    config_file: st.configFile,
    config_file_mode: st.fileMode === undefined ? null : `0${st.fileMode.toString(8)}`,
    complete: st.complete,
    pending_login: st.pending,
    fields: Object.fromEntries(st.rows.map((r) => [r.field, { source: r.source, from: r.from, value: r.value }])),
  });
}

function printStatus(ctx: CliContext, st: AuthStatus): void {
  writeLine(ctx.stdout, `profile      ${st.profile}`);
  const modeText = st.fileMode === undefined ? 'not created yet' : `mode 0${st.fileMode.toString(8)}`;
  writeLine(ctx.stdout, `config file  ${st.configFile} (${modeText})`);
  writeLine(ctx.stdout);
  writeLine(
    ctx.stdout,
    renderTable(st.rows, [
      { header: 'FIELD', value: (r) => r.field },
      { header: 'SOURCE', value: (r) => r.source },
      { header: 'FROM', value: (r) => r.from },
      { header: 'VALUE', value: (r) => r.value },
    ]),
  );
  if (st.fileMode !== undefined && (st.fileMode & 0o077) !== 0)
    writeLine(ctx.stdout, `warning: the config file is readable by other users; run: chmod 600 ${st.configFile}`);
  if (st.pending)
    writeLine(
      ctx.stdout,
      `a login is pending: finish it with \`audience-kit auth login${profileHint(st.profile)} --pin PIN\``,
    );
  writeLine(
    ctx.stdout,
    st.complete
      ? 'complete: ready to call the API'
      : `incomplete: run \`audience-kit auth login${profileHint(st.profile)}\` or set the missing values`,
  );
}

function statusCommand(ctx: CliContext): CommandModule<GlobalArgs, ConnectionArgs> {
  return {
    command: 'status',
    describe: 'Where each credential comes from (flag, environment, file); never prints a secret',
    builder: (y) =>
      withConnectionOptions(y)
        .example('$0 auth status --profile sandbox', "Where each of the sandbox profile's values comes from")
        .example('$0 auth status --json', 'The same report as JSON (secrets only as "set (hidden)")'),
    handler: handle(ctx, async (args: ConnectionArgs) => {
      const st = await authStatus(ctx, args);
      if (args.json === true) printStatusJson(ctx, st);
      else printStatus(ctx, st);
    }),
  };
}

interface LogoutArgs extends GlobalArgs {
  profile?: string;
}

function logoutCommand(ctx: CliContext): CommandModule<GlobalArgs, LogoutArgs> {
  return {
    command: 'logout',
    describe: "Remove the profile's stored credentials from the config file",
    builder: (y) =>
      y
        .option('profile', {
          type: 'string',
          describe: 'Stored credential set [env AUDIENCE_KIT_PROFILE] (default: "default")',
        })
        .example(
          '$0 auth logout --profile sandbox',
          'Forget the credentials of profile "sandbox" (its base URLs stay)',
        ) as unknown as Argv<LogoutArgs>,
    handler: handle(ctx, async (args: LogoutArgs) => {
      const report = await inspectConnectionConfig({
        env: ctx.env,
        ...(args.profile === undefined ? {} : { profile: args.profile }),
      });
      const { file, removed } = await removeProfileCredentials({ env: ctx.env, profile: report.profile });
      const stillInEnv = setInEnvironment(report, [
        'consumerKey',
        'consumerSecret',
        'accessToken',
        'accessTokenSecret',
      ]);
      if (args.json === true) {
        writeJson(ctx, { profile: report.profile, config_file: file, removed, still_in_environment: stillInEnv });
        return;
      }
      writeLine(
        ctx.stdout,
        removed
          ? `removed the stored credentials of profile "${report.profile}" from ${file}`
          : `no credentials were stored for profile "${report.profile}" in ${file}`,
      );
      if (stillInEnv.length > 0) writeLine(ctx.stdout, `note: still set in the environment: ${stillInEnv.join(', ')}`);
    }),
  };
}

export function authCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return commandGroup({
    command: 'auth',
    describe: 'User credentials: login (PIN flow), status, logout',
    subcommands: [loginCommand(ctx), statusCommand(ctx), logoutCommand(ctx)] as unknown as Array<
      CommandModule<GlobalArgs, never>
    >,
    examples: [
      ['$0 auth login --profile work', 'Log in with the PIN flow and store the credentials under profile "work"'],
      ['$0 auth status --profile work', 'Check where each credential comes from'],
    ],
    exitCodes: {
      ok: 'ok',
      usage: 'usage, configuration, or no PIN entered (the login stays pending)',
      auth: 'consumer credentials or PIN refused',
      api: 'API/network failure',
    },
  });
}
