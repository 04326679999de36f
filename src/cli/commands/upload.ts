import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import {
  checkRunOptions,
  runUpload,
  type RunNotice,
  type RunUploadOptions,
  type UnfinishedRunPolicy,
} from '../../upload/run.js';
import { describeTarget, type Target } from '../../upload/target.js';
import { ProgressPrinter } from '../../upload/progress.js';
import { reportJson } from '../../upload/report.js';
import { unfinishedRunError } from '../../state/journal.js';
import type { HashCsvRun } from '../../hashing/pipeline.js';
import type { PackedBatch } from '../../upload/plan.js';
import { openStateStore, type StateSpec } from '../../state/open-store.js';
import type { StateStore } from '../../state/store.js';
import type { UploadReport } from '../../upload/types.js';
import { writeFileNoFollow } from '../../state/fs.js';
import { withConnectionOptions } from '../connection.js';
import type { CliContext } from '../context.js';
import { settleState } from '../state-dir.js';
import { renderHashSummary } from '../hash-summary.js';
import { withFlagNames } from '../flag-names.js';
import { summaryHints } from '../hints.js';
import { askYesNo } from '../prompt.js';
import {
  addHashOptions,
  printHints,
  printInputMapping,
  readingJson,
  sendInputFromArgs,
  type SendInput,
} from '../hash-options.js';
import {
  exitCodesEpilogue,
  handle,
  inputName,
  renderFields,
  reportError,
  writeJson,
  finishWhenStdoutCloses,
  stderrColumns,
  writeLine,
  type GlobalArgs,
} from '../output.js';
import {
  checkUsage,
  exitCodeOf,
  runInput,
  runShape,
  TARGET_FLAG_CONFLICTS,
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

function unfinishedPolicy(ctx: CliContext, args: UploadArgs): UnfinishedRunPolicy {
  if (args.resume === true) return 'resume';
  if (args.restart === true) return 'restart';
  if (!(ctx.stdinIsTTY && ctx.stderrIsTTY)) return 'refuse';
  return async (summary) => {
    writeLine(ctx.stderr, withFlagNames(unfinishedRunError(summary)).message);
    const answer = await askYesNo(ctx, 'resume it? [Y/n] ', true);
    return answer === 'interrupted' ? 'cancel' : answer ? 'resume' : 'restart';
  };
}

function printReport(
  ctx: CliContext,
  report: UploadReport,
  run: HashCsvRun,
  extra: ReadonlyArray<readonly [string, unknown]>,
): void {
  const fields: (readonly [string, unknown])[] = [
    ['run id', report.run_id],
    ['status', report.status + (report.dry_run ? ' (dry run: nothing sent)' : '')],
    ['target', `${report.target.kind} ${report.target.id} (account ${report.account_id})`],
    ['operation', report.operation],
    ['rows read', report.rows],
    ['users', report.users],
    [
      'users confirmed',
      report.users_confirmed +
        (report.users_confirmed_earlier > 0 ? ` (${report.users_confirmed_earlier} by an earlier run)` : ''),
    ],
    ['duplicates (sent once)', report.duplicates],
    ['requests', report.dry_run ? `${report.batches} planned` : report.requests],
    [
      'batches confirmed',
      `${report.batches_confirmed}${report.batches_skipped > 0 ? ` (+${report.batches_skipped} skipped, confirmed earlier)` : ''} of ${report.batches}`,
    ],
    ['bytes', report.bytes],
    ['retries', report.retries],
    ['count mismatches', report.mismatches],
    ['rate-limit waits', report.rate_limit_waits],
    ['time waiting (limits, backoffs)', `${(report.waited_ms / 1000).toFixed(1)} s`],
    ['success_count / total_count', `${report.success_count} / ${report.total_count}`],
    ['duration', `${(report.duration_ms / 1000).toFixed(1)} s`],
  ];
  if (report.oversized_users > 0)
    fields.push(['users too large to send', `${report.oversized_users} (lines ${report.oversized_lines.join(', ')})`]);
  if (report.batches_failed > 0)
    fields.push(['batches failed', `${report.batches_failed} (${report.users_failed} users)`]);
  if (report.unrecorded_batches.length > 0)
    fields.push([
      'unrecorded batches',
      `${report.unrecorded_batches.length} (confirmed, but the journal could not record them: a --resume sends them again)`,
    ]);
  if (report.operation_errors_total > 0) {
    const lines = report.operation_errors.map((e) => e.line).filter((l) => l !== null);
    fields.push([
      'refused by the platform',
      `${report.operation_errors_total} (lines ${lines.slice(0, 10).join(', ')}${lines.length > 10 ? ', ...' : ''})`,
    ]);
  }
  fields.push(...extra);
  writeLine(ctx.stdout, renderFields(fields));
  writeLine(ctx.stdout);
  writeLine(ctx.stdout, renderHashSummary(run.summary));
  for (const f of report.failed_batches.slice(0, 10))
    writeLine(ctx.stderr, `failed: batch ${f.index} (${f.users} users): ${f.code}: ${f.reason}`);
  const [message, fix] = report.error === undefined ? [] : [report.error.message, report.error.fix];
  if (message !== undefined) writeLine(ctx.stderr, `error: ${message}`);
  if (fix !== undefined) writeLine(ctx.stderr, `  fix: ${fix}`);
}

/** A run the CLI journals: not in the sandbox, not of stdin (it cannot be read again). */
const journaledRun = (args: UploadArgs, input: SendInput): boolean => args.sandbox !== true && input.source !== '-';

/**
 * runUpload's options from the flags and, once the session is open, its target, client and store
 * (the store's journals when journaled, its audit log unless --audit-log names a file). Without
 * a session, the options checked before the input is opened or the sandbox started.
 */
function runOptions(
  ctx: CliContext,
  args: UploadArgs,
  input: SendInput,
  session: { c: Connected; store: StateStore } | { state: StateSpec },
): Omit<RunUploadOptions, 'users'> {
  const auditLog = args['audit-log'] === undefined ? undefined : resolve(ctx.cwd, args['audit-log']);
  const common = {
    ...runShape(args),
    input: runInput(input.source, input.file),
    dedupe: args.dedupe,
    dryRun: args['dry-run'] === true,
    sandbox: args.sandbox === true,
    unfinished: unfinishedPolicy(ctx, args),
  };
  if ('state' in session) {
    const { state } = session;
    const where = state.kind === 'directory' ? { stateDir: state.dir } : { state: state.url };
    const audit = auditLog === undefined ? {} : { auditLog };
    return { ...common, accountId: args.account ?? '', target: targetOf(args), ...where, ...audit };
  }
  const { c, store } = session;
  return {
    ...common,
    ...(c.client === undefined ? {} : { client: c.client }),
    accountId: c.accountId,
    target: c.target.named,
    ...consentOption(c),
    ...(journaledRun(args, input) ? { state: store } : {}),
    auditLog: auditLog ?? store.audit,
  };
}

/** Writes the first request body to --preview's file. */
function previewWriter(ctx: CliContext, args: UploadArgs): ((batch: PackedBatch) => void) | undefined {
  const preview = args.preview;
  if (preview === undefined) return undefined;
  let written = false;
  return (b) => {
    if (written) return;
    written = true;
    writeFileNoFollow(resolve(ctx.cwd, preview), b.body);
  };
}

/** Journal notices on stderr (unless --quiet); the journal's directory for the report. */
function noticePrinter(
  ctx: CliContext,
  args: UploadArgs,
): { onNotice: (n: RunNotice) => void; dir: () => string | undefined } {
  let journalDir: string | undefined;
  const onNotice = (n: RunNotice): void => {
    if (n.kind === 'journal') journalDir = n.dir;
    if (args.quiet === true) return;
    if (n.kind === 'nothing_to_resume')
      writeLine(ctx.stderr, 'nothing to resume for this file and these options: starting a new run');
    else if (n.resumed)
      writeLine(
        ctx.stderr,
        `resuming: ${n.confirmed} batches confirmed earlier are skipped, ${n.failed} kept batches re-sent first`,
      );
  };
  return { onNotice, dir: () => journalDir };
}

async function upload(ctx: CliContext, args: UploadArgs): Promise<number> {
  checkUsage(args);
  const state = settleState(ctx, args);
  const input = sendInputFromArgs(ctx, args);
  // The flags checked with runUpload's own schema before the input is opened or the sandbox started.
  checkRunOptions(runOptions(ctx, args, input, { state }));
  const target = describeTarget(targetOf(args));
  finishWhenStdoutCloses(ctx);
  const run = await openSendInput(input, target);
  const interrupt = interruptSignal(ctx);
  let c: Connected | undefined;
  let store: StateStore | undefined;
  try {
    if (!args.quiet) printInput(ctx, run, target);
    store = await openStateStore(state);
    c = await connect(ctx, args, target, { doNotReachListId: input.doNotReachListId });
    const printer = args.quiet === true ? undefined : progressPrinter(ctx);
    const notices = noticePrinter(ctx, args);
    const onBatch = previewWriter(ctx, args);
    // A failed audit append still lets the report be printed (what was sent matters most).
    let auditError: unknown;
    const report = await runUpload({
      ...runOptions(ctx, args, input, { c, store }),
      users: run,
      signal: interrupt.signal,
      onNotice: notices.onNotice,
      ...(printer === undefined ? {} : { onProgress: printer.update }),
      ...(onBatch === undefined ? {} : { onBatch }),
      onAuditError: (e) => (auditError = e),
    }).finally(() => printer?.finish());
    for (const r of [report, report.do_not_reach]) if (r?.error !== undefined) withFlagNames(r.error);
    printOutcome(ctx, args, report, run, c, notices.dir());
    if (auditError !== undefined) return reportError(ctx, auditError, args.debug === true);
    return exitCodeOf(report);
  } finally {
    interrupt.release();
    await closeSend(run, c);
    await store?.close();
  }
}

/** What is read, the column mapping, and the types a do-not-reach list leaves out (stderr). */
function printInput(ctx: CliContext, run: HashCsvRun, target: Target): void {
  printInputMapping(ctx, run);
  if (target.types !== undefined)
    writeLine(
      ctx.stderr,
      `  (${target.name}s take only ${target.types.join(' and ')}: other identifier columns are ignored)`,
    );
}

function progressPrinter(ctx: CliContext): ProgressPrinter {
  return new ProgressPrinter({
    write: (t) => ctx.stderr.write(t),
    tty: ctx.stderrIsTTY,
    columns: () => stderrColumns(ctx),
  });
}

function printOutcome(
  ctx: CliContext,
  args: UploadArgs,
  report: UploadReport,
  run: HashCsvRun,
  c: Connected,
  journalDir: string | undefined,
): void {
  const refused = report.do_not_reach;
  const extra: [string, unknown][] = [];
  if (refused !== undefined) extra.push(['do-not-reach (said no)', refusedLine(refused, c)]);
  const sandbox = sandboxTargetSize(c);
  const sandboxInfo = sandbox === undefined ? undefined : { audience_size: sandbox.size };
  if (sandbox !== undefined) extra.push([sandbox.label, sandbox.size]);
  if (journalDir !== undefined && report.status !== 'completed')
    extra.push(['state', `${journalDir} (run again with --resume to continue)`]);
  // Why many values of a type were rejected, and the likely fix: what `hash` says too.
  if (args.json !== true) {
    printReport(ctx, report, run, extra);
    printHints(ctx, run.summary, run.mapping, run.normalize, c.target.filtersConsent);
    return;
  }
  writeJson(ctx, {
    ...reportJson(report),
    exit_code: exitCodeOf(report),
    input: inputName(args.file),
    reading: readingJson(run),
    ...(sandboxInfo === undefined ? {} : { sandbox: sandboxInfo }),
    hints: summaryHints(run.summary, run.mapping, run.normalize, c.target.filtersConsent),
  });
}

/** The do-not-reach run of --consent do-not-reach in one line of the report. */
function refusedLine(r: UploadReport, c: Connected): string {
  const size = c.sandbox?.state.dnrListSize(r.target.id);
  const error = r.error === undefined ? '' : `: ${r.error.code}`;
  return `list ${r.target.id}: ${r.users_confirmed} of ${r.users} users confirmed, ${r.status}${error}${size === undefined ? '' : ` (sandbox list size ${size})`}`;
}

export function uploadCommand(ctx: CliContext): CommandModule<GlobalArgs, UploadArgs> {
  return {
    command: 'upload <file>',
    describe:
      'Hash a CSV file locally and upload it to a custom audience or a do-not-reach list, verifying every batch',
    builder: (y) =>
      withConnectionOptions(
        addHashOptions(
          y.positional('file', {
            type: 'string',
            demandOption: true,
            describe: 'CSV file (.gz accepted), or - for stdin (stdin runs cannot be resumed)',
          }),
        ),
      )
        .options(UPLOAD_OPTIONS)
        .conflicts(TARGET_FLAG_CONFLICTS)
        .conflicts('resume', 'restart')
        .group(Object.keys(UPLOAD_OPTIONS), 'Upload:')
        .example(
          '$0 upload fixtures/crm-export.csv --sandbox',
          'Try it: upload the shipped fixture to an embedded sandbox',
        )
        .example(
          '$0 upload export.csv.gz --account 18ce54d4x5t --audience 1nmth --country-column country',
          'Add users to a custom audience',
        )
        .example(
          '$0 upload optouts.csv --account 18ce54d4x5t --do-not-reach-list 2x9 --expires-at 2026-01-01T00:00:00Z',
          'Fill a do-not-reach list',
        )
        .example('$0 upload export.csv --account A --audience B --resume', 'Continue an interrupted upload')
        .epilogue(
          exitCodesEpilogue({
            ok: 'every user confirmed',
            usage:
              'usage/config (also: an unfinished run exists without --resume/--restart; the target does not exist or is read-only)',
            input: 'unreadable input, no users, or more rejected values than --max-reject-rate',
            auth: 'authentication/permission',
            partial: 'partial upload (failed batches kept for --resume)',
            api: 'API/network failure',
            environment: 'disk full, state not writable, symlink refused or run locked',
            state: 'the journal cannot be resumed (altered, another format, the input changed: --restart)',
            interrupted: 'interrupted (journal saved)',
          }),
        ) as never,
    handler: handle(ctx, (args: UploadArgs) => upload(ctx, args)),
  };
}
