import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import { createDoNotReachList, deleteDoNotReachList, listDoNotReachLists } from '../../api/endpoints.js';
import type { DoNotReachList } from '../../platform/responses.js';
import { withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import { confirmDeletion, withYesOption, type YesArgs } from '../prompt.js';
import { commandGroup, definedOnly, printList, printObject, withAccountOption, type AccountArgs } from '../manage.js';
import { handle, type Column, type GlobalArgs } from '../output.js';
import type { CliErrorCode } from '../exit-codes.js';

const LIST_FIELDS = [
  'id',
  'name',
  'description',
  'list_size',
  'targetable',
  'reasons_not_targetable',
  'created_at',
  'updated_at',
  'deleted',
] as const;

const LIST_COLUMNS: readonly Column<DoNotReachList>[] = [
  { header: 'ID', value: (l) => l.id },
  { header: 'NAME', value: (l) => l.name },
  { header: 'SIZE', value: (l) => l.list_size ?? null, align: 'right' },
  { header: 'TARGETABLE', value: (l) => l.targetable },
  { header: 'REASONS', value: (l) => (l.reasons_not_targetable ?? []).join(',') || null },
  { header: 'UPDATED', value: (l) => l.updated_at ?? null },
];

interface DnrListArgs extends AccountArgs {
  withDeleted?: boolean;
}

// The platform documents only `with_deleted` for this listing: an account holds at most one list.
function listCommand(ctx: CliContext): CommandModule<GlobalArgs, DnrListArgs> {
  return {
    command: 'list',
    describe: 'Show the do-not-reach list of an account (an account holds at most one)',
    builder: (y) =>
      withAccountOption(y)
        .option('with-deleted', { type: 'boolean', describe: 'Include deleted lists' })
        .example('$0 do-not-reach list --account 18ce54d4x5t', 'The list, as a table')
        .example('$0 do-not-reach list --account 18ce54d4x5t --with-deleted --json', 'Deleted lists too, as JSON'),
    handler: handle(ctx, async (args: DnrListArgs) => {
      const page = await withClient(ctx, args, (client) =>
        listDoNotReachLists(client, { accountId: args.account, ...definedOnly({ withDeleted: args.withDeleted }) }),
      );
      printList(ctx, args, { data: page.data, next_cursor: null }, LIST_COLUMNS, 'do-not-reach lists');
    }),
  };
}

interface DnrCreateArgs extends AccountArgs {
  description?: string;
}

/** The platform takes only a description (it names the list itself) and at most one list per account. */
function createCommand(ctx: CliContext): CommandModule<GlobalArgs, DnrCreateArgs> {
  return {
    command: 'create',
    describe: "Create the account's do-not-reach list (then `upload --do-not-reach-list` users into it)",
    builder: (y) =>
      withAccountOption(y)
        .option('description', {
          alias: 'name',
          type: 'string',
          requiresArg: true,
          describe: 'Description of the list (--name is an alias: the platform names every list "Do Not Reach List")',
        })
        .example(
          '$0 do-not-reach create --account 18ce54d4x5t --description "Unsubscribed"',
          'Prints the new list id',
        ) as unknown as Argv<DnrCreateArgs>,
    handler: handle(ctx, async (args: DnrCreateArgs) => {
      if (args.description?.trim() === '') {
        throw new ConfigError('invalid_option', '--description must not be empty', {
          fix: 'pass a description, e.g. --description "Unsubscribed", or leave it out',
        });
      }
      const created = await withClient(ctx, args, async (client) => {
        const existing = (await listDoNotReachLists(client, { accountId: args.account })).data[0];
        if (existing !== undefined) {
          throw new ConfigError<CliErrorCode>(
            'do_not_reach_list_exists',
            `account ${args.account} already has do-not-reach list ${existing.id}, and an account holds at most one`,
            {
              fix: `upload into it with --do-not-reach-list ${existing.id}, or delete it first with \`audience-kit do-not-reach delete --account ${args.account} --list ${existing.id}\``,
            },
          );
        }
        return createDoNotReachList(client, {
          accountId: args.account,
          ...definedOnly({ description: args.description }),
        });
      });
      printObject(ctx, args, created, LIST_FIELDS);
    }),
  };
}

interface DeleteArgs extends AccountArgs, YesArgs {
  list: string;
}

function deleteCommand(ctx: CliContext): CommandModule<GlobalArgs, DeleteArgs> {
  return {
    command: 'delete',
    describe: 'Delete a do-not-reach list (prints it with deleted: true)',
    builder: (y) =>
      withYesOption(withAccountOption(y))
        .option('list', { type: 'string', demandOption: true, requiresArg: true, describe: 'Do-not-reach list id' })
        .example(
          '$0 do-not-reach delete --account 18ce54d4x5t --list 3c5xz',
          'Asks first on a terminal (--yes in scripts); prints the list with deleted true',
        ),
    handler: handle(ctx, async (args: DeleteArgs) => {
      await confirmDeletion(ctx, args, `do-not-reach list ${args.list} of account ${args.account}`);
      const list = await withClient(ctx, args, (client) =>
        deleteDoNotReachList(client, { accountId: args.account, doNotReachListId: args.list }),
      );
      printObject(ctx, args, list, LIST_FIELDS);
    }),
  };
}

export function doNotReachCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return commandGroup({
    command: 'do-not-reach',
    describe: 'Do-not-reach lists: list, create, delete',
    subcommands: [listCommand(ctx), createCommand(ctx), deleteCommand(ctx)] as unknown as Array<
      CommandModule<GlobalArgs, never>
    >,
    examples: [
      [
        '$0 do-not-reach create --account 18ce54d4x5t --description "Unsubscribed"',
        'Create the list, then `upload --do-not-reach-list` users into it',
      ],
      ['$0 do-not-reach list --account 18ce54d4x5t --json', 'The list of the account, as JSON'],
    ],
    exitCodes: { ok: 'ok', usage: 'usage or configuration', auth: 'credentials refused', api: 'API/network failure' },
  });
}
