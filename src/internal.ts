/**
 * What the CLI, the tests and the benchmarks use of the library, internals included, by name: not
 * published (no `exports` entry) and importable only from src/cli (eslint). Library users get the
 * reviewed list in index.ts. A name the CLI needs is added to the line of its module.
 */
export { VERSION } from './version.js';
export {
  AudienceKitError,
  AuthError,
  BatchesFailedError,
  BatchVerificationError,
  ConfigError,
  ConnectionError,
  environmentError,
  EnvironmentError,
  type ErrorCode,
  HttpError,
  type HttpErrorInit,
  InputError,
  ResponseShapeError,
  StateError,
} from './errors.js';
export {
  type BuiltUser,
  DEFAULT_PHONE_FORMAT,
  hashValue,
  IDENTIFIER_TYPES,
  type IdentifierType,
  MAX_VALUE_LENGTH,
  MAX_VALUES_PER_RECORD,
  type NormalizeOptions,
  type Reject,
  REJECT_REASONS,
  type RejectReason,
  serializeUser,
} from './identifiers/normalize.js';
export { reasonType } from './platform/identifiers/types.js';
export {
  type CsvBadRow,
  csvCell,
  type CsvDelimiter,
  encodingLabel,
  type CsvRow,
  MAX_HEADER_COLUMNS,
  MAX_RECORD_BYTES,
  openCsv,
  readCsv,
  type ReadCsvOptions,
  scanRecords,
} from './ingest/csv.js';
export {
  columnLabel,
  isCountryLikeName,
  isKnownColumnName,
  type ColumnMapping,
  looksLikeData,
  resolveMapping,
} from './identifiers/mapping.js';
export type { NationalEvidence } from './identifiers/content.js';
export { CONSENT_POLICIES, consentKindWords, type ConsentPolicy } from './identifiers/consent.js';
export { guardFailure, guardInput, type RejectGuardOptions } from './hashing/reject-guard.js';
export { hashCsv, type HashCsvOptions, type HashCsvRun, hashRecords } from './hashing/pipeline.js';
export { hashCsvHeader, mappedTypes } from './hashing/chunk.js';
export {
  type ConsentCounts,
  consentJson,
  createHashSummary,
  type HashReasonCount,
  type HashSummary,
  type HashTypeCounts,
  mergeHashSummary,
  SUMMARY_LINES,
} from './hashing/summary.js';
export {
  accessToken,
  type AccessTokenResponse,
  AdsClient,
  agentOptions,
  type AudiencePermission,
  authorizeUrl,
  type ClientOptions,
  createClient,
  createCustomAudience,
  createDoNotReachList,
  type CustomAudience,
  deleteCustomAudience,
  deleteDoNotReachList,
  type DoNotReachList,
  getCustomAudience,
  grantAudiencePermission,
  ID_LIST_MAX,
  isRetryableStatus,
  LIST_COUNT_MAX,
  listAudiencePermissions,
  listCustomAudiences,
  listDoNotReachLists,
  listTargetedCampaigns,
  MAX_ATTEMPTS_LIMIT,
  type Page,
  paginate,
  type PermissionScope,
  requestToken,
  revokeAudiencePermission,
  type TargetingRecord,
  updateCustomAudience,
} from './api/index.js';
export {
  CONNECTION_ENV_VARS,
  CONNECTION_FIELDS,
  CONNECTION_FLAG_NAMES,
  type ConnectionConfigReport,
  type ConnectionField,
  type ConnectionValues,
  inspectConnectionConfig,
  removeProfileCredentials,
  resolveConnectionConfig,
  type ResolvedConnectionConfig,
  saveProfileCredentials,
  SECRET_CONNECTION_FIELDS,
} from './api/config.js';
export {
  DEFAULT_SANDBOX_RATE_LIMIT,
  parseFaultSpec,
  type Sandbox,
  type SandboxOptions,
  startSandbox,
} from './sandbox/index.js';
export { unfinishedRunError } from './state/journal.js';
export { type AuditRun, defaultAuditLogPath, findRunIn } from './state/audit.js';
export { sleep } from './util/clock.js';
export { makeDirs } from './util/make-dirs.js';
export { findKey, isKnownFresh } from './hashing/known-users.js';
export { KeyTableBuilder } from './state/key-table.js';
export { FileAuditLog } from './state/audit-file.js';
export { openStateStore, parseStateUrl, type StateSpec } from './state/open-store.js';
export { moveState, type StateMoveReport } from './state/move.js';
export type { AuditLog, StateStore, TakeoverWait } from './state/store.js';
export { grantsSql, schemaSql, SCHEMA_VERSION } from './state/postgres/schema.js';
export { asKitError, errorJson, reportJson } from './upload/report.js';
export { DEFAULT_BATCH_LIMITS, type PackedBatch } from './upload/plan.js';
export { DEFAULT_MAX_RETRIES, DEFAULT_UPLOAD_CONCURRENCY } from './upload/options.js';
export { DEFAULT_REFRESH_AFTER_DAYS, type SyncPlanCounts } from './upload/sync-plan.js';
export {
  createTargetLike,
  describeTarget,
  type Target,
  type TargetKind,
  targetSnapshot,
  type UploadTarget,
} from './upload/target.js';
export {
  fitProgressLine,
  formatDuration,
  percentAndEta,
  type ProgressPart,
  ProgressPrinter,
} from './upload/progress.js';
export { resendSnapshot } from './upload/sync-refill.js';
export {
  checkRunOptions,
  runUpload,
  type RunNotice,
  type RunUploadOptions,
  type UnfinishedRunPolicy,
} from './upload/run.js';
export type { RunInput } from './upload/run-facts.js';
export { checkSyncOptions, MAX_REFRESH_AFTER_DAYS, syncAudience, type SyncAudienceOptions } from './upload/sync.js';
export type { SyncReport } from './upload/sync-report.js';
export type { UploadProgress, UploadReport } from './upload/types.js';
export { stateFailure, writeFileNoFollow } from './state/fs.js';
