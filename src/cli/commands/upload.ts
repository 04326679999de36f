import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { CommandModule } from 'yargs';
import {
  appendAuditRecord,
  ConfigError,
  createClient,
  createCustomAudience,
  createDoNotReachList,
  defaultAuditLogPath,
  DEFAULT_BATCH_LIMITS,
  DEFAULT_MAX_RETRIES,
  DEFAULT_PHONE_FORMAT,
  DEFAULT_STATE_DIR,
  DEFAULT_UPLOAD_CONCURRENCY,
  DO_NOT_REACH_TYPES,
  EXIT_CODES,
  fileSha256,
  findJournal,
  hashCsv,
  InputError,
  newRunId,
  ProgressPrinter,
  resolveBatchLimits,
  resolveSendOptions,
  resolveUploadGroup,
  RunJournal,
  startSandbox,
  unfinishedRunError,
  uploadAudience,
  VERSION,
  type AdsClient,
  type AuditCounts,
  type AuditRunOptions,
  type BatchLimits,
  type HashCsvRun,
  type JournalKey,
  type Sandbox,
  type UploadReport,
  type UploadTarget,
  writeFileNoFollow,
} from '../../internal.js';
import { clientFromArgs, withConnectionOptions, withDebugLines, type ConnectionArgs } from '../connection.js';
import type { CliContext } from '../context.js';
import { renderHashSummary } from '../hash-summary.js';
import {
  addHashOptions,
  guardRun,
  hashOptionsFromArgs,
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
  writeLine,
  type GlobalArgs,
} from '../output.js';

interface UploadArgs extends GlobalArgs, HashOptionArgs, ConnectionArgs {
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
  'state-dir': string;
  resume?: boolean;
  restart?: boolean;
  quiet?: boolean;
  dedupe: boolean;
}

const UPLOAD_GROUP = 'Upload:';

/** Ask on the terminal; Ctrl-C or a closed stdin answer 'interrupted' (readline would otherwise leave the question pending). */
async function askYesNo(ctx: CliContext, question: string): Promise<boolean | 'interrupted'> {
  const rl = createInterface({ input: ctx.stdin, output: ctx.stderr });
  try {
    return await new Promise<boolean | 'interrupted'>((res) => {
      rl.on('SIGINT', () => res('interrupted'));
      rl.on('close', () => res('interrupted'));
      rl.question(question, (answer) => res(!/^n/i.test(answer.trim())));
    });
  } finally {
    rl.close();
  }
}

/** The options that change what is sent: part of the journal key and of the audit record. */
function shapingOptions(
  run: HashCsvRun,
  args: UploadArgs,
  limits: BatchLimits,
  group: { effectiveAt?: string; expiresAt?: string },
): AuditRunOptions {
  const mapping: Record<string, string[]> = {};
  for (const c of run.mapping.columns) (mapping[c.type] ??= []).push(c.column);
  return {
    default_country: args['default-country']?.toUpperCase() ?? null,
    country_column: run.mapping.country?.column ?? null,
    phone_format: args['phone-format'] ?? DEFAULT_PHONE_FORMAT,
    input_hashed: args['input-hashed'] ?? 'auto',
    mapping,
    effective_at: group.effectiveAt ?? null,
    expires_at: group.expiresAt ?? null,
    max_body_bytes: limits.maxBodyBytes,
    max_operations: limits.maxOperations,
    max_users_per_operation: limits.maxUsersPerOperation,
  };
}

/** The report's counts for the audit log (zeros when the run stopped before producing a report). */
function auditCounts(c: UploadReport | undefined): AuditCounts {
  return {
    rows: c?.rows ?? 0,
    users_sent: c?.users ?? 0,
    duplicates: c?.duplicates ?? 0,
    rows_without_identifier: c?.rows_without_identifier ?? 0,
    invalid_values: Object.values(c?.invalid_by_reason ?? {}).reduce((n, r) => n + (r?.count ?? 0), 0),
    digests_passed_through: Object.values(c?.identifiers ?? {}).reduce((n, t) => n + (t?.digests ?? 0), 0),
    oversized_users: c?.oversized_users ?? 0,
    requests: c?.requests ?? 0,
    batches_confirmed: (c?.batches_confirmed ?? 0) + (c?.batches_skipped ?? 0),
    batches_failed: c?.batches_failed ?? 0,
    bytes: c?.bytes ?? 0,
    retries: c?.retries ?? 0,
    mismatches: c?.mismatches ?? 0,
    rate_limit_waits: c?.rate_limit_waits ?? 0,
    success_count: c?.success_count ?? 0,
    total_count: c?.total_count ?? 0,
    unrecorded_batches: c?.unrecorded_batches.length ?? 0,
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
  if (report.error !== undefined) {
    writeLine(ctx.stderr, `error: ${report.error.message}`);
    if (report.error.fix !== undefined) writeLine(ctx.stderr, `  fix: ${report.error.fix}`);
  }
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
        .option('account', { type: 'string', requiresArg: true, describe: 'Ad account id (optional with --sandbox)' })
        .option('audience', {
          type: 'string',
          requiresArg: true,
          describe: 'Custom audience id to add users to / remove users from',
        })
        .option('do-not-reach-list', {
          type: 'string',
          requiresArg: true,
          describe: 'Do-not-reach list id (instead of --audience)',
        })
        .option('operation', {
          choices: ['update', 'delete'] as const,
          default: 'update' as const,
          describe: 'update adds the users, delete removes them',
        })
        .option('effective-at', {
          type: 'string',
          requiresArg: true,
          describe: 'UTC ISO 8601 start of membership (custom audiences only)',
        })
        .option('expires-at', {
          type: 'string',
          requiresArg: true,
          describe: 'UTC ISO 8601 end of membership (do-not-reach: at most 13 months ahead)',
        })
        .option('dry-run', {
          type: 'boolean',
          describe: 'Do everything except sending: mapping, counts, planned requests and bytes',
        })
        .option('preview', {
          type: 'string',
          requiresArg: true,
          describe: 'Write the first request body to this file (mode 0600; hashed values and partner_user_id)',
        })
        .option('sandbox', {
          type: 'boolean',
          describe: 'Upload to an embedded sandbox started in-process (creates the account data it needs); no journal',
        })
        .option('sandbox-faults', {
          type: 'string',
          requiresArg: true,
          describe: 'With --sandbox: fault spec, e.g. "503=1@2,mismatch%0.05"',
        })
        .option('concurrency', {
          type: 'number',
          requiresArg: true,
          describe: `Requests in flight (default ${DEFAULT_UPLOAD_CONCURRENCY})`,
        })
        .option('max-retries', {
          type: 'number',
          requiresArg: true,
          describe: `Re-sends of a batch after a count mismatch or a failure (default ${DEFAULT_MAX_RETRIES})`,
        })
        .option('max-body-bytes', {
          type: 'number',
          requiresArg: true,
          describe: `Request body limit in bytes (default and platform maximum ${DEFAULT_BATCH_LIMITS.maxBodyBytes})`,
        })
        .option('max-operations', {
          type: 'number',
          requiresArg: true,
          describe: `Operations per request (default and platform maximum ${DEFAULT_BATCH_LIMITS.maxOperations})`,
        })
        .option('max-users-per-operation', {
          type: 'number',
          requiresArg: true,
          describe: `Users per operation (default ${DEFAULT_BATCH_LIMITS.maxUsersPerOperation})`,
        })
        .option('audit-log', {
          type: 'string',
          requiresArg: true,
          describe: 'Audit log file (default STATE_DIR/audit.jsonl)',
        })
        .option('state-dir', {
          type: 'string',
          default: DEFAULT_STATE_DIR,
          requiresArg: true,
          describe: 'Run journals and kept failed batches (mode 0700)',
        })
        .option('resume', {
          type: 'boolean',
          describe: 'Continue the unfinished run of this file and options (skips confirmed batches)',
        })
        .option('restart', {
          type: 'boolean',
          describe: 'Start over even though an unfinished run of this file and options exists',
        })
        .option('quiet', { alias: 'q', type: 'boolean', describe: 'No progress output' })
        .option('dedupe', {
          type: 'boolean',
          default: true,
          describe:
            'Send identical users once; --no-dedupe saves 11-23 bytes of memory per distinct user (10M users: 134 MB)',
        })
        .conflicts('audience', 'do-not-reach-list')
        .conflicts('resume', 'restart')
        .group(
          [
            'account',
            'audience',
            'do-not-reach-list',
            'operation',
            'effective-at',
            'expires-at',
            'dry-run',
            'preview',
            'sandbox',
            'sandbox-faults',
            'concurrency',
            'max-retries',
            'max-body-bytes',
            'max-operations',
            'max-users-per-operation',
            'audit-log',
            'state-dir',
            'resume',
            'restart',
            'quiet',
            'dedupe',
          ],
          UPLOAD_GROUP,
        )
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
            usage: 'usage/config (also: an unfinished run exists without --resume/--restart)',
            input: 'unreadable input',
            auth: 'authentication/permission',
            partial: 'partial upload (failed batches kept for --resume)',
            api: 'API/network failure',
            environment: 'disk full, state not writable, symlink refused or run locked',
            interrupted: 'interrupted (journal saved)',
          }),
        ) as never,
    handler: handle(ctx, async (args: UploadArgs) => {
      const dryRun = args['dry-run'] === true;
      const useSandbox = args.sandbox === true;
      if (!useSandbox && !dryRun) {
        if (args.account === undefined)
          throw new ConfigError('missing_option', 'upload needs --account (or --sandbox)', {
            fix: 'pass --account ID',
          });
        if (args.audience === undefined && args['do-not-reach-list'] === undefined) {
          throw new ConfigError('missing_option', 'upload needs --audience or --do-not-reach-list (or --sandbox)', {
            fix: 'pass --audience ID or --do-not-reach-list ID',
          });
        }
      }
      if (args['sandbox-faults'] !== undefined && !useSandbox) {
        throw new ConfigError('invalid_option', '--sandbox-faults needs --sandbox', {
          fix: 'add --sandbox or drop --sandbox-faults',
        });
      }
      const wantsDnr = args['do-not-reach-list'] !== undefined;
      const provisional: UploadTarget = wantsDnr
        ? { doNotReachListId: args['do-not-reach-list'] ?? '' }
        : { customAudienceId: args.audience ?? '' };
      // Everything that can be refused is refused before the input is read or anything is sent.
      const group = resolveUploadGroup({
        target: provisional,
        operation: args.operation,
        effectiveAt: args['effective-at'],
        expiresAt: args['expires-at'],
      });
      const limits = resolveBatchLimits({
        ...(args['max-body-bytes'] === undefined ? {} : { maxBodyBytes: args['max-body-bytes'] }),
        ...(args['max-operations'] === undefined ? {} : { maxOperations: args['max-operations'] }),
        ...(args['max-users-per-operation'] === undefined
          ? {}
          : { maxUsersPerOperation: args['max-users-per-operation'] }),
      });
      resolveSendOptions({ concurrency: args.concurrency, maxRetries: args['max-retries'] });
      // yargs-parser turns a lone `-` followed by flags into '' (`upload - --sandbox`).
      const fromStdin = args.file === '-' || args.file === '';
      const inputPath = fromStdin ? '-' : resolve(ctx.cwd, args.file);
      // Do-not-reach lists take only some identifier types: other columns are left out of the mapping.
      const hashOptions = hashOptionsFromArgs(args, ctx.stdin);
      const guard = rejectGuardFromArgs(args);
      const run = guardRun(
        await hashCsv(inputPath, {
          ...hashOptions,
          emit: 'packed',
          ...(wantsDnr ? { types: DO_NOT_REACH_TYPES } : {}),
        }),
        guard,
        hashOptions,
      );
      let sandbox: Sandbox | undefined;
      let client: AdsClient | undefined;
      let journal: RunJournal | undefined;
      const controller = new AbortController();
      // A second Ctrl-C quits at once (processContext); the first one winds down.
      const onInterrupt = (): void => {
        writeLine(
          ctx.stderr,
          '\ninterrupted: finishing the requests in flight and saving the journal (Ctrl-C again to quit at once)',
        );
        controller.abort();
      };
      // Installed before the slow preparations (fingerprinting a large file, starting the sandbox).
      ctx.signal.addEventListener('abort', onInterrupt, { once: true });
      if (ctx.signal.aborted) controller.abort();
      try {
        if (!args.quiet) {
          printInputMapping(ctx, run);
          if (wantsDnr)
            writeLine(
              ctx.stderr,
              `  (do-not-reach lists take only ${DO_NOT_REACH_TYPES.join(' and ')}: other identifier columns are ignored)`,
            );
        }
        const size = fromStdin ? null : statSync(inputPath).size;
        // The fingerprint keys the journal and the audit record, neither of which a dry run writes.
        const sha256 =
          fromStdin || dryRun
            ? null
            : await fileSha256(inputPath).catch((error: unknown) => {
                throw new InputError(
                  'input_unreadable',
                  `${args.file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
                  { fix: 'check the path and its permissions', cause: error },
                );
              });
        const options = shapingOptions(run, args, limits, group);

        let accountId = args.account ?? '';
        let target = provisional;
        if (useSandbox) {
          sandbox = await startSandbox({
            port: 0,
            ...(args['sandbox-faults'] === undefined ? {} : { faults: args['sandbox-faults'] }),
          });
          client = createClient(
            withDebugLines(ctx, args, { adsBaseUrl: sandbox.adsBaseUrl, credentials: sandbox.credentials }),
          );
          accountId = args.account ?? sandbox.accounts.primary;
          if (wantsDnr) {
            const list = await createDoNotReachList(client, {
              accountId,
              description: `audience-kit ${basename(args.file)}`,
            });
            target = { doNotReachListId: list.id };
          } else {
            const audience = await createCustomAudience(client, {
              accountId,
              name: `audience-kit ${basename(args.file)}`,
            });
            target = { customAudienceId: audience.id };
          }
        } else if (!dryRun) {
          client = (await clientFromArgs(ctx, args)).client;
        }
        const targetKind = 'doNotReachListId' in target ? 'do_not_reach_list' : 'custom_audience';
        const targetId = 'doNotReachListId' in target ? target.doNotReachListId : target.customAudienceId;

        if (controller.signal.aborted) {
          writeLine(ctx.stderr, 'interrupted before sending: nothing was sent');
          return EXIT_CODES.interrupted;
        }
        const runId = newRunId();
        const stateDir = resolve(ctx.cwd, args['state-dir']);
        // The journal needs a re-readable input and a target that outlives the process.
        const journaled = !dryRun && !useSandbox && !fromStdin && sha256 !== null && size !== null;
        if (journaled) {
          const key: JournalKey = {
            input: { name: basename(args.file), size, sha256 },
            accountId,
            target: { kind: targetKind, id: targetId },
            options: { ...options, operation: args.operation, dedupe: args.dedupe },
          };
          // --restart replaces the journal unread (it may be the damaged one being replaced).
          const existing = args.restart === true ? undefined : findJournal(stateDir, key);
          let mode: 'new' | 'resume' = 'new';
          // A run that stopped before any batch was confirmed or kept has nothing to resume.
          const resumable = existing !== undefined && !existing.complete && existing.confirmed + existing.failed > 0;
          if (resumable) {
            if (args.resume === true) mode = 'resume';
            else if (args.restart !== true) {
              if (!(ctx.stdinIsTTY && ctx.stderrIsTTY)) throw unfinishedRunError(existing);
              writeLine(ctx.stderr, unfinishedRunError(existing).message);
              const answer = await askYesNo(ctx, 'resume it? [Y/n] ');
              if (answer === 'interrupted') {
                writeLine(ctx.stderr, 'interrupted: nothing was sent');
                return EXIT_CODES.interrupted;
              }
              mode = answer ? 'resume' : 'new';
            }
          } else if (args.resume === true && !args.quiet) {
            writeLine(ctx.stderr, 'nothing to resume for this file and these options: starting a new run');
          }
          journal = await RunJournal.open(stateDir, key, { mode, runId });
          if (journal.resumed && !args.quiet) {
            writeLine(
              ctx.stderr,
              `resuming: ${journal.confirmed.size} batches confirmed earlier are skipped, ${journal.failed.size} kept batches re-sent first`,
            );
          }
        }

        const auditPath = resolve(ctx.cwd, args['audit-log'] ?? defaultAuditLogPath(args['state-dir']));
        const input = { name: fromStdin ? '-' : basename(args.file), size, sha256 };
        if (!dryRun) {
          await appendAuditRecord(auditPath, {
            event: 'run_start',
            run_id: runId,
            at: new Date().toISOString(),
            tool_version: VERSION,
            account_id: accountId,
            target: { kind: targetKind, id: targetId },
            operation: args.operation,
            input,
            options,
            resumed: journal?.resumed ?? false,
            sandbox: useSandbox,
          });
        }

        const startedAt = new Date();
        const printer =
          args.quiet === true
            ? undefined
            : new ProgressPrinter({ write: (t) => ctx.stderr.write(t), tty: ctx.stderrIsTTY });
        let previewWritten = args.preview === undefined;
        let report: UploadReport;
        try {
          report = await uploadAudience({
            ...(client === undefined ? {} : { client }),
            accountId,
            target,
            operation: args.operation,
            ...(group.effectiveAt === undefined ? {} : { effectiveAt: group.effectiveAt }),
            ...(group.expiresAt === undefined ? {} : { expiresAt: group.expiresAt }),
            users: run,
            limits,
            dedupe: args.dedupe,
            ...(args.concurrency === undefined ? {} : { concurrency: args.concurrency }),
            ...(args['max-retries'] === undefined ? {} : { maxRetries: args['max-retries'] }),
            ...(journal === undefined ? {} : { journal }),
            dryRun,
            runId,
            signal: controller.signal,
            ...(printer === undefined ? {} : { onProgress: printer.update }),
            onBatch: (b) => {
              if (previewWritten || args.preview === undefined) return;
              previewWritten = true;
              writeFileNoFollow(resolve(ctx.cwd, args.preview), b.body);
            },
          });
        } catch (error) {
          printer?.finish();
          if (!dryRun) {
            const now = new Date();
            // The run's own error is the one to report, even when the audit log fails too.
            await appendAuditRecord(auditPath, {
              event: 'run_end',
              run_id: runId,
              at: now.toISOString(),
              started_at: startedAt.toISOString(),
              duration_ms: now.getTime() - startedAt.getTime(),
              outcome: 'failed',
              input: { name: input.name, rows: run.summary.rows, sha256 },
              counts: auditCounts(undefined),
              error: error instanceof Error && 'code' in error ? String(error.code) : 'internal',
            }).catch((auditError: unknown) => reportError(ctx, auditError, args.debug === true));
          }
          throw error;
        }
        printer?.finish();
        journal?.close();

        // A failed audit append still lets the report be printed (what was sent matters most).
        let auditError: unknown;
        if (!dryRun) {
          await appendAuditRecord(auditPath, {
            event: 'run_end',
            run_id: runId,
            at: report.ended_at,
            started_at: report.started_at,
            duration_ms: report.duration_ms,
            outcome: report.status,
            input: { name: input.name, rows: report.rows, sha256 },
            counts: auditCounts(report),
            ...(report.error === undefined ? {} : { error: report.error.code }),
          }).catch((error: unknown) => {
            auditError = error;
          });
        }

        const extra: [string, unknown][] = [];
        let sandboxInfo: { audience_size: number } | undefined;
        if (sandbox !== undefined) {
          const sizeNow =
            'doNotReachListId' in target ? sandbox.state.dnrListSize(targetId) : sandbox.state.audienceSize(targetId);
          sandboxInfo = { audience_size: sizeNow };
          extra.push([wantsDnr ? 'sandbox list size' : 'sandbox audience size', sizeNow]);
        }
        if (journal !== undefined && report.status !== 'completed') {
          extra.push(['state', `${journal.dir} (run again with --resume to continue)`]);
        }
        if (args.json === true)
          writeJson(ctx, {
            ...report,
            input: input.name,
            ...(sandboxInfo === undefined ? {} : { sandbox: sandboxInfo }),
          });
        else printReport(ctx, report, run, extra);
        if (auditError !== undefined) return reportError(ctx, auditError, args.debug === true);
        return report.exit_code;
      } finally {
        ctx.signal.removeEventListener('abort', onInterrupt);
        journal?.close();
        await run.close();
        await client?.close();
        await sandbox?.close();
      }
    }),
  };
}
