/**
 * audience-kit library entry point. The CLI imports only from here, so library users get
 * exactly what the CLI uses.
 */
export { VERSION, USER_AGENT } from './version.js';
export * from './errors.js';
export * from './normalize.js';
export * from './csv.js';
export * from './hash.js';
export * from './api/index.js';
export * from './config.js';
export * from './sandbox/index.js';
export * from './batch.js';
export * from './journal.js';
export * from './audit.js';
export * from './upload.js';
