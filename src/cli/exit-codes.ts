/**
 * The CLI's exit codes (docs/cli.md#exit-codes) and the error codes only the CLI throws. The
 * library only throws: which exit code an error means is decided here, by its class.
 */
import {
  AuthError,
  BatchesFailedError,
  BatchVerificationError,
  ConfigError,
  ConnectionError,
  EnvironmentError,
  HttpError,
  InputError,
  ResponseShapeError,
  StateError,
} from '../errors.js';

export const EXIT_CODES = {
  /** Every user confirmed / command succeeded. */
  ok: 0,
  /** A bug or an unexpected condition; run again with --debug and report it. */
  internal: 1,
  /** Bad command-line usage or configuration (missing credential, invalid option). */
  usage: 2,
  /** The input could not be read (missing file, not CSV, unsupported encoding, no header). */
  input: 3,
  /** The platform refused the credentials or the permission (401, 403). */
  auth: 4,
  /** Some users were confirmed, others were not (failed batches kept for --resume). */
  partial: 5,
  /** The platform or network failed and nothing more could be done (after retries). */
  api: 6,
  /** A wait (for example `audiences wait`) ran out of time. */
  timeout: 7,
  /**
   * The machine refused: disk full, a state directory or output not writable, a planted
   * symlink, a lock held by another process. Nothing is wrong with the input or the platform.
   */
  environment: 8,
  /**
   * The tool's own state refused the run: a sync snapshot or run journal damaged, altered, rolled
   * back, of another format or target, or written for other input (`snapshot_*`, `journal_*`).
   */
  state: 9,
  /** Interrupted by SIGINT; the journal was saved. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/** Codes of the errors only the CLI throws (with the library's classes: `new ConfigError<CliErrorCode>(…)`). */
export const CLI_ERROR_CODES = [
  // ConfigError: a bad flag or a refused action of a management command.
  'missing_option',
  'invalid_duration',
  'output_not_writable',
  'audience_already_deleted',
  'audience_in_use',
  'confirmation_required',
  'deletion_declined',
  'do_not_reach_list_exists',
  'auth_no_pending_login',
  'auth_pin_missing',
  // ConfigError: the default state directory and an earlier version's both hold the target's state.
  'state_dir_ambiguous',
  // AuthError: a platform refusal reworded for the command (the PIN, an owner-only action).
  'auth_pin_refused',
  'audience_owner_only',
] as const;

export type CliErrorCode = (typeof CLI_ERROR_CODES)[number];

/** Exit code for an error thrown out of a command. */
export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof EnvironmentError) return EXIT_CODES.environment;
  if (error instanceof StateError) return EXIT_CODES.state;
  if (error instanceof ConfigError) return EXIT_CODES.usage;
  if (error instanceof InputError) return EXIT_CODES.input;
  if (error instanceof AuthError) return EXIT_CODES.auth;
  if (error instanceof BatchVerificationError) return EXIT_CODES.partial;
  if (error instanceof BatchesFailedError) return EXIT_CODES.api;
  if (error instanceof HttpError || error instanceof ConnectionError || error instanceof ResponseShapeError) {
    return EXIT_CODES.api;
  }
  return EXIT_CODES.internal;
}
