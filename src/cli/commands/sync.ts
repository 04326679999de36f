/**
 * `audience-kit sync <file|->`: make a target's users exactly the users of the file, sending
 * only the changes (syncAudience). Input, mapping, connection and sending options are upload's
 * (the same builders); what is sync's own: --max-removals, --allow-empty, --full, --refresh-after.
 */
import { resolve } from 'node:path';
import type { CommandModule, Options } from 'yargs';
import { asKitError, reportJson } from '../../upload/report.js';
import { ConfigError } from '../../errors.js';
import { defaultAuditLogPath } from '../../state/audit.js';
import { DEFAULT_REFRESH_AFTER_DAYS, type SyncPlanCounts } from '../../upload/sync-plan.js';
import { openStateStore, type StateSpec } from '../../state/open-store.js';
import { MAX_REFRESH_AFTER_DAYS, checkSyncOptions, syncAudience, type SyncAudienceOptions } from '../../upload/sync.js';
import { resendSnapshot } from '../../upload/sync-refill.js';
import { describeTarget } from '../../upload/target.js';
import { stateFailure } from '../../state/fs.js';
import type { HashCsvRun } from '../../hashing/pipeline.js';
import type { StateStore, TakeoverWait } from '../../state/store.js';
import type { SyncReport } from '../../upload/sync-report.js';
import { withConnectionOptions } from '../connection.js';
import type { CliContext } from '../context.js';
import { settleState, STATE_URL_OPTION } from '../state-dir.js';
import { renderHashSummary } from '../hash-summary.js';
import { summaryHints } from '../hints.js';
import {
  addHashOptions,
  printHints,
  printInputMapping,
  readingJson,
  sendInputFromArgs,
  type SendInput,
} from '../hash-options.js';
import { withFlagNames } from '../flag-names.js';
import {
  exitCodesEpilogue,
  finishWhenStdoutCloses,
  handle,
  inputName,
  renderFields,
  writeJson,
  writeLine,
  type GlobalArgs,
} from '../output.js';
import {
  checkUsage,
  exitCodeOf,
  runInput,
  runShape,
  TARGET_FLAG_CONFLICTS,
  TARGET_FLAGS,
  targetOf,
  UPLOAD_OPTIONS,
  type UploadArgs,
} from '../send-options.js';
import {
  closeSend,
  connect,
  consentOption,
  interruptSignal,
  openSendInput,
  sandboxTargetSize,
  type Connected,
} from '../send-session.js';
import { exitCodeFor, type ExitCode } from '../exit-codes.js';

interface SyncArgs extends UploadArgs {
  state?: string;
  'max-removals'?: string;
  'allow-empty'?: boolean;
  full?: boolean;
  'refresh-after'?: number;
  recover?: boolean;
  'accept-unrecovered'?: boolean;
}

/** `--sandbox` starts a sandbox per command: a fixed seed gives the same ids, hence the same snapshot. */
const SANDBOX_SEED = 12;

const SHARED = [
  'account',
  ...TARGET_FLAGS,
  'sandbox-faults',
  'concurrency',
  'max-retries',
  'max-body-bytes',
  'max-operations',
  'max-users-per-operation',
  'min-audience-size',
  'audit-log',
  'quiet',
] as const;

const SYNC_OPTIONS: Record<string, Options> = {
  ...Object.fromEntries(SHARED.map((k) => [k, UPLOAD_OPTIONS[k] as Options])),
  'dry-run': { type: 'boolean', describe: 'Print the plan (adds, removes, refreshes, requests, bytes); send nothing' },
  'max-removals': {
    type: 'string',
    requiresArg: true,
    describe: 'Refuse, before sending anything, to remove more than N users or P% of the snapshot (default 10%)',
  },
  'allow-empty': { type: 'boolean', describe: 'Accept an input without a valid user (it empties the target)' },
  full: { type: 'boolean', describe: 'Send every user of the file as Update, not only the new ones' },
  recover: {
    type: 'boolean',
    describe:
      'Rebuild a damaged snapshot from what can be read, then remove its users the file lacks and update the rest',
  },
  'accept-unrecovered': {
    type: 'boolean',
    describe:
      'Acknowledge the users a recovery could not read back (they stay until their membership expires): later syncs no longer end partial for them',
  },
  'refresh-after': {
    type: 'number',
    requiresArg: true,
    describe: `Re-send users last confirmed more than DAYS ago (default ${DEFAULT_REFRESH_AFTER_DAYS}, at most ${MAX_REFRESH_AFTER_DAYS})`,
  },
  'state-dir': { ...(UPLOAD_OPTIONS['state-dir'] as Options), describe: 'Snapshots and the audit log (mode 0700)' },
  state: STATE_URL_OPTION,
  sandbox: {
    type: 'boolean',
    describe: 'Sync to an embedded sandbox started in-process, refilled from the snapshot (fixed ids)',
  },
};

/**
 * The embedded sandbox lives for one command: its target is refilled with what the snapshot says
 * was confirmed, so a second `sync --sandbox` meets what the first left, as a real target would.
 */
async function refillSandbox(c: Connected, store: StateStore): Promise<void> {
  if (c.sandbox === undefined || c.client === undefined) return;
  const r = await resendSnapshot({ client: c.client, accountId: c.accountId, target: c.target, store });
  if (r !== undefined && r.status !== 'completed')
    throw r.error ?? new ConfigError('invalid_option', 'the sandbox could not be refilled');
}

function syncExitCode(report: SyncReport): ExitCode {
  if (report.status === 'refused') return report.error === undefined ? 2 : exitCodeFor(report.error);
  // Completed, but the audit log could not record it.
  if (report.status === 'completed' && report.error !== undefined) return exitCodeFor(report.error);
  return exitCodeOf({ status: report.status, ...(report.error === undefined ? {} : { error: report.error }) });
}

async function sync(ctx: CliContext, args: SyncArgs): Promise<number> {
  // A report the user cannot read later (a full disk under `> report.json`) is an exit 8 too.
  finishWhenStdoutCloses(ctx);
  let state: StateSpec | undefined;
  try {
    // The embedded sandbox's target is made later: its state is found as upload's is.
    const target = args.sandbox === true ? undefined : { accountId: args.account ?? '', target: targetOf(args) };
    state = settleState(ctx, args, target);
    return await syncFile(ctx, args, state);
  } catch (thrown) {
    // A raw fs error of the state (a snapshot write: EACCES, ENOSPC, EFBIG) is the machine's.
    throw state?.kind === 'directory' ? stateFailure(thrown, state.dir) : thrown;
  }
}

/**
 * syncAudience's options from the flags and, once the session is open, its target, client and the
 * store opened here (the sandbox refill read it too). Without a session, the options checked
 * before the input is opened or the sandbox started.
 */
function syncOptions(
  ctx: CliContext,
  args: SyncArgs,
  state: StateSpec,
  input: SendInput,
  session?: { c: Connected; store: StateStore },
): Omit<SyncAudienceOptions, 'users'> {
  const { limits, concurrency, maxRetries, minAudienceSize } = runShape(args);
  // The store's own audit log (the directory's audit.jsonl, or the database's), unless --audit-log names a file.
  const named = args['audit-log'] ?? (state.kind === 'directory' ? defaultAuditLogPath(state.dir) : undefined);
  const dryRun = args['dry-run'] === true;
  const flags = {
    limits,
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(maxRetries === undefined ? {} : { maxRetries }),
    ...(minAudienceSize === undefined ? {} : { minAudienceSize }),
    input: runInput(input.source, input.file),
    ...(named === undefined ? {} : { auditLog: resolve(ctx.cwd, named) }),
    full: args.full === true,
    recover: args.recover === true,
    acceptUnrecovered: args['accept-unrecovered'] === true,
    ...(args['refresh-after'] === undefined ? {} : { refreshAfterDays: args['refresh-after'] }),
    ...(args['max-removals'] === undefined ? {} : { maxRemovals: args['max-removals'] }),
    allowEmpty: args['allow-empty'] === true,
    dryRun,
    sandbox: args.sandbox === true,
  };
  if (session === undefined) {
    const where = state.kind === 'directory' ? { stateDir: state.dir } : { state: state.url };
    return { ...flags, accountId: args.account ?? '', target: targetOf(args), ...where };
  }
  const { c, store } = session;
  return {
    ...flags,
    ...(c.client === undefined || dryRun ? {} : { client: c.client }),
    accountId: c.accountId,
    target: c.target.named,
    ...consentOption(c),
    state: store,
  };
}

async function syncFile(ctx: CliContext, args: SyncArgs, state: StateSpec): Promise<number> {
  checkUsage(args, 'sync');
  // An input without users is judged by the sync itself (refused unless --allow-empty).
  const input = sendInputFromArgs(ctx, args, { requireUsers: false });
  // The flags checked with syncAudience's own schema before the input is opened or the sandbox started.
  checkSyncOptions(syncOptions(ctx, args, state, input));
  const target = describeTarget(targetOf(args));
  const run = await openSendInput(input, target);
  const interrupt = interruptSignal(ctx);
  let c: Connected | undefined;
  let store: StateStore | undefined;
  try {
    if (args.quiet !== true) printInputMapping(ctx, run);
    store = await openStateStore(state);
    const opened = store;
    c = await connect(ctx, args, target, {
      seed: SANDBOX_SEED,
      prepare: (sandboxed) => refillSandbox(sandboxed, opened),
      doNotReachListId: input.doNotReachListId,
    });
    // The audit log refusing the end record (disk full) still lets the report be printed.
    let auditError: unknown;
    const options = syncOptions(ctx, args, state, input, { c, store });
    const named = c.target;
    const report = await syncAudience({
      ...options,
      users: run,
      signal: interrupt.signal,
      onAuditError: (e) => (auditError = e),
      onPhase: (phase, plan, target) => printPhase(ctx, args, phase, plan, target, named),
      onTakeoverWait: (wait) => printTakeoverWait(ctx, wait),
    });
    const lostAudit =
      auditError === undefined ? undefined : asKitError(stateFailure(auditError, options.auditLog ?? store.describe()));
    if (report.error === undefined && lostAudit !== undefined) report.error = lostAudit;
    for (const r of [report, report.do_not_reach]) if (r?.error !== undefined) withFlagNames(r.error);
    printOutcome(ctx, args, report, run, c);
    // The sync's own cause is the report's; the audit log's failure is said too.
    if (lostAudit !== undefined && report.error !== lostAudit)
      writeLine(ctx.stderr, `error: the audit log did not record the end of this run: ${lostAudit.message}`);
    return syncExitCode(report);
  } finally {
    interrupt.release();
    await closeSend(run, c);
    await store?.close();
  }
}

/** The one line that explains a takeover's silent wait (printed even with --quiet: it can last minutes). */
function printTakeoverWait(ctx: CliContext, { ms, holder }: TakeoverWait): void {
  const who =
    holder === undefined
      ? 'its last holder'
      : `its last holder (pid ${holder.pid} on host ${holder.host}, since ${holder.since})`;
  writeLine(
    ctx.stderr,
    `notice: waiting ${Math.ceil(ms / 1000)} s before sending: ${who} ended uncleanly and could still have a request to the platform in flight`,
  );
}

function printPhase(
  ctx: CliContext,
  args: SyncArgs,
  phase: 'planned' | 'removing' | 'updating',
  plan: SyncPlanCounts,
  target: { kind: string; id: string },
  named: { kind: string; id: string },
): void {
  if (args.quiet === true) return;
  // The list's sync of --consent do-not-reach follows the named target's: its lines say so.
  const list = target.kind !== named.kind || target.id !== named.id;
  if (list && phase === 'planned') writeLine(ctx.stderr, `do-not-reach list ${target.id}: the rows that say no`);
  if (phase === 'planned')
    writeLine(ctx.stderr, `plan: +${plan.adds} -${plan.removes} ~${plan.refreshes} =${plan.unchanged}`);
  else writeLine(ctx.stderr, phase === 'removing' ? 'removing (Delete) ...' : 'adding and refreshing (Update) ...');
}

const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

function operationLine(r: SyncReport['delete'], dryRun: boolean): string {
  if (dryRun) return `${count(r.users, 'user')} in ${count(r.batches, 'request')} (${r.bytes} bytes) planned`;
  if (r.status === 'not_sent')
    return `${count(r.users_withheld, 'user')} withheld: not sent (the removals did not all go through)`;
  return `${r.users_confirmed} of ${count(r.users, 'user')} confirmed, ${count(r.requests, 'request')}, ${r.status}`;
}

function printOutcome(ctx: CliContext, args: SyncArgs, report: SyncReport, run: HashCsvRun, c: Connected): void {
  const refused = report.do_not_reach;
  const sandbox = sandboxTargetSize(c);
  const size = sandbox?.size;
  if (args.json === true) {
    writeJson(ctx, {
      ...reportJson(report),
      exit_code: syncExitCode(report),
      input: inputName(args.file),
      reading: readingJson(run),
      ...(size === undefined ? {} : { sandbox: { audience_size: size } }),
      hints: summaryHints(run.summary, run.mapping, run.normalize, c.target.filtersConsent),
    });
  } else
    printTable(
      ctx,
      report,
      run,
      sandbox,
      c.target.filtersConsent,
      refused === undefined ? [] : [refusedField(refused, c)],
    );
  printCause(ctx, report);
}

/** The do-not-reach sync of --consent do-not-reach in one line of the report. */
function refusedField(r: SyncReport, c: Connected): [string, unknown] {
  const size = c.sandbox?.state.dnrListSize(r.target.id);
  const error = r.error === undefined ? '' : `: ${r.error.code}`;
  return [
    'do-not-reach (said no)',
    `list ${r.target.id}: +${r.adds} -${r.removes} ~${r.refreshes}, ${r.status}${error}${size === undefined ? '' : ` (sandbox list size ${size})`}`,
  ];
}

function printTable(
  ctx: CliContext,
  report: SyncReport,
  run: HashCsvRun,
  sandbox: { label: string; size: number } | undefined,
  consentFiltered: boolean,
  extra: [string, unknown][],
): void {
  const fields: [string, unknown][] = [
    ['run id', report.run_id],
    ['status', report.status + (report.dry_run ? ' (dry run: nothing sent)' : '')],
    ['target', `${report.target.kind} ${report.target.id} (account ${report.account_id})`],
    ['first sync', report.first_sync ? 'yes: nothing removed (no snapshot of this target yet)' : 'no'],
    ['rows read', report.rows],
    ['users', report.users],
    ['duplicates (one user)', report.duplicates],
    [
      'plan',
      `+${report.adds} added, -${report.removes} removed, ~${report.refreshes} refreshed, ${report.unchanged} unchanged (not sent)`,
    ],
    ['removed (Delete)', operationLine(report.delete, report.dry_run)],
    ['added/refreshed (Update)', operationLine(report.update, report.dry_run)],
    ['retries', report.retries],
    [
      'snapshot',
      `${report.snapshot.before.users} -> ${report.snapshot.after.users} users, ${report.snapshot.bytes_on_disk} bytes`,
    ],
    ['duration', `${(report.duration_ms / 1000).toFixed(1)} s`],
  ];
  if (report.oversized_users > 0) {
    const lines = report.oversized_lines.length === 0 ? '' : ` (lines ${report.oversized_lines.join(', ')})`;
    fields.push(['users too large to send', `${report.oversized_users}${lines}`]);
  }
  fields.push(...extra);
  if (sandbox !== undefined) fields.push([sandbox.label, sandbox.size]);
  writeLine(ctx.stdout, renderFields(fields));
  writeLine(ctx.stdout);
  writeLine(ctx.stdout, renderHashSummary(run.summary));
  // Why many values of a type were rejected, and the likely fix: what `hash` and `upload` say too.
  printHints(ctx, run.summary, run.mapping, run.normalize, consentFiltered);
}

/** Why the sync did not complete, on stderr whatever the output format: failed batches, then the error and its fix. */
function printCause(ctx: CliContext, report: SyncReport): void {
  for (const [name, op] of [
    ['Delete', report.delete],
    ['Update', report.update],
  ] as const)
    for (const f of op.failed_batches.slice(0, 10))
      writeLine(ctx.stderr, `failed: ${name} batch ${f.index} (${count(f.users, 'user')}): ${f.code}: ${f.reason}`);
  if (report.error !== undefined) {
    writeLine(ctx.stderr, `error: ${report.error.message}`);
    if (report.error.fix !== undefined) writeLine(ctx.stderr, `  fix: ${report.error.fix}`);
  }
}

export function syncCommand(ctx: CliContext): CommandModule<GlobalArgs, SyncArgs> {
  return {
    command: 'sync <file>',
    describe: "Make a target's users exactly the users of a CSV export, sending only what changed since the last sync",
    builder: (y) =>
      withConnectionOptions(
        addHashOptions(
          y.positional('file', {
            type: 'string',
            demandOption: true,
            describe: 'CSV file (.gz accepted), or - for stdin',
          }),
        ),
      )
        .options(SYNC_OPTIONS)
        .conflicts(TARGET_FLAG_CONFLICTS)
        .group(Object.keys(SYNC_OPTIONS), 'Sync:')
        .example(
          '$0 sync fixtures/crm-export.csv --sandbox --state-dir out/state',
          'Try it against an embedded sandbox',
        )
        .example('$0 sync export.csv --account 18ce54d4x5t --audience 1nmth', 'Daily: send only the changes')
        .example('$0 sync export.csv --account A --audience B --dry-run', 'Show the plan, send nothing')
        .epilogue(
          exitCodesEpilogue({
            ok: 'the target holds exactly the users of the file',
            usage:
              'usage/config, or the plan was refused (too many removals, empty input; nothing sent), or another sync of the target runs',
            input: 'unreadable input or more rejected values than --max-reject-rate',
            auth: 'authentication/permission',
            partial: 'some changes confirmed: run it again',
            api: 'API/network failure',
            environment: 'disk full, state not writable or symlink refused',
            state: "the snapshot is damaged, rolled back or not this target's (nothing sent: --recover)",
            interrupted: 'interrupted (what was confirmed is kept)',
          }),
        ) as never,
    handler: handle(ctx, (args: SyncArgs) => sync(ctx, args)),
  };
}
