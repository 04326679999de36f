/**
 * What the identifier types' rules (rules.ts) produce and take: each type's reject reasons, a
 * value's result, the phone formats and the country a phone rule is given. The record's own
 * reasons (too many values, an invalid digest…) belong to the reading of exports
 * (identifiers/types.ts).
 */
import { IDENTIFIER_TYPES, type IdentifierType } from '../users.js';

/** The reasons each type's rule rejects a value for, stated once (IDENTIFIER_TYPES order, then the rule's). */
export const TYPE_REASONS = {
  email: ['email_invalid'],
  phone_number: [
    'phone_invalid',
    'phone_needs_country',
    'phone_ambiguous',
    'phone_lossy_number',
    'phone_maybe_national',
    'country_invalid',
  ],
  handle: ['handle_invalid'],
  device_id: ['device_id_invalid', 'device_id_opt_out'],
  service_id: ['service_id_invalid'],
  partner_user_id: ['partner_user_id_invalid', 'partner_user_id_email'],
} as const satisfies Readonly<Record<IdentifierType, readonly string[]>>;
export type RuleRejectReason = (typeof TYPE_REASONS)[IdentifierType][number];
/** Every rule's reasons, by type in IDENTIFIER_TYPES order. */
export const RULE_REJECT_REASONS: readonly RuleRejectReason[] = IDENTIFIER_TYPES.flatMap((t) => TYPE_REASONS[t]);

const TYPE_OF_REASON: ReadonlyMap<string, IdentifierType> = new Map(
  IDENTIFIER_TYPES.flatMap((t) => TYPE_REASONS[t].map((r) => [r, t] as const)),
);
/** The type whose rule gives `reason`; undefined for a reason that is not a rule's (the record's own). */
export function reasonType(reason: string): IdentifierType | undefined {
  return TYPE_OF_REASON.get(reason);
}

export type Normalized = { ok: true; value: string } | { ok: false; reason: RuleRejectReason };

/** `digits`: `447946095800` (country code and national number); `e164`: the same with the `+`. */
export type PhoneFormat = 'e164' | 'digits';
/**
 * The platform's own hashing tool (ads-platform-tools, hash_tailored_audience_file.py, linked from its user-data
 * normalization page) hashes phones as digits only, and so does the largest other ad platform's documentation:
 * a `+` in the hashed value matches nobody. See docs/normalization.md.
 */
export const DEFAULT_PHONE_FORMAT: PhoneFormat = 'digits';

/**
 * The country a phone rule reads national numbers with: an ISO 3166-1 alpha-2 code libphonenumber-js
 * knows, resolved by whoever read the value (identifiers/countries.ts reads the names exports write).
 */
export interface PhoneCountry {
  code: string | undefined;
  /** A country was given but is not a known ISO code. */
  invalid: boolean;
}
