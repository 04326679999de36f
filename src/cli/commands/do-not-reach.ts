import type { CommandModule } from 'yargs';
import {
  createDoNotReachList,
  deleteDoNotReachList,
  listDoNotReachLists,
  type DoNotReachList,
} from '../../internal.js';
import { withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import {
  commandGroup,
  createNamedCommand,
  pagedLister,
  printList,
  printObject,
  withAccountOption,
  withListOptions,
  type AccountArgs,
  type ListArgs,
} from '../manage.js';
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

type DnrListArgs = AccountArgs & ListArgs;

function listCommand(ctx: CliContext): CommandModule<GlobalArgs, DnrListArgs> {
  return {
    command: 'list',
    describe: 'List the do-not-reach lists of an account',
    builder: (y) =>
      withListOptions(withAccountOption(y))
        .example('$0 do-not-reach list --account 18ce54d4x5t --all', 'Every list, as a table')
        .example(
          '$0 do-not-reach list --account 18ce54d4x5t --count 50 --with-total-count --json',
          'First 50 lists and the total, as JSON',
        ),
    handler: handle(ctx, async (args: DnrListArgs) => {
      const list = pagedLister(args);
      const result = await withClient(ctx, args, (client) =>
        list((page) => listDoNotReachLists(client, { accountId: args.account, ...page })),
      );
      printList(ctx, args, result, LIST_COLUMNS, 'do-not-reach lists');
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
        .example(
          '$0 do-not-reach delete --account 18ce54d4x5t --list 3c5xz',
          'Delete the list; prints it with deleted true',
        ),
    handler: handle(ctx, async (args: DeleteArgs) => {
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
    subcommands: [
      listCommand(ctx),
      createNamedCommand(ctx, {
        describe: 'Create an empty do-not-reach list (then `upload --do-not-reach-list` users into it)',
        what: 'List',
        example: ['$0 do-not-reach create --account 18ce54d4x5t --name "Unsubscribed"', 'Prints the new list id'],
        fields: LIST_FIELDS,
        create: createDoNotReachList,
      }),
      deleteCommand(ctx),
    ] as unknown as Array<CommandModule<GlobalArgs, never>>,
    examples: [
      [
        '$0 do-not-reach create --account 18ce54d4x5t --name "Unsubscribed"',
        'Create a list, then `upload --do-not-reach-list` users into it',
      ],
      ['$0 do-not-reach list --account 18ce54d4x5t --all --json', 'Every list of the account, as JSON'],
    ],
    exitCodes: { ok: 'ok', usage: 'usage or configuration', auth: 'credentials refused', api: 'API/network failure' },
  });
}
