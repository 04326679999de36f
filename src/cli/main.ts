import yargs, { type Argv, type CommandModule } from 'yargs';
import { EXIT_CODES, VERSION } from '../index.js';
import { processContext, type CliContext } from './context.js';
import { writeLine, type GlobalArgs } from './output.js';
import { hashCommand } from './commands/hash.js';
import { uploadCommand } from './commands/upload.js';
import { sandboxCommand } from './commands/sandbox.js';
import { auditCommand } from './commands/audit.js';
import { audiencesCommand } from './commands/audiences.js';
import { doNotReachCommand } from './commands/do-not-reach.js';
import { permissionsCommand } from './commands/permissions.js';
import { targetedCommand } from './commands/targeted.js';
import { authCommand } from './commands/auth.js';

type CommandFactory = (ctx: CliContext) => CommandModule<GlobalArgs, never>;

const COMMANDS: readonly CommandFactory[] = [
  hashCommand,
  uploadCommand,
  auditCommand,
  audiencesCommand,
  doNotReachCommand,
  permissionsCommand,
  targetedCommand,
  authCommand,
  sandboxCommand,
] as unknown as readonly CommandFactory[];

export function buildParser(argv: readonly string[], ctx: CliContext): Argv<GlobalArgs> {
  let parser = yargs([...argv])
    .scriptName('audience-kit')
    .usage(
      '$0 <command> [options]\n\nNormalize and SHA-256-hash customer lists locally, then upload them to custom audiences and do-not-reach lists, verifying every batch.',
    )
    .option('debug', {
      type: 'boolean',
      global: true,
      describe: 'Print stack traces and request lines on errors (never secrets or identifiers)',
    })
    .option('json', {
      type: 'boolean',
      global: true,
      describe: 'Print one JSON document on stdout instead of a table',
    })
    .env(false)
    .strict()
    .demandCommand(1, 'Name a command; see the list above.')
    .recommendCommands()
    .version(VERSION)
    .alias('help', 'h')
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .epilogue(
      'Exit codes: 0 ok, 1 internal error, 2 usage/config, 3 unreadable input, 4 auth/permission, 5 partial upload, 6 API/network failure, 7 timeout, 130 interrupted.\nDocs: README.md. Every identifier is hashed on this machine before anything is sent.',
    )
    .fail((message, error) => {
      if (error !== undefined && error !== null) throw error;
      writeLine(ctx.stderr, `error: ${message}`);
      writeLine(ctx.stderr, '  fix: see `audience-kit --help` or `audience-kit <command> --help`');
      ctx.exitCode = EXIT_CODES.usage;
    }) as Argv<GlobalArgs>;
  for (const factory of COMMANDS) parser = parser.command(factory(ctx));
  return parser;
}

/** Run the CLI with the given arguments; resolves to the process exit code. */
export async function main(argv: readonly string[], ctx: CliContext = processContext()): Promise<number> {
  await buildParser(argv, ctx).parseAsync();
  return ctx.exitCode;
}
