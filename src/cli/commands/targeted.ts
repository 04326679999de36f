import type { Argv, CommandModule } from 'yargs';
import type { TargetingRecord } from '../../index.js';
import { withAccountOption, withClient, type AccountArgs } from '../connection.js';
import type { CliContext } from '../context.js';
import { handle, renderTable, writeJson, writeLine, type GlobalArgs } from '../output.js';
import { allTargetingRecords } from './audiences.js';

interface TargetedArgs extends AccountArgs {
  audience: string;
  includeInactive?: boolean;
}

interface LineItemRow {
  campaign: TargetingRecord;
  id: string;
  name: string | null;
  servable: boolean;
}

export function targetedCommand(ctx: CliContext): CommandModule<GlobalArgs, TargetedArgs> {
  return {
    command: 'targeted',
    describe: 'Campaigns and line items using an audience (all pages)',
    builder: (y) =>
      withAccountOption(y)
        .option('audience', { type: 'string', demandOption: true, requiresArg: true, describe: 'Custom audience id' })
        .option('include-inactive', {
          type: 'boolean',
          describe: 'Include line items that are not servable (with_active=false)',
        })
        .example('$0 targeted --account 18ce54d4x5t --audience 1nmth', 'Active line items only')
        .example('$0 targeted --account 18ce54d4x5t --audience 1nmth --include-inactive --json', 'Everything, as JSON') as unknown as Argv<TargetedArgs>,
    handler: handle(ctx, async (args: TargetedArgs) => {
      const records = await withClient(ctx, args, (client) =>
        allTargetingRecords(client, args.account, args.audience, args.includeInactive !== true),
      );
      if (args.json === true) {
        writeJson(ctx, { data: records });
        return;
      }
      const rows: LineItemRow[] = records.flatMap((campaign) =>
        campaign.line_items.map((li) => ({ campaign, id: li.id, name: li.name, servable: li.servable })),
      );
      if (rows.length === 0) {
        writeLine(ctx.stdout, `no ${args.includeInactive === true ? '' : 'active '}line items target audience ${args.audience}`);
        return;
      }
      writeLine(
        ctx.stdout,
        renderTable(rows, [
          { header: 'CAMPAIGN', value: (r) => r.campaign.campaign_id },
          { header: 'CAMPAIGN NAME', value: (r) => r.campaign.campaign_name },
          { header: 'LINE ITEM', value: (r) => r.id },
          { header: 'LINE ITEM NAME', value: (r) => r.name },
          { header: 'SERVABLE', value: (r) => r.servable },
        ]),
      );
      const servable = rows.filter((r) => r.servable).length;
      writeLine(ctx.stdout, `${records.length} campaign(s), ${rows.length} line item(s), ${servable} servable`);
    }),
  };
}
