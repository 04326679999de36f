import type { CommandModule } from 'yargs';
import type { CliContext } from '../context.js';
import { handle, type GlobalArgs } from '../output.js';

// Placeholder: replaced by the module that implements `auth`.
export function authCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'auth',
    describe: false,
    handler: handle(ctx, async () => 1),
  };
}
