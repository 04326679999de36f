/**
 * audience-kit library entry point. The CLI imports only from here, so library users get
 * exactly what the CLI uses.
 */
export { VERSION, USER_AGENT } from './version.js';
export * from './errors.js';
export * from './identifiers/normalize.js';
export * from './ingest/csv.js';
export * from './identifiers/mapping.js';
export * from './hashing/hash.js';
export * from './api/index.js';
export * from './api/config.js';
export * from './sandbox/index.js';
export * from './upload/batch.js';
export * from './state/journal.js';
export * from './state/audit.js';
export * from './upload/upload.js';
