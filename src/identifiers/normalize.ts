/**
 * Normalization and hashing of CRM identifiers, exactly as the platform expects them (the rules table in the
 * README is the contract). Everything here is pure and synchronous; `buildUser` is the per-row hot path of the
 * `hash` and `upload` pipelines, so it avoids per-call regex construction, closures and needless allocation.
 *
 * Raw values never leave this module except as normalized/hashed output: rejects carry a reason code, the line
 * and the column, never the value.
 */
import { hash as cryptoHash } from 'node:crypto';
import { sha256Hex } from '../util/sha256.js';
import { resolveCountry, type PhoneCountry } from './countries.js';

export { normalizeCountryCode } from './countries.js';
import { AMBIGUOUS, phoneNotes, phoneReading, type PhoneCountryCode } from './phone-reading.js';

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
export type RejectReason =
  | 'email_invalid'
  | 'phone_invalid'
  | 'phone_needs_country'
  | 'phone_ambiguous'
  | 'country_invalid'
  | 'handle_invalid'
  | 'device_id_invalid'
  | 'device_id_opt_out'
  | 'service_id_invalid'
  | 'partner_user_id_invalid'
  | 'hash_invalid'
  | 'value_too_long'
  | 'too_many_values';
export const REJECT_REASONS: readonly RejectReason[] = [
  'email_invalid',
  'phone_invalid',
  'phone_needs_country',
  'phone_ambiguous',
  'country_invalid',
  'handle_invalid',
  'device_id_invalid',
  'device_id_opt_out',
  'service_id_invalid',
  'partner_user_id_invalid',
  'hash_invalid',
  'value_too_long',
  'too_many_values',
];
/**
 * The longest value (after trimming) normalized: no identifier comes near it, and a longer one is
 * rejected before it is lowercased or parsed, so a hostile cell costs nothing.
 */
export const MAX_VALUE_LENGTH = 512;
/**
 * The most values one record may hold (its mapped cells, each part counted with
 * `valueSeparator`). No person has a thousand identifiers; a record with more (`a;a;a;…` over a
 * megabyte) is one `too_many_values` reject instead of half a million rejects and a quadratic
 * dedupe that would exhaust a worker's heap.
 */
export const MAX_VALUES_PER_RECORD = 1000;
export type Normalized = { ok: true; value: string } | { ok: false; reason: RejectReason };
/** `digits`: `447946095800` (country code and national number); `e164`: the same with the `+`. */
export type PhoneFormat = 'e164' | 'digits';
/**
 * The platform's own hashing tool (ads-platform-tools, hash_tailored_audience_file.py, linked from its user-data
 * normalization page) hashes phones as digits only, and so does the largest other ad platform's documentation:
 * a `+` in the hashed value matches nobody. See docs/normalization.md.
 */
export const DEFAULT_PHONE_FORMAT: PhoneFormat = 'digits';
export type { PhoneCountryCode };
/** `auto`: a 64-hex value is an already-hashed digest; `always`: every value must be one; `never`: hash everything. */
export type InputHashed = 'auto' | 'always' | 'never';

export interface NormalizeOptions {
  /** ISO 3166-1 alpha-2 country for national-format phone numbers of records without their own country. */
  defaultCountry?: string;
  phoneFormat?: PhoneFormat;
  /** Default `auto`; see PhoneCountryCode. */
  phoneCountryCode?: PhoneCountryCode;
  inputHashed?: InputHashed;
  /** Splits each cell into several values (default: none, a cell is one value). */
  valueSeparator?: string;
}
export interface FieldValue {
  column: string;
  type: IdentifierType;
  raw: string;
  /** This column's cells are lists split on this (the mapping saw it in the sample); else valueSeparator. */
  separator?: string;
}
export interface MappedRecord {
  /** 1-based line number in the input file, carried into rejects. */
  line: number;
  fields: FieldValue[];
  /** The row's country (a mapped country column); empty or absent means `defaultCountry`. */
  country?: string;
}
export interface Reject {
  line: number;
  column: string;
  type: IdentifierType;
  reason: RejectReason;
}
export interface BuiltUser {
  line: number;
  /** Keys in IDENTIFIER_TYPES order, only types with at least one valid value, values deduplicated; `{}` when none. */
  user: AudienceUser;
  rejects: Reject[];
  /** Per type, how many of the values in `user` were passed through as already-hashed digests (set only when > 0). */
  digests?: Partial<Record<IdentifierType, number>>;
  /** What the summary's hints are made of (set only when something was noted). */
  notes?: BuildNotes;
}

/** Observations about one row that explain rejects or choices (never identifier values). */
export interface BuildNotes {
  /**
   * Phones without `+` read as carrying their country calling code (`auto`/`included`), or, with
   * `national`, rejected although they would be valid read that way.
   */
  phoneCodeWithoutPlus?: number;
  /**
   * Phones valid (under `min`) both as national numbers and as carrying the calling code, decided by
   * the number ranges (`max`); those that stay ambiguous are `phone_ambiguous` rejects.
   */
  phoneTwoReadings?: number;
  /** The row's country value when it is not a recognized country (a phone needed it). */
  unknownCountry?: string;
  /** Rejected cells that look like several values joined by this separator (no valueSeparator given). */
  severalValues?: { column: string; separator: string };
}

const OK = true as const;
const fail = (reason: RejectReason): Normalized => ({ ok: false, reason });
// Rejections are frequent in dirty files: share one frozen object per reason instead of allocating.
const REJECTED = Object.fromEntries(REJECT_REASONS.map((r) => [r, Object.freeze(fail(r))])) as Record<
  RejectReason,
  Normalized
>;

/**
 * Trims whitespace (String.prototype.trim covers U+FEFF and U+00A0 along with every Unicode space), drops one
 * leading apostrophe and applies NFC. Strings made only of code points below U+0300 are already NFC (no combining marks), so the costly
 * `normalize` call is skipped for them: that is almost every CRM value.
 */
export function cleanValue(raw: string): string {
  let s = raw.trim();
  // A leading apostrophe is the spreadsheet "keep as text" marker (Shopify writes ids as '7210448301100).
  if (s.charCodeAt(0) === 0x27) s = s.slice(1).trim();
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) >= 0x300) return s.normalize('NFC');
  }
  return s;
}

const EMAIL_RE = /^[^\s@]+@[^\s@.][^\s@]*\.[^\s@]*[^\s@.]$/;
const HANDLE_RE = /^[a-z0-9_]{1,15}$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ANDROID_ID_RE = /^[0-9a-f]{16}$/;
const UNDASHED_UUID_RE = /^[0-9a-f]{32}$/;
const ANDROID_ID_SEPARATORS_RE = /[-\s]/g;
const ALL_ZERO_RE = /^[0-]+$/;
const DIGITS_RE = /^[0-9]+$/;
const HEX64_RE = /^[0-9a-fA-F]{64}$/;
const MAX_PARTNER_USER_ID = 256;

// The exported normalizers clean their input; buildUser cleans once and calls these `*Clean` variants.

export function normalizeEmail(raw: string): Normalized {
  return emailClean(cleanValue(raw));
}
function emailClean(s: string): Normalized {
  const address = needsUnwrap(s) ? unwrapEmail(s) : s;
  if (address === undefined) return REJECTED.email_invalid;
  const value = address.toLowerCase();
  return EMAIL_RE.test(value) ? { ok: OK, value } : REJECTED.email_invalid;
}

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

/** Whether an email cell holds more than a plain address: non-ASCII, `<…>`, `mailto:` or a trailing `;`/`,`. */
function needsUnwrap(s: string): boolean {
  const last = s.charCodeAt(s.length - 1);
  if (last === 0x3b || last === 0x2c || last === 0x3e) return true;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return true;
  return s.length > 7 && MAILTO_RE.test(s);
}

/**
 * The address in an email cell as mail clients and spreadsheets copy it (docs/normalization.md,
 * email clean-up): invisible format characters removed; trailing `;` and `,` removed; `<…>` and
 * `Name <…>` unwrapped (a name holding another address is refused); `mailto:` and its `?query` removed.
 */
function unwrapEmail(s: string): string | undefined {
  let v = s.replace(FORMAT_CHARS_RE, formatCharKept).replace(TRAILING_SEPARATORS_RE, '').trim();
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

/** Sent as is (never hashed), so only cleaned; the limit counts Unicode code points. */
export function normalizePartnerUserId(raw: string): Normalized {
  return partnerUserIdClean(cleanValue(raw));
}
function partnerUserIdClean(value: string): Normalized {
  if (value === '') return REJECTED.partner_user_id_invalid;
  if (value.length > MAX_PARTNER_USER_ID && codePointLength(value) > MAX_PARTNER_USER_ID) {
    return REJECTED.partner_user_id_invalid;
  }
  return { ok: OK, value };
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

/**
 * libphonenumber-js semantics (valid, not merely possible), E.164 digits (`format`, default DEFAULT_PHONE_FORMAT), extensions dropped. A national-format
 * number needs a country: without one it is `phone_needs_country`, with an unknown one `country_invalid`
 * (a number written with `+` ignores the country, so a bad country column does not lose it).
 */
export function normalizePhone(
  raw: string,
  opts: { country?: string; format?: PhoneFormat; countryCode?: PhoneCountryCode } = {},
): Normalized {
  const country: PhoneCountry = { code: undefined, invalid: false };
  resolveCountry(opts.country, country);
  return phoneClean(
    cleanValue(raw),
    country,
    (opts.format ?? DEFAULT_PHONE_FORMAT) === 'digits',
    opts.countryCode ?? 'auto',
  );
}

/** The normalizers by type, for one value at a time (buildUser cleans once and uses the `*Clean` ones). */
const NORMALIZERS: Record<Exclude<IdentifierType, 'phone_number'>, (raw: string) => Normalized> = {
  email: normalizeEmail,
  handle: normalizeHandle,
  device_id: normalizeDeviceId,
  service_id: normalizeServiceId,
  partner_user_id: normalizePartnerUserId,
};

/**
 * One value of any identifier type, normalized by the rules the uploader applies: the form that is
 * hashed (`hashValue`), or sent as is for `partner_user_id`. `opts` matter to phone numbers only.
 */
export function normalizeIdentifier(
  type: IdentifierType,
  raw: string,
  opts: { country?: string; format?: PhoneFormat; countryCode?: PhoneCountryCode } = {},
): Normalized {
  return type === 'phone_number' ? normalizePhone(raw, opts) : NORMALIZERS[type](raw);
}

function phoneClean(value: string, country: PhoneCountry, digits: boolean, mode: PhoneCountryCode): Normalized {
  const e164 = phoneReading(value, country.code, mode);
  if (e164 === AMBIGUOUS) return REJECTED.phone_ambiguous;
  if (e164 !== undefined) return { ok: OK, value: digits ? e164.slice(1) : e164 };
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

const TYPE_INDEX: Record<IdentifierType, number> = {
  email: 0,
  phone_number: 1,
  handle: 2,
  device_id: 3,
  service_id: 4,
  partner_user_id: 5,
};

/**
 * Per-record scratch state, reused across calls instead of allocated per row: buildUser is synchronous and
 * calls no user code, so one instance is enough.
 */
const scratch = {
  values: IDENTIFIER_TYPES.map(() => [] as string[]),
  digestCounts: IDENTIFIER_TYPES.map(() => 0),
  country: { code: undefined, invalid: false } as PhoneCountry,
  countryResolved: false,
  record: undefined as MappedRecord | undefined,
  defaultCountry: undefined as string | undefined,
  inputHashed: 'auto' as InputHashed,
  digitsFormat: false,
  phoneCountryCode: 'auto' as PhoneCountryCode,
  /** The value separator given, if any (a rejected cell holding another one gets a note). */
  separator: undefined as string | undefined,
  severalValues: undefined as BuildNotes['severalValues'],
};

/**
 * Turns one mapped record into the user object to send plus the rejects. Several columns may feed one type,
 * a cell may hold several values (`valueSeparator`), duplicates within the user are removed (after
 * normalization, so `A@x.com` and `a@x.com` are one value). Empty cells are neither values nor rejects.
 */
export function buildUser(record: MappedRecord, opts: NormalizeOptions): BuiltUser {
  const valueSeparator = opts.valueSeparator;
  scratch.record = record;
  scratch.defaultCountry = opts.defaultCountry;
  scratch.inputHashed = opts.inputHashed ?? 'auto';
  scratch.digitsFormat = (opts.phoneFormat ?? DEFAULT_PHONE_FORMAT) === 'digits';
  scratch.phoneCountryCode = opts.phoneCountryCode ?? 'auto';
  scratch.separator = valueSeparator;
  scratch.severalValues = undefined;
  scratch.countryResolved = false;
  phoneNotes.codeWithoutPlus = 0;
  phoneNotes.twoReadings = 0;
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    scratch.values[t]!.length = 0;
    scratch.digestCounts[t] = 0;
  }

  let rejects: Reject[] | undefined;
  const fields = record.fields;
  let values = 0;
  for (let f = 0; f < fields.length; f++) {
    const field = fields[f]!;
    const raw = field.raw;
    const sep = field.separator ?? valueSeparator;
    const split = sep !== undefined && sep !== '' && raw.includes(sep);
    values += split ? countParts(raw, sep) : raw === '' ? 0 : 1;
    if (values > MAX_VALUES_PER_RECORD) return tooManyValues(record, field);
    if (split) {
      const parts = raw.split(sep);
      for (let p = 0; p < parts.length; p++) {
        const reason = addValue(parts[p]!, field.type);
        if (reason !== undefined)
          (rejects ??= []).push({ line: record.line, column: field.column, type: field.type, reason });
      }
    } else {
      const reason = addValue(raw, field.type);
      if (reason !== undefined) {
        (rejects ??= []).push({ line: record.line, column: field.column, type: field.type, reason });
        if (scratch.severalValues === undefined) noteSeveralValues(raw, field.column);
      }
    }
  }

  const user: AudienceUser = {};
  let digests: Partial<Record<IdentifierType, number>> | undefined;
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const list = scratch.values[t]!;
    if (list.length === 0) continue;
    const type = IDENTIFIER_TYPES[t]!;
    user[type] = list.slice();
    const d = scratch.digestCounts[t]!;
    if (d > 0) (digests ??= {})[type] = d;
  }
  const built: BuiltUser = { line: record.line, user, rejects: rejects ?? [] };
  if (digests !== undefined) built.digests = digests;
  const notes = collectNotes();
  if (notes !== undefined) built.notes = notes;
  scratch.record = undefined;
  return built;
}

function countParts(raw: string, sep: string): number {
  let n = 1;
  for (let i = raw.indexOf(sep); i !== -1 && n <= MAX_VALUES_PER_RECORD; i = raw.indexOf(sep, i + sep.length)) n++;
  return n;
}

/** The record's one reject when it holds more than MAX_VALUES_PER_RECORD values: none of them is used. */
function tooManyValues(record: MappedRecord, field: MappedRecord['fields'][number]): BuiltUser {
  scratch.record = undefined;
  return {
    line: record.line,
    user: {},
    rejects: [{ line: record.line, column: field.column, type: field.type, reason: 'too_many_values' }],
  };
}

/** The notes of the row just built, or undefined (the common case: nothing to note). */
function collectNotes(): BuildNotes | undefined {
  const unknownCountry = scratch.countryResolved && scratch.country.invalid;
  const phones = phoneNotes.codeWithoutPlus + phoneNotes.twoReadings;
  if (phones === 0 && scratch.severalValues === undefined && !unknownCountry) return undefined;
  const notes: BuildNotes = {};
  if (phoneNotes.codeWithoutPlus > 0) notes.phoneCodeWithoutPlus = phoneNotes.codeWithoutPlus;
  if (phoneNotes.twoReadings > 0) notes.phoneTwoReadings = phoneNotes.twoReadings;
  if (scratch.severalValues !== undefined) notes.severalValues = scratch.severalValues;
  if (unknownCountry) {
    const own = scratch.record?.country;
    notes.unknownCountry = cleanValue(own !== undefined && own.trim() !== '' ? own : (scratch.defaultCountry ?? ''));
  }
  return notes;
}

const SEPARATORS = [';', ',', '|'];

/** A rejected cell holding a separator (other than the one given) looks like a list of values. */
function noteSeveralValues(raw: string, column: string): void {
  for (const separator of SEPARATORS) {
    if (separator !== scratch.separator && raw.includes(separator)) {
      scratch.severalValues = { column, separator };
      return;
    }
  }
}

/** Adds one cell value to the scratch user; returns the reject reason, or undefined (added, duplicate or empty). */
function addValue(raw: string, type: IdentifierType): RejectReason | undefined {
  if (raw.length > MAX_VALUE_LENGTH && raw.trim().length > MAX_VALUE_LENGTH) return 'value_too_long';
  const value = cleanValue(raw);
  if (value === '') return undefined;
  const t = TYPE_INDEX[type];
  const list = scratch.values[t]!;
  let n: Normalized;
  if (type === 'partner_user_id') {
    n = partnerUserIdClean(value);
    if (!n.ok) return n.reason;
    if (!list.includes(n.value)) list.push(n.value);
    return undefined;
  }
  if (scratch.inputHashed !== 'never' && value.length === 64 && HEX64_RE.test(value)) {
    const digest = value.toLowerCase();
    if (!list.includes(digest)) {
      list.push(digest);
      scratch.digestCounts[t]!++;
    }
    return undefined;
  }
  if (scratch.inputHashed === 'always') return 'hash_invalid';
  switch (type) {
    case 'email':
      n = emailClean(value);
      break;
    case 'phone_number':
      if (!scratch.countryResolved) {
        // Resolved once per record, and only for records that have a phone.
        scratch.countryResolved = true;
        const own = scratch.record?.country;
        resolveCountry(own !== undefined && own.trim() !== '' ? own : scratch.defaultCountry, scratch.country);
      }
      n = phoneClean(value, scratch.country, scratch.digitsFormat, scratch.phoneCountryCode);
      break;
    case 'handle':
      n = handleClean(value);
      break;
    case 'device_id':
      n = deviceIdClean(value);
      break;
    case 'service_id':
      n = serviceIdClean(value);
      break;
  }
  if (!n.ok) return n.reason;
  const digest = hashValue(n.value);
  if (!list.includes(digest)) list.push(digest);
  return undefined;
}

/**
 * Write the 64-bit dedupe fingerprint of a serialized user (the first 8 bytes of the SHA-256 of
 * its canonical JSON, never 0/0) into `into[2 * index]` (high word) and `into[2 * index + 1]`.
 */
export function writeUserFingerprint(json: string, into: Uint32Array, index: number): void {
  const d = cryptoHash('sha256', json, 'binary');
  const hi = ((d.charCodeAt(0) << 24) | (d.charCodeAt(1) << 16) | (d.charCodeAt(2) << 8) | d.charCodeAt(3)) >>> 0;
  const lo = ((d.charCodeAt(4) << 24) | (d.charCodeAt(5) << 16) | (d.charCodeAt(6) << 8) | d.charCodeAt(7)) >>> 0;
  // 0/0 marks an empty slot of UserDedupe's table.
  into[2 * index] = hi === 0 && lo === 0 ? 1 : hi;
  into[2 * index + 1] = lo;
}

/**
 * Canonical JSON of a user object: keys in IDENTIFIER_TYPES order, empty types omitted. It is the dedupe key
 * of the uploader and its UTF-8 length is the exact number of bytes the user adds to a request body.
 */
export function serializeUser(user: AudienceUser): string {
  return serialize(user, false);
}

/**
 * serializeUser for a user that buildUser made, whose values other than partner_user_id are
 * digests it produced or validated: the same text, with the digests written without escaping
 * (they need none). This runs once per row on the hot path, where JSON.stringify of the lists
 * cost several times more than the rest of the serialization.
 */
export function serializeBuiltUser(user: AudienceUser): string {
  return serialize(user, true);
}

function serialize(user: AudienceUser, digestsChecked: boolean): string {
  let out = '{';
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const type = IDENTIFIER_TYPES[t]!;
    const list = user[type];
    if (list === undefined || list.length === 0) continue;
    if (out.length > 1) out += ',';
    out +=
      '"' +
      type +
      '":' +
      (digestsChecked && type !== 'partner_user_id' ? '["' + list.join('","') + '"]' : JSON.stringify(list));
  }
  return out + '}';
}
