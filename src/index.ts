/**
 * audience-kit's public surface: what a data pipeline needs to normalize, hash and upload a
 * customer list. Every name here is a promise kept across minor versions, so the list is
 * reviewed (test/public-api.json fails the build when a name appears or disappears by
 * accident). The CLI and the tests import the modules that define what they use; the sandbox is
 * `audience-kit/sandbox`.
 */
export { VERSION } from './version.js';

// Errors: one hierarchy, a stable `code` (ErrorCode) on every error.
export {
  ERROR_CODES,
  AudienceKitError,
  ConfigError,
  InputError,
  HttpError,
  AuthError,
  RateLimitError,
  ConnectionError,
  TimeoutError,
  BatchVerificationError,
  BatchesFailedError,
  ResponseShapeError,
  EnvironmentError,
  type ErrorCode,
} from './errors.js';
export { JournalError } from './state/journal.js';

// Normalization and hashing of single values.
export { IDENTIFIER_TYPES, type IdentifierType, type AudienceUser } from './platform/users.js';
export { DEFAULT_PHONE_FORMAT } from './platform/identifiers/types.js';
export { normalizeIdentifier } from './identifiers/normalize.js';
export { normalizeCountryCode } from './identifiers/countries.js';
export { hashValue } from './platform/identifiers/rules.js';
export { type BuiltUser, type NormalizeOptions, type RejectReason } from './identifiers/types.js';
export type { ColumnMapping } from './identifiers/mapping.js';

// Whole inputs: rows you already hold, or a CSV file/stream hashed on worker threads.
export {
  hashRecords,
  hashCsv,
  type HashRecordsOptions,
  type HashRecordsRun,
  type HashCsvOptions,
  type HashCsvRun,
} from './hashing/pipeline.js';
export { type RawRecord } from './identifiers/rows.js';
export type { HashSummary } from './hashing/summary.js';

// The API client and the audience resources a pipeline creates or looks up.
export { createClient, type AdsClient, type ClientOptions } from './api/client.js';
export {
  createCustomAudience,
  getCustomAudience,
  listCustomAudiences,
  deleteCustomAudience,
  createDoNotReachList,
  findDoNotReachList,
  listDoNotReachLists,
  deleteDoNotReachList,
} from './api/endpoints.js';
export { paginate } from './api/pagination.js';
export { type CustomAudience, type DoNotReachList } from './platform/responses.js';
export { resolveConnectionConfig } from './api/config.js';

// Uploads and their audit trail.
export { uploadAudience } from './upload/upload.js';
export { runUpload, type RunUploadOptions } from './upload/run.js';
export { syncAudience, type SyncAudienceOptions } from './upload/sync.js';
export type { SyncReport } from './upload/sync-report.js';
export { reportJson } from './upload/report.js';
export type { UploadAudienceOptions, UploadProgress, UploadReport } from './upload/types.js';
export { type UploadTarget } from './platform/targets.js';
export { verifyAuditLog } from './state/audit.js';
