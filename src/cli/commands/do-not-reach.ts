import type { Argv, CommandModule } from 'yargs';
import {
  createDoNotReachList,
  deleteDoNotReachList,
  listDoNotReachLists,
  type DoNotReachList,
} from '../../index.js';
import {
  checkCount,
  definedOnly,
  listPages,
  printList,
  printObject,
  withAccountOption,
  withClient,
  type AccountArgs,
} from '../connection.js';
import type { CliContext } from '../context.js';
import { handle, type Column, type GlobalArgs } from '../output.js';

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

interface ListArgs extends AccountArgs {
  count?: number;
  cursor?: string;
  all?: boolean;
  withTotalCount?: boolean;
}

function listCommand(ctx: CliContext): CommandModule<GlobalArgs, ListArgs> {
  return {
    command: 'list',
    describe: 'List the do-not-reach lists of an account',
    builder: (y) =>
      withAccountOption(y)
        .option('count', { type: 'number', describe: 'Page size, 1 to 1000' })
        .option('cursor', { type: 'string', describe: 'Page cursor from a previous listing' })
        .option('all', { type: 'boolean', describe: 'Follow cursors until the last page' })
        .option('with-total-count', { type: 'boolean', describe: 'Ask for the total (not with --cursor)' })
        .example('$0 do-not-reach list --account 18ce54d4x5t --all', 'Every list, as a table') as unknown as Argv<ListArgs>,
    handler: handle(ctx, async (args: ListArgs) => {
      const count = checkCount(args.count);
      const result = await withClient(ctx, args, (client) =>
        listPages<DoNotReachList>(
          (cursor, withTotalCount) =>
            listDoNotReachLists(client, {
              accountId: args.account,
              ...definedOnly({ count, cursor }),
              ...(withTotalCount ? { withTotalCount } : {}),
            }),
          { all: args.all === true, cursor: args.cursor, withTotalCount: args.withTotalCount },
        ),
      );
      printList(ctx, args, result, LIST_COLUMNS, 'do-not-reach lists');
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
    describe: 'Create an empty do-not-reach list (then `upload --do-not-reach` users into it)',
    builder: (y) =>
      withAccountOption(y)
        .option('name', { type: 'string', demandOption: true, requiresArg: true, describe: 'List name' })
        .option('description', { type: 'string', describe: 'Free-text description' })
        .example('$0 do-not-reach create --account 18ce54d4x5t --name "Unsubscribed"', 'Prints the new list id') as unknown as Argv<CreateArgs>,
    handler: handle(ctx, async (args: CreateArgs) => {
      const list = await withClient(ctx, args, (client) =>
        createDoNotReachList(client, { accountId: args.account, name: args.name, ...definedOnly({ description: args.description }) }),
      );
      printObject(ctx, args, list, LIST_FIELDS);
    }),
  };
}

interface DeleteArgs extends AccountArgs {
  list: string;
}

function deleteCommand(ctx: CliContext): CommandModule<GlobalArgs, DeleteArgs> {
  return {
    command: 'delete',
    describe: 'Delete a do-not-reach list (prints it with deleted: true)',
    builder: (y) =>
      withAccountOption(y)
        .option('list', { type: 'string', demandOption: true, requiresArg: true, describe: 'Do-not-reach list id' })
        .example('$0 do-not-reach delete --account 18ce54d4x5t --list 3c5xz', '') as unknown as Argv<DeleteArgs>,
    handler: handle(ctx, async (args: DeleteArgs) => {
      const list = await withClient(ctx, args, (client) =>
        deleteDoNotReachList(client, { accountId: args.account, doNotReachListId: args.list }),
      );
      printObject(ctx, args, list, LIST_FIELDS);
    }),
  };
}

export function doNotReachCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'do-not-reach',
    describe: 'Do-not-reach lists: list, create, delete',
    builder: (y) =>
      y
        .command(listCommand(ctx))
        .command(createCommand(ctx))
        .command(deleteCommand(ctx))
        .demandCommand(1, 'Name a subcommand: list, create or delete.') as Argv<GlobalArgs>,
    handler: () => undefined,
  };
}
