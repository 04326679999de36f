import type { Argv, CommandModule } from 'yargs';
import { grantAudiencePermission, listAudiencePermissions, revokeAudiencePermission } from '../../api/endpoints.js';
import { HttpError } from '../../errors.js';
import type { AudiencePermission } from '../../api/schemas.js';
import { withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import { confirmDeletion, withYesOption, type YesArgs } from '../prompt.js';
import {
  commandGroup,
  definedOnly,
  ownerOnly,
  pagedLister,
  parseIdList,
  printList,
  printObject,
  rephrase,
  withAudienceOption,
  withListOptions,
  type AudienceArgs,
  type ListArgs,
} from '../manage.js';
import { handle, writeLine, type Column, type GlobalArgs } from '../output.js';

const PERMISSION_COLUMNS: readonly Column<AudiencePermission>[] = [
  { header: 'ID', value: (p) => p.id },
  { header: 'GRANTED ACCOUNT', value: (p) => p.granted_account_id },
  { header: 'LEVEL', value: (p) => p.permission_level },
  { header: 'DELETED', value: (p) => p.deleted ?? false },
  { header: 'CREATED', value: (p) => p.created_at ?? null },
];

const LEVELS = { 'read-only': 'READ_ONLY', 'read-write': 'READ_WRITE' } as const;

interface PermissionArgs extends AudienceArgs {
  tailored?: boolean;
}

function withPermissionOptions<T>(y: Argv<T>): Argv<T & PermissionArgs> {
  return withAudienceOption(y, 'Audience id').option('tailored', {
    type: 'boolean',
    describe: 'Tailored audience permissions (v5 endpoints) instead of custom audience permissions (v12)',
  }) as unknown as Argv<T & PermissionArgs>;
}

const kindOf = (args: PermissionArgs): 'custom' | 'tailored' => (args.tailored === true ? 'tailored' : 'custom');

/** A permission carries the id of its own kind of audience only. */
function permissionFields(args: PermissionArgs): string[] {
  return [
    'id',
    `${kindOf(args)}_audience_id`,
    'granted_account_id',
    'permission_level',
    'created_at',
    'updated_at',
    'deleted',
  ];
}

interface PermissionListArgs extends PermissionArgs, ListArgs {
  grantedAccount?: string[];
  permissionId?: string[];
  sortBy?: string;
}

function listCommand(ctx: CliContext): CommandModule<GlobalArgs, PermissionListArgs> {
  return {
    command: 'list',
    describe: 'List who the audience is shared with',
    builder: (y) =>
      withListOptions(withPermissionOptions(y))
        .option('granted-account', {
          type: 'string',
          array: true,
          describe: 'Only these granted account ids (comma-separated or repeated, up to 200)',
        })
        .option('permission-id', { type: 'string', array: true, describe: 'Only these permission ids (up to 200)' })
        .option('sort-by', { type: 'string', describe: 'Platform sort expression, e.g. created_at-desc' })
        .example('$0 permissions list --account 18ce54d4x5t --audience 1nmth --all', 'Every grant of a custom audience')
        .example(
          '$0 permissions list --account 18ce54d4x5t --audience 1nmth --tailored --json',
          'Tailored audience permissions (v5)',
        ),
    handler: handle(ctx, async (args: PermissionListArgs) => {
      const list = pagedLister(args);
      const grantedAccountIds = parseIdList(args.grantedAccount, '--granted-account');
      const permissionIds = parseIdList(args.permissionId, '--permission-id');
      const result = await withClient(ctx, args, (client) =>
        ownerOnly(args, 'list its permissions', () =>
          list((page) =>
            listAudiencePermissions(client, {
              kind: kindOf(args),
              accountId: args.account,
              audienceId: args.audience,
              ...definedOnly({ grantedAccountIds, permissionIds, sortBy: args.sortBy }),
              ...page,
            }),
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

/** The platform's INVALID_PARAMETER on granted_account_id: an unknown account, or one outside the owner's business. */
async function sameBusinessOnly<T>(args: GrantArgs, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(
      error instanceof HttpError &&
      error.errors.some((e) => e.code === 'INVALID_PARAMETER' && e.parameter === 'granted_account_id')
    )) {
      throw error;
    }
    throw rephrase(error as HttpError, {
      fix: `check --to ${args.to}: audiences are shared only with ad accounts of the owner's business (outside it, the owner account needs the SHARE_AUDIENCE_OUTSIDE_BUSINESS feature)`,
    });
  }
}

function grantCommand(ctx: CliContext): CommandModule<GlobalArgs, GrantArgs> {
  return {
    command: 'grant',
    describe: 'Share the audience with another ad account of the same business (owner account only)',
    builder: (y) =>
      withPermissionOptions(y)
        .option('to', {
          type: 'string',
          demandOption: true,
          requiresArg: true,
          describe: 'Account id to share with (same business)',
        })
        .option('level', {
          choices: Object.keys(LEVELS),
          default: 'read-only',
          describe: 'Permission level',
        })
        .example(
          '$0 permissions grant --account 18ce54d4x5t --audience 1nmth --to 5gvk9h',
          'Let account 5gvk9h target the audience (read-only)',
        )
        .example(
          '$0 permissions grant --account 18ce54d4x5t --audience 1nmth --to 5gvk9h --level read-write',
          'Let it also change the audience',
        ) as unknown as Argv<GrantArgs>,
    handler: handle(ctx, async (args: GrantArgs) => {
      const permission = await withClient(ctx, args, (client) =>
        ownerOnly(args, 'grant its permissions', () =>
          sameBusinessOnly(args, () =>
            grantAudiencePermission(client, {
              kind: kindOf(args),
              accountId: args.account,
              audienceId: args.audience,
              grantedAccountId: args.to,
              permissionLevel: LEVELS[args.level],
            }),
          ),
        ),
      );
      printObject(ctx, args, permission, permissionFields(args));
    }),
  };
}

interface RevokeArgs extends PermissionArgs, YesArgs {
  permissionId: string;
}

function revokeCommand(ctx: CliContext): CommandModule<GlobalArgs, RevokeArgs> {
  return {
    command: 'revoke',
    describe: 'Stop sharing (owner account only); campaigns already using the audience keep running',
    builder: (y) =>
      withYesOption(withPermissionOptions(y))
        .option('permission-id', {
          type: 'string',
          demandOption: true,
          requiresArg: true,
          describe: 'Permission id (from `permissions list`)',
        })
        .example(
          '$0 permissions revoke --account 18ce54d4x5t --audience 1nmth --permission-id 7ab2x',
          'Prints the revoked permission (deleted true)',
        ) as unknown as Argv<RevokeArgs>,
    handler: handle(ctx, async (args: RevokeArgs) => {
      const what = `permission ${args.permissionId} of audience ${args.audience}`;
      await confirmDeletion(ctx, args, what, 'revoke');
      const permission = await withClient(ctx, args, (client) =>
        ownerOnly(args, 'revoke its permissions', () =>
          revokeAudiencePermission(client, {
            kind: kindOf(args),
            accountId: args.account,
            audienceId: args.audience,
            permissionId: args.permissionId,
          }),
        ),
      );
      printObject(ctx, args, permission, permissionFields(args));
      const note =
        `note: account ${permission.granted_account_id ?? '(the grantee)'} can no longer target the audience in new campaigns; ` +
        'campaigns already using it keep running and keep the audience (but cannot be copied)';
      writeLine(args.json === true ? ctx.stderr : ctx.stdout, note);
    }),
  };
}

export function permissionsCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return commandGroup({
    command: 'permissions',
    describe: 'Share audiences with other ad accounts: list, grant, revoke (--tailored for v5)',
    subcommands: [listCommand(ctx), grantCommand(ctx), revokeCommand(ctx)] as unknown as Array<
      CommandModule<GlobalArgs, never>
    >,
    examples: [
      [
        '$0 permissions grant --account 18ce54d4x5t --audience 1nmth --to 5gvk9h',
        'Share with another account of the business',
      ],
      ['$0 permissions list --account 18ce54d4x5t --audience 1nmth --all', 'Who it is shared with'],
    ],
    exitCodes: {
      ok: 'ok',
      usage: 'usage or configuration',
      auth: 'credentials refused or not the owner account',
      api: 'API/network failure (also an account outside the business)',
    },
  });
}
