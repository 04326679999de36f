/**
 * The platform's rules as the sandbox enforces them, written from the platform reference
 * (`shared/reference/ads-audiences-api.md` and `platform-core-api.md`) and nowhere else. The
 * uploader states the same rules in its own modules (upload/plan.ts, identifiers/normalize.ts);
 * the sandbox imports none of them, so a wrong rule on either side fails the tests that go
 * through the sandbox instead of passing them. test/sandbox-reference.test.ts checks these values
 * against the reference's own words.
 */
import type { SandboxRateLimit } from './ratelimit.js';

/**
 * The keys a user object may carry on the custom audience users endpoint, in the order the
 * sandbox hashes them into a user's key. Reference: "Custom audience users (batch)", row
 * `params.users`.
 */
export const USER_KEYS = ['email', 'phone_number', 'handle', 'device_id', 'service_id', 'partner_user_id'] as const;
export type UserKey = (typeof USER_KEYS)[number];

/**
 * The one key sent as it is; every other value is a SHA-256 digest. Reference: "All values in
 * `users` except `partner_user_id` are hashed with SHA256 after normalization."
 */
export const UNHASHED_USER_KEY: UserKey = 'partner_user_id';

/** The two user-batch endpoints: custom audience users and do-not-reach list users. */
export type BatchKind = 'custom' | 'dnr';

/**
 * Keys a user may carry per endpoint. Reference: "Do-not-reach lists": `users` are "objects with
 * arrays `email`, `phone_number`, hashed".
 */
export const ALLOWED_USER_KEYS: Readonly<Record<BatchKind, readonly UserKey[]>> = {
  custom: USER_KEYS,
  dnr: ['email', 'phone_number'],
};

/** Reference: `operation_type` is the enum "Update, Delete", on both endpoints. */
export const OPERATION_TYPES = ['Update', 'Delete'] as const;

/** Reference: an operation object has the fields `operation_type` and `params`. */
export const OPERATION_FIELDS = ['operation_type', 'params'] as const;

/**
 * Fields of `params` per endpoint. Reference: custom audiences "holds `users`, `effective_at`,
 * `expires_at`"; do-not-reach lists take "`users` ... and `expires_at`" (no effective_at).
 */
export const ALLOWED_PARAMS: Readonly<Record<BatchKind, readonly string[]>> = {
  custom: ['users', 'effective_at', 'expires_at'],
  dnr: ['users', 'expires_at'],
};

/** Reference, "Limits": "2500 operation objects per request". */
export const MAX_OPERATIONS = 2500;
/** Reference, "Limits": "body at most 5,000,000 bytes". */
export const MAX_BODY_BYTES = 5_000_000;
/** Reference, "Limits": "1500 requests per 1 minute window" on the user-batch endpoints. */
export const USER_BATCH_RATE_LIMIT: Readonly<SandboxRateLimit> = { limit: 1500, windowMs: 60_000 };
/** Reference, "Limits": `with_total_count` requests: "currently 200 per 15 minutes". */
export const TOTAL_COUNT_RATE_LIMIT: Readonly<SandboxRateLimit> = { limit: 200, windowMs: 15 * 60_000 };

/**
 * Listing pages. Reference, "Limits": "Permissions GET count | 1 to 1000, default 200; id lists up
 * to 200". The audience listing takes the same (the platform's Audiences reference, its `count`
 * and `custom_audience_ids`; the reference here says "not shown").
 */
export const LIST_COUNT = { min: 1, max: 1000, default: 200 } as const;
export const MAX_LISTED_IDS = 200;

/** Reference, "Audience permission (tailored and custom)": `permission_level` is "READ_ONLY, READ_WRITE". */
export const PERMISSION_LEVELS = ['READ_ONLY', 'READ_WRITE'] as const;

/**
 * Reference, "Limits": "Default audience membership lifetime | 13 months"; `expires_at` defaults
 * to "13 months after the request". The sandbox takes it as the longest a do-not-reach entry may
 * be asked to last (the reference names no other bound for that list).
 */
export const MEMBERSHIP_MONTHS = 13;

/**
 * `months` calendar months after `t` (Unix ms), same time of day; a day the target month lacks
 * (Jan 31 + 1 month) becomes that month's last day rather than spilling into the next one.
 */
export function calendarMonthsAfter(t: number, months: number): number {
  const d = new Date(t);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth() + months;
  const daysInTarget = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(
    year,
    month,
    Math.min(d.getUTCDate(), daysInTarget),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    d.getUTCMilliseconds(),
  );
}

/** The latest `expires_at` a do-not-reach operation sent at `now` may carry. */
export function latestDoNotReachExpiry(now: number): number {
  return calendarMonthsAfter(now, MEMBERSHIP_MONTHS);
}

/**
 * OAuth 1.0a as the platform takes it. Reference (platform-core-api.md, "Authentication"): header
 * parameters include "oauth_signature_method (HMAC-SHA1)" and "oauth_version (1.0)".
 */
export const OAUTH_SIGNATURE_METHOD = 'HMAC-SHA1';
export const OAUTH_VERSION = '1.0';
