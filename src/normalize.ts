/**
 * Normalization and hashing of CRM identifiers, exactly as the platform expects them (the rules table in the
 * README is the contract). Everything here is pure and synchronous; `buildUser` is the per-row hot path of the
 * `hash` and `upload` pipelines, so it avoids per-call regex construction, closures and needless allocation.
 *
 * Raw values never leave this module except as normalized/hashed output: rejects carry a reason code, the line
 * and the column, never the value.
 */
import { createHash, hash as cryptoHash } from 'node:crypto';
import { isSupportedCountry } from 'libphonenumber-js';
import { phoneToE164 } from './phone.js';

export { phoneFastPathStats, resetPhoneFastPathStats, type PhoneFastPathStats } from './phone.js';

export const IDENTIFIER_TYPES = ['email', 'phone_number', 'handle', 'device_id', 'service_id', 'partner_user_id'] as const;
export type IdentifierType = (typeof IDENTIFIER_TYPES)[number];
/** What is sent to the platform: lowercase hex SHA-256 digests, except `partner_user_id` (raw). */
export type AudienceUser = Partial<Record<IdentifierType, string[]>>;
export type RejectReason =
  | 'email_invalid'
  | 'phone_invalid'
  | 'phone_needs_country'
  | 'country_invalid'
  | 'handle_invalid'
  | 'device_id_invalid'
  | 'device_id_opt_out'
  | 'service_id_invalid'
  | 'partner_user_id_invalid'
  | 'hash_invalid';
export const REJECT_REASONS: readonly RejectReason[] = [
  'email_invalid',
  'phone_invalid',
  'phone_needs_country',
  'country_invalid',
  'handle_invalid',
  'device_id_invalid',
  'device_id_opt_out',
  'service_id_invalid',
  'partner_user_id_invalid',
  'hash_invalid',
];
export type Normalized = { ok: true; value: string } | { ok: false; reason: RejectReason };
/** `e164`: `+447946095800`; `digits`: the same without the `+` (some platforms' convention). */
export type PhoneFormat = 'e164' | 'digits';
/** `auto`: a 64-hex value is an already-hashed digest; `always`: every value must be one; `never`: hash everything. */
export type InputHashed = 'auto' | 'always' | 'never';

export interface NormalizeOptions {
  /** ISO 3166-1 alpha-2 country for national-format phone numbers of records without their own country. */
  defaultCountry?: string;
  phoneFormat?: PhoneFormat;
  inputHashed?: InputHashed;
  /** Splits each cell into several values (default: none, a cell is one value). */
  valueSeparator?: string;
}
export interface FieldValue {
  column: string;
  type: IdentifierType;
  raw: string;
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
}

const OK = true as const;
const fail = (reason: RejectReason): Normalized => ({ ok: false, reason });
// Rejections are frequent in dirty files: share one frozen object per reason instead of allocating.
const REJECTED = Object.fromEntries(REJECT_REASONS.map((r) => [r, Object.freeze(fail(r))])) as Record<RejectReason, Normalized>;

/**
 * Trims whitespace (String.prototype.trim covers U+FEFF and U+00A0 along with every Unicode space) and applies
 * NFC. Strings made only of code points below U+0300 are already NFC (no combining marks), so the costly
 * `normalize` call is skipped for them: that is almost every CRM value.
 */
export function cleanValue(raw: string): string {
  const s = raw.trim();
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) >= 0x300) return s.normalize('NFC');
  }
  return s;
}

const EMAIL_RE = /^[^\s@]+@[^\s@.][^\s@]*\.[^\s@]*[^\s@.]$/;
const HANDLE_RE = /^[a-z0-9_]{1,15}$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ANDROID_ID_RE = /^[0-9a-f]{16}$/;
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
  const value = s.toLowerCase();
  return EMAIL_RE.test(value) ? { ok: OK, value } : REJECTED.email_invalid;
}

export function normalizeHandle(raw: string): Normalized {
  return handleClean(cleanValue(raw));
}
function handleClean(s: string): Normalized {
  const value = (s.charCodeAt(0) === 0x40 ? s.slice(1) : s).toLowerCase();
  return HANDLE_RE.test(value) ? { ok: OK, value } : REJECTED.handle_invalid;
}

/** IDFA/AdID (dashed UUID) or Android ID (16 hex digits, written with or without dashes/spaces). */
export function normalizeDeviceId(raw: string): Normalized {
  return deviceIdClean(cleanValue(raw));
}
function deviceIdClean(s: string): Normalized {
  let value = s.toLowerCase();
  if (!UUID_RE.test(value)) {
    value = value.replace(ANDROID_ID_SEPARATORS_RE, '');
    if (!ANDROID_ID_RE.test(value)) return REJECTED.device_id_invalid;
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
 * The ISO 3166-1 alpha-2 code libphonenumber-js knows for `raw` (case-insensitive; `UK` is taken as `GB`, as
 * CRM exports often write it), or `undefined`. Use it to validate `--default-country` up front.
 */
export function normalizeCountryCode(raw: string): string | undefined {
  const s = raw.trim().toUpperCase();
  const code = s === 'UK' ? 'GB' : s;
  return code.length === 2 && isSupportedCountry(code) ? code : undefined;
}

/** A country as given (record column or default) resolved for phone parsing. */
interface PhoneCountry {
  code: string | undefined;
  /** A country was given but is not a known ISO code. */
  invalid: boolean;
}

function resolveCountry(given: string | undefined, into: PhoneCountry): void {
  if (given === undefined || given.trim() === '') {
    into.code = undefined;
    into.invalid = false;
  } else {
    into.code = normalizeCountryCode(given);
    into.invalid = into.code === undefined;
  }
}

/**
 * libphonenumber-js semantics (valid, not merely possible), E.164 output, extensions dropped. A national-format
 * number needs a country: without one it is `phone_needs_country`, with an unknown one `country_invalid`
 * (a number written with `+` ignores the country, so a bad country column does not lose it).
 */
export function normalizePhone(raw: string, opts: { country?: string; format?: PhoneFormat } = {}): Normalized {
  const country: PhoneCountry = { code: undefined, invalid: false };
  resolveCountry(opts.country, country);
  return phoneClean(cleanValue(raw), country, opts.format === 'digits');
}
function phoneClean(value: string, country: PhoneCountry, digits: boolean): Normalized {
  const e164 = phoneToE164(value, country.code);
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
    if ((c >= 0x30 && c <= 0x39) || (c >= 0xff10 && c <= 0xff19) || (c >= 0x660 && c <= 0x669) || (c >= 0x6f0 && c <= 0x6f9)) {
      return true;
    }
  }
  return false;
}

const sha256Hex: (s: string) => string =
  typeof cryptoHash === 'function'
    ? (s) => cryptoHash('sha256', s, 'hex')
    : // Runtimes without crypto.hash (added in Node 20.12/21.7) take the slower streaming API.
      (s) => createHash('sha256').update(s, 'utf8').digest('hex');

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
};

/**
 * Turns one mapped record into the user object to send plus the rejects. Several columns may feed one type,
 * a cell may hold several values (`valueSeparator`), duplicates within the user are removed (after
 * normalization, so `A@x.com` and `a@x.com` are one value). Empty cells are neither values nor rejects.
 */
export function buildUser(record: MappedRecord, opts: NormalizeOptions): BuiltUser {
  const sep = opts.valueSeparator;
  scratch.record = record;
  scratch.defaultCountry = opts.defaultCountry;
  scratch.inputHashed = opts.inputHashed ?? 'auto';
  scratch.digitsFormat = opts.phoneFormat === 'digits';
  scratch.countryResolved = false;
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    scratch.values[t]!.length = 0;
    scratch.digestCounts[t] = 0;
  }

  let rejects: Reject[] | undefined;
  const fields = record.fields;
  for (let f = 0; f < fields.length; f++) {
    const field = fields[f]!;
    const raw = field.raw;
    if (sep !== undefined && sep !== '' && raw.includes(sep)) {
      const parts = raw.split(sep);
      for (let p = 0; p < parts.length; p++) {
        const reason = addValue(parts[p]!, field.type);
        if (reason !== undefined) (rejects ??= []).push({ line: record.line, column: field.column, type: field.type, reason });
      }
    } else {
      const reason = addValue(raw, field.type);
      if (reason !== undefined) (rejects ??= []).push({ line: record.line, column: field.column, type: field.type, reason });
    }
  }
  scratch.record = undefined;

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
  return built;
}

/** Adds one cell value to the scratch user; returns the reject reason, or undefined (added, duplicate or empty). */
function addValue(raw: string, type: IdentifierType): RejectReason | undefined {
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
      n = phoneClean(value, scratch.country, scratch.digitsFormat);
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
 * Canonical JSON of a user object: keys in IDENTIFIER_TYPES order, empty types omitted. It is the dedupe key
 * of the uploader and its UTF-8 length is the exact number of bytes the user adds to a request body.
 */
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

export function serializeUser(user: AudienceUser): string {
  let out = '{';
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const type = IDENTIFIER_TYPES[t]!;
    const list = user[type];
    if (list === undefined || list.length === 0) continue;
    if (out.length > 1) out += ',';
    out += '"' + type + '":' + JSON.stringify(list);
  }
  return out + '}';
}
