/**
 * The user object the user-batch endpoints take (reference: ads-audiences-api.md, "Custom
 * audience users (batch)"): optional arrays under six keys, every value a SHA-256 digest but
 * `partner_user_id`'s, which is sent as it is.
 */

/** The keys of a user object, in the order the client writes them. */
export const IDENTIFIER_TYPES = [
  'email',
  'phone_number',
  'handle',
  'device_id',
  'service_id',
  'partner_user_id',
] as const;
export type IdentifierType = (typeof IDENTIFIER_TYPES)[number];

/** What is sent to the platform: lowercase hex SHA-256 digests, except `partner_user_id` (raw). */
export type AudienceUser = Partial<Record<IdentifierType, string[]>>;

/**
 * The longest `partner_user_id` the client sends, in Unicode code points. Neither the reference
 * nor the platform's public documentation states a limit (the sandbox takes up to 1,000
 * characters, its own bound): 256 is the client's, counted one way wherever a value is checked.
 */
export const PARTNER_USER_ID_MAX = 256;

/** A non-empty `partner_user_id` of at most `PARTNER_USER_ID_MAX` code points. */
export function partnerUserIdFits(value: string): boolean {
  if (value === '') return false;
  // A string of at most the bound in UTF-16 units has at most that many code points.
  return value.length <= PARTNER_USER_ID_MAX || codePointLength(value) <= PARTNER_USER_ID_MAX;
}

function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}
