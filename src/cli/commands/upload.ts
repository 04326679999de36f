import { basename, resolve } from 'node:path';
import type { CommandModule, Options } from 'yargs';
import {
  ConfigError,
  createClient,
  createCustomAudience,
  createDoNotReachList,
  defaultAuditLogPath,
  DEFAULT_BATCH_LIMITS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_UPLOAD_CONCURRENCY,
  DO_NOT_REACH_TYPES,
  EnvironmentError,
  EXIT_CODES,
  exitCodeFor,
  hashCsv,
  ProgressPrinter,
  reportJson,
  resolveBatchLimits,
  resolveSendOptions,
  resolveUploadGroup,
  runUpload,
  startSandbox,
  unfinishedRunError,
  type AdsClient,
  type ExitCode,
  type HashCsvOptions,
  type HashCsvRun,
  type RejectGuardOptions,
  type RunInput,
  type RunNotice,
  type RunUploadOptions,
  type Sandbox,
  type UnfinishedRunPolicy,
  type UploadReport,
  type UploadTarget,
  writeFileNoFollow,
} from '../../internal.js';
import {
  checkSandboxConnectionFlags,
  clientFromArgs,
  withConnectionOptions,
  withDebugLines,
  withTransportFlags,
  type ConnectionArgs,
} from '../connection.js';
import type { CliContext } from '../context.js';
import { settleStateDir, STATE_DIR_ENV } from '../state-dir.js';
import { renderHashSummary } from '../hash-summary.js';
import { withFlagNames } from '../flag-names.js';
import { summaryHints } from '../hints.js';
import { askYesNo } from '../prompt.js';
import {
  addHashOptions,
  guardRun,
  hashInputSource,
  hashOptionsFromArgs,
  printHints,
  printInputMapping,
  rejectGuardFromArgs,
  type HashOptionArgs,
} from '../hash-options.js';
import {
  exitCodesEpilogue,
  handle,
  renderFields,
  reportError,
  writeJson,
  finishWhenStdoutCloses,
  stderrColumns,
  writeLine,
  type GlobalArgs,
} from '../output.js';

export interface UploadArgs extends GlobalArgs, HashOptionArgs, ConnectionArgs {
  file: string;
  account?: string;
  audience?: string;
  'do-not-reach-list'?: string;
  operation: 'update' | 'delete';
  'effective-at'?: string;
  'expires-at'?: string;
  'dry-run'?: boolean;
  preview?: string;
  sandbox?: boolean;
  'sandbox-faults'?: string;
  concurrency?: number;
  'max-retries'?: number;
  'max-body-bytes'?: number;
  'max-operations'?: number;
  'max-users-per-operation'?: number;
  'audit-log'?: string;
  'state-dir'?: string;
  resume?: boolean;
  restart?: boolean;
  quiet?: boolean;
  dedupe: boolean;
}

const str = (describe: string): Options => ({ type: 'string', requiresArg: true, describe });
const num = (describe: string): Options => ({ type: 'number', requiresArg: true, describe });

export const UPLOAD_OPTIONS: Record<string, Options> = {
  account: str('Ad account id (optional with --sandbox)'),
  audience: str('Custom audience id to add users to / remove users from'),
  'do-not-reach-list': str('Do-not-reach list id (instead of --audience)'),
  operation: {
    choices: ['update', 'delete'] as const,
    default: 'update' as const,
    describe: 'update adds the users, delete removes them',
  },
  'effective-at': str('UTC ISO 8601 start of membership (custom audiences only)'),
  'expires-at': str('UTC ISO 8601 end of membership (do-not-reach: at most 13 months ahead)'),
  'dry-run': { type: 'boolean', describe: 'Do everything except sending: mapping, counts, planned requests and bytes' },
  preview: str('Write the first request body to this file (mode 0600; hashed values and partner_user_id)'),
  sandbox: {
    type: 'boolean',
    describe: 'Upload to an embedded sandbox started in-process (creates the account data it needs); no journal',
  },
  'sandbox-faults': str('With --sandbox: fault spec, e.g. "503=1@2,mismatch%0.05"'),
  concurrency: num(`Batches in flight (default ${DEFAULT_UPLOAD_CONCURRENCY})`),
  'max-retries': num(`Re-sends of a batch after a count mismatch (default ${DEFAULT_MAX_RETRIES})`),
  'max-body-bytes': num(
    `Request body limit in bytes (default and platform maximum ${DEFAULT_BATCH_LIMITS.maxBodyBytes})`,
  ),
  'max-operations': num(`Operations per request (default and platform maximum ${DEFAULT_BATCH_LIMITS.maxOperations})`),
  'max-users-per-operation': num(`Users per operation (default ${DEFAULT_BATCH_LIMITS.maxUsersPerOperation})`),
  'audit-log': str('Audit log file (default STATE_DIR/audit.jsonl)'),
  'state-dir': str(
    `Run journals and kept failed batches (mode 0700; default $${STATE_DIR_ENV}, else ~/.local/state/audience-kit: docs/configuration.md)`,
  ),
  resume: {
    type: 'boolean',
    describe: 'Continue the unfinished run of this file and options (skips confirmed batches)',
  },
  restart: { type: 'boolean', describe: 'Start over even though an unfinished run of this file and options exists' },
  quiet: { alias: 'q', type: 'boolean', describe: 'No progress output' },
  dedupe: {
    type: 'boolean',
    default: true,
    describe:
      'Send identical users once; --no-dedupe saves 11-23 bytes of memory per distinct user (10M users: 134 MB)',
  },
};

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

/** The CLI's exit code for a run's outcome. */
export function exitCodeOf(report: Pick<UploadReport, 'status' | 'error'>): ExitCode {
  // A full disk or an unwritable journal is the machine's to fix, whatever was confirmed before it.
  if (report.error instanceof EnvironmentError) return EXIT_CODES.environment;
  switch (report.status) {
    case 'completed':
      return EXIT_CODES.ok;
    case 'interrupted':
      return EXIT_CODES.interrupted;
    case 'partial':
      return EXIT_CODES.partial;
    case 'failed':
      return report.error === undefined ? EXIT_CODES.api : exitCodeFor(report.error);
  }
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

/**
 * Refused before the input is read or anything is sent. A sync needs its target even on a dry
 * run (the plan is made against the target's snapshot).
 */
export function checkUsage(args: UploadArgs, command: 'upload' | 'sync' = 'upload'): void {
  const dryRun = args['dry-run'] === true && command === 'upload';
  const useSandbox = args.sandbox === true;
  if (!useSandbox && !dryRun) {
    if (args.account === undefined)
      throw new ConfigError('missing_option', `${command} needs --account (or --sandbox)`, {
        fix: 'pass --account ID',
      });
    if (args.audience === undefined && args['do-not-reach-list'] === undefined) {
      throw new ConfigError('missing_option', `${command} needs --audience or --do-not-reach-list (or --sandbox)`, {
        fix: 'pass --audience ID or --do-not-reach-list ID',
      });
    }
  }
  if (useSandbox) checkSandboxConnectionFlags(args);
  if (args['sandbox-faults'] !== undefined && !useSandbox) {
    throw new ConfigError('invalid_option', '--sandbox-faults needs --sandbox', {
      fix: 'add --sandbox or drop --sandbox-faults',
    });
  }
  resolveUploadGroup({ target: targetOf(args), ...runShape(args) });
  resolveBatchLimits(runShape(args).limits);
  resolveSendOptions(runShape(args));
  rejectGuardFromArgs(args);
}

export function targetOf(args: Pick<UploadArgs, 'audience' | 'do-not-reach-list'>): UploadTarget {
  return args['do-not-reach-list'] !== undefined
    ? { doNotReachListId: args['do-not-reach-list'] }
    : { customAudienceId: args.audience ?? '' };
}

/** The flags that shape the run, as runUpload options. */
export function runShape(args: UploadArgs) {
  const set = <K extends string, V>(key: K, value: V | undefined) =>
    (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;
  return {
    operation: args.operation,
    ...set('effectiveAt', args['effective-at']),
    ...set('expiresAt', args['expires-at']),
    ...set('concurrency', args.concurrency),
    ...set('maxRetries', args['max-retries']),
    limits: {
      ...set('maxBodyBytes', args['max-body-bytes']),
      ...set('maxOperations', args['max-operations']),
      ...set('maxUsersPerOperation', args['max-users-per-operation']),
    },
  };
}

export interface Connected {
  client: AdsClient | undefined;
  sandbox: Sandbox | undefined;
  accountId: string;
  target: UploadTarget;
}

/**
 * The client, and with --sandbox the embedded sandbox with a new audience or list to upload to
 * (with `seed`, the same account and target ids every time). `--sandbox-faults` count from the
 * command's own requests: they are armed after the sandbox's setup (the target's creation, and
 * `prepare`: the sync's refill).
 */
export async function connect(
  ctx: CliContext,
  args: UploadArgs,
  seed?: number,
  prepare?: (c: Connected) => Promise<void>,
): Promise<Connected> {
  const target = targetOf(args);
  if (args.sandbox !== true) {
    const client = args['dry-run'] === true ? undefined : (await clientFromArgs(ctx, args)).client;
    return { client, sandbox: undefined, accountId: args.account ?? '', target };
  }
  // --max-attempts and --request-timeout apply to the sandbox too (checked before it starts).
  const transport = withTransportFlags(ctx, args, {});
  const faults = args['sandbox-faults'];
  const sandbox = await startSandbox({ port: 0, ...(seed === undefined ? {} : { seed }), faults: faults ?? '' });
  const base = { ...transport, adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials };
  const client = createClient(withDebugLines(ctx, args, base));
  try {
    sandbox.setFaults('');
    const accountId = args.account ?? sandbox.accounts.primary;
    const name = `audience-kit ${basename(args.file)}`;
    const created =
      'doNotReachListId' in target
        ? { doNotReachListId: (await createDoNotReachList(client, { accountId, description: name })).id }
        : { customAudienceId: (await createCustomAudience(client, { accountId, name })).id };
    const c = { client, sandbox, accountId, target: created };
    await prepare?.(c);
    if (faults !== undefined) sandbox.setFaults(faults);
    return c;
  } catch (error) {
    await client.close();
    await sandbox.close();
    throw error;
  }
}

function runOptions(
  ctx: CliContext,
  args: UploadArgs,
  run: HashCsvRun,
  c: Connected,
  signal: AbortSignal,
  onNotice: (n: RunNotice) => void,
  printer: ProgressPrinter | undefined,
): RunUploadOptions {
  const inputPath = hashInputSource(args.file, ctx.cwd);
  const journaled = args.sandbox !== true && inputPath !== '-';
  const stateDir = resolve(ctx.cwd, args['state-dir'] ?? '');
  let previewWritten = args.preview === undefined;
  return {
    ...runShape(args),
    ...(c.client === undefined ? {} : { client: c.client }),
    accountId: c.accountId,
    target: c.target,
    users: run,
    normalize: hashOptionsFromArgs(args),
    input: runInput(inputPath, args.file),
    dedupe: args.dedupe,
    dryRun: args['dry-run'] === true,
    sandbox: args.sandbox === true,
    ...(journaled ? { stateDir } : {}),
    unfinished: unfinishedPolicy(ctx, args),
    auditLog: resolve(ctx.cwd, args['audit-log'] ?? defaultAuditLogPath(stateDir)),
    signal,
    onNotice,
    ...(printer === undefined ? {} : { onProgress: printer.update }),
    onBatch: (b) => {
      if (previewWritten || args.preview === undefined) return;
      previewWritten = true;
      writeFileNoFollow(resolve(ctx.cwd, args.preview), b.body);
    },
  };
}

/** What the journal and the audit log record of the input: stdin has no name, size or digest. */
export function runInput(inputPath: string, file: string): RunInput | { path: string; name: string } {
  return inputPath === '-' ? { name: '-', size: null, sha256: null } : { path: inputPath, name: basename(file) };
}

/**
 * The CSV hashed for sending (`emit: 'packed'`) behind the reject guard. Do-not-reach lists take
 * only some identifier types: other columns are left out of the mapping.
 */
export async function openSendInput(
  ctx: CliContext,
  args: UploadArgs,
  guard: RejectGuardOptions,
): Promise<{ run: HashCsvRun; inputPath: string; hashOptions: HashCsvOptions }> {
  const wantsDnr = args['do-not-reach-list'] !== undefined;
  const inputPath = hashInputSource(args.file, ctx.cwd);
  const hashOptions = hashOptionsFromArgs(args, ctx.stdin);
  const run = guardRun(
    await hashCsv(inputPath, { ...hashOptions, emit: 'packed', ...(wantsDnr ? { types: DO_NOT_REACH_TYPES } : {}) }),
    guard,
    hashOptions,
  );
  return { run, inputPath, hashOptions };
}

/**
 * Ctrl-C (the context's signal) aborts `signal`: finish what is in flight and save the journal (a
 * second one quits at once: processContext). Install it before the slow preparations (starting
 * the sandbox, fingerprinting a large file); `release()` removes the listener.
 */
export function interruptSignal(ctx: CliContext): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const onInterrupt = (): void => {
    writeLine(
      ctx.stderr,
      '\ninterrupted: finishing the requests in flight and saving the journal (Ctrl-C again to quit at once)',
    );
    controller.abort();
  };
  ctx.signal.addEventListener('abort', onInterrupt, { once: true });
  if (ctx.signal.aborted) controller.abort();
  return { signal: controller.signal, release: () => ctx.signal.removeEventListener('abort', onInterrupt) };
}

/** Stops reading the input and closes the client and the sandbox, whatever was opened. */
export async function closeSend(run: HashCsvRun, c: Connected | undefined): Promise<void> {
  await run.close();
  await c?.client?.close();
  await c?.sandbox?.close();
}

async function upload(ctx: CliContext, args: UploadArgs): Promise<number> {
  checkUsage(args);
  settleStateDir(ctx, args);
  finishWhenStdoutCloses(ctx);
  const wantsDnr = args['do-not-reach-list'] !== undefined;
  const { run } = await openSendInput(ctx, args, rejectGuardFromArgs(args));
  const interrupt = interruptSignal(ctx);
  let c: Connected | undefined;
  try {
    if (!args.quiet) {
      printInputMapping(ctx, run);
      if (wantsDnr)
        writeLine(
          ctx.stderr,
          `  (do-not-reach lists take only ${DO_NOT_REACH_TYPES.join(' and ')}: other identifier columns are ignored)`,
        );
    }
    c = await connect(ctx, args);
    const printer =
      args.quiet === true
        ? undefined
        : new ProgressPrinter({
            write: (t) => ctx.stderr.write(t),
            tty: ctx.stderrIsTTY,
            columns: () => stderrColumns(ctx),
          });
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
    // A failed audit append still lets the report be printed (what was sent matters most).
    let auditError: unknown;
    const options = runOptions(ctx, args, run, c, interrupt.signal, onNotice, printer);
    const report = await runUpload({ ...options, onAuditError: (e) => (auditError = e) }).finally(() =>
      printer?.finish(),
    );
    if (report.error !== undefined) withFlagNames(report.error);
    printOutcome(ctx, args, report, run, c, journalDir);
    if (auditError !== undefined) return reportError(ctx, auditError, args.debug === true);
    return exitCodeOf(report);
  } finally {
    interrupt.release();
    await closeSend(run, c);
  }
}

function printOutcome(
  ctx: CliContext,
  args: UploadArgs,
  report: UploadReport,
  run: HashCsvRun,
  c: Connected,
  journalDir: string | undefined,
): void {
  const extra: [string, unknown][] = [];
  let sandboxInfo: { audience_size: number } | undefined;
  if (c.sandbox !== undefined) {
    const size =
      'doNotReachListId' in c.target
        ? c.sandbox.state.dnrListSize(c.target.doNotReachListId)
        : c.sandbox.state.audienceSize(c.target.customAudienceId);
    sandboxInfo = { audience_size: size };
    extra.push(['doNotReachListId' in c.target ? 'sandbox list size' : 'sandbox audience size', size]);
  }
  if (journalDir !== undefined && report.status !== 'completed')
    extra.push(['state', `${journalDir} (run again with --resume to continue)`]);
  // Why many values of a type were rejected, and the likely fix: what `hash` says too.
  const hashOptions = hashOptionsFromArgs(args);
  if (args.json !== true) {
    printReport(ctx, report, run, extra);
    printHints(ctx, run.summary, run.mapping, hashOptions);
    return;
  }
  writeJson(ctx, {
    ...reportJson(report),
    exit_code: exitCodeOf(report),
    input: args.file === '-' || args.file === '' ? '-' : basename(args.file),
    ...(sandboxInfo === undefined ? {} : { sandbox: sandboxInfo }),
    hints: summaryHints(run.summary, run.mapping, hashOptions),
  });
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
        .conflicts('audience', 'do-not-reach-list')
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
            interrupted: 'interrupted (journal saved)',
          }),
        ) as never,
    handler: handle(ctx, (args: UploadArgs) => upload(ctx, args)),
  };
}
