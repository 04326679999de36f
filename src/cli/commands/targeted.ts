import type { CommandModule } from 'yargs';
import { withClient } from '../connection.js';
import type { CliContext } from '../context.js';
import { allTargetingRecords, renderTargeting, withAudienceOption, type AudienceArgs } from '../manage.js';
import { exitCodesEpilogue, handle, writeJson, writeLine, type GlobalArgs } from '../output.js';

interface TargetedArgs extends AudienceArgs {
  includeInactive?: boolean;
}

export function targetedCommand(ctx: CliContext): CommandModule<GlobalArgs, TargetedArgs> {
  return {
    command: 'targeted',
    describe: 'Campaigns and line items using an audience (all pages)',
    builder: (y) =>
      withAudienceOption(y)
        .option('include-inactive', {
          type: 'boolean',
          describe: 'Include line items that are not servable (with_active=false)',
        })
        .example('$0 targeted --account 18ce54d4x5t --audience 1nmth', 'Active line items only')
        .example('$0 targeted --account 18ce54d4x5t --audience 1nmth --include-inactive --json', 'Everything, as JSON')
        .epilogue(
          exitCodesEpilogue({
            ok: 'ok',
            usage: 'usage or configuration',
            auth: 'credentials refused',
            api: 'API/network failure',
          }),
        ),
    handler: handle(ctx, async (args: TargetedArgs) => {
      const activeOnly = args.includeInactive !== true;
      const records = await withClient(ctx, args, (client) =>
        allTargetingRecords(client, args.account, args.audience, activeOnly),
      );
      if (args.json === true) writeJson(ctx, { data: records });
      else writeLine(ctx.stdout, renderTargeting(records, args.audience, activeOnly));
    }),
  };
}
