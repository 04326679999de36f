import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const pkg = require('../package.json') as { version: string };

/** The package version, read from package.json so it can never drift from the release. */
export const VERSION: string = pkg.version;

export const USER_AGENT = `audience-kit/${VERSION}`;
