/**
 * Library errors name library options (`stateDir`, `unfinished: 'resume'`); the CLI user set
 * them with flags. Every error the CLI prints goes through withFlagNames (reportError), and so
 * do the errors in its JSON reports.
 */
import { AudienceKitError } from '../errors.js';

/**
 * Library option names as they appear in messages → the flags that set them. A name is matched
 * only where no `-` or word character precedes it, never inside a flag (`--concurrency`): an
 * error reworded twice (by a command, then by reportError) reads the same.
 */
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
  [/(?<![-\w])credentials\.consumerKey\b/g, 'AUDIENCE_KIT_CONSUMER_KEY'],
  [/(?<![-\w])credentials\.consumerSecret\b/g, 'AUDIENCE_KIT_CONSUMER_SECRET'],
  [/(?<![-\w])credentials\.accessToken\b/g, 'AUDIENCE_KIT_ACCESS_TOKEN'],
  [/(?<![-\w])credentials\.accessTokenSecret\b/g, 'AUDIENCE_KIT_ACCESS_TOKEN_SECRET'],
  [/(?<![-\w])adsBaseUrl\b/g, 'AUDIENCE_KIT_ADS_BASE_URL (--base-url)'],
  [/(?<![-\w])apiBaseUrl\b/g, 'AUDIENCE_KIT_API_BASE_URL (--api-base-url)'],
  [/(?<![-\w])limits\.maxBodyBytes\b/g, '--max-body-bytes'],
  [/(?<![-\w])limits\.maxOperations\b/g, '--max-operations'],
  [/(?<![-\w])limits\.maxUsersPerOperation\b/g, '--max-users-per-operation'],
  [/(?<![-\w])maxRetries\b/g, '--max-retries'],
  [/(?<![-\w])maxRejectRate\b/g, '--max-reject-rate'],
  [/(?<![-\w])maxRemovals\b/g, '--max-removals'],
  [/(?<![-\w])minAudienceSize\b/g, '--min-audience-size'],
  [/(?<![-\w])allowEmpty: true\b/g, '--allow-empty'],
  [/(?<![-\w])full: true\b/g, '--full'],
  [/(?<![-\w])recover: true\b/g, '--recover'],
  [/(?<![-\w])acceptUnrecovered: true\b/g, '--accept-unrecovered'],
  [/(?<![-\w])dryRun\b/g, '--dry-run'],
  [/(?<![-\w])concurrency\b/g, '--concurrency'],
  [/(?<![-\w])effectiveAt\b/g, '--effective-at'],
  [/(?<![-\w])expiresAt\b/g, '--expires-at'],
  [/(?<![-\w])accountId\b/g, '--account'],
  [/(?<![-\w])defaultCountry\b/g, '--default-country'],
  [/(?<![-\w])countryColumn\b/g, '--country-column'],
  [/(?<![-\w])onlyMapped\b/g, '--only-mapped'],
  [/(?<![-\w])partnerIdsMayBeEmails\b/g, '--partner-ids-may-be-emails'],
  [/(?<![-\w])map entry /g, '--map '],
  [/(?<![-\w])map entries\b/g, '--map entries'],
  [/(?<![-\w])stateDir\b/g, '--state-dir'],
  [/(?<![-\w])auditLog\b/g, '--audit-log'],
  [/(?<![-\w])operation '(update|delete)'/g, '--operation $1'],
  [/(?<![-\w])unfinished: '(resume|restart)'/g, '--$1'],
  [/(?<![-\w])consent '([\w-]+)'/g, '--consent $1'],
  [/name a custom audience as target\b/g, 'name a custom audience with --audience'],
];

/** A library message in the CLI's words: the flags and variables, not the option names. */
export const flagNames = (text: string): string => FLAG_NAMES.reduce((t, [re, flag]) => t.replace(re, flag), text);

/** A library error as the CLI user should read it: the flags, not the option names. */
export function withFlagNames<T>(error: T): T {
  if (!(error instanceof AudienceKitError)) return error;
  error.message = flagNames(error.message);
  if (error.fix !== undefined) Object.assign(error, { fix: flagNames(error.fix) });
  return error;
}
