import type { Argv, CommandModule } from 'yargs';
import {
  ConfigError,
  createCustomAudience,
  deleteCustomAudience,
  EXIT_CODES,
  getCustomAudience,
  listCustomAudiences,
  listTargetedCampaigns,
  updateCustomAudience,
  type AdsClient,
  type CustomAudience,
  type TargetingRecord,
} from '../../index.js';
import {
  checkCount,
  definedOnly,
  listPages,
  parseDuration,
  parseIdList,
  printList,
  printObject,
  withAccountOption,
  withClient,
  type AccountArgs,
} from '../connection.js';
import type { CliContext } from '../context.js';
import { handle, writeJson, writeLine, type Column, type GlobalArgs } from '../output.js';

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

interface AudienceArgs extends AccountArgs {
  audience: string;
}

function withAudienceOption<T>(y: Argv<T>): Argv<T & AudienceArgs> {
  return withAccountOption(y).option('audience', {
    type: 'string',
    demandOption: true,
    requiresArg: true,
    describe: 'Custom audience id',
  }) as unknown as Argv<T & AudienceArgs>;
}

interface ListArgs extends AccountArgs {
  query?: string;
  count?: number;
  cursor?: string;
  all?: boolean;
  withDeleted?: boolean;
  withTotalCount?: boolean;
  ids?: string[];
}

function listCommand(ctx: CliContext): CommandModule<GlobalArgs, ListArgs> {
  return {
    command: 'list',
    describe: 'List the custom audiences of an account',
    builder: (y) =>
      withAccountOption(y)
        .option('query', { type: 'string', describe: 'Name prefix (case-insensitive)' })
        .option('count', { type: 'number', describe: 'Page size, 1 to 1000 (platform default 200)' })
        .option('cursor', { type: 'string', describe: 'Page cursor from a previous listing' })
        .option('all', { type: 'boolean', describe: 'Follow cursors until the last page' })
        .option('with-deleted', { type: 'boolean', describe: 'Include deleted audiences' })
        .option('with-total-count', { type: 'boolean', describe: 'Ask for the total (not with --cursor; lower rate limit)' })
        .option('ids', { type: 'string', array: true, describe: 'Only these audience ids (comma-separated or repeated, up to 200)' })
        .example('$0 audiences list --account 18ce54d4x5t', 'First page as a table')
        .example('$0 audiences list --account 18ce54d4x5t --query crm- --all --json', 'Every audience named crm-*, as JSON') as unknown as Argv<ListArgs>,
    handler: handle(ctx, async (args: ListArgs) => {
      const count = checkCount(args.count);
      const ids = parseIdList(args.ids, '--ids');
      const result = await withClient(ctx, args, (client) =>
        listPages<CustomAudience>(
          (cursor, withTotalCount) =>
            listCustomAudiences(client, {
              accountId: args.account,
              ...definedOnly({ q: args.query, count, cursor, withDeleted: args.withDeleted, customAudienceIds: ids }),
              ...(withTotalCount ? { withTotalCount } : {}),
            }),
          { all: args.all === true, cursor: args.cursor, withTotalCount: args.withTotalCount },
        ),
      );
      printList(ctx, args, result, AUDIENCE_COLUMNS, 'custom audiences');
    }),
  };
}

function getCommand(ctx: CliContext): CommandModule<GlobalArgs, AudienceArgs> {
  return {
    command: 'get',
    describe: 'Show one audience: size, targetable and why not, owner',
    builder: (y) =>
      withAudienceOption(y).example(
        '$0 audiences get --account 18ce54d4x5t --audience 1nmth',
        'Size, targetable, reasons_not_targetable, owner_account_id',
      ) as unknown as Argv<AudienceArgs>,
    handler: handle(ctx, async (args: AudienceArgs) => {
      const audience = await withClient(ctx, args, (client) =>
        getCustomAudience(client, { accountId: args.account, customAudienceId: args.audience }),
      );
      printObject(ctx, args, audience, AUDIENCE_FIELDS);
    }),
  };
}

interface CreateArgs extends AccountArgs {
  name: string;
  description?: string;
}

function createCommand(ctx: CliContext): CommandModule<GlobalArgs, CreateArgs> {
  return {
    command: 'create',
    describe: 'Create an empty custom audience (then `upload` users into it)',
    builder: (y) =>
      withAccountOption(y)
        .option('name', { type: 'string', demandOption: true, requiresArg: true, describe: 'Audience name' })
        .option('description', { type: 'string', describe: 'Free-text description' })
        .example('$0 audiences create --account 18ce54d4x5t --name "CRM buyers 2025"', 'Prints the new audience id') as unknown as Argv<CreateArgs>,
    handler: handle(ctx, async (args: CreateArgs) => {
      const audience = await withClient(ctx, args, (client) =>
        createCustomAudience(client, {
          accountId: args.account,
          name: args.name,
          ...definedOnly({ description: args.description }),
        }),
      );
      printObject(ctx, args, audience, AUDIENCE_FIELDS);
    }),
  };
}

interface UpdateArgs extends AudienceArgs {
  name?: string;
  description?: string;
}

function updateCommand(ctx: CliContext): CommandModule<GlobalArgs, UpdateArgs> {
  return {
    command: 'update',
    describe: "Change an audience's name or description",
    builder: (y) =>
      withAudienceOption(y)
        .option('name', { type: 'string', requiresArg: true, describe: 'New name' })
        .option('description', { type: 'string', describe: 'New description' })
        .example('$0 audiences update --account 18ce54d4x5t --audience 1nmth --name "CRM buyers"', 'Rename') as unknown as Argv<UpdateArgs>,
    handler: handle(ctx, async (args: UpdateArgs) => {
      if (args.name === undefined && args.description === undefined) {
        throw new ConfigError('invalid_option', 'nothing to update', { fix: 'pass --name and/or --description' });
      }
      const audience = await withClient(ctx, args, (client) =>
        updateCustomAudience(client, {
          accountId: args.account,
          customAudienceId: args.audience,
          ...definedOnly({ name: args.name, description: args.description }),
        }),
      );
      printObject(ctx, args, audience, AUDIENCE_FIELDS);
    }),
  };
}

interface DeleteArgs extends AudienceArgs {
  force?: boolean;
}

/** Every targeting record of the audience, all pages. */
export async function allTargetingRecords(
  client: AdsClient,
  accountId: string,
  customAudienceId: string,
  withActive: boolean,
): Promise<TargetingRecord[]> {
  const { data } = await listPages<TargetingRecord>(
    (cursor) => listTargetedCampaigns(client, { accountId, customAudienceId, withActive, ...definedOnly({ cursor }) }),
    { all: true },
  );
  return data;
}

function deleteCommand(ctx: CliContext): CommandModule<GlobalArgs, DeleteArgs> {
  return {
    command: 'delete',
    describe: 'Delete an audience, refusing while an active line item targets it',
    builder: (y) =>
      withAudienceOption(y)
        .option('force', {
          type: 'boolean',
          describe: 'Delete even if active line items target the audience (skips the campaign check)',
        })
        .example('$0 audiences delete --account 18ce54d4x5t --audience 1nmth', 'Refused (exit 2) while a servable line item uses it')
        .example('$0 targeted --account 18ce54d4x5t --audience 1nmth', 'See which campaigns use it first') as unknown as Argv<DeleteArgs>,
    handler: handle(ctx, async (args: DeleteArgs) => {
      const deleted = await withClient(ctx, args, async (client) => {
        if (args.force !== true) {
          const records = await allTargetingRecords(client, args.account, args.audience, true);
          const active = records
            .map((r) => ({ campaign: r, lineItems: r.line_items.filter((li) => li.servable) }))
            .filter((r) => r.lineItems.length > 0);
          if (active.length > 0) {
            const lineItems = active.reduce((n, r) => n + r.lineItems.length, 0);
            const names = active
              .slice(0, 3)
              .map((r) => `${r.campaign.campaign_id} "${r.campaign.campaign_name}"`)
              .join(', ');
            const more = active.length > 3 ? ` and ${active.length - 3} more` : '';
            throw new ConfigError(
              'audience_in_use',
              `audience ${args.audience} is targeted by ${lineItems} active line item(s) in ${active.length} campaign(s): ${names}${more}; not deleted`,
              {
                fix: `pause or retarget those line items (list them: audience-kit targeted --account ${args.account} --audience ${args.audience}), or pass --force`,
              },
            );
          }
        }
        return deleteCustomAudience(client, { accountId: args.account, customAudienceId: args.audience });
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

function waitCommand(ctx: CliContext): CommandModule<GlobalArgs, WaitArgs> {
  return {
    command: 'wait',
    describe: 'Poll until the audience is targetable (exit 7 on timeout, with the last reasons)',
    builder: (y) =>
      withAudienceOption(y)
        .option('timeout', { type: 'string', default: '30m', describe: 'Give up after this long: 90s, 30m, 1h' })
        .option('poll-interval', { type: 'string', default: '5s', hidden: true, describe: 'First poll interval (grows 1.5x up to 60s)' })
        .example('$0 audiences wait --account 18ce54d4x5t --audience 1nmth --timeout 1h', 'Block a pipeline until the audience can be targeted') as unknown as Argv<WaitArgs>,
    handler: handle(ctx, async (args: WaitArgs) => {
      const timeoutMs = parseDuration(args.timeout, '--timeout');
      let intervalMs = parseDuration(args.pollInterval, '--poll-interval');
      const started = Date.now();
      let polls = 0;
      let lastState = '';
      const outcome = await withClient(ctx, args, async (client) => {
        for (;;) {
          const audience = await getCustomAudience(client, { accountId: args.account, customAudienceId: args.audience });
          polls += 1;
          const waitedMs = Date.now() - started;
          if (audience.targetable === true) return { audience, timedOut: false, waitedMs };
          const reasons = (audience.reasons_not_targetable ?? []).join(', ') || 'no reason given';
          const state = `${reasons}|${audience.audience_size ?? '-'}`;
          if (state !== lastState) {
            writeLine(ctx.stderr, `waiting: audience ${audience.id} not targetable yet (${reasons}; size ${audience.audience_size ?? '-'})`);
            lastState = state;
          }
          const remainingMs = timeoutMs - waitedMs;
          if (remainingMs <= 0) return { audience, timedOut: true, waitedMs };
          await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, remainingMs)));
          intervalMs = Math.min(intervalMs * POLL_BACKOFF, Math.max(MAX_POLL_MS, intervalMs));
        }
      });
      const { audience, timedOut, waitedMs } = outcome;
      if (args.json === true) {
        writeJson(ctx, { audience, targetable: audience.targetable === true, timed_out: timedOut, waited_ms: waitedMs, polls });
      } else if (!timedOut) {
        writeLine(ctx.stdout, `audience ${audience.id} is targetable (size ${audience.audience_size ?? '-'}, waited ${formatMs(waitedMs)})`);
      }
      if (!timedOut) return EXIT_CODES.ok;
      const reasons = audience.reasons_not_targetable ?? [];
      writeLine(
        ctx.stderr,
        `error: audience ${audience.id} is still not targetable after ${formatMs(waitedMs)}: ${reasons.join(', ') || 'no reason given'}`,
      );
      writeLine(ctx.stderr, `  fix: ${fixForReasons(reasons)}`);
      return EXIT_CODES.timeout;
    }),
  };
}

function fixForReasons(reasons: readonly string[]): string {
  const fixes: string[] = [];
  if (reasons.includes('TOO_SMALL')) fixes.push('TOO_SMALL: upload more matched users (at least 100)');
  if (reasons.includes('PROCESSING')) fixes.push('PROCESSING: the platform is still matching; wait longer (--timeout)');
  return fixes.length > 0 ? fixes.join('; ') : 'check the audience with `audience-kit audiences get` and wait longer (--timeout)';
}

function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

export function audiencesCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'audiences',
    describe: 'Custom audiences: list, get, create, update, delete, wait until targetable',
    builder: (y) =>
      y
        .command(listCommand(ctx))
        .command(getCommand(ctx))
        .command(createCommand(ctx))
        .command(updateCommand(ctx))
        .command(deleteCommand(ctx))
        .command(waitCommand(ctx))
        .demandCommand(1, 'Name a subcommand: list, get, create, update, delete or wait.')
        .example('$0 audiences create --account 18ce54d4x5t --name "CRM buyers"', '')
        .example('$0 audiences wait --account 18ce54d4x5t --audience 1nmth --timeout 30m', '') as Argv<GlobalArgs>,
    handler: () => undefined,
  };
}
