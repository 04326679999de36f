/**
 * What the platform's client needs to connect (reference: OAuth 1.0a, HMAC-SHA1): the ads API's
 * base URL (no version segment; the paths carry it), the core API's for the OAuth endpoints, the
 * app's consumer key and secret and the user's access token and secret. Each field with the
 * environment variable and the CLI flag that give it, and whether it is a secret (never printed,
 * not even in part). api/config.ts resolves them (flags > environment > config file).
 */
const CREDENTIALS = [
  { field: 'adsBaseUrl', env: 'AUDIENCE_KIT_ADS_BASE_URL', flag: '--base-url', secret: false },
  { field: 'apiBaseUrl', env: 'AUDIENCE_KIT_API_BASE_URL', flag: '--api-base-url', secret: false },
  { field: 'consumerKey', env: 'AUDIENCE_KIT_CONSUMER_KEY', flag: '--consumer-key', secret: false },
  { field: 'consumerSecret', env: 'AUDIENCE_KIT_CONSUMER_SECRET', flag: '--consumer-secret', secret: true },
  { field: 'accessToken', env: 'AUDIENCE_KIT_ACCESS_TOKEN', flag: '--access-token', secret: false },
  { field: 'accessTokenSecret', env: 'AUDIENCE_KIT_ACCESS_TOKEN_SECRET', flag: '--access-token-secret', secret: true },
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
