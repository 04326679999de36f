import type { CommandModule } from 'yargs';
import type { CliContext } from '../context.js';
import { handle, type GlobalArgs } from '../output.js';

// Placeholder: replaced by the module that implements `do-not-reach`.
export function doNotReachCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'do-not-reach',
    describe: false,
    handler: handle(ctx, async () => 1),
  };
}
