/**
 * Library errors name library options (`stateDir`, `unfinished: 'resume'`); the CLI user set
 * them with flags. Every error the CLI prints goes through withFlagNames (reportError), and so
 * do the errors in its JSON reports.
 */
import { AudienceKitError } from '../internal.js';

/** Library option names as they appear in messages → the flags that set them. */
const FLAG_NAMES: ReadonlyArray<readonly [RegExp, string]> = [
  // The client's fixes, then its option names: the CLI reads variables and flags, not createClient options.
  [
    /Pass credentials \{ consumerKey, consumerSecret, accessToken, accessTokenSecret \} to createClient \([^)]*\)/g,
    'Set the four AUDIENCE_KIT_* credential variables (or run `audience-kit auth login`)',
  ],
  [
    /Pass them to createClient \(the OAuth PIN flow gives them\)/g,
    'Set them, or run `audience-kit auth login` to obtain an access token',
  ],
  [/get a new access token with the OAuth PIN flow/g, 'run `audience-kit auth login`'],
  [/Pass (adsBaseUrl|apiBaseUrl) to createClient: /g, 'Set $1 to '],
  [
    /\(consumerKey, consumerSecret, accessToken, accessTokenSecret\)/g,
    '(AUDIENCE_KIT_CONSUMER_KEY, AUDIENCE_KIT_CONSUMER_SECRET, AUDIENCE_KIT_ACCESS_TOKEN, AUDIENCE_KIT_ACCESS_TOKEN_SECRET)',
  ],
  [/\bcredentials\.consumerKey\b/g, 'AUDIENCE_KIT_CONSUMER_KEY'],
  [/\bcredentials\.consumerSecret\b/g, 'AUDIENCE_KIT_CONSUMER_SECRET'],
  [/\bcredentials\.accessToken\b/g, 'AUDIENCE_KIT_ACCESS_TOKEN'],
  [/\bcredentials\.accessTokenSecret\b/g, 'AUDIENCE_KIT_ACCESS_TOKEN_SECRET'],
  [/\badsBaseUrl\b/g, 'AUDIENCE_KIT_ADS_BASE_URL (--base-url)'],
  [/\bapiBaseUrl\b/g, 'AUDIENCE_KIT_API_BASE_URL (--api-base-url)'],
  [/\blimits\.maxBodyBytes\b/g, '--max-body-bytes'],
  [/\blimits\.maxOperations\b/g, '--max-operations'],
  [/\blimits\.maxUsersPerOperation\b/g, '--max-users-per-operation'],
  [/\bmaxRetries\b/g, '--max-retries'],
  [/\bmaxRejectRate\b/g, '--max-reject-rate'],
  [/\bmaxRemovals\b/g, '--max-removals'],
  [/\ballowEmpty: true\b/g, '--allow-empty'],
  [/\bfull: true\b/g, '--full'],
  [/\brecover: true\b/g, '--recover'],
  [/\bacceptUnrecovered: true\b/g, '--accept-unrecovered'],
  [/\bdryRun\b/g, '--dry-run'],
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
