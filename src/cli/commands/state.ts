/**
 * `audience-kit state`: the state store itself. `state schema` prints the SQL that creates (or
 * updates) the PostgreSQL store's tables, for a database user without CREATE rights: an owner
 * runs it (`audience-kit state schema | psql -f - URL`).
 */
import { resolve } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import { grantsSql, schemaSql, SCHEMA_VERSION } from '../../state/postgres/schema.js';
import { moveState, type StateMoveReport } from '../../state/move.js';
import type { CliContext } from '../context.js';
import { EXIT_CODES } from '../exit-codes.js';
import { commandGroup } from '../manage.js';
import { handle, renderFields, renderTable, writeJson, writeLine, type GlobalArgs } from '../output.js';

interface SchemaArgs extends GlobalArgs {
  from?: number;
  role?: string;
}

function schemaCommand(ctx: CliContext): CommandModule<GlobalArgs, SchemaArgs> {
  return {
    command: 'schema',
    describe: `Print the SQL that creates the PostgreSQL state store's tables (schema version ${SCHEMA_VERSION}), to run as their owner`,
    builder: (b) =>
      b
        .option('from', {
          type: 'number',
          requiresArg: true,
          describe:
            'Only the steps after this schema version (default 0: every step, each skipped when the database has it)',
        })
        .option('role', {
          type: 'string',
          requiresArg: true,
          describe:
            'The database user the syncs connect as: the SQL ends with the GRANTs it needs (schema USAGE, the tables, the sequence)',
        }) as unknown as Argv<SchemaArgs>,
    handler: handle(ctx, (args: SchemaArgs) => {
      const from = args.from ?? 0;
      if (!Number.isInteger(from) || from < 0 || from > SCHEMA_VERSION) {
        throw new ConfigError('invalid_option', `--from must be a schema version from 0 to ${SCHEMA_VERSION}`, {
          fix: 'pass the version the error named (or omit --from)',
        });
      }
      const role = args.role?.trim();
      if (role === '') {
        throw new ConfigError('invalid_option', '--role must name a database user', {
          fix: 'pass the user of the URL the syncs use (postgres://USER@host/database)',
        });
      }
      ctx.stdout.write(schemaSql(from, SCHEMA_VERSION, role));
      if (role === undefined) {
        writeLine(
          ctx.stderr,
          `note: no GRANTs printed; if the syncs connect as another user than the one running this SQL, add --role USER for the GRANTs it needs:\n${grantsSql('USER')}`,
        );
      }
      return Promise.resolve(EXIT_CODES.ok);
    }),
  };
}

interface MoveArgs extends GlobalArgs {
  from: string;
  to: string;
}

/** A `--from`/`--to` value: a postgres:// URL as it is, else a directory (relative: to the working directory). */
const storeArg = (ctx: CliContext, value: string): string =>
  /^postgres(?:ql)?:/i.test(value) ? value : resolve(ctx.cwd, value);

function printMove(ctx: CliContext, r: StateMoveReport): void {
  writeLine(
    ctx.stdout,
    `moved from ${r.from}
        to ${r.to}`,
  );
  if (r.targets.length > 0) {
    const rows = r.targets.map((t) => ({ ...t, name: `${t.target.kind} ${t.target.id}`, account: t.target.accountId }));
    writeLine(
      ctx.stdout,
      renderTable(rows, [
        { header: 'target', value: (t) => t.name },
        { header: 'account', value: (t) => t.account },
        { header: 'users', value: (t) => t.users, align: 'right' },
        { header: 'bytes', value: (t) => t.bytes, align: 'right' },
        { header: 'membership digest', value: (t) => t.digest.slice(0, 16) },
      ]),
    );
  }
  writeLine(
    ctx.stdout,
    renderFields([
      ['snapshots', `${r.targets.length} (files identical byte for byte, read back from the destination)`],
      ['audit log', r.audit.records === 0 ? 'empty' : `${r.audit.records} records, head ${r.audit.head}`],
      ['upload journals', `none unfinished (${r.journalsNotMoved} completed, not moved)`],
    ]),
  );
  writeLine(
    ctx.stdout,
    `the source is left as it was: use the destination from now on, check it (audience-kit audit verify with its --state or --state-dir gives the head above), then remove the source (${r.from})`,
  );
}

function moveCommand(ctx: CliContext): CommandModule<GlobalArgs, MoveArgs> {
  return {
    command: 'move',
    describe: 'Copy every snapshot and the audit log from one state store to another (empty) one, and verify the copy',
    builder: (b) =>
      b
        .option('from', {
          type: 'string',
          requiresArg: true,
          demandOption: true,
          describe: 'Source: a state directory or a postgres:// URL',
        })
        .option('to', {
          type: 'string',
          requiresArg: true,
          demandOption: true,
          describe: 'Destination (empty): a state directory or a postgres:// URL',
        }),
    handler: handle(ctx, async (args: MoveArgs) => {
      const report = await moveState({ from: storeArg(ctx, args.from), to: storeArg(ctx, args.to) });
      if (args.json === true) writeJson(ctx, report);
      else printMove(ctx, report);
      return EXIT_CODES.ok;
    }),
  };
}

export function stateCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return commandGroup({
    command: 'state',
    describe: 'The state store: the SQL of the PostgreSQL store (schema), moving the state between stores (move)',
    subcommands: [schemaCommand(ctx), moveCommand(ctx)] as unknown as Array<CommandModule<GlobalArgs, never>>,
    examples: [
      [
        '$0 state schema --role sync | psql -f - postgres://owner@db/ads',
        'Create the tables as their owner, and grant the user sync what it needs',
      ],
      [
        '$0 state move --from ~/.local/state/audience-kit --to postgres://app@db/ads',
        'Move the snapshots and the audit log into PostgreSQL (no re-send)',
      ],
    ],
    exitCodes: { ok: 'ok', usage: 'usage', environment: 'environment', state: 'a damaged snapshot' },
  });
}
