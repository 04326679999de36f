/**
 * Library errors name library options (`stateDir`, `unfinished: 'resume'`); the CLI user set
 * them with flags. Every error the CLI prints goes through withFlagNames (reportError), and so
 * do the errors in its JSON reports.
 */
import { AudienceKitError } from '../internal.js';

/** Library option names as they appear in messages → the flags that set them. */
const FLAG_NAMES: ReadonlyArray<readonly [RegExp, string]> = [
  [/\blimits\.maxBodyBytes\b/g, '--max-body-bytes'],
  [/\blimits\.maxOperations\b/g, '--max-operations'],
  [/\blimits\.maxUsersPerOperation\b/g, '--max-users-per-operation'],
  [/\bmaxRetries\b/g, '--max-retries'],
  [/\bmaxRejectRate\b/g, '--max-reject-rate'],
  [/\bmaxRemovals\b/g, '--max-removals'],
  [/\ballowEmpty: true\b/g, '--allow-empty'],
  [/\bfull: true\b/g, '--full'],
  [/\bconcurrency\b/g, '--concurrency'],
  [/\beffectiveAt\b/g, '--effective-at'],
  [/\bexpiresAt\b/g, '--expires-at'],
  [/\baccountId\b/g, '--account'],
  [/\bdefaultCountry\b/g, '--default-country'],
  [/\bcountryColumn\b/g, '--country-column'],
  [/\bonlyMapped\b/g, '--only-mapped'],
  [/\bmap entry /g, '--map '],
  [/\bmap entries\b/g, '--map entries'],
  [/\bstateDir\b/g, '--state-dir'],
  [/\bauditLog\b/g, '--audit-log'],
  [/\boperation '(update|delete)'/g, '--operation $1'],
  [/\bunfinished: '(resume|restart)'/g, '--$1'],
];

/** A library error as the CLI user should read it: the flags, not the option names. */
export function withFlagNames<T>(error: T): T {
  if (!(error instanceof AudienceKitError)) return error;
  const rename = (text: string): string => FLAG_NAMES.reduce((t, [re, flag]) => t.replace(re, flag), text);
  error.message = rename(error.message);
  if (error.fix !== undefined) Object.assign(error, { fix: rename(error.fix) });
  return error;
}
