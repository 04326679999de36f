/**
 * Which number a phone value is, given the row's country: the policy over the libphonenumber-js
 * reading of phone.ts (docs/normalization.md, "Phone readings"). A value can have two readings
 * (a national number whose digits start with the country's calling code, or the calling code
 * written without `+`; a leading trunk prefix, a written `(0)` or an international prefix that
 * may also be the first digits of a number); the number ranges of the `max` metadata decide, and a value that stays
 * ambiguous is refused rather than hashed as a guess. `00` followed by the row country's own
 * calling code is international whatever that country's real international prefix is, and two
 * habits of writing international numbers are read as the number they stand for: a `(0)` trunk
 * prefix after the calling code, and Mexico's retired mobile `1` (`+52 1 55 …`).
 */
import { getCountries, getCountryCallingCode, type CountryCode } from 'libphonenumber-js';
import { phoneInNumberRanges, phoneToE164, phoneTrunkPrefixes } from './phone.js';

/**
 * How a phone written without `+` is read. `national`: a national number of the row's country
 * (libphonenumber-js semantics). `included`: it starts with the country calling code (`447700900123`,
 * the form of the ad platforms' templates). `auto` (default): the reading that is a valid number;
 * when both are (the digits start with the row's calling code), the one in an assigned number range,
 * and `phone_ambiguous` when that does not decide.
 */
export type PhoneCountryCode = 'national' | 'included' | 'auto';

/** phoneReading's answer when both readings are real numbers: the value is refused (`phone_ambiguous`). */
export const AMBIGUOUS = 'ambiguous';
/** An E.164 number (it starts with `+`), AMBIGUOUS, or `undefined` (no valid number). */
export type PhoneReading = string | undefined;

/** What phoneReading noticed about the values it read (counted into the caller's, per row). */
export interface PhoneNotes {
  /** Read as carrying the calling code without `+` (or, with `national`, rejected though valid so). */
  codeWithoutPlus: number;
  /** Valid under `min` both as national numbers and with the calling code; decided by the number ranges. */
  twoReadings: number;
}

/** Without a country, a number is read as carrying its calling code only from this many digits (a 10-digit NANP number would otherwise become +20/+27/+30...). */
const MIN_DIGITS_CODE_WITHOUT_COUNTRY = 11;
/** A value of digits, the usual separators and at most one leading `+`: the shapes the rules below rewrite. */
const PLAIN_PHONE_RE = /^\+?[0-9 ().\-/]+$/;
const NON_DIGITS_RE = /[^0-9]/g;
const NUMBER_SEPARATORS = ' ().-/+';

/** A label before the number (`Mobile:`, `Tel.:`, the `tel:` URI scheme), with the spaces after it. */
const LABEL_RE = /^[A-Za-z][A-Za-z .\-_]*:\s*/;
const NON_ASCII_RE = /[^\t -~]/;
/** Separators before the first digit or `+` (`(0055) 64…`, `(27) 831…`). */
const LEADING_SEPARATORS_RE = /^[ ().\-/]+/;

/** The E.164 number `value` stands for with `country` as the row's country (undefined: none). */
export function phoneReading(
  value: string,
  country: string | undefined,
  mode: PhoneCountryCode,
  notes: PhoneNotes,
): PhoneReading {
  const first = value.charCodeAt(0);
  if ((first >= 0x30 && first <= 0x39) || first === 0x2b) return plainReading(value, country, mode, notes);
  // Not plain: the same rules on the number as the library would extract it from the value.
  const plain = plainForm(value);
  const c = plain.charCodeAt(0);
  if ((c >= 0x30 && c <= 0x39) || c === 0x2b) return plainReading(plain, country, mode, notes);
  return phoneToE164(value, country);
}

/**
 * `value` from its first digit or `+`: full-width digits and signs made ASCII (NFKC), a leading label
 * or `tel:` and the separators before the number removed. The library skips all of these itself.
 */
function plainForm(value: string): string {
  const ascii = NON_ASCII_RE.test(value) ? value.normalize('NFKC') : value;
  return ascii.replace(LABEL_RE, '').replace(LEADING_SEPARATORS_RE, '');
}

/** phoneReading of a value starting with an ASCII digit or `+`. */
function plainReading(
  value: string,
  country: string | undefined,
  mode: PhoneCountryCode,
  notes: PhoneNotes,
): PhoneReading {
  const first = value.charCodeAt(0);
  if (first === 0x30 && country !== undefined) {
    const own = ownCodeAfter00(value, country);
    if (own !== undefined) return own;
  }
  if (first === 0x2b) return plusReading(value, notes);
  // Only a value starting with 1-9 can be a calling code without its `+` (none starts with 0).
  if (first < 0x31 || first > 0x39) return nationalReading(value, country, notes);
  if (mode === 'included') return internationalE164('+' + value);
  const national = country === undefined ? undefined : nationalReading(value, country, notes);
  if (national === AMBIGUOUS) return AMBIGUOUS;
  if (mode === 'national') {
    if (national === undefined && internationalE164('+' + value) !== undefined) notes.codeWithoutPlus++;
    return national;
  }
  const startsWithCode = country !== undefined && startsWithDigits(value, callingCode(country));
  if (national !== undefined && !startsWithCode) return national;
  if (country === undefined && countDigits(value) < MIN_DIGITS_CODE_WITHOUT_COUNTRY) return undefined;
  const included = internationalE164('+' + value);
  if (included === undefined || national === included) return national;
  if (national === undefined) {
    notes.codeWithoutPlus++;
    return included;
  }
  return decideReadings(national, included, notes);
}

/**
 * A value valid (under `min`) both as a national number and as carrying the calling code: the
 * reading that is in an assigned number range wins; with both or neither, nobody can tell.
 */
function decideReadings(first: string, second: string, notes: PhoneNotes, codeWithoutPlus = true): PhoneReading {
  const firstReal = phoneInNumberRanges(first);
  if (firstReal === phoneInNumberRanges(second)) return AMBIGUOUS;
  notes.twoReadings++;
  if (firstReal) return first;
  if (codeWithoutPlus) notes.codeWithoutPlus++;
  return second;
}

/**
 * The library's reading of `value` (no `+`) in `country`, unless it is one of two numbers: a
 * national number kept whole whose first digits are also the country's trunk prefix, written
 * before a number without them (Gabon's `02 41 42 05`: +241 02414205, or +241 2414205 with the
 * `0` its national format writes, both assigned), or a value the library reads after the country's
 * international prefix as another country's number (`015…` in Israel, `810…` in Russia) that is
 * also a national number. Both valid under `min`: the number ranges decide. Any other value costs
 * a comparison or two.
 */
function nationalReading(value: string, country: string | undefined, notes: PhoneNotes): PhoneReading {
  const read = phoneToE164(value, country);
  if (read === undefined || country === undefined) return read;
  const own = plusCode(country);
  let other: string | undefined;
  if (!read.startsWith(own)) other = phoneToE164(own + value.replace(NON_DIGITS_RE, ''), undefined);
  else if (keptTrunkDigit(read, own.length, value, country)) {
    // Every digit was kept as the national number, and the first one may be a trunk prefix.
    const digits = value.replace(NON_DIGITS_RE, '');
    const prefix = trunkPrefixLength(country, digits);
    if (prefix > 0) other = phoneToE164(own + digits.slice(prefix), undefined);
  }
  return other === undefined || other === read ? read : decideReadings(read, other, notes, false);
}

/**
 * A `+` number, where a written `(0)` may be a trunk prefix to drop or the first digit of a
 * number that keeps it (`+241 (0) 6318285`: +241 6318285, or +241 06318285, both assigned).
 */
function plusReading(value: string, notes: PhoneNotes): PhoneReading {
  const read = internationalE164(value);
  // Not when the library dropped exactly one digit, the `0` (most countries' trunk rule): one reading.
  if (read === undefined || !value.includes('(0)') || read.length === countDigits(value)) return read;
  if (!PLAIN_PHONE_RE.test(value)) return read;
  const digits = value.replace(NON_DIGITS_RE, '');
  const code = leadingCallingCode(digits);
  if (code === undefined || digits.charCodeAt(code.length) !== 0x30) return read;
  const other = phoneToE164('+' + code + digits.slice(code.length + 1), undefined);
  return other === undefined || other === read ? read : decideReadings(read, other, notes, false);
}

/**
 * `00` + the row country's calling code + a valid number: that number. People write `00` as the
 * international prefix whatever their country's is (`011` in North America, `810` in Russia, `00xx`
 * carrier codes in Brazil and Colombia, `001`/`002` in Korea), where the library would read a
 * national number or another country's prefix (`0055 64…` in Brazil: +64, New Zealand).
 */
function ownCodeAfter00(value: string, country: string): string | undefined {
  if (value.charCodeAt(1) !== 0x30 || !PLAIN_PHONE_RE.test(value)) return undefined;
  const digits = value.replace(NON_DIGITS_RE, '');
  if (!digits.startsWith('00' + callingCode(country), 0)) return undefined;
  return internationalE164('+' + digits.slice(2));
}

/** A `+` number as the library reads it, or else as the habits below rewrite it. */
function internationalE164(value: string): string | undefined {
  return phoneToE164(value, undefined) ?? rewrittenInternational(value);
}

/**
 * The valid number an invalid `+` value stands for: `+cc (0) …`, the trunk prefix kept after the
 * calling code (`+57 (0) 321…`, where the library's own trunk rule fails), and Mexico's `+52 1`
 * followed by 10 digits, the mobile prefix retired in 2019 (`+52 1 55 1234 5678`).
 */
function rewrittenInternational(value: string): string | undefined {
  if (!PLAIN_PHONE_RE.test(value)) return undefined;
  const digits = value.replace(NON_DIGITS_RE, '');
  const code = leadingCallingCode(digits);
  if (code === undefined) return undefined;
  const rest = digits.slice(code.length);
  const mexicanMobile = code === '52' && rest.length === 11 && rest.charCodeAt(0) === 0x31;
  if (rest.charCodeAt(0) !== 0x30 && !mexicanMobile) return undefined;
  // Exactly one digit goes: the number must be valid as it then stands, without another prefix stripped.
  const e164 = '+' + code + rest.slice(1);
  return phoneToE164(e164, undefined) === e164 ? e164 : undefined;
}

let callingCodeSet: ReadonlySet<string> | undefined;
/** The 1-3 digit calling code `digits` start with (no calling code is a prefix of another). */
function leadingCallingCode(digits: string): string | undefined {
  callingCodeSet ??= new Set(getCountries().map((c) => getCountryCallingCode(c)));
  for (let i = 1; i <= 3 && i < digits.length; i++) {
    const code = digits.slice(0, i);
    if (callingCodeSet.has(code)) return code;
  }
  return undefined;
}

const plusCodes = new Map<string, string>();
/** `+` and the calling code of `country`. */
function plusCode(country: string): string {
  let code = plusCodes.get(country);
  if (code === undefined) {
    code = '+' + callingCode(country);
    plusCodes.set(country, code);
  }
  return code;
}

const trunkPrefixes = new Map<string, readonly string[]>();
/** phoneTrunkPrefixes, once per country. */
function trunks(country: string): readonly string[] {
  let prefixes = trunkPrefixes.get(country);
  if (prefixes === undefined) {
    prefixes = phoneTrunkPrefixes(country);
    trunkPrefixes.set(country, prefixes);
  }
  return prefixes;
}

/**
 * Whether the national number of `read` (from `at`) is every digit of `value`, and its first digit
 * may be a trunk prefix: cheap tests first, as this runs for every national value.
 */
function keptTrunkDigit(read: string, at: number, value: string, country: string): boolean {
  const first = value.charCodeAt(0);
  if (read.charCodeAt(at) !== first) return false;
  if (!trunks(country).some((t) => t.charCodeAt(0) === first)) return false;
  return read.length - at === countDigits(value);
}

/** The length of the trunk prefix of `country` that `digits` start with (the longest), 0: none. */
function trunkPrefixLength(country: string, digits: string): number {
  let length = 0;
  for (const t of trunks(country)) if (t.length > length && digits.startsWith(t)) length = t.length;
  return length;
}

const callingCodes = new Map<string, string>();
function callingCode(country: string): string {
  let code = callingCodes.get(country);
  if (code === undefined) {
    code = getCountryCallingCode(country as CountryCode);
    callingCodes.set(country, code);
  }
  return code;
}

/** Whether the digits of `value` (separators skipped) start with `prefix`. */
function startsWithDigits(value: string, prefix: string): boolean {
  let p = 0;
  for (let i = 0; i < value.length && p < prefix.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x30 || c > 0x39) continue;
    if (c !== prefix.charCodeAt(p)) return false;
    p++;
  }
  return p === prefix.length;
}

/** The digits of the number itself: counting stops at an extension (`x819`, `ext. 5`, `#12`, `;ext=`). */
function countDigits(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) n++;
    else if (!NUMBER_SEPARATORS.includes(value[i] ?? '')) break;
  }
  return n;
}
