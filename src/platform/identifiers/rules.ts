/**
 * The normalization rules of each identifier type (the README's rules table is the contract) and
 * TYPE_RULES, the one table that dispatches on the type. Pure and synchronous; what a phone needs
 * from its row (country, format, notes) comes in a RuleContext, its country already resolved to a
 * code by whoever read the row (identifiers/countries.ts reads the names exports write).
 */
import { sha256Hex } from '../../util/sha256.js';
import { IDENTIFIER_TYPES, partnerUserIdFits, type IdentifierType } from '../users.js';
import {
  AMBIGUOUS,
  LOSSY,
  MAYBE_NATIONAL,
  phoneReading,
  type PhoneCountryCode,
  type PhoneNotes,
} from './phone-reading.js';
import { RULE_REJECT_REASONS, type Normalized, type PhoneCountry, type RuleRejectReason } from './types.js';

const OK = true as const;
const fail = (reason: RuleRejectReason): Normalized => ({ ok: false, reason });
// Rejections are frequent in dirty files: share one frozen object per reason instead of allocating.
const REJECTED = Object.fromEntries(RULE_REJECT_REASONS.map((r) => [r, Object.freeze(fail(r))])) as Record<
  RuleRejectReason,
  Normalized
>;

/** A UTF-16 code unit from U+0300 up (surrogates included): the string may not be NFC yet. */
const MAY_NEED_NFC_RE = /[\u0300-\uffff]/;

/**
 * Trims whitespace (String.prototype.trim covers U+FEFF and U+00A0 along with every Unicode space), drops one
 * leading apostrophe (unless the value also ends with one) and applies NFC. Strings made only of code points below U+0300 are already NFC (no combining marks), so the costly
 * `normalize` call is skipped for them: that is almost every CRM value. A value that starts and ends with
 * printable ASCII has nothing to trim (the common case: no `trim` call).
 */
export function cleanValue(raw: string): string {
  const first = raw.charCodeAt(0);
  const last = raw.charCodeAt(raw.length - 1);
  let s = first > 0x20 && first < 0x7f && last > 0x20 && last < 0x7f ? raw : raw.trim();
  // A leading apostrophe is the spreadsheet "keep as text" marker (Shopify writes ids as '7210448301100);
  // a value that also ends with one is quoted ('john@example.com'), left whole for its type's rule.
  if (s.charCodeAt(0) === 0x27 && (s.length < 2 || s.charCodeAt(s.length - 1) !== 0x27)) s = s.slice(1).trim();
  // One regular expression scans faster than a loop of charCodeAt (about 20 against 45 ns a value).
  return MAY_NEED_NFC_RE.test(s) ? s.normalize('NFC') : s;
}

/**
 * An address (lowercased): a dot-atom local part (RFC 5321 atext, any non-ASCII character as RFC 6531
 * allows: no leading, trailing or consecutive dot) or a quoted one; then a domain of two or more labels
 * of letters, digits, `_`, `-` and non-ASCII characters (IDN), a label neither starting nor ending with
 * `-` (RFC 1035, RFC 5891), or an address literal in brackets.
 */
const ATEXT = String.raw`[^\s\x00-\x20"(),.:;<>@[\\\]\x7f]+`;
const LABEL_END = String.raw`[^\s\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]`;
const LABEL = `${LABEL_END}(?:${String.raw`[^\s\x00-\x2c\x2e\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]`}*${LABEL_END})?`;
const EMAIL_RE = new RegExp(
  `^(?:${ATEXT}(?:\\.${ATEXT})*|"[^\\s"@]+")@(?:${LABEL}(?:\\.${LABEL})+|\\[[^\\s@[\\]]+\\])$`,
);
const HANDLE_RE = /^[a-z0-9_]{1,15}$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ANDROID_ID_RE = /^[0-9a-f]{16}$/;
const UNDASHED_UUID_RE = /^[0-9a-f]{32}$/;
const ANDROID_ID_SEPARATORS_RE = /[-\s]/g;
const ALL_ZERO_RE = /^[0-]+$/;
const DIGITS_RE = /^[0-9]+$/;
export const HEX64_RE = /^[0-9a-fA-F]{64}$/;

// The exported normalizers clean their input; buildUser cleans once and calls these `*Clean` variants.

export function normalizeEmail(raw: string): Normalized {
  return emailClean(cleanValue(raw));
}
function emailClean(s: string): Normalized {
  if (PLAIN_ADDRESS_RE.test(s)) return { ok: OK, value: s.toLowerCase() };
  const address = needsUnwrap(s) ? unwrapEmail(s) : s;
  if (address === undefined) return REJECTED.email_invalid;
  const value = address.toLowerCase();
  return EMAIL_RE.test(value) ? { ok: OK, value } : REJECTED.email_invalid;
}

/**
 * The common address, checked by one expression instead of needsUnwrap and EMAIL_RE: ASCII only, a
 * dot-atom local part (ATEXT's ASCII characters), `@`, two or more labels of letters, digits and `_`
 * with `-` inside. What it accepts, EMAIL_RE accepts once lowercased and needsUnwrap leaves as it is
 * (its last character is a label's, it holds no `:`); everything else, valid or not, goes through
 * them. (A loop of charCodeAt over the address costs twice as much.)
 */
const PLAIN_ATOM = "[!#-'*+\\-/-9=?A-Z^-~]+";
const PLAIN_LABEL = '[0-9A-Z_a-z]+(?:-+[0-9A-Z_a-z]+)*';
const PLAIN_ADDRESS_RE = new RegExp(`^${PLAIN_ATOM}(?:\\.${PLAIN_ATOM})*@${PLAIN_LABEL}(?:\\.${PLAIN_LABEL})+$`);

/** Unicode format characters (Cf): zero-width space and joiners, soft hyphen, BOM, direction marks. */
const FORMAT_CHARS_RE = /\p{Cf}/gu;
const TRAILING_SEPARATORS_RE = /[\s;,]+$/;
const MAILTO_RE = /^mailto:/i;

/**
 * A format character is removed, except a zero-width (non-)joiner between two non-ASCII characters:
 * IDNA2008 (RFC 5892, CONTEXTJ) allows those two in labels of scripts that need them (after a
 * virama, between joining letters), never next to ASCII, where they are only copy-paste residue.
 */
function formatCharKept(c: string, at: number, s: string): string {
  const joiner = c === '\u200c' || c === '\u200d';
  return joiner && s.charCodeAt(at - 1) >= 0x80 && s.charCodeAt(at + 1) >= 0x80 ? c : '';
}

/** Closing character of each quote or bracket pair an address may be wrapped in (`<…>` is unwrapped with its name). */
const WRAPPERS: Readonly<Record<string, string>> = {
  "'": "'",
  '"': '"',
  '(': ')',
  '\u201c': '\u201d',
  '\u2018': '\u2019',
};

/** Whether an email cell holds more than a plain address: non-ASCII, quotes, `(…)`, `<…>`, `mailto:` or a trailing `;`/`,`. */
function needsUnwrap(s: string): boolean {
  const last = s.charCodeAt(s.length - 1);
  if (last === 0x3b || last === 0x2c || last === 0x3e || last === 0x29 || last === 0x27 || last === 0x22) return true;
  return !isAscii(s) || (s.length > 7 && MAILTO_RE.test(s));
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return false;
  return true;
}

/** A value wrapped in one matching pair of quotes or parentheses, unwrapped. */
function unquote(v: string): string {
  const close = v.length > 1 ? WRAPPERS[v.charAt(0)] : undefined;
  return close !== undefined && v.endsWith(close) ? v.slice(1, -1).trim() : v;
}

/**
 * The address in an email cell as mail clients and spreadsheets copy it (docs/normalization.md,
 * email clean-up): invisible format characters removed; NFKC if non-ASCII; trailing `;` and `,` removed;
 * matching quotes or parentheses unwrapped; `<…>` and `Name <…>` unwrapped (a name holding another
 * address is refused); `mailto:` and its `?query` removed.
 */
function unwrapEmail(s: string): string | undefined {
  let v = s.replace(FORMAT_CHARS_RE, formatCharKept);
  if (!isAscii(v)) v = v.normalize('NFKC');
  v = unquote(v.replace(TRAILING_SEPARATORS_RE, '').trim());
  if (v.endsWith('>')) {
    const open = v.lastIndexOf('<');
    if (open === -1) return undefined;
    const inner = v.slice(open + 1, -1).trim();
    const name = v.slice(0, open).replace(/["']/g, '').trim();
    if (name.includes('@') && name.toLowerCase() !== inner.replace(MAILTO_RE, '').toLowerCase()) return undefined;
    v = inner;
  }
  if (MAILTO_RE.test(v)) {
    v = v.slice(7);
    const query = v.indexOf('?');
    if (query !== -1) v = v.slice(0, query);
  }
  return v;
}

export function normalizeHandle(raw: string): Normalized {
  return handleClean(cleanValue(raw));
}
function handleClean(s: string): Normalized {
  const value = (s.charCodeAt(0) === 0x40 ? s.slice(1) : s).toLowerCase();
  return HANDLE_RE.test(value) ? { ok: OK, value } : REJECTED.handle_invalid;
}

/**
 * IDFA/AdID (a UUID, dashed or as 32 bare hex digits, always output dashed) or Android ID (16 hex digits), both
 * also accepted with dashes/spaces in other places.
 */
export function normalizeDeviceId(raw: string): Normalized {
  return deviceIdClean(cleanValue(raw));
}
function deviceIdClean(s: string): Normalized {
  let value = s.toLowerCase();
  if (!UUID_RE.test(value)) {
    value = value.replace(ANDROID_ID_SEPARATORS_RE, '');
    if (UNDASHED_UUID_RE.test(value)) {
      // Exported without dashes by some systems; the platform matches UUIDs in the 8-4-4-4-12 form only.
      value = `${value.slice(0, 8)}-${value.slice(8, 12)}-${value.slice(12, 16)}-${value.slice(16, 20)}-${value.slice(20)}`;
    } else if (!ANDROID_ID_RE.test(value)) return REJECTED.device_id_invalid;
  }
  // The all-zero id is what devices report when the user disabled ad tracking: it identifies nobody.
  return ALL_ZERO_RE.test(value) ? REJECTED.device_id_opt_out : { ok: OK, value };
}

export function normalizeServiceId(raw: string): Normalized {
  return serviceIdClean(cleanValue(raw));
}
function serviceIdClean(s: string): Normalized {
  if (!DIGITS_RE.test(s)) return REJECTED.service_id_invalid;
  let i = 0;
  while (i < s.length && s.charCodeAt(i) === 0x30) i++;
  const value = i === 0 ? s : s.slice(i);
  return value.length >= 1 && value.length <= 20 ? { ok: OK, value } : REJECTED.service_id_invalid;
}

/** The at signs the e-mail rule reads as `@` (full-width `＠`, small `﹫`: typed on a Japanese keyboard). */
const AT_SIGN = /[@\uFF20\uFE6B]/;
/**
 * An address anywhere in a cell: a letter or digit, an at sign (as typed, percent- or
 * HTML-encoded), a domain with a dot (`.`, or `。` `．` `｡` as IDNA reads them) before a letter or
 * digit. `jane@example.com (Jane)`, two addresses, `jane%40example.com`; not `crm@42`, `user@tenant`.
 */
const HELD_ADDRESS =
  /[\p{L}\p{N}](?:[@\uFF20\uFE6B]|%40|&#0*64;|&#x0*40;|&commat;)+[\p{L}\p{N}\p{M}_-][\p{L}\p{N}\p{M}._-]*[.\u3002\uFF0E\uFF61][\p{L}\p{N}]/iu;
/** Characters that do not show: taken out before looking for an address (`exa<TAB>mple.com`). */
const UNSEEN = /[\p{Cc}\p{Cf}]/gu;

/**
 * Whether a cleaned value is, or holds, an e-mail address: the whole cell by the e-mail rule
 * (unwrapped from `Name <…>`, `mailto:`), or an address within it (HELD_ADDRESS). Spelled-out
 * forms (`jane at example dot com`) are not looked for.
 */
export function isEmailAddress(value: string): boolean {
  if (AT_SIGN.test(value) && emailClean(value).ok) return true;
  return HELD_ADDRESS.test(value.replace(UNSEEN, ''));
}

/**
 * Sent as is (never hashed), so only cleaned; the limit counts Unicode code points. An e-mail
 * address is refused (`partner_user_id_email`) unless `emails`: a customer's address in a column
 * mapped as partner ids by mistake would leave the process raw.
 */
export function normalizePartnerUserId(raw: string, emails = false): Normalized {
  return partnerUserIdClean(cleanValue(raw), { partnerEmails: emails });
}
function partnerUserIdClean(value: string, ctx: Pick<RuleContext, 'partnerEmails'>): Normalized {
  if (!partnerUserIdFits(value)) return REJECTED.partner_user_id_invalid;
  if (!ctx.partnerEmails && isEmailAddress(value)) return REJECTED.partner_user_id_email;
  return { ok: OK, value };
}

/** What a rule needs beyond the value; phone numbers only use it. */
export interface RuleContext {
  /** The row's country (record column, else default), resolved on first use. */
  phoneCountry(): PhoneCountry;
  /** Phones as digits (DEFAULT_PHONE_FORMAT), else E.164 with `+`. */
  readonly digits: boolean;
  readonly countryCode: PhoneCountryCode;
  /** What phone readings noticed, for the row's notes. */
  readonly phoneNotes: PhoneNotes;
  /** The value's column shows national numbers (MappedColumn.national): see phoneReading. */
  readonly nationalColumn: boolean;
  /** partner_user_id values may be e-mail addresses (NormalizeOptions.partnerIdsMayBeEmails). */
  readonly partnerEmails: boolean;
}

export interface TypeRule {
  /** Position in IDENTIFIER_TYPES, the order of AudienceUser's keys. */
  readonly index: number;
  /** Values are hashed and may be given as digests: all types but partner_user_id, sent as is. */
  readonly hashed: boolean;
  /** What its values are, in words (`its values are not email addresses`). */
  readonly noun: string;
  /** The normalized form of a value that went through cleanValue. */
  readonly clean: (value: string, ctx: RuleContext) => Normalized;
}

function rule(type: IdentifierType, noun: string, clean: TypeRule['clean']): TypeRule {
  return { index: IDENTIFIER_TYPES.indexOf(type), hashed: type !== 'partner_user_id', noun, clean };
}

/**
 * The one dispatch table by identifier type: buildUser and the one-value functions
 * (identifiers/normalize.ts, normalizeIdentifier) go through it.
 */
export const TYPE_RULES: Readonly<Record<IdentifierType, TypeRule>> = {
  email: rule('email', 'email addresses', emailClean),
  phone_number: rule('phone_number', 'phone numbers', phoneClean),
  handle: rule('handle', 'handles', handleClean),
  device_id: rule('device_id', 'advertising ids (UUID or 16 hex digits)', deviceIdClean),
  service_id: rule('service_id', 'numeric user ids', serviceIdClean),
  partner_user_id: rule('partner_user_id', 'ids', partnerUserIdClean),
};

/**
 * libphonenumber-js semantics (valid, not merely possible), E.164 digits (`ctx.digits`, else with `+`), extensions dropped
 * (the person's number is the main number), a spreadsheet's `….0` and scientific forms read back (`phone_lossy_number` when it
 * rounded digits away). A national-format
 * number needs a country: without one it is `phone_needs_country`, with an unknown one `country_invalid`
 * (a number written with `+` ignores the country, so a bad country column does not lose it).
 */
function phoneClean(value: string, ctx: RuleContext): Normalized {
  const country = ctx.phoneCountry();
  const e164 = phoneReading(value, country.code, ctx.countryCode, ctx.phoneNotes, ctx.nationalColumn);
  if (e164 === AMBIGUOUS) return REJECTED.phone_ambiguous;
  if (e164 === LOSSY) return REJECTED.phone_lossy_number;
  if (e164 === MAYBE_NATIONAL) return country.invalid ? REJECTED.country_invalid : REJECTED.phone_maybe_national;
  if (e164 !== undefined) return { ok: OK, value: ctx.digits ? e164.slice(1) : e164 };
  if (country.code === undefined && isNationalFormat(value)) {
    return country.invalid ? REJECTED.country_invalid : REJECTED.phone_needs_country;
  }
  return REJECTED.phone_invalid;
}

/** True when the first phone character is a digit (not a plus): only a country can make sense of it. */
function isNationalFormat(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x2b || c === 0xff0b) return false;
    if (
      (c >= 0x30 && c <= 0x39) ||
      (c >= 0xff10 && c <= 0xff19) ||
      (c >= 0x660 && c <= 0x669) ||
      (c >= 0x6f0 && c <= 0x6f9)
    ) {
      return true;
    }
  }
  return false;
}

/** SHA-256 of the UTF-8 bytes of `normalized`, lowercase hex. */
export function hashValue(normalized: string): string {
  return sha256Hex(normalized);
}
