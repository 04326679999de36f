/** The upload pipeline: plan, input, sender, engine, ledger, report, run. */
export * from './types.js';
export * from './plan.js';
export * from './target.js';
export {
  DEFAULT_MAX_RETRIES,
  DEFAULT_UPLOAD_CONCURRENCY,
  operationType,
  resolveUploadGroup,
  type ResolvedUploadOptions,
} from './options.js';
export { createEngine, type Engine, type EngineOptions } from './engine.js';
export { verify as verifyBatchResult, type SendableBatch } from './sender.js';
export { asKitError, errorJson, reportJson, rejectRate } from './report.js';
export { sendUsers, uploadAudience } from './upload.js';
export {
  checkRunOptions,
  runUpload,
  type RunInput,
  type RunNotice,
  type RunUploadOptions,
  type UnfinishedRunChoice,
  type UnfinishedRunPolicy,
} from './run.js';
export * from './progress.js';
export {
  checkSyncOptions,
  syncAudience,
  MAX_REFRESH_AFTER_DAYS,
  type SyncAudienceOptions,
  type SyncOperationReport,
  type SyncReport,
  type SyncStatus,
} from './sync.js';
export * from './sync-plan.js';
export { resendSnapshot } from './sync-refill.js';
