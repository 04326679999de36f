import type { Argv, CommandModule } from 'yargs';
import { ConfigError, ConnectionError, HttpError } from '../../errors.js';
import {
  createCustomAudience,
  deleteCustomAudience,
  getCustomAudience,
  listCustomAudiences,
  updateCustomAudience,
  type PermissionScope,
} from '../../api/endpoints.js';
import { isRetryableStatus, type AdsClient } from '../../api/client.js';
import { sleep } from '../../util/clock.js';
import type { CustomAudience } from '../../platform/responses.js';
import { parseDuration, withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import { confirmDeletion, withYesOption, type YesArgs } from '../prompt.js';
import {
  allTargetingRecords,
  commandGroup,
  createNamedCommand,
  definedOnly,
  nameFields,
  ownerOnly,
  pagedLister,
  parseIdList,
  printList,
  printObject,
  renderTargeting,
  rephrase,
  withAccountOption,
  withAudienceOption,
  withListOptions,
  withNameOptions,
  type AccountArgs,
  type AudienceArgs,
  type ListArgs,
  type ListResult,
  type NameArgs,
} from '../manage.js';
import { handle, writeJson, writeLine, type Column, type GlobalArgs } from '../output.js';
import { type CliErrorCode, EXIT_CODES, type ExitCode } from '../exit-codes.js';

const AUDIENCE_FIELDS = [
  'id',
  'name',
  'description',
  'audience_type',
  'audience_size',
  'targetable',
  'reasons_not_targetable',
  'is_owner',
  'owner_account_id',
  'permission_level',
  'created_at',
  'updated_at',
  'deleted',
] as const;

const AUDIENCE_COLUMNS: readonly Column<CustomAudience>[] = [
  { header: 'ID', value: (a) => a.id },
  { header: 'NAME', value: (a) => a.name },
  { header: 'SIZE', value: (a) => a.audience_size ?? null, align: 'right' },
  { header: 'TARGETABLE', value: (a) => a.targetable },
  { header: 'REASONS', value: (a) => (a.reasons_not_targetable ?? []).join(',') || null },
  { header: 'OWNER', value: (a) => (a.is_owner === true ? 'this account' : (a.owner_account_id ?? null)) },
  { header: 'UPDATED', value: (a) => a.updated_at ?? null },
];
const DELETED_COLUMN: Column<CustomAudience> = { header: 'DELETED', value: (a) => a.deleted ?? false };

interface AudienceListArgs extends AccountArgs, ListArgs {
  query?: string;
  withDeleted?: boolean;
  ids?: string[];
  scope: 'owned' | 'shared' | 'all';
  sortBy?: string;
}

const SCOPES: Readonly<Record<AudienceListArgs['scope'], readonly PermissionScope[]>> = {
  owned: ['OWNER'],
  shared: ['SHARED'],
  // No documented value means both: two listings, each followed to its last page.
  all: ['OWNER', 'SHARED'],
};

/** `--scope all` is two listings: a cursor belongs to one of them, so every page of both is read. */
function scopeListArgs(args: AudienceListArgs): AudienceListArgs {
  if (args.scope !== 'all') return args;
  if (args.cursor !== undefined) {
    throw new ConfigError('invalid_parameter', '--cursor cannot be combined with --scope all', {
      fix: 'page one scope at a time (--scope owned or --scope shared) with --cursor, or drop --cursor',
    });
  }
  return { ...args, all: true };
}

/** One listing per scope, as one: every page was read when there are several (scopeListArgs). */
function mergeLists<T>(parts: readonly ListResult<T>[]): ListResult<T> {
  if (parts.length === 1 && parts[0] !== undefined) return parts[0];
  const totals = parts.map((p) => p.total_count);
  return {
    data: parts.flatMap((p) => p.data),
    next_cursor: null,
    ...(totals.every((t) => t !== undefined) ? { total_count: totals.reduce((a, b) => a + b, 0) } : {}),
  };
}

function listCommand(ctx: CliContext): CommandModule<GlobalArgs, AudienceListArgs> {
  return {
    command: 'list',
    describe: 'List the custom audiences of an account',
    builder: (y) =>
      withListOptions(withAccountOption(y))
        .option('query', { type: 'string', describe: 'Name prefix (case-insensitive)' })
        .option('with-deleted', { type: 'boolean', describe: 'Include deleted audiences (adds a DELETED column)' })
        .option('ids', {
          type: 'string',
          array: true,
          describe: 'Only these audience ids (comma-separated or repeated, up to 200)',
        })
        .option('scope', {
          choices: ['owned', 'shared', 'all'] as const,
          default: 'owned' as const,
          describe:
            "The platform's permission_scope: the account's own audiences, those other accounts shared with it, or both (all pages)",
        })
        .option('sort-by', {
          type: 'string',
          requiresArg: true,
          describe: 'field-asc or field-desc, e.g. created_at-desc, name-asc',
        })
        .example('$0 audiences list --account 18ce54d4x5t', 'First page as a table')
        .example('$0 audiences list --account 18ce54d4x5t --scope shared', 'Audiences other accounts shared with it')
        .example(
          '$0 audiences list --account 18ce54d4x5t --query crm- --all --json',
          'Every audience named crm-*, as JSON',
        ) as unknown as Argv<AudienceListArgs>,
    handler: handle(ctx, async (args: AudienceListArgs) => {
      const list = pagedLister(scopeListArgs(args));
      const ids = parseIdList(args.ids, '--ids');
      const filters = definedOnly({
        q: args.query,
        withDeleted: args.withDeleted,
        customAudienceIds: ids,
        sortBy: args.sortBy,
      });
      const result = await withClient(ctx, args, async (client) => {
        const parts: ListResult<CustomAudience>[] = [];
        for (const permissionScope of SCOPES[args.scope]) {
          parts.push(
            await list((page) =>
              listCustomAudiences(client, { accountId: args.account, permissionScope, ...filters, ...page }),
            ),
          );
        }
        return mergeLists(parts);
      });
      const columns = args.withDeleted === true ? [...AUDIENCE_COLUMNS, DELETED_COLUMN] : AUDIENCE_COLUMNS;
      printList(ctx, args, result, columns, 'custom audiences');
    }),
  };
}

interface GetArgs extends AudienceArgs {
  withDeleted?: boolean;
}

function getCommand(ctx: CliContext): CommandModule<GlobalArgs, GetArgs> {
  return {
    command: 'get',
    describe: 'Show one audience: size, targetable and why not, owner',
    builder: (y) =>
      withAudienceOption(y)
        .option('with-deleted', { type: 'boolean', describe: 'Show the audience even if it is deleted' })
        .example(
          '$0 audiences get --account 18ce54d4x5t --audience 1nmth',
          'Size, targetable, reasons_not_targetable, owner_account_id',
        ),
    handler: handle(ctx, async (args: GetArgs) => {
      const audience = await withClient(ctx, args, (client) =>
        getCustomAudience(client, {
          accountId: args.account,
          customAudienceId: args.audience,
          ...definedOnly({ withDeleted: args.withDeleted }),
        }).catch((error: unknown) => {
          // The platform answers 404 for a deleted audience unless with_deleted=true is sent.
          if (!(error instanceof HttpError && error.status === 404 && args.withDeleted !== true)) throw error;
          throw rephrase(error as HttpError, {
            fix: `check the account and audience ids; a deleted audience shows only with \`audience-kit audiences get --account ${args.account} --audience ${args.audience} --with-deleted\``,
          });
        }),
      );
      printObject(ctx, args, audience, AUDIENCE_FIELDS);
    }),
  };
}

type UpdateArgs = AudienceArgs & NameArgs;

function updateCommand(ctx: CliContext): CommandModule<GlobalArgs, UpdateArgs> {
  return {
    command: 'update',
    describe: "Change an audience's name or description (owner account only)",
    builder: (y) =>
      withNameOptions(withAudienceOption(y), 'New', false).example(
        '$0 audiences update --account 18ce54d4x5t --audience 1nmth --name "CRM buyers"',
        'Rename',
      ),
    handler: handle(ctx, async (args: UpdateArgs) => {
      const fields = nameFields(args);
      if (Object.keys(fields).length === 0) {
        throw new ConfigError('invalid_option', 'nothing to update', { fix: 'pass --name and/or --description' });
      }
      const audience = await withClient(ctx, args, (client) =>
        ownerOnly(args, 'update it', () =>
          updateCustomAudience(client, { accountId: args.account, customAudienceId: args.audience, ...fields }),
        ),
      );
      printObject(ctx, args, audience, AUDIENCE_FIELDS);
    }),
  };
}

interface DeleteArgs extends AudienceArgs, YesArgs {
  force?: boolean;
}

function deleteCommand(ctx: CliContext): CommandModule<GlobalArgs, DeleteArgs> {
  return {
    command: 'delete',
    describe:
      'Delete an audience (owner account only); lists the campaigns using it first and refuses while a line item is active',
    builder: (y) =>
      withYesOption(withAudienceOption(y))
        .option('force', { type: 'boolean', describe: 'Delete even while active line items target the audience' })
        .example(
          '$0 audiences delete --account 18ce54d4x5t --audience 1nmth',
          'Asks first on a terminal; refused (exit 2) while a servable line item uses it',
        )
        .example('$0 audiences delete --account 18ce54d4x5t --audience 1nmth --yes', 'In a script: no question')
        .example(
          '$0 audiences delete --account 18ce54d4x5t --audience 1nmth --force',
          'Delete anyway; the campaigns are still listed',
        ) as unknown as Argv<DeleteArgs>,
    handler: handle(ctx, async (args: DeleteArgs) => {
      const ids = { accountId: args.account, customAudienceId: args.audience };
      const deleted = await withClient(ctx, args, async (client) => {
        // with_deleted: without it a deleted audience is a 404, not the "already deleted" it is.
        const audience = await getCustomAudience(client, { ...ids, withDeleted: true });
        if (audience.deleted === true) {
          throw new ConfigError<CliErrorCode>(
            'audience_already_deleted',
            `audience ${args.audience} is already deleted`,
            {
              fix: `nothing to do; deleted audiences show with \`audience-kit audiences list --account ${args.account} --with-deleted\``,
            },
          );
        }
        const records = await allTargetingRecords(client, args.account, args.audience, false);
        writeLine(ctx.stderr, renderTargeting(records, args.audience, false));
        const active = records.filter((r) => r.line_items.some((li) => li.servable));
        if (active.length > 0 && args.force !== true) {
          const lineItems = active.reduce((n, r) => n + r.line_items.filter((li) => li.servable).length, 0);
          throw new ConfigError<CliErrorCode>(
            'audience_in_use',
            `audience ${args.audience} is targeted by ${lineItems} active line item(s) in ${active.length} campaign(s) (listed above); not deleted`,
            { fix: 'pause or retarget those line items, or pass --force to delete it anyway' },
          );
        }
        const size =
          audience.audience_size === undefined || audience.audience_size === null
            ? ''
            : `, size ${audience.audience_size}`;
        await confirmDeletion(ctx, args, `audience ${args.audience} ${JSON.stringify(audience.name)}${size}`);
        return ownerOnly(args, 'delete it', () => deleteCustomAudience(client, ids));
      });
      printObject(ctx, args, deleted, AUDIENCE_FIELDS);
    }),
  };
}

interface WaitArgs extends AudienceArgs {
  timeout: string;
  pollInterval: string;
}

/** Poll intervals grow by this factor up to MAX_POLL_MS: quick when processing is short, cheap when long. */
const POLL_BACKOFF = 1.5;
const MAX_POLL_MS = 60_000;

/** Failures a later poll may not meet: the wait goes on through them. */
function isTransient(error: unknown): boolean {
  return error instanceof ConnectionError || (error instanceof HttpError && isRetryableStatus(error.status));
}

/** Why waiting longer cannot make the audience targetable, if so. */
function hopeless(audience: CustomAudience): 'deleted' | 'too_small' | undefined {
  if (audience.deleted === true) return 'deleted';
  const reasons = audience.reasons_not_targetable ?? [];
  // Matching (PROCESSING) is what changes the size by itself; without it, TOO_SMALL stays until more users are uploaded.
  if (reasons.includes('TOO_SMALL') && !reasons.includes('PROCESSING')) return 'too_small';
  return undefined;
}

interface WaitOutcome {
  stop: 'targetable' | 'timeout' | 'deleted' | 'too_small';
  /** The last audience read, if any poll succeeded. */
  audience: CustomAudience | undefined;
  /** The last poll's transient failure, if it failed. */
  lastError: string | undefined;
  polls: number;
}

/** Polls with growing intervals, telling stderr when the state changes. */
async function pollUntilTargetable(
  ctx: CliContext,
  client: AdsClient,
  args: WaitArgs,
  timing: { timeoutMs: number; firstIntervalMs: number },
): Promise<WaitOutcome> {
  const started = Date.now();
  let intervalMs = timing.firstIntervalMs;
  let audience: CustomAudience | undefined;
  let lastError: string | undefined;
  let lastState = '';
  for (let polls = 1; ; polls += 1) {
    let state: string;
    try {
      audience = await getCustomAudience(client, {
        accountId: args.account,
        customAudienceId: args.audience,
        withDeleted: true,
      });
      lastError = undefined;
      const stop = audience.targetable === true ? 'targetable' : hopeless(audience);
      if (stop !== undefined) return { stop, audience, lastError, polls };
      state = `audience ${audience.id} not targetable yet (${describeReasons(audience)}; size ${audience.audience_size ?? '-'})`;
    } catch (error) {
      if (!isTransient(error)) throw error;
      lastError = error instanceof Error ? error.message : String(error);
      state = `poll failed, trying again: ${lastError}`;
    }
    if (state !== lastState) writeLine(ctx.stderr, `waiting: ${state}`);
    lastState = state;
    const remainingMs = timing.timeoutMs - (Date.now() - started);
    if (remainingMs <= 0) return { stop: 'timeout', audience, lastError, polls };
    await sleep(Math.min(intervalMs, remainingMs));
    intervalMs = Math.min(intervalMs * POLL_BACKOFF, Math.max(MAX_POLL_MS, intervalMs));
  }
}

function waitCommand(ctx: CliContext): CommandModule<GlobalArgs, WaitArgs> {
  return {
    command: 'wait',
    describe: 'Poll until the audience is targetable; stops early when waiting cannot help (TOO_SMALL, deleted)',
    builder: (y) =>
      withAudienceOption(y)
        .option('timeout', { type: 'string', default: '30m', describe: 'Give up after this long: 90s, 30m, 1h' })
        .option('poll-interval', {
          type: 'string',
          default: '5s',
          hidden: true,
          describe: 'First poll interval (grows 1.5x up to 60s)',
        })
        .example(
          '$0 audiences wait --account 18ce54d4x5t --audience 1nmth --timeout 1h',
          'Block a pipeline until the audience can be targeted',
        )
        .example(
          '$0 audiences wait --account 18ce54d4x5t --audience 1nmth --json',
          'One JSON document: targetable, timed_out, stop_reason',
        ) as unknown as Argv<WaitArgs>,
    handler: handle(ctx, async (args: WaitArgs) => {
      const timing = {
        timeoutMs: parseDuration(args.timeout, '--timeout'),
        firstIntervalMs: parseDuration(args.pollInterval, '--poll-interval'),
      };
      const started = Date.now();
      const outcome = await withClient(ctx, args, (client) => pollUntilTargetable(ctx, client, args, timing));
      const waitedMs = Date.now() - started;
      printWaitOutcome(ctx, args, outcome, waitedMs);
      return waitExitCode(ctx, args, outcome, waitedMs);
    }),
  };
}

/** The outcome on stdout: one JSON document, or the line of a targetable audience. */
function printWaitOutcome(ctx: CliContext, args: WaitArgs, o: WaitOutcome, waitedMs: number): void {
  const { stop, audience } = o;
  if (args.json === true) {
    writeJson(ctx, {
      audience: audience ?? null,
      targetable: stop === 'targetable',
      timed_out: stop === 'timeout',
      stop_reason: stop === 'deleted' || stop === 'too_small' ? stop : null,
      last_error: o.lastError ?? null,
      waited_ms: waitedMs,
      polls: o.polls,
    });
  } else if (stop === 'targetable') {
    writeLine(
      ctx.stdout,
      `audience ${args.audience} is targetable (size ${audience?.audience_size ?? '-'}, waited ${formatMs(waitedMs)})`,
    );
  }
}

/** Why the wait did not end targetable (stderr), and the exit code: timeout 7, waiting cannot help 2. */
function waitExitCode(ctx: CliContext, args: WaitArgs, o: WaitOutcome, waitedMs: number): ExitCode {
  const { stop, audience, lastError } = o;
  if (stop === 'targetable') return EXIT_CODES.ok;
  if (stop === 'timeout') {
    const reasons = audience?.reasons_not_targetable ?? [];
    const why = lastError === undefined ? describeReasons(audience) : `the last poll failed: ${lastError}`;
    writeLine(
      ctx.stderr,
      `error: audience ${args.audience} is still not targetable after ${formatMs(waitedMs)}: ${why}`,
    );
    writeLine(
      ctx.stderr,
      `  fix: ${lastError === undefined ? fixForReasons(reasons) : 'check the platform status and the connection, then wait again'}`,
    );
    return EXIT_CODES.timeout;
  }
  if (stop === 'deleted') {
    writeLine(ctx.stderr, `error: audience ${args.audience} is deleted, so it will never be targetable`);
    writeLine(ctx.stderr, '  fix: create a new audience (`audience-kit audiences create`) and upload users into it');
  } else {
    writeLine(
      ctx.stderr,
      `error: audience ${args.audience} is TOO_SMALL and not PROCESSING (size ${audience?.audience_size ?? '-'}): waiting cannot make it targetable`,
    );
    writeLine(ctx.stderr, `  fix: ${fixForReasons(['TOO_SMALL'])}`);
  }
  return EXIT_CODES.usage;
}

function describeReasons(audience: CustomAudience | undefined): string {
  return (audience?.reasons_not_targetable ?? []).join(', ') || 'no reason given';
}

function fixForReasons(reasons: readonly string[]): string {
  const fixes: string[] = [];
  if (reasons.includes('TOO_SMALL')) fixes.push('TOO_SMALL: upload more matched users (at least 100), then wait again');
  if (reasons.includes('PROCESSING')) fixes.push('PROCESSING: the platform is still matching; wait longer (--timeout)');
  return fixes.length > 0
    ? fixes.join('; ')
    : 'check the audience with `audience-kit audiences get` and wait longer (--timeout)';
}

function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

export function audiencesCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return commandGroup({
    command: 'audiences',
    describe: 'Custom audiences: list, get, create, update, delete, wait until targetable',
    subcommands: [
      listCommand(ctx),
      getCommand(ctx),
      createNamedCommand(ctx, {
        describe: 'Create an empty custom audience (then `upload` users into it)',
        what: 'Audience',
        example: ['$0 audiences create --account 18ce54d4x5t --name "CRM buyers 2025"', 'Prints the new audience id'],
        fields: AUDIENCE_FIELDS,
        create: createCustomAudience,
      }),
      updateCommand(ctx),
      deleteCommand(ctx),
      waitCommand(ctx),
    ] as unknown as Array<CommandModule<GlobalArgs, never>>,
    examples: [
      [
        '$0 audiences create --account 18ce54d4x5t --name "CRM buyers"',
        'Create an audience, then `upload` users into it',
      ],
      ['$0 audiences wait --account 18ce54d4x5t --audience 1nmth --timeout 30m', 'Wait until it can be targeted'],
    ],
    exitCodes: {
      ok: 'ok',
      usage: 'usage, delete refused (in use, already deleted) or wait stopped (TOO_SMALL, deleted)',
      auth: 'credentials refused or not the owner account',
      api: 'API/network failure',
      timeout: 'wait timed out',
    },
  });
}
