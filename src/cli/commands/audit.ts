import { resolve } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../../errors.js';
import { defaultAuditLogPath, findRunIn, type AuditRun } from '../../state/audit.js';
import { FileAuditLog } from '../../state/audit-file.js';
import { openStateStore } from '../../state/open-store.js';
import type { AuditLog } from '../../state/store.js';
import type { CliContext } from '../context.js';
import { settleState, STATE_URL_OPTION } from '../state-dir.js';
import { commandGroup } from '../manage.js';
import { handle, renderFields, renderTable, writeJson, writeLine, type Column, type GlobalArgs } from '../output.js';
import { EXIT_CODES } from '../exit-codes.js';

interface AuditArgs extends GlobalArgs {
  'audit-log'?: string;
  'state-dir'?: string;
  state?: string;
}

interface AuditVerifyArgs extends AuditArgs {
  head?: string;
}

interface AuditShowArgs extends AuditArgs {
  runId: string;
}

// The same two options as `upload`, so the log an upload wrote is found the same way.
const withLogOption = <T>(y: Argv<T>): Argv<T & AuditArgs> =>
  y
    .option('audit-log', {
      type: 'string',
      requiresArg: true,
      describe: 'Audit log file (default: audit.jsonl in --state-dir)',
    })
    .option('state-dir', {
      type: 'string',
      requiresArg: true,
      describe: 'State directory of the uploads and syncs (as given to upload --state-dir; the same default)',
    })
    .option('state', STATE_URL_OPTION) as unknown as Argv<T & AuditArgs>;

/** The log: --audit-log's file, else the state store's (a directory's audit.jsonl, or the database's table). */
async function withLog<T>(ctx: CliContext, args: AuditArgs, use: (log: AuditLog) => Promise<T>): Promise<T> {
  if (args['audit-log'] !== undefined) return use(new FileAuditLog(resolve(ctx.cwd, args['audit-log'])));
  const state = settleState(ctx, args);
  if (state.kind === 'directory') return use(new FileAuditLog(defaultAuditLogPath(state.dir)));
  const store = await openStateStore(state);
  try {
    return await use(store.audit);
  } finally {
    await store.close();
  }
}

const RUN_COLUMNS: readonly Column<AuditRun>[] = [
  { header: 'run id', value: (r) => r.run_id },
  { header: 'started', value: (r) => r.start?.at },
  { header: 'outcome', value: (r) => r.end?.outcome ?? (r.start === undefined ? 'unknown' : 'no end record') },
  { header: 'account', value: (r) => r.start?.account_id },
  {
    header: 'target',
    value: (r) => (r.start === undefined ? undefined : `${r.start.target.kind} ${r.start.target.id}`),
  },
  { header: 'op', value: (r) => r.start?.operation },
  { header: 'input', value: (r) => r.start?.input.name },
  { header: 'rows', value: (r) => r.end?.counts.rows, align: 'right' },
  { header: 'users', value: (r) => r.end?.counts.users_sent, align: 'right' },
  { header: 'confirmed', value: (r) => r.end?.counts.success_count, align: 'right' },
  // Syncs: planned adds, removals and refreshes.
  {
    header: 'changes',
    value: (r) =>
      r.end?.sync === undefined ? undefined : `+${r.end.sync.adds} -${r.end.sync.removes} ~${r.end.sync.refreshes}`,
  },
];

function verifyCommand(ctx: CliContext): CommandModule<GlobalArgs, AuditVerifyArgs> {
  return {
    command: 'verify',
    describe: 'Check every link of the hash chain; reports the first broken one (exit 3 if broken)',
    builder: (b) =>
      withLogOption(b).option('head', {
        type: 'string',
        requiresArg: true,
        describe: 'A head printed by an earlier verify (kept elsewhere): also check that its record is still there',
      }) as unknown as Argv<AuditVerifyArgs>,
    handler: handle(ctx, async (args: AuditVerifyArgs) => {
      if (args.head !== undefined && !/^[0-9a-fA-F]{64}$/.test(args.head)) {
        throw new ConfigError(
          'config_invalid_value',
          '--head must be a SHA-256 head (64 hex digits) printed by audit verify',
          {
            fix: 'pass the head exactly as `audience-kit audit verify` printed it',
          },
        );
      }
      const head = args.head;
      const { v, file } = await withLog(ctx, args, async (log) => ({
        v: await log.verify(head === undefined ? {} : { head }),
        file: log.describe(),
      }));
      if (args.json === true) writeJson(ctx, { file, ...v });
      else if (v.ok) {
        const since =
          v.headLine === undefined
            ? ''
            : `; recorded head found at line ${v.headLine}, ${v.records - v.headLine} records appended since`;
        writeLine(ctx.stdout, `ok: ${v.records} records, chain intact (head ${v.head})${since}`);
      } else
        writeLine(
          ctx.stdout,
          `broken: line ${v.broken?.line}: ${v.broken?.problem} (${v.records} records verified before it)`,
        );
      return v.ok ? EXIT_CODES.ok : EXIT_CODES.input;
    }),
  };
}

function listCommand(ctx: CliContext): CommandModule<GlobalArgs, AuditArgs> {
  return {
    command: 'list',
    describe: 'Show the runs in the log as a table',
    builder: (b) => withLogOption(b),
    handler: handle(ctx, async (args: AuditArgs) => {
      const runs = await withLog(ctx, args, (log) => log.runs());
      if (args.json === true) writeJson(ctx, { data: runs });
      else writeLine(ctx.stdout, runs.length === 0 ? 'no runs' : renderTable(runs, RUN_COLUMNS));
      return EXIT_CODES.ok;
    }),
  };
}

function showCommand(ctx: CliContext): CommandModule<GlobalArgs, AuditShowArgs> {
  return {
    command: 'show <run-id>',
    describe: "Show one run's start and end records",
    builder: (b) =>
      withLogOption(b).positional('run-id', { type: 'string', demandOption: true }) as unknown as Argv<AuditShowArgs>,
    handler: handle(ctx, async (args: AuditShowArgs) => {
      const run = await withLog(ctx, args, async (log) => findRunIn(await log.runs(), args.runId, log.describe()));
      if (args.json === true) {
        writeJson(ctx, run);
        return EXIT_CODES.ok;
      }
      const s = run.start;
      const e = run.end;
      const fields: (readonly [string, unknown])[] = [['run id', run.run_id]];
      if (s !== undefined) {
        fields.push(
          ['started', s.at],
          ['tool version', s.tool_version],
          ['account', s.account_id],
          ['target', `${s.target.kind} ${s.target.id}`],
          ['operation', s.operation],
          ['input', `${s.input.name} (${s.input.size ?? '?'} bytes, sha256 ${s.input.sha256 ?? '-'})`],
          ['resumed', s.resumed],
          ['sandbox', s.sandbox],
          ['options', s.options],
        );
      }
      if (e !== undefined) {
        fields.push(['ended', e.at], ['outcome', e.outcome], ['duration', `${(e.duration_ms / 1000).toFixed(1)} s`]);
        if (e.error !== undefined) fields.push(['error', e.error]);
        for (const [k, v] of Object.entries(e.counts)) fields.push([k.replaceAll('_', ' '), v]);
        for (const [k, v] of Object.entries(e.sync ?? {})) fields.push([`sync ${k.replaceAll('_', ' ')}`, v]);
      } else {
        fields.push(['ended', 'no end record (still running, or killed)']);
      }
      writeLine(ctx.stdout, renderFields(fields));
      return EXIT_CODES.ok;
    }),
  };
}

export function auditCommand(ctx: CliContext): CommandModule<GlobalArgs, GlobalArgs> {
  return commandGroup({
    command: 'audit',
    describe: 'Read and verify the tamper-evident audit log of uploads: verify, list, show',
    subcommands: [verifyCommand(ctx), listCommand(ctx), showCommand(ctx)] as unknown as Array<
      CommandModule<GlobalArgs, never>
    >,
    examples: [
      [
        '$0 audit verify',
        "Check the hash chain of the state directory's audit.jsonl (default ~/.local/state/audience-kit; --state-dir, --state or --audit-log name another); prints the head hash to keep elsewhere",
      ],
      ['$0 audit list --state-dir /var/lib/audience-kit', 'The runs of uploads made with that --state-dir'],
      ['$0 audit show 20261122T060041Z-74d4a1 --json', 'One run: its start and end records'],
    ],
    exitCodes: {
      ok: 'ok',
      usage: 'usage, or an unknown run id',
      input: 'the log is missing, unreadable, or its chain is broken',
      environment: 'the state cannot be read: permissions, disk I/O, or the database refused',
    },
  });
}
