/**
 * `audience-kit state`: the state store itself. `state schema` prints the SQL that creates (or
 * updates) the PostgreSQL store's tables, for a database user without CREATE rights: an owner
 * runs it (`audience-kit state schema | psql -f - URL`).
 */
import type { Argv, CommandModule } from 'yargs';
import { ConfigError, EXIT_CODES, schemaSql, SCHEMA_VERSION } from '../../internal.js';
import type { CliContext } from '../context.js';
import { commandGroup } from '../manage.js';
import { handle, writeLine, type GlobalArgs } from '../output.js';

interface SchemaArgs extends GlobalArgs {
  from?: number;
}

function schemaCommand(ctx: CliContext): CommandModule<GlobalArgs, SchemaArgs> {
  return {
    command: 'schema',
    describe: `Print the SQL that creates the PostgreSQL state store's tables (schema version ${SCHEMA_VERSION}), to run as their owner`,
    builder: (b) =>
      b.option('from', {
        type: 'number',
        requiresArg: true,
        describe: 'Only the steps after this schema version (the version the database has; default 0: everything)',
      }) as unknown as Argv<SchemaArgs>,
    handler: handle(ctx, (args: SchemaArgs) => {
      const from = args.from ?? 0;
      if (!Number.isInteger(from) || from < 0 || from > SCHEMA_VERSION) {
        throw new ConfigError('invalid_option', `--from must be a schema version from 0 to ${SCHEMA_VERSION}`, {
          fix: 'pass the version the error named (or omit --from)',
        });
      }
      ctx.stdout.write(schemaSql(from));
      if (from === SCHEMA_VERSION) writeLine(ctx.stderr, 'the schema is current: nothing to run');
      return Promise.resolve(EXIT_CODES.ok);
    }),
  };
}

export function stateCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return commandGroup({
    command: 'state',
    describe: 'The state store: the SQL of the PostgreSQL store (schema)',
    subcommands: [schemaCommand(ctx)] as unknown as Array<CommandModule<GlobalArgs, never>>,
    examples: [['$0 state schema | psql -f - postgres://owner@db/ads', 'Create the tables as their owner']],
    exitCodes: { ok: 'ok', usage: 'usage' },
  });
}
