import type { CommandModule } from 'yargs';
import type { CliContext } from '../context.js';
import { handle, type GlobalArgs } from '../output.js';

// Placeholder: replaced by the module that implements `sandbox`.
export function sandboxCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'sandbox',
    describe: false,
    handler: handle(ctx, async () => 1),
  };
}
