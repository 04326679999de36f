import yargs, { type Argv, type CommandModule } from 'yargs';
import { ConfigError } from '../errors.js';
import { VERSION } from '../version.js';
import { processContext, type CliContext } from './context.js';
import { describeParseFailure, type ParseContext } from './parse-errors.js';
import { exitCodesEpilogue, reportFailure, writeLine, type GlobalArgs } from './output.js';

type CommandFactory = (ctx: CliContext) => CommandModule<GlobalArgs, never>;

/**
 * Each command's module, by the command's name. A run loads only the module of the command it
 * names (`hash` needs neither the API client nor the state store); help, a missing or a mistyped
 * command loads them all, for the list of commands and the suggestion.
 */
const COMMANDS: Readonly<Record<string, () => Promise<unknown>>> = {
  hash: async () => (await import('./commands/hash.js')).hashCommand,
  upload: async () => (await import('./commands/upload.js')).uploadCommand,
  sync: async () => (await import('./commands/sync.js')).syncCommand,
  audit: async () => (await import('./commands/audit.js')).auditCommand,
  state: async () => (await import('./commands/state.js')).stateCommand,
  audiences: async () => (await import('./commands/audiences.js')).audiencesCommand,
  'do-not-reach': async () => (await import('./commands/do-not-reach.js')).doNotReachCommand,
  permissions: async () => (await import('./commands/permissions.js')).permissionsCommand,
  targeted: async () => (await import('./commands/targeted.js')).targetedCommand,
  auth: async () => (await import('./commands/auth.js')).authCommand,
  sandbox: async () => (await import('./commands/sandbox.js')).sandboxCommand,
};

/**
 * The factories of the commands the parser needs for `argv`: the one its first word names (the
 * global options before it are flags), else every command, in the order help lists them.
 */
async function commandsFor(argv: readonly string[]): Promise<CommandFactory[]> {
  const word = argv.find((arg) => !arg.startsWith('-'));
  const named = word !== undefined && Object.hasOwn(COMMANDS, word) ? COMMANDS[word] : undefined;
  const loads = named === undefined ? Object.values(COMMANDS) : [named];
  return (await Promise.all(loads.map((load) => load()))) as CommandFactory[];
}

export function buildParser(
  argv: readonly string[],
  ctx: CliContext,
  commands: readonly CommandFactory[],
): Argv<GlobalArgs> {
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
    .demandCommand(1, 'no command given')
    .recommendCommands()
    .version(VERSION)
    .alias('help', 'h')
    .wrap(Math.min(110, process.stdout.columns ?? 100))
    .epilogue(
      `${exitCodesEpilogue({
        ok: 'ok',
        internal: 'internal error',
        usage: 'usage/config',
        input: 'unreadable input',
        auth: 'auth/permission',
        partial: 'partial upload',
        api: 'API/network failure',
        timeout: 'timeout',
        environment: 'disk/permissions/lock (environment)',
        state: 'damaged or mismatched state (snapshot, journal)',
        interrupted: 'interrupted',
      })}\nDocs: README.md. Every identifier is hashed on this machine before anything is sent.`,
    )
    .fail((message, error, usage) => {
      // Throwing is what stops yargs: a fail callback that returns lets the handler run anyway.
      // yargs reports some usage errors (an option left without its value) as a YError.
      if (error === undefined || error === null || error.name === 'YError')
        throw new ParseFailure(message ?? error?.message ?? 'invalid command line', parseContext(parser, usage));
      throw error;
    }) as Argv<GlobalArgs>;
  for (const factory of commands) parser = parser.command(factory(ctx));
  skipHelpCache(parser);
  return parser;
}

/**
 * yargs renders the whole help text each time it starts a command's handler (cacheHelpMessage),
 * for a failure it would print with it; this CLI's fail callback throws and never prints help.
 * Rendering it cost every run 0.15-0.2 CPU-seconds (text wrapping and string widths).
 */
function skipHelpCache(parser: Argv<GlobalArgs>): void {
  // Not in yargs' type declarations; public on the instance (see parseContext).
  const y = parser as unknown as { getInternalMethods(): { getUsageInstance(): { cacheHelpMessage(): void } } };
  y.getInternalMethods().getUsageInstance().cacheHelpMessage = () => undefined;
}

/** A command line the parser refused (unknown option, missing argument, invalid choice...). */
class ParseFailure extends Error {
  constructor(
    message: string,
    readonly at: ParseContext,
  ) {
    super(message);
  }
}

/** What the parser knew where it stopped (yargs reuses one instance for the command it entered). */
function parseContext(parser: Argv<GlobalArgs>, usage: unknown): ParseContext {
  // Neither method is in yargs' type declarations; both are public on the instance.
  const y = parser as unknown as {
    getOptions(): { key: Record<string, unknown>; alias: Record<string, string[]> };
    getInternalMethods(): { getContext(): { commands?: string[] } };
  };
  const options = y.getOptions();
  const commands = (usage as { getCommands?: () => [string, ...unknown[]][] }).getCommands?.() ?? [];
  return {
    commands: y.getInternalMethods().getContext().commands ?? [],
    subcommands: commands.map((c) => c[0]),
    options: [...Object.keys(options.key), ...Object.values(options.alias).flat()],
  };
}

/** Run the CLI with the given arguments; resolves to the process exit code. */
export async function main(argv: readonly string[], ctx: CliContext = processContext()): Promise<number> {
  try {
    // With a callback yargs hands back --help/--version text instead of printing it on the
    // process's stdout and exiting: the CLI runs in-process too (tests, embedding).
    let output = '';
    const commands = await commandsFor(argv);
    await buildParser(argv, ctx, commands).parseAsync([...argv], {}, (_error, _argv, text) => {
      output = text;
    });
    if (output !== '') writeLine(ctx.stdout, output);
  } catch (error) {
    // What the parser refused, or a failure outside any command's handler: --json gets its document too.
    const args = { debug: argv.includes('--debug'), json: argv.includes('--json') };
    if (!(error instanceof ParseFailure)) return reportFailure(ctx, error, args);
    const problem = describeParseFailure(error.message, argv, error.at);
    return reportFailure(ctx, new ConfigError('invalid_option', problem.message, { fix: problem.fix }), args);
  }
  return ctx.exitCode;
}
