/**
 * One small error hierarchy for the whole toolkit. Every error has a stable `code` (for
 * scripts and library users), a one-line `message` that names the cause, and a `fix` that
 * tells the user what to do. The CLI maps classes to exit codes (`src/cli/exit-codes.ts`).
 *
 * Messages must never contain raw identifiers, secrets or Authorization headers: callers
 * build messages from counts, column names, line numbers and platform error texts only.
 */

/**
 * Every `code` an error of the library can carry, grouped by the class that throws it. A new code
 * is added here (the constructor only takes an `ErrorCode`), so scripts can switch on the union.
 * The CLI and the sandbox throw the same classes with codes of their own, listed beside them
 * (`src/cli/exit-codes.ts`, `src/sandbox/errors.ts`): `new ConfigError<CliErrorCode>(…)`.
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
  'missing_client',
  'invalid_operation',
  'invalid_batch_limit',
  'invalid_default_country',
  'invalid_expiry',
  'invalid_time',
  'dnr_effective_at',
  'dnr_expiry_too_far',
  'mapping_invalid',
  'mapping_no_identifier_column',
  'mapping_no_consent_column',
  'mapping_partner_ids_emails',
  'mapping_type_not_taken',
  'mapping_unknown_column',
  'mapping_unknown_type',
  'type_not_taken',
  'user_not_hashed',
  'audit_run_not_found',
  'unfinished_run',
  'target_not_found',
  'target_read_only',
  // ConfigError: another process is running the same upload.
  'run_in_progress',
  // JournalError (a StateError): the run journal does not fit this run.
  'journal_corrupt',
  'journal_tampered',
  'journal_old_format',
  'journal_newer_format',
  'journal_mismatch',
  // ConfigError from sync: the plan is refused before anything is sent, or another sync runs.
  'sync_empty_input',
  'audience_too_small',
  'sync_too_many_removals',
  'sync_in_progress',
  // SnapshotError (a StateError): the sync snapshot cannot be used as it is.
  'snapshot_corrupt',
  'snapshot_old_format',
  'snapshot_newer_format',
  'snapshot_wrong_target',
  'snapshot_rolled_back',
  'snapshot_missing',
  'snapshot_index_missing',
  'snapshot_data_missing',
  'snapshot_users_unrecovered',
  // A killed sync's write-ahead record is missing, has a gap or rows of another version: what it
  // may have sent cannot be proven harmless (state/snapshot.ts `writeAheadLost`, postgres replay).
  'snapshot_write_ahead_lost',
  'snapshot_write_ahead_damaged',
  // ConfigError from `state move`: the destination already holds state, the source a target no
  // audit record names, an unfinished sync or upload, or the copy did not verify.
  'state_destination_not_empty',
  'state_move_unfinished',
  'state_target_unknown',
  'state_unfinished',
  'state_move_mismatch',
  'state_source_empty',
  // ConfigError from a PostgreSQL state store: its schema was written by a newer version, or its
  // URL names no database (the server's default one is never used).
  'state_schema_newer',
  'state_database_unnamed',
  // InputError: the input cannot be read as a whole.
  'input_bad_header',
  'input_header_too_large',
  'input_binary',
  'input_cr_line_endings',
  'input_encoding_ambiguous',
  'input_encoding_mismatch',
  'input_encoding_unknown',
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
  // InputError in a sync's report: users too large for one request, not sent (the sync is partial).
  'users_oversized',
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
  // The server can lose acknowledged commits silently (synchronous_commit off, asynchronous standbys only).
  'state_commits_unsafe',
  // EnvironmentError from a PostgreSQL state store, each a named cause with its own fix
  // (src/state/postgres/errors.ts): connecting and logging in, then a statement refused.
  'state_host_unknown',
  'state_database_missing',
  'state_role_missing',
  'state_access_refused',
  'state_password_refused',
  'state_tls_required',
  'state_tls_refused',
  'state_tls_untrusted',
  'state_permission_denied',
  'state_schema_missing',
  'state_read_only',
  'state_statement_timeout',
  'state_lock_timeout',
  'state_table_missing',
  'state_duplicate_key',
  'state_database_full',
  'state_query_failed',
  // A sync's lock on its target (its lease) was found lost: it sends nothing more.
  'state_lease_lost',
  // ConfigError: the state URL goes through a pooler in transaction mode (advisory locks leak).
  'state_pooler_transaction_mode',
  // ConfigError: a PostgreSQL state store was asked for and its client packages are not installed.
  'state_client_missing',
  // AudienceKitError itself: a store's target session used out of order by its caller (a
  // persist() while write-ahead writes are in flight, or a write or persist during its commit).
  'state_session_misused',
  // AudienceKitError itself: something unexpected stopped an upload (its report carries it).
  'internal',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorOptions {
  fix?: string;
  cause?: unknown;
}

/**
 * `Code` is the library's closed `ErrorCode` unless a caller names another list explicitly (the
 * CLI's, the sandbox's); it is never inferred from the argument, so a code missing from the list
 * does not compile.
 */
export class AudienceKitError<Code extends string = ErrorCode> extends Error {
  /** Stable machine-readable code, for example `config_missing_credential`. */
  readonly code: Code;
  /** What the user should do about it, one line. */
  readonly fix: string | undefined;

  constructor(code: NoInfer<Code>, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.fix = options.fix;
  }
}

/** Invalid or missing configuration, environment variable or command-line option. */
export class ConfigError<Code extends string = ErrorCode> extends AudienceKitError<Code> {}

/**
 * The tool's own state cannot be used for this run as it is: a sync snapshot or a run journal
 * damaged, altered, rolled back, of another format or target, missing a record that must be
 * there, or written by a run of other input or options. Not a usage problem (no option is wrong:
 * the fix is a recovery or a restart) nor the machine's; exit code 9 in the CLI.
 */
export class StateError extends AudienceKitError {}

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
export class HttpError<Code extends string = ErrorCode> extends AudienceKitError<Code> {
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

  constructor(code: NoInfer<Code>, message: string, init: HttpErrorInit) {
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
export class AuthError<Code extends string = ErrorCode> extends HttpError<Code> {}

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
