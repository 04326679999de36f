/**
 * Everything the CLI and the tests use, including internals: not published (no `exports` entry)
 * and importable only from src/cli (eslint). Library users get the reviewed list in index.ts.
 */
export { VERSION, USER_AGENT } from './version.js';
export * from './errors.js';
export * from './identifiers/normalize.js';
export * from './ingest/csv.js';
export * from './identifiers/mapping.js';
export * from './hashing/reject-guard.js';
export * from './hashing/pipeline.js';
export * from './hashing/chunk.js';
export * from './hashing/summary.js';
export * from './api/index.js';
export * from './api/config.js';
export * from './sandbox/index.js';
export * from './state/journal.js';
export * from './state/audit.js';
export * from './util/sha256.js';
export * from './util/clock.js';
export * from './state/lock.js';
export * from './state/snapshot.js';
export * from './state/key-table.js';
export * from './upload/index.js';
export { stateFailure, writeFileNoFollow } from './state/fs.js';
