import type { Argv, CommandModule } from 'yargs';
import {
  AuthError,
  grantAudiencePermission,
  HttpError,
  listAudiencePermissions,
  revokeAudiencePermission,
  type AudiencePermission,
} from '../../index.js';
import {
  checkCount,
  definedOnly,
  listPages,
  parseIdList,
  printList,
  printObject,
  withAccountOption,
  withClient,
  type AccountArgs,
} from '../connection.js';
import type { CliContext } from '../context.js';
import { handle, writeLine, type Column, type GlobalArgs } from '../output.js';

const PERMISSION_FIELDS = [
  'id',
  'custom_audience_id',
  'tailored_audience_id',
  'granted_account_id',
  'permission_level',
  'created_at',
  'updated_at',
  'deleted',
] as const;

const PERMISSION_COLUMNS: readonly Column<AudiencePermission>[] = [
  { header: 'ID', value: (p) => p.id },
  { header: 'GRANTED ACCOUNT', value: (p) => p.granted_account_id },
  { header: 'LEVEL', value: (p) => p.permission_level },
  { header: 'DELETED', value: (p) => p.deleted ?? false },
  { header: 'CREATED', value: (p) => p.created_at ?? null },
];

const LEVELS = { 'read-only': 'READ_ONLY', 'read-write': 'READ_WRITE' } as const;

interface PermissionArgs extends AccountArgs {
  audience: string;
  tailored?: boolean;
}

function withAudience<T>(y: Argv<T>): Argv<T & PermissionArgs> {
  return withAccountOption(y)
    .option('audience', { type: 'string', demandOption: true, requiresArg: true, describe: 'Audience id' })
    .option('tailored', {
      type: 'boolean',
      describe: 'Tailored audience permissions (v5 endpoints) instead of custom audience permissions (v12)',
    }) as unknown as Argv<T & PermissionArgs>;
}

const kindOf = (args: PermissionArgs): 'custom' | 'tailored' => (args.tailored === true ? 'tailored' : 'custom');

/**
 * The platform's 403 PERMISSION_DENIED on a permission endpoint means the account is not the
 * audience's owner: say so, and how to find the owner.
 */
async function ownerOnly<T>(args: PermissionArgs, verb: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof HttpError && error.status === 403 && error.errors.some((e) => e.code === 'PERMISSION_DENIED')) {
      throw new AuthError(
        'permission_owner_only',
        `only the audience's owner account can ${verb} its permissions, and account ${args.account} does not own audience ${args.audience}`,
        {
          status: error.status,
          method: error.method,
          path: error.path,
          errors: error.errors,
          cause: error,
          fix: `find the owner with \`audience-kit audiences get --account ${args.account} --audience ${args.audience}\` (owner_account_id; is_owner false here) and repeat with --account <owner_account_id>`,
        },
      );
    }
    throw error;
  }
}

interface ListArgs extends PermissionArgs {
  grantedAccount?: string[];
  permissionId?: string[];
  count?: number;
  cursor?: string;
  all?: boolean;
  withTotalCount?: boolean;
  sortBy?: string;
}

function listCommand(ctx: CliContext): CommandModule<GlobalArgs, ListArgs> {
  return {
    command: 'list',
    describe: 'List who the audience is shared with',
    builder: (y) =>
      withAudience(y)
        .option('granted-account', { type: 'string', array: true, describe: 'Only these granted account ids (comma-separated or repeated, up to 200)' })
        .option('permission-id', { type: 'string', array: true, describe: 'Only these permission ids (up to 200)' })
        .option('count', { type: 'number', describe: 'Page size, 1 to 1000 (platform default 200)' })
        .option('cursor', { type: 'string', describe: 'Page cursor from a previous listing' })
        .option('all', { type: 'boolean', describe: 'Follow cursors until the last page' })
        .option('with-total-count', { type: 'boolean', describe: 'Ask for the total (not with --cursor)' })
        .option('sort-by', { type: 'string', describe: 'Platform sort expression, e.g. created_at-desc' })
        .example('$0 permissions list --account 18ce54d4x5t --audience 1nmth --all', 'Every grant of a custom audience')
        .example('$0 permissions list --account 18ce54d4x5t --audience 1nmth --tailored --json', 'Tailored audience permissions (v5)') as unknown as Argv<ListArgs>,
    handler: handle(ctx, async (args: ListArgs) => {
      const count = checkCount(args.count);
      const grantedAccountIds = parseIdList(args.grantedAccount, '--granted-account');
      const permissionIds = parseIdList(args.permissionId, '--permission-id');
      const result = await withClient(ctx, args, (client) =>
        ownerOnly(args, 'list', () =>
          listPages<AudiencePermission>(
            (cursor, withTotalCount) =>
              listAudiencePermissions(client, {
                kind: kindOf(args),
                accountId: args.account,
                audienceId: args.audience,
                ...definedOnly({ count, cursor, grantedAccountIds, permissionIds, sortBy: args.sortBy }),
                ...(withTotalCount ? { withTotalCount } : {}),
              }),
            { all: args.all === true, cursor: args.cursor, withTotalCount: args.withTotalCount },
          ),
        ),
      );
      printList(ctx, args, result, PERMISSION_COLUMNS, 'permissions');
    }),
  };
}

interface GrantArgs extends PermissionArgs {
  to: string;
  level: keyof typeof LEVELS;
}

function grantCommand(ctx: CliContext): CommandModule<GlobalArgs, GrantArgs> {
  return {
    command: 'grant',
    describe: 'Share the audience with another ad account (owner account only)',
    builder: (y) =>
      withAudience(y)
        .option('to', { type: 'string', demandOption: true, requiresArg: true, describe: 'Account id to share with' })
        .option('level', {
          choices: Object.keys(LEVELS),
          default: 'read-only',
          describe: 'Permission level',
        })
        .example('$0 permissions grant --account 18ce54d4x5t --audience 1nmth --to 5gvk9h --level read-only', '') as unknown as Argv<GrantArgs>,
    handler: handle(ctx, async (args: GrantArgs) => {
      const permission = await withClient(ctx, args, (client) =>
        ownerOnly(args, 'grant', () =>
          grantAudiencePermission(client, {
            kind: kindOf(args),
            accountId: args.account,
            audienceId: args.audience,
            grantedAccountId: args.to,
            permissionLevel: LEVELS[args.level],
          }),
        ),
      );
      printObject(ctx, args, permission, PERMISSION_FIELDS);
    }),
  };
}

interface RevokeArgs extends PermissionArgs {
  permissionId: string;
}

function revokeCommand(ctx: CliContext): CommandModule<GlobalArgs, RevokeArgs> {
  return {
    command: 'revoke',
    describe: 'Stop sharing (owner account only); campaigns already using the audience keep running',
    builder: (y) =>
      withAudience(y)
        .option('permission-id', { type: 'string', demandOption: true, requiresArg: true, describe: 'Permission id (from `permissions list`)' })
        .example('$0 permissions revoke --account 18ce54d4x5t --audience 1nmth --permission-id 7ab2x', '') as unknown as Argv<RevokeArgs>,
    handler: handle(ctx, async (args: RevokeArgs) => {
      const permission = await withClient(ctx, args, (client) =>
        ownerOnly(args, 'revoke', () =>
          revokeAudiencePermission(client, {
            kind: kindOf(args),
            accountId: args.account,
            audienceId: args.audience,
            permissionId: args.permissionId,
          }),
        ),
      );
      printObject(ctx, args, permission, PERMISSION_FIELDS);
      const note =
        `note: account ${permission.granted_account_id} can no longer target the audience in new campaigns; ` +
        'campaigns already using it keep running and keep the audience (but cannot be copied)';
      writeLine(args.json === true ? ctx.stderr : ctx.stdout, note);
    }),
  };
}

export function permissionsCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'permissions',
    describe: 'Share audiences with other ad accounts: list, grant, revoke (--tailored for v5)',
    builder: (y) =>
      y
        .command(listCommand(ctx))
        .command(grantCommand(ctx))
        .command(revokeCommand(ctx))
        .demandCommand(1, 'Name a subcommand: list, grant or revoke.') as Argv<GlobalArgs>,
    handler: () => undefined,
  };
}
