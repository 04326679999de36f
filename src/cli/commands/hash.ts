import type { CommandModule } from 'yargs';
import type { CliContext } from '../context.js';
import { handle, type GlobalArgs } from '../output.js';

// Placeholder: replaced by the module that implements `hash`.
export function hashCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'hash',
    describe: false,
    handler: handle(ctx, async () => 1),
  };
}
