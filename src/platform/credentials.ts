/**
 * What the platform's client needs to connect (reference: OAuth 1.0a, HMAC-SHA1): the ads API's
 * base URL (no version segment; the paths carry it), the core API's for the OAuth endpoints, the
 * app's consumer key and secret and the user's access token and secret. Each field with the
 * environment variable and the CLI flag that give it, and whether it is a secret (never printed,
 * not even in part), and who holds it: `url` a base URL, `app` the app's credential (needed by the
 * OAuth login too), `user` the user's. `arg` is the flag as the CLI's parsed arguments name it.
 * api/config.ts resolves them (flags > environment > config file).
 */
const CREDENTIALS = [
  {
    field: 'adsBaseUrl',
    env: 'AUDIENCE_KIT_ADS_BASE_URL',
    flag: '--base-url',
    arg: 'baseUrl',
    scope: 'url',
    secret: false,
  },
  {
    field: 'apiBaseUrl',
    env: 'AUDIENCE_KIT_API_BASE_URL',
    flag: '--api-base-url',
    arg: 'apiBaseUrl',
    scope: 'url',
    secret: false,
  },
  {
    field: 'consumerKey',
    env: 'AUDIENCE_KIT_CONSUMER_KEY',
    flag: '--consumer-key',
    arg: 'consumerKey',
    scope: 'app',
    secret: false,
  },
  {
    field: 'consumerSecret',
    env: 'AUDIENCE_KIT_CONSUMER_SECRET',
    flag: '--consumer-secret',
    arg: 'consumerSecret',
    scope: 'app',
    secret: true,
  },
  {
    field: 'accessToken',
    env: 'AUDIENCE_KIT_ACCESS_TOKEN',
    flag: '--access-token',
    arg: 'accessToken',
    scope: 'user',
    secret: false,
  },
  {
    field: 'accessTokenSecret',
    env: 'AUDIENCE_KIT_ACCESS_TOKEN_SECRET',
    flag: '--access-token-secret',
    arg: 'accessTokenSecret',
    scope: 'user',
    secret: true,
  },
] as const;

export type ConnectionField = (typeof CREDENTIALS)[number]['field'];

export const CONNECTION_FIELDS: readonly ConnectionField[] = CREDENTIALS.map((c) => c.field);

const byField = <V>(value: (c: (typeof CREDENTIALS)[number]) => V): Readonly<Record<ConnectionField, V>> =>
  Object.freeze(Object.fromEntries(CREDENTIALS.map((c) => [c.field, value(c)])) as Record<ConnectionField, V>);

export const CONNECTION_ENV_VARS = byField((c) => c.env);
export const CONNECTION_FLAG_NAMES = byField((c) => c.flag);

/** Fields whose values must never be printed, not even partially. */
export const SECRET_CONNECTION_FIELDS: readonly ConnectionField[] = CREDENTIALS.filter((c) => c.secret).map(
  (c) => c.field,
);

/** The flag as the CLI's parsed arguments name it (`--base-url`: `baseUrl`). */
export const CONNECTION_ARGS = byField((c) => c.arg);

/** The credentials (not the base URLs) a login for the app (`app`) or a user's requests (`user`) need. */
export function credentialsNeeded(need: 'app' | 'user'): readonly ConnectionField[] {
  return CREDENTIALS.filter((c) => c.scope === 'app' || (need === 'user' && c.scope === 'user')).map((c) => c.field);
}
