/** Questions asked on the terminal, and the confirmation deleting commands ask for. */
import { createInterface } from 'node:readline';
import type { Argv } from 'yargs';
import { ConfigError } from '../errors.js';
import type { CliContext } from './context.js';
import type { CliErrorCode } from './exit-codes.js';

/**
 * Ask on the terminal; an answer starting with neither y nor n is `defaultYes`. Ctrl-C or a closed stdin answer
 * 'interrupted' (readline would otherwise leave the question pending).
 */
export async function askYesNo(
  ctx: CliContext,
  question: string,
  defaultYes: boolean,
): Promise<boolean | 'interrupted'> {
  const rl = createInterface({ input: ctx.stdin, output: ctx.stderr });
  try {
    return await new Promise<boolean | 'interrupted'>((res) => {
      rl.on('SIGINT', () => res('interrupted'));
      rl.on('close', () => res('interrupted'));
      rl.question(question, (answer) => {
        const a = answer.trim();
        res(/^y/i.test(a) ? true : /^n/i.test(a) ? false : defaultYes);
      });
    });
  } finally {
    rl.close();
  }
}

export interface YesArgs {
  yes?: boolean;
}

export function withYesOption<T>(yargs: Argv<T>): Argv<T & YesArgs> {
  return yargs.option('yes', {
    type: 'boolean',
    describe: 'Do not ask for confirmation (required when stdin or stderr is not a terminal)',
  }) as Argv<T & YesArgs>;
}

/**
 * Ask before deleting `what` (`audience 1nmth "CRM buyers"`); without --yes, only a terminal
 * can answer: a script or pipeline is refused, so nothing is deleted by accident.
 */
export async function confirmDeletion(ctx: CliContext, args: YesArgs, what: string, verb = 'delete'): Promise<void> {
  if (args.yes === true) return;
  if (!(ctx.stdinIsTTY && ctx.stderrIsTTY)) {
    throw new ConfigError<CliErrorCode>(
      'confirmation_required',
      `${verb} ${what}: confirmation needed, and no terminal to ask on`,
      {
        fix: `pass --yes to ${verb} without asking`,
      },
    );
  }
  const answer = await askYesNo(ctx, `${verb} ${what}? [y/N] `, false);
  if (answer !== true) {
    throw new ConfigError<CliErrorCode>(
      'deletion_declined',
      `not ${verb === 'delete' ? 'deleted' : `${verb}d`}: ${what}`,
      {
        fix: `answer y to ${verb} it, or pass --yes`,
      },
    );
  }
}
