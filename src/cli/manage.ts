/**
 * Building blocks of the management commands (audiences, do-not-reach, permissions, targeted):
 * their options, paging, printing, owner-only refusals and targeting records; and the frame of
 * every command group (auth too), with the exit codes its commands use.
 */
import type { Argv, CommandModule } from 'yargs';
import { AuthError, ConfigError, HttpError, type ErrorCode, type HttpErrorInit } from '../errors.js';
import { ID_LIST_MAX, LIST_COUNT_MAX } from '../platform/batch.js';
import { listTargetedCampaigns } from '../api/endpoints.js';
import { paginate, type Page } from '../api/pagination.js';
import type { AdsClient } from '../api/client.js';
import type { TargetingRecord } from '../api/schemas.js';
import { parseWholeNumber, withClient, withConnectionOptions, type ConnectionArgs } from './connection.js';
import type { CliContext } from './context.js';
import {
  exitCodesEpilogue,
  handle,
  renderFields,
  renderTable,
  writeJson,
  writeLine,
  type Column,
  type ExitCodeName,
  type GlobalArgs,
} from './output.js';
import type { CliErrorCode } from './exit-codes.js';

// ---- Command groups ----

export interface CommandGroupSpec {
  command: string;
  describe: string;
  /** Each with a function builder: the group appends its epilogue to it. */
  subcommands: ReadonlyArray<CommandModule<GlobalArgs, never>>;
  examples: ReadonlyArray<readonly [command: string, description: string]>;
  /** What each exit code means for this group's commands. */
  exitCodes: Partial<Record<ExitCodeName, string>>;
}

function orList(words: readonly string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1) ?? ''}`;
}

/**
 * A command that only groups subcommands. Its exit codes go into the epilogue of the group's help
 * and of each subcommand's help (yargs drops the program's epilogue below the top level).
 */
export function commandGroup(spec: CommandGroupSpec): CommandModule<GlobalArgs, GlobalArgs> {
  const epilogue = exitCodesEpilogue(spec.exitCodes);
  const names = spec.subcommands.map((c) => String(c.command).split(' ')[0] ?? '');
  return {
    command: spec.command,
    describe: spec.describe,
    builder: (y) => {
      let group = y;
      for (const sub of spec.subcommands) {
        const build = sub.builder as (y: Argv<GlobalArgs>) => Argv<GlobalArgs>;
        group = group.command({
          ...sub,
          builder: (s: Argv<GlobalArgs>) => build(s).epilogue(epilogue),
        } as CommandModule<GlobalArgs, never>);
      }
      for (const [command, description] of spec.examples) group = group.example(command, description);
      return group.demandCommand(1, `Name a subcommand: ${orList(names)}.`).epilogue(epilogue);
    },
    handler: () => undefined,
  };
}

// ---- Options ----

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
  });
}

export interface AudienceArgs extends AccountArgs {
  audience: string;
}

export function withAudienceOption<T>(yargs: Argv<T>, describe = 'Custom audience id'): Argv<T & AudienceArgs> {
  return withAccountOption(yargs).option('audience', {
    type: 'string',
    demandOption: true,
    requiresArg: true,
    describe,
  });
}

export interface NameArgs {
  name?: string;
  description?: string;
}

/** `--name` (required to create, optional to update) and `--description`. */
export function withNameOptions<T>(yargs: Argv<T>, what: string, required: boolean): Argv<T & NameArgs> {
  return yargs
    .option('name', { type: 'string', demandOption: required, requiresArg: true, describe: `${what} name` })
    .option('description', { type: 'string', describe: 'Free-text description' }) as unknown as Argv<T & NameArgs>;
}

type CreateArgs = AccountArgs & NameArgs & { name: string };

/** `create --account ID --name N [--description D]`, alike for every named object of an account. */
export function createNamedCommand(
  ctx: CliContext,
  spec: {
    describe: string;
    /** Capitalized, for the --name help: `Audience`, `List`. */
    what: string;
    example: readonly [command: string, description: string];
    fields: readonly string[];
    create: (
      client: AdsClient,
      params: { accountId: string; name: string; description?: string },
    ) => Promise<Record<string, unknown>>;
  },
): CommandModule<GlobalArgs, CreateArgs> {
  return {
    command: 'create',
    describe: spec.describe,
    builder: (y) =>
      withNameOptions(withAccountOption(y), spec.what, true).example(...spec.example) as unknown as Argv<CreateArgs>,
    handler: handle(ctx, async (args: CreateArgs) => {
      const fields = nameFields(args);
      const created = await withClient(ctx, args, (client) =>
        spec.create(client, { accountId: args.account, name: args.name, ...fields }),
      );
      printObject(ctx, args, created, spec.fields);
    }),
  };
}

/** The name and description to send, an empty name refused here rather than by the platform. */
export function nameFields(args: NameArgs): { name?: string; description?: string } {
  if (args.name !== undefined && args.name.trim() === '') {
    throw new ConfigError('invalid_option', '--name must not be empty', {
      fix: 'pass a name, e.g. --name "CRM buyers"',
    });
  }
  return definedOnly({ name: args.name, description: args.description });
}

/**
 * Ids from repeated and/or comma-separated flag values, deduplicated, at most 200 (the
 * platform's bound), refused before anything is sent.
 */
export function parseIdList(
  values: ReadonlyArray<string | number> | string | undefined,
  option: string,
): string[] | undefined {
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

/** Drop undefined members, so optional flags map onto exact optional parameters. */
export function definedOnly<T extends Record<string, unknown>>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

// ---- Listing ----

export interface ListArgs {
  count?: string;
  cursor?: string;
  all?: boolean;
  withTotalCount?: boolean;
}

export function withListOptions<T>(yargs: Argv<T>): Argv<T & ListArgs> {
  return yargs
    .option('count', {
      type: 'string',
      requiresArg: true,
      describe: `Page size, 1 to ${LIST_COUNT_MAX} (platform default 200)`,
    })
    .option('cursor', { type: 'string', requiresArg: true, describe: 'Page cursor from a previous listing' })
    .option('all', { type: 'boolean', describe: 'Follow cursors until the last page' })
    .option('with-total-count', {
      type: 'boolean',
      describe: 'Ask for the total (not with --cursor; lower rate limit)',
    }) as unknown as Argv<T & ListArgs>;
}

export interface PageParams {
  count?: number;
  cursor?: string;
  withTotalCount?: true;
}

export interface ListResult<T> {
  data: T[];
  next_cursor: string | null;
  total_count?: number;
}

/**
 * Checks the paging flags before anything is sent and returns the lister: one page (`--cursor`)
 * or every page (`--all`). With --all the total is asked on the first page only, since the
 * platform refuses it together with a cursor.
 */
export function pagedLister(
  args: ListArgs,
): <T>(fetchPage: (page: PageParams) => Promise<Page<T>>) => Promise<ListResult<T>> {
  const count =
    args.count === undefined
      ? undefined
      : parseWholeNumber(
          args.count,
          '--count',
          1,
          LIST_COUNT_MAX,
          `pass --count between 1 and ${LIST_COUNT_MAX}, or --all to follow every page`,
        );
  if (args.withTotalCount === true && args.cursor !== undefined) {
    throw new ConfigError(
      'invalid_parameter',
      '--with-total-count cannot be combined with --cursor (the platform refuses it)',
      {
        fix: 'drop --with-total-count when paging with --cursor; the first page (no --cursor) carries the total',
      },
    );
  }
  const params = (cursor: string | undefined, first: boolean): PageParams => ({
    ...definedOnly({ count, cursor }),
    ...(first && args.withTotalCount === true ? { withTotalCount: true } : {}),
  });
  return async <T>(fetchPage: (page: PageParams) => Promise<Page<T>>): Promise<ListResult<T>> => {
    if (args.all !== true) {
      const page = await fetchPage(params(args.cursor, true));
      return withTotal({ data: page.data, next_cursor: page.next_cursor ?? null }, page.total_count);
    }
    let total: number | undefined;
    let first = true;
    const data: T[] = [];
    for await (const item of paginate<T>(async (cursor) => {
      const page = await fetchPage(params(cursor ?? (first ? args.cursor : undefined), first));
      if (first) total = page.total_count;
      first = false;
      return page;
    })) {
      data.push(item);
    }
    return withTotal({ data, next_cursor: null }, total);
  };
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

// ---- Platform refusals ----

/** The same platform failure under another class, code, message or fix; status, path and platform errors are kept. */
export function rephrase(
  error: HttpError,
  change: { as?: typeof HttpError; code?: ErrorCode | CliErrorCode; message?: string; fix: string },
): HttpError<ErrorCode | CliErrorCode> {
  const init: HttpErrorInit = {
    status: error.status,
    method: error.method,
    path: error.path,
    errors: error.errors,
    operationErrors: error.operationErrors,
    attempts: error.attempts,
    fix: change.fix,
    cause: error,
    ...definedOnly({
      apiWarn: error.apiWarn,
      requestId: error.requestId,
      bodyExcerpt: error.bodyExcerpt,
      problemType: error.problemType,
      problemStatus: error.problemStatus,
    }),
  };
  const As = change.as ?? HttpError;
  return new As<ErrorCode | CliErrorCode>(change.code ?? error.code, change.message ?? error.message, init);
}

/**
 * Codes of the platform's published error list ("Error codes and responses") that can refuse an
 * owner-only action: ACTION_NOT_ALLOWED (403), which the sandbox sends, and UNAUTHORIZED_ACCESS.
 * Any other code keeps its own message: UNAUTHORIZED_CLIENT_APPLICATION (the account is not the
 * user's), or INSUFFICIENT_USER_AUTHORIZED_PERMISSION (not in the list; seen when the user's token
 * lacks write access, which the owner lookup would not fix).
 */
const OWNER_REFUSAL_CODES: ReadonlySet<string> = new Set(['ACTION_NOT_ALLOWED', 'UNAUTHORIZED_ACCESS']);

/**
 * A 403 on an owner-only action (update, delete, grant, revoke), with a documented permission code
 * or with no code at all, means the account is not the audience's owner, even with a READ_WRITE
 * grant: say so, and how to find the owner. `action` completes "only the audience's owner account can ...".
 */
export async function ownerOnly<T>(args: AudienceArgs, action: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof HttpError && error.status === 403)) throw error;
    const refused = error as HttpError;
    if (!isOwnerRefusal(refused)) throw error;
    throw rephrase(refused, {
      as: AuthError,
      code: 'audience_owner_only',
      message: `only the audience's owner account can ${action}, and account ${args.account} does not own audience ${args.audience}`,
      fix: `find the owner with \`audience-kit audiences get --account ${args.account} --audience ${args.audience}\` (owner_account_id; is_owner false here) and repeat with --account <owner_account_id>`,
    });
  }
}

function isOwnerRefusal(error: HttpError): boolean {
  return error.errors.length === 0 || error.errors.some((e) => OWNER_REFUSAL_CODES.has(String(e.code)));
}

// ---- Targeting ----

/** Every targeting record of the audience, all pages; `withActive` false includes non-servable line items. */
export async function allTargetingRecords(
  client: AdsClient,
  accountId: string,
  customAudienceId: string,
  withActive: boolean,
): Promise<TargetingRecord[]> {
  const records: TargetingRecord[] = [];
  for await (const record of paginate((cursor) =>
    listTargetedCampaigns(client, { accountId, customAudienceId, withActive, ...definedOnly({ cursor }) }),
  )) {
    records.push(record);
  }
  return records;
}

/** Line items by campaign as a table with a count line, or the one line saying there are none. */
export function renderTargeting(records: readonly TargetingRecord[], audienceId: string, activeOnly: boolean): string {
  const rows = records.flatMap((campaign) => campaign.line_items.map((lineItem) => ({ campaign, lineItem })));
  if (rows.length === 0) return `no ${activeOnly ? 'active ' : ''}line items target audience ${audienceId}`;
  const table = renderTable(rows, [
    { header: 'CAMPAIGN', value: (r) => r.campaign.campaign_id },
    { header: 'CAMPAIGN NAME', value: (r) => r.campaign.campaign_name },
    { header: 'LINE ITEM', value: (r) => r.lineItem.id },
    { header: 'LINE ITEM NAME', value: (r) => r.lineItem.name },
    { header: 'SERVABLE', value: (r) => r.lineItem.servable },
  ]);
  const servable = rows.filter((r) => r.lineItem.servable).length;
  return `${table}\n${records.length} campaign(s), ${rows.length} line item(s), ${servable} servable`;
}
