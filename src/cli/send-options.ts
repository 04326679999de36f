/**
 * The flags `upload` and `sync` share (a sync takes most of upload's), their checks before
 * anything is read or sent, and the exit code of a run's outcome.
 */
import { basename } from 'node:path';
import type { Options } from 'yargs';
import { ConfigError, EnvironmentError } from '../errors.js';
import { DEFAULT_BATCH_LIMITS } from '../upload/plan.js';
import { DEFAULT_MAX_RETRIES, DEFAULT_UPLOAD_CONCURRENCY } from '../upload/options.js';
import type { RunInput } from '../upload/run-facts.js';
import type { UploadReport } from '../upload/types.js';
import type { UploadTarget } from '../platform/targets.js';
import { TARGET_KINDS, type TargetFlagName } from '../platform/targets.js';
import { checkSandboxConnectionFlags, type ConnectionArgs } from './connection.js';
import type { HashOptionArgs } from './hash-options.js';
import type { GlobalArgs } from './output.js';
import { STATE_DIR_ENV, STATE_URL_OPTION } from './state-dir.js';
import { type CliErrorCode, EXIT_CODES, type ExitCode, exitCodeFor } from './exit-codes.js';

/** The flags that name a target, one per kind (`--audience ID`, `--do-not-reach-list ID`). */
export type TargetArgs = Partial<Record<TargetFlagName, string>>;
export const TARGET_FLAGS: readonly TargetFlagName[] = TARGET_KINDS.map(({ flag }) => flag.name);

export interface UploadArgs extends GlobalArgs, HashOptionArgs, ConnectionArgs, TargetArgs {
  file: string;
  account?: string;
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
  state?: string;
  resume?: boolean;
  restart?: boolean;
  quiet?: boolean;
  dedupe: boolean;
  'min-audience-size'?: number;
}

const str = (describe: string): Options => ({ type: 'string', requiresArg: true, describe });
const num = (describe: string): Options => ({ type: 'number', requiresArg: true, describe });

export const UPLOAD_OPTIONS: Record<string, Options> = {
  account: str('Ad account id (optional with --sandbox)'),
  ...Object.fromEntries(TARGET_KINDS.map(({ flag }) => [flag.name, str(flag.describe)])),
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
  state: STATE_URL_OPTION,
  resume: {
    type: 'boolean',
    describe: 'Continue the unfinished run of this file and options (skips confirmed batches)',
  },
  restart: { type: 'boolean', describe: 'Start over even though an unfinished run of this file and options exists' },
  quiet: { alias: 'q', type: 'boolean', describe: 'No progress output' },
  'min-audience-size': num(
    'Refuse, before any request, a custom audience that would hold fewer users than this: so small an audience is not anonymous, and the platform does not target it (default 100; 0 turns the check off)',
  ),
  dedupe: {
    type: 'boolean',
    default: true,
    describe:
      'Send identical users once; --no-dedupe saves 11-23 bytes of memory per distinct user (10M users: 134 MB)',
  },
};

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

/**
 * What only the CLI refuses (the library's options are parsed once, by the command's settings):
 * before the input is read or anything is sent. A sync needs its target even on a dry run (the
 * plan is made against the target's snapshot).
 */
export function checkUsage(args: UploadArgs, command: 'upload' | 'sync' = 'upload'): void {
  const dryRun = args['dry-run'] === true && command === 'upload';
  const useSandbox = args.sandbox === true;
  if (!useSandbox && !dryRun) {
    if (args.account === undefined)
      throw new ConfigError<CliErrorCode>('missing_option', `${command} needs --account (or --sandbox)`, {
        fix: 'pass --account ID',
      });
    if (TARGET_KINDS.every(({ flag }) => args[flag.name] === undefined)) {
      const flags = TARGET_KINDS.map(({ flag }) => `--${flag.name}`);
      throw new ConfigError<CliErrorCode>('missing_option', `${command} needs ${flags.join(' or ')} (or --sandbox)`, {
        fix: `pass ${flags.map((f) => `${f} ID`).join(' or ')}`,
      });
    }
  }
  if (useSandbox) checkSandboxConnectionFlags(args);
  if (args['sandbox-faults'] !== undefined && !useSandbox) {
    throw new ConfigError('invalid_option', '--sandbox-faults needs --sandbox', {
      fix: 'add --sandbox or drop --sandbox-faults',
    });
  }
}

/** Each target flag conflicts with the ones after it (yargs refuses two at once). */
export const TARGET_FLAG_CONFLICTS: Record<string, string[]> = Object.fromEntries(
  TARGET_KINDS.slice(0, -1).map(({ flag }, i) => [flag.name, TARGET_KINDS.slice(i + 1).map((k) => k.flag.name)]),
);

/** The target the flags name; without one (--sandbox), the first kind's, which the sandbox makes. */
export function targetOf(args: TargetArgs): UploadTarget {
  const kind = TARGET_KINDS.find(({ flag }) => args[flag.name] !== undefined) ?? TARGET_KINDS[0];
  return { [kind.idOption]: args[kind.flag.name] ?? '' } as UploadTarget;
}

/** The flags that shape the sending, as the library's options (upload's and sync's). */
export function runShape(args: UploadArgs) {
  const set = <K extends string, V>(key: K, value: V | undefined) =>
    (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;
  return {
    operation: args.operation,
    ...set('minAudienceSize', args['min-audience-size']),
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

/** What the journal and the audit log record of the input: stdin has no name, size or digest. */
export function runInput(inputPath: string, file: string): RunInput | { path: string; name: string } {
  return inputPath === '-' ? { name: '-', size: null, sha256: null } : { path: inputPath, name: basename(file) };
}
