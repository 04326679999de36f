export {
  percentEncode,
  baseStringUri,
  normalizeParameters,
  signatureBaseString,
  oauth1Signature,
  oauth1Params,
  oauth1Header,
  parseOAuthHeader,
  verifyOauth1Signature,
  type OAuth1Request,
  type OAuth1Verification,
  type OAuthParamPairs,
} from './oauth.js';
export {
  MAX_ATTEMPTS_LIMIT,
  AdsClient,
  createClient,
  agentOptions,
  validateClientOptions,
  isRetryableStatus,
  type ApiRequest,
  type ApiResponse,
  type ClientOptions,
  type ClientStats,
  type Credentials,
  type RetryOptions as ClientRetryOptions,
  type WaitEvent as ClientWaitEvent,
  type WaitReason as ClientWaitReason,
  type RequestEvent as ClientRequestEvent,
  type WarnContext as ClientWarnContext,
} from './client.js';
export {
  DEFAULT_RATE_LIMIT_POLICY,
  SlidingWindowLimiter,
  parseRateLimitHeaders,
  retryAfterMs,
  resetWaitMs,
  type RateLimitPolicy,
  type RateLimitRule,
  type RateLimitEndpoint,
  type RateLimitHeaders,
} from './rate-limit.js';
export { buildHttpError, type ErrorResponse as HttpErrorResponse } from './parse-error.js';
export * from './schemas.js';
export { paginate, type Page } from './pagination.js';
export * from './endpoints.js';
