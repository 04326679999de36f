/**
 * One small error hierarchy for the whole toolkit. Every error has a stable `code` (for
 * scripts and library users), a one-line `message` that names the cause, and a `fix` that
 * tells the user what to do. The CLI maps classes to exit codes (see `exitCodeFor`).
 *
 * Messages must never contain raw identifiers, secrets or Authorization headers: callers
 * build messages from counts, column names, line numbers and platform error texts only.
 */

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
  /** Interrupted by SIGINT; the journal was saved. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/**
 * Every `code` an AudienceKitError can carry, grouped by the class that throws it. A new code is
 * added here (the constructor only takes an `ErrorCode`), so scripts can switch on the union.
 */
export const ERROR_CODES = [
  // ConfigError: a bad option, parameter or configuration, found before anything is sent.
  'config_invalid',
  'config_invalid_value',
  'config_invalid_profile',
  'config_missing_base_url',
  'config_missing_credential',
  'config_file_invalid',
  'config_file_unreadable',
  'config_file_unwritable',
  'invalid_option',
  'invalid_parameter',
  'missing_option',
  'missing_client',
  'invalid_operation',
  'invalid_batch_limit',
  'invalid_default_country',
  'invalid_duration',
  'invalid_expiry',
  'invalid_time',
  'dnr_effective_at',
  'dnr_expiry_too_far',
  'mapping_invalid',
  'mapping_no_identifier_column',
  'mapping_type_not_taken',
  'mapping_unknown_column',
  'mapping_unknown_type',
  'type_not_taken',
  'user_not_hashed',
  'output_not_writable',
  'audit_run_not_found',
  'audience_already_deleted',
  'audience_in_use',
  'confirmation_required',
  'deletion_declined',
  'do_not_reach_list_exists',
  'auth_no_pending_login',
  'auth_pin_missing',
  'auth_pin_refused',
  'unfinished_run',
  'target_not_found',
  'target_read_only',
  'sandbox_fault_spec_invalid',
  'sandbox_listen_failed',
  'sandbox_option_invalid',
  'sandbox_unknown_account',
  'sandbox_unknown_audience',
  'sandbox_dnr_list_exists',
  // JournalError (a ConfigError): the run journal does not fit this run.
  'journal_corrupt',
  'journal_tampered',
  'journal_old_format',
  'journal_newer_format',
  'journal_mismatch',
  'run_in_progress',
  // ConfigError from sync: the plan is refused before anything is sent; SnapshotError (a ConfigError).
  'sync_empty_input',
  'sync_too_many_removals',
  'sync_in_progress',
  'snapshot_corrupt',
  'snapshot_old_format',
  'snapshot_newer_format',
  'snapshot_wrong_target',
  'snapshot_rolled_back',
  'snapshot_missing',
  'snapshot_index_missing',
  'snapshot_data_missing',
  'snapshot_users_unrecovered',
  // ConfigError from the CLI: the default state directory and an earlier version's both hold the target's state.
  'state_dir_ambiguous',
  // ConfigError from `state move`: the destination already holds state, the source a target no
  // audit record names, an unfinished sync or upload, or the copy did not verify.
  'state_destination_not_empty',
  'state_target_unknown',
  'state_unfinished',
  'state_move_mismatch',
  'state_source_empty',
  // ConfigError from a PostgreSQL state store: its schema was written by a newer version.
  'state_schema_newer',
  // InputError: the input cannot be read as a whole.
  'input_bad_header',
  'input_header_too_large',
  'input_binary',
  'input_cr_line_endings',
  'input_gzip_corrupt',
  'input_is_directory',
  'input_no_header',
  'input_not_csv',
  'input_not_found',
  'input_not_gzip',
  'input_not_readable',
  'input_not_utf8',
  'input_read_failed',
  'input_unreadable',
  'audit_log_missing',
  'audit_newer_format',
  'input_reject_rate_exceeded',
  'input_no_users',
  // HttpError, AuthError, RateLimitError: a non-2xx answer after retries.
  'api_bad_request',
  'api_not_found',
  'api_request_timeout',
  'api_conflict',
  'api_request_too_large',
  'api_locked',
  'api_unavailable',
  'api_server_error',
  'api_http_error',
  'auth_unauthorized',
  'auth_forbidden',
  'audience_owner_only',
  'rate_limited',
  // ConnectionError, TimeoutError.
  'connection_reset',
  'connection_failed',
  'request_aborted',
  'timeout_connect',
  'timeout_headers',
  'timeout_body',
  // BatchVerificationError, ResponseShapeError.
  'batch_count_mismatch',
  'response_shape',
  'response_not_json',
  // EnvironmentError: the disk, the file system or another process refused.
  'file_locked',
  'disk_full',
  'state_not_writable',
  'path_is_symlink',
  'path_not_file',
  'path_not_directory',
  'io_error',
  // EnvironmentError from a PostgreSQL state store: unreachable, connection (and lock) lost, no
  // right to create the schema, or another process committed the target's snapshot (fenced).
  'state_unreachable',
  'state_connection_lost',
  'state_schema_denied',
  'state_fenced',
  // AudienceKitError itself: something unexpected stopped an upload (its report carries it).
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorOptions {
  fix?: string;
  cause?: unknown;
}

export class AudienceKitError extends Error {
  /** Stable machine-readable code, for example `config_missing_credential`. */
  readonly code: ErrorCode;
  /** What the user should do about it, one line. */
  readonly fix: string | undefined;

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.fix = options.fix;
  }
}

/** Invalid or missing configuration, environment variable or command-line option. */
export class ConfigError extends AudienceKitError {}

/** The input cannot be read or understood as a whole (a bad row is a reject, not an error). */
export class InputError extends AudienceKitError {}

/** One error entry as the platform returns it under `errors`. */
export interface PlatformErrorDetail {
  code: string | number;
  message: string;
  parameter?: string;
  details?: string;
  value?: unknown;
}

/** One entry of `operation_errors`: `index` is the position of the operation in the request. */
export interface OperationErrorDetail {
  index: number;
  message: string;
  code?: string | number;
  /** Position of the user inside the operation's `users`, when the platform says. */
  userIndex?: number;
}

export interface HttpErrorInit extends ErrorOptions {
  status: number;
  method: string;
  /** Path only (no query, no host credentials), safe to print. */
  path: string;
  errors?: PlatformErrorDetail[];
  operationErrors?: OperationErrorDetail[];
  apiWarn?: string;
  requestId?: string;
  /** Short excerpt of a body that was not JSON. */
  bodyExcerpt?: string;
  /** RFC 7807 problem `type`, when the body was a Problem object. */
  problemType?: string;
  /** The Problem object's own `status` (it may differ from the HTTP status, e.g. behind a proxy). */
  problemStatus?: number;
  /** Attempts made, the failing one included (default 1). */
  attempts?: number;
}

/** The platform answered with a non-2xx status. */
export class HttpError extends AudienceKitError {
  readonly status: number;
  readonly method: string;
  readonly path: string;
  readonly errors: PlatformErrorDetail[];
  readonly operationErrors: OperationErrorDetail[];
  readonly apiWarn: string | undefined;
  readonly requestId: string | undefined;
  readonly bodyExcerpt: string | undefined;
  readonly problemType: string | undefined;
  readonly problemStatus: number | undefined;
  /**
   * Attempts made, the failing one included. Above 1, an earlier attempt may have been processed
   * with its answer lost, so a 404 on a DELETE can be that attempt's own doing.
   */
  readonly attempts: number;

  constructor(code: ErrorCode, message: string, init: HttpErrorInit) {
    super(code, message, init);
    this.status = init.status;
    this.method = init.method;
    this.path = init.path;
    this.errors = init.errors ?? [];
    this.operationErrors = init.operationErrors ?? [];
    this.apiWarn = init.apiWarn;
    this.requestId = init.requestId;
    this.bodyExcerpt = init.bodyExcerpt;
    this.problemType = init.problemType;
    this.problemStatus = init.problemStatus;
    this.attempts = init.attempts ?? 1;
  }
}

/** 401 or 403: the credentials or the account's permission were refused. */
export class AuthError extends HttpError {}

/** 429, or a wait for the rate-limit reset that exceeded the allowed bound. */
export class RateLimitError extends HttpError {
  readonly resetAt: Date | undefined;
  constructor(code: ErrorCode, message: string, init: HttpErrorInit & { resetAt?: Date }) {
    super(code, message, init);
    this.resetAt = init.resetAt;
  }
}

/** The connection failed, was reset, or timed out. */
export class ConnectionError extends AudienceKitError {}

export class TimeoutError extends ConnectionError {}

/** The platform answered 2xx but its counts do not prove that every user was accepted. */
export class BatchVerificationError extends AudienceKitError {
  readonly expected: number;
  readonly successCount: number | undefined;
  readonly totalCount: number | undefined;
  constructor(message: string, init: ErrorOptions & { expected: number; successCount?: number; totalCount?: number }) {
    super('batch_count_mismatch', message, init);
    this.expected = init.expected;
    this.successCount = init.successCount;
    this.totalCount = init.totalCount;
  }
}

/**
 * Batches the platform refused (after the client's retries) while the run went on with the
 * others: the run's cause when nothing stopped it. `code` is the first failed batch's (e.g.
 * `api_bad_request`); exit code 6 like the HTTP and connection errors it summarizes.
 */
export class BatchesFailedError extends AudienceKitError {}

/** The response had a 2xx status but not the documented shape. */
export class ResponseShapeError extends AudienceKitError {}

/**
 * The environment refused an operation on a file the tool reads or writes (state directory,
 * journal, audit log, lock, outputs): the message names the path and what failed, the fix what
 * to change on the machine. Exit code 8, never "internal error".
 */
export class EnvironmentError extends AudienceKitError {
  /** The path concerned. */
  readonly path: string;
  constructor(code: ErrorCode, message: string, init: ErrorOptions & { path: string }) {
    super(code, message, init);
    this.path = init.path;
  }
}

/** Why an fs call failed, as an EnvironmentError; errors of ours are returned unchanged. */
export function environmentError(error: unknown, action: string, path: string): unknown {
  if (error instanceof AudienceKitError) return error;
  const errno = (error as NodeJS.ErrnoException | undefined)?.code;
  if (errno === undefined || typeof errno !== 'string') return error;
  const init = { path, cause: error };
  switch (errno) {
    case 'EFBIG':
      return new EnvironmentError('io_error', `file too large (EFBIG) while ${action} ${path}`, {
        ...init,
        fix: "a file reached a size limit (ulimit -f, or the file system's largest file): raise it, or use a state directory on another file system",
      });
    case 'ENOSPC':
    case 'EDQUOT':
      return new EnvironmentError('disk_full', `disk full (${errno}) while ${action} ${path}`, {
        ...init,
        fix: "free space on that disk (or use a stateDir / output on another one), then run again (an upload: with unfinished: 'resume')",
      });
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return new EnvironmentError('state_not_writable', `not writable (${errno}) while ${action} ${path}`, {
        ...init,
        fix: 'fix the permissions (or mount the disk read-write), or pass a writable stateDir / output path',
      });
    case 'ELOOP':
      return new EnvironmentError('path_is_symlink', `${path} is a symbolic link: refused while ${action} it`, {
        ...init,
        fix: 'audience-kit never writes through a symbolic link: remove the link or pass another path',
      });
    case 'EISDIR':
      return new EnvironmentError('path_not_file', `${path} is a directory, not a file (while ${action} it)`, {
        ...init,
        fix: 'remove or rename that directory, or pass another path',
      });
    case 'ENOTDIR':
      return new EnvironmentError('path_not_directory', `${path} (or a parent of it) is not a directory (${errno})`, {
        ...init,
        fix: 'pass a stateDir that is a directory (or that does not exist yet)',
      });
    default:
      return new EnvironmentError('io_error', `I/O error (${errno}) while ${action} ${path}`, {
        ...init,
        fix: 'check the disk and the file system (dmesg, df), then run again',
      });
  }
}

/** Exit code for an error thrown out of a command. */
export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof EnvironmentError) return EXIT_CODES.environment;
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
