import type { CommandModule } from 'yargs';
import type { CliContext } from '../context.js';
import { handle, type GlobalArgs } from '../output.js';

// Placeholder: replaced by the module that implements `upload`.
export function uploadCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'upload',
    describe: false,
    handler: handle(ctx, async () => 1),
  };
}
