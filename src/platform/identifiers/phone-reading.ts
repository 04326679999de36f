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
import type { CountryCode } from 'libphonenumber-js';
import { memoByKey } from '../../util/memo.js';
import {
  phoneLibrary,
  phoneRangeRank,
  phoneToE164,
  phoneTrunkPrefixes,
  phoneWrittenInternationalPrefixes,
} from './phone.js';

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
/** phoneReading's answer for a spreadsheet number whose digits were rounded away (`phone_lossy_number`). */
export const LOSSY = 'lossy';
/**
 * phoneReading's answer for digits that, in a row without a country, read only as starting with a
 * calling code, in a column whose values show national numbers (`phone_maybe_national`): each may
 * be a national number whose leading 0 a spreadsheet dropped (a German 0151… as +1 51…).
 */
export const MAYBE_NATIONAL = 'maybe-national';
/** An E.164 number (it starts with `+`), AMBIGUOUS, LOSSY, MAYBE_NATIONAL, or `undefined` (no valid number). */
export type PhoneReading = string | undefined;

/** What phoneReading noticed about the values it read (counted into the caller's, per row). */
export interface PhoneNotes {
  /** Read as carrying the calling code without `+` (or, with `national`, rejected though valid so). */
  codeWithoutPlus: number;
  /** Valid under `min` both as national numbers and with the calling code; decided by the number ranges. */
  twoReadings: number;
  /** Of codeWithoutPlus, those in rows without a country (a national number without its 0 reads so too). */
  codeWithoutCountry: number;
}

/**
 * Without a country, a number is read with its calling code only from this many digits (a 10-digit
 * NANP number would otherwise become +20/+27/+30...).
 */
const MIN_DIGITS_CODE_WITHOUT_COUNTRY = 11;
const NON_DIGITS_RE = /[^0-9]/g;

const NON_ASCII_RE = /[^\t -~]/;
/** Where the number starts: its first digit or `+` (a label, `tel:`, brackets before it are not the number). */
const NUMBER_START_RE = /[0-9+]/;
/**
 * A spreadsheet's integer written as a float (`4915134117294.0`): the `.0` is not a digit of the
 * number. A spreadsheet number has no leading 0 and a phone number has 6 digits or more.
 */
const SPREADSHEET_FLOAT_RE = /^([1-9][0-9]{5,})\.0+$/;
/** A spreadsheet's scientific form (`9.18142423991e+11`, `4,915134117294E+12`). */
const SCIENTIFIC_RE = /^([1-9])(?:[.,]([0-9]+))?[eE]\+?([0-9]{1,2})$/;
/** The digits of an extension written after the number with `#` at its end (`- 503#`), as libphonenumber-js reads it. */
const HASH_EXTENSION_RE = /[- ]+[0-9]{1,6}$/;
const TRAILING_SEPARATORS_RE = /[ (.\-/]+$/;

/**
 * The E.164 number `value` stands for with `country` as the row's country (undefined: none).
 * `nationalColumn`: its column's values show national numbers (content.ts, nationalEvidence), so
 * without a country its digits are not read as starting with a calling code (MAYBE_NATIONAL).
 */
export function phoneReading(
  value: string,
  country: string | undefined,
  mode: PhoneCountryCode,
  notes: PhoneNotes,
  nationalColumn = false,
): PhoneReading {
  const number = writtenNumber(value);
  if (number === LOSSY || number === '') return number === LOSSY ? LOSSY : undefined;
  if (number !== value && mode !== 'included' && spreadsheetForm(value))
    return country === undefined ? undefined : spreadsheetReading(number, country, mode, notes);
  return plainReading(number, country, mode, notes, nationalColumn);
}

/** Most values: a plain number (see plainEnd) without a `.`, so neither a spreadsheet float nor anything else to cut. */
const PLAIN_WITHOUT_DOT_RE = /^[+0-9][ ()/0-9-]*$/;

/** The index of the first character of `s` that cannot be part of a plain number (digits, separators, a leading `+`). */
function plainEnd(s: string): number {
  let i = s.charCodeAt(0) === 0x2b ? 1 : 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 0x30 || c > 0x39) && c !== 0x20 && c !== 0x2d && c !== 0x2e && c !== 0x28 && c !== 0x29 && c !== 0x2f)
      break;
  }
  return i;
}

/** Invisible format characters (Cf): soft hyphen, zero-width space, word joiner, direction marks, BOM. */
const FORMAT_CHARS_RE = /\p{Cf}/gu;
/** The dashes of libphonenumber-js's punctuation that NFKC leaves as they are: U+2010-U+2015, minus sign, U+30FC. */
const DASHES_RE = /[\u2010-\u2015\u2212\u30fc]/g;

/**
 * A non-ASCII value after NFKC, with the separators libphonenumber-js takes inside a number written
 * as plainEnd takes them: a dash (`030 12345–67`, as Word and Outlook turn a `-`) as `-`, and the
 * format characters a copy from a web page leaves between digits removed, so that the number does
 * not end there, as a valid shorter one (`030 12345` of `030 12345–67`). A tilde or wave dash still
 * ends it: in Japanese it writes a range (`…5678～9`).
 */
function plainPunctuation(s: string): string {
  return s.replace(FORMAT_CHARS_RE, '').replace(DASHES_RE, '-');
}

/**
 * The number a phone cell holds, in its plain form (digits, separators, a leading `+`): full-width
 * characters made ASCII (NFKC), a label, `tel:` or brackets before it removed, an extension after
 * it (`x12`, `ext. 881`, `#47`, `;ext=12`, `,12`, `poste 12`, `Durchwahl 12`: anything after the
 * number) dropped, and a spreadsheet's number forms read back as the integer they are. LOSSY: a
 * spreadsheet rounded it (fewer digits than the number had); `''`: no number in it.
 */
function writtenNumber(value: string): string {
  if (PLAIN_WITHOUT_DOT_RE.test(value)) return value;
  const first = value.charCodeAt(0);
  if ((first >= 0x30 && first <= 0x39) || first === 0x2b) {
    const end = plainEnd(value);
    if (end === value.length) return SPREADSHEET_FLOAT_RE.exec(value)?.[1] ?? value;
  }
  const ascii = NON_ASCII_RE.test(value) ? plainPunctuation(value.normalize('NFKC')) : value;
  const start = ascii.search(NUMBER_START_RE);
  if (start < 0) return '';
  const s = start === 0 ? ascii : ascii.slice(start);
  const scientific = SCIENTIFIC_RE.exec(s);
  if (scientific !== null) return spreadsheetInteger(scientific);
  const end = plainEnd(s);
  let number = s.slice(0, end);
  if (end === s.length - 1 && s.charCodeAt(end) === 0x23) number = number.replace(HASH_EXTENSION_RE, '');
  number = number.replace(TRAILING_SEPARATORS_RE, '');
  return end === s.length ? (SPREADSHEET_FLOAT_RE.exec(number)?.[1] ?? number) : number;
}

/**
 * The integer of a spreadsheet's scientific form, when its mantissa holds every digit
 * (`9.18142423991e+11`: 12 digits, 918142423991); LOSSY when the exponent needs more digits than
 * it holds (`4,91512E+12`: the spreadsheet rounded the number to 6 digits), `''` when it is not
 * an integer.
 */
function spreadsheetInteger(m: RegExpExecArray): string {
  const fraction = m[2] ?? '';
  const exponent = Number(m[3]);
  if (fraction.length > exponent) return '';
  return fraction.length < exponent ? LOSSY : m[1]! + fraction;
}

/** Whether `value` is written as a spreadsheet writes a number (`….0`, `9.18142423991e+11`). */
export function spreadsheetForm(value: string): boolean {
  return SPREADSHEET_FLOAT_RE.test(value) || SCIENTIFIC_RE.test(value);
}

/**
 * A number a spreadsheet stored as a number, which drops a leading `+` or `0`: without a country
 * nothing tells which (phoneReading refuses it), with one the number is also read with a `0`
 * before it (an Italian `039 9919 6191` is `3999196191.0`, also the mobile `399 919 6191`), and
 * the number ranges decide between the readings.
 */
function spreadsheetReading(number: string, country: string, mode: PhoneCountryCode, notes: PhoneNotes): PhoneReading {
  const read = plainReading(number, country, mode, notes);
  const restored = plainReading('0' + number, country, mode, notes);
  if (read === AMBIGUOUS || restored === AMBIGUOUS) return AMBIGUOUS;
  if (restored === undefined || restored === read) return read;
  return read === undefined ? restored : decideAmong([read, restored], notes);
}

/** phoneReading of a value in its plain form: digits, separators and a leading `+`. */
function plainReading(
  value: string,
  country: string | undefined,
  mode: PhoneCountryCode,
  notes: PhoneNotes,
  nationalColumn = false,
): PhoneReading {
  const first = value.charCodeAt(0);
  if (first === 0x30) return zeroReading(value, country, notes);
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
  const startsWithCode = country !== undefined && startsWithDigits(value, facts(country).callingCode);
  if (national !== undefined && !startsWithCode) return national;
  if (country === undefined && countDigits(value) < MIN_DIGITS_CODE_WITHOUT_COUNTRY) return undefined;
  const included = internationalE164('+' + value);
  if (included === undefined || national === included) return national;
  if (national === undefined) {
    // SMS tools and ad-platform templates write numbers so, but so does a spreadsheet that
    // dropped a national number's 0 (a German 0151… reads as +1 51…): refused where the column
    // shows national numbers, said in a hint elsewhere.
    if (country === undefined && nationalColumn) return MAYBE_NATIONAL;
    notes.codeWithoutPlus++;
    if (country === undefined) notes.codeWithoutCountry++;
    return included;
  }
  return decideReadings(national, included, notes);
}

/**
 * A value starting with `0`: the library's national reading and the readings after a written
 * international prefix (`0044…`, `011 44…`, `0011 44…`). `00` + the row country's own calling
 * code is that number unless another prefix reads it too (`0011 51…` in a US row: `00` + 1, or
 * Australia's `0011` + 51). A national reading in a range of the row's country a person's line can
 * be in wins: the row says whose habits wrote it (Delhi's `011 4955 2626` in an IN row is not
 * `011` + 49…). Otherwise the number ranges decide between the readings.
 */
function zeroReading(value: string, country: string | undefined, notes: PhoneNotes): PhoneReading {
  const abroad = afterInternationalPrefix(value, country === undefined);
  if (abroad === undefined) return nationalReading(value, country, notes);
  if (country !== undefined && abroad.length === 1 && ownCodeAfter00(value, country, abroad[0]!)) return abroad[0];
  const national = country === undefined ? undefined : nationalReading(value, country, notes);
  if (national === AMBIGUOUS) return AMBIGUOUS;
  if (national !== undefined && !abroad.includes(national)) {
    // A number of the row's country in its ranges wins, unless written from `00…` (rarely a
    // national number: Thailand's `001800…` services are) or a prefix is followed by the row's
    // own calling code (`011 39 066982` in IT: Turin's 011 3906 6982, or the Vatican's +39 06
    // 6982 dialled from North America). The library may also have read the country's own prefix
    // (Thailand's `006`): then it is one more reading.
    const own = facts(country!).plusCode;
    const home = national.startsWith(own) && !startsWithDigits(value, '00');
    if (home && !abroad.some((r) => r.startsWith(own)) && phoneRangeRank(national) === 2) return national;
    abroad.push(national);
  }
  if (abroad.length > 1) return decideAmong(abroad, notes);
  // One reading after a prefix written abroad: taken when it is the library's too, has the row's
  // own calling code, or is a person's line (a service number may be a national one the library
  // cannot read: Thailand's `001 800…` is not +1 800…).
  const read = abroad[0]!;
  if (read === national || (country !== undefined && read.startsWith(facts(country).plusCode))) return read;
  return phoneRangeRank(read) === 2 ? read : undefined;
}

let writtenPrefixes: ReadonlySet<string> | undefined;
let longestPrefix = 0;

/**
 * The valid numbers `value` is after an international prefix people write (from the metadata:
 * phoneWrittenInternationalPrefixes), each followed by a calling code and a number valid under
 * `min`; undefined when there is none. `withoutCountry`: only the prefixes starting with `00`,
 * which begin no national number (`011` and `010` begin Turin's, São Paulo's, Beijing's and
 * Rotterdam's, so without a row country they stay national numbers of an unknown country).
 */
function afterInternationalPrefix(value: string, withoutCountry: boolean): string[] | undefined {
  if (writtenPrefixes === undefined) {
    const all = phoneWrittenInternationalPrefixes();
    writtenPrefixes = new Set(all);
    longestPrefix = Math.max(...all.map((p) => p.length));
  }
  // Most values starting with 0 are national numbers (`020…`, `0152…`): decided before any copy.
  const second = digitAt(value, 1);
  if (second !== 0x30 && (withoutCountry || second !== 0x31)) return undefined;
  const digits = value.replace(NON_DIGITS_RE, '');
  let found: string[] | undefined;
  for (let n = 2; n <= longestPrefix && n < digits.length; n++) {
    const prefix = digits.slice(0, n);
    if (!writtenPrefixes.has(prefix) || digits.charCodeAt(n) === 0x30) continue;
    // `00` is the `+` of most countries: the habits of `+` numbers apply after it (`0049 (0)30…`).
    const e164 = n === 2 ? internationalE164('+' + digits.slice(n)) : phoneToE164('+' + digits.slice(n), undefined);
    if (e164 !== undefined && !(found ??= []).includes(e164)) found.push(e164);
  }
  return found;
}

/**
 * A value valid (under `min`) both as a national number and as carrying the calling code: the
 * reading in a range a person's line can be in wins (see decideAmong).
 */
function decideReadings(first: string, second: string, notes: PhoneNotes, codeWithoutPlus = true): PhoneReading {
  const read = decideAmong([first, second], notes);
  if (read === second && codeWithoutPlus) notes.codeWithoutPlus++;
  return read;
}

/**
 * Several readings valid under `min`: the one whose number ranges (`max`) rank highest wins, a
 * person's line (mobile, fixed line, VoIP, personal) over a service (toll free, premium rate,
 * shared cost, UAN, pager, voicemail) over no assigned range; a tie at the top, nobody can tell.
 */
function decideAmong(readings: readonly string[], notes: PhoneNotes): PhoneReading {
  let best: string | undefined;
  let bestRank = -1;
  let tied = false;
  for (const reading of readings) {
    const rank = phoneRangeRank(reading);
    if (rank === bestRank) tied = true;
    else if (rank > bestRank) {
      best = reading;
      bestRank = rank;
      tied = false;
    }
  }
  if (tied || bestRank === 0) return AMBIGUOUS;
  notes.twoReadings++;
  return best;
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
  const own = facts(country).plusCode;
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
  const digits = value.replace(NON_DIGITS_RE, '');
  const code = leadingCallingCode(digits);
  if (code === undefined || digits.charCodeAt(code.length) !== 0x30) return read;
  const other = phoneToE164('+' + code + digits.slice(code.length + 1), undefined);
  return other === undefined || other === read ? read : decideReadings(read, other, notes, false);
}

/**
 * Whether `read` is `value` read as `00` + the row country's own calling code. People write `00` as
 * the international prefix whatever their country's is (`011` in North America, `810` in Russia,
 * `00xx` carrier codes in Brazil and Colombia, `001`/`002` in Korea), where the library would read
 * a national number or another country's prefix (`0055 64…` in Brazil: +64, New Zealand).
 */
function ownCodeAfter00(value: string, country: string, read: string): boolean {
  return startsWithDigits(value, '00' + facts(country).callingCode) && read.startsWith(facts(country).plusCode);
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
  if (callingCodeSet === undefined) {
    const { getCountries, getCountryCallingCode } = phoneLibrary();
    callingCodeSet = new Set(getCountries().map((c) => getCountryCallingCode(c)));
  }
  for (let i = 1; i <= 3 && i < digits.length; i++) {
    const code = digits.slice(0, i);
    if (callingCodeSet.has(code)) return code;
  }
  return undefined;
}

/** What the readings ask of the row's country, worked out once per country. */
interface CountryFacts {
  readonly callingCode: string;
  /** `+` and the calling code. */
  readonly plusCode: string;
  /** phoneTrunkPrefixes. */
  readonly trunks: readonly string[];
}
/** The facts of a country, worked out once (a value asks several times, rows of one country follow each other). */
const facts = memoByKey((country: string): CountryFacts => {
  const callingCode = phoneLibrary().getCountryCallingCode(country as CountryCode);
  return { callingCode, plusCode: '+' + callingCode, trunks: phoneTrunkPrefixes(country) };
});

/**
 * Whether the national number of `read` (from `at`) is every digit of `value`, and its first digit
 * may be a trunk prefix: cheap tests first, as this runs for every national value.
 */
function keptTrunkDigit(read: string, at: number, value: string, country: string): boolean {
  const first = value.charCodeAt(0);
  if (read.charCodeAt(at) !== first) return false;
  if (!facts(country).trunks.some((t) => t.charCodeAt(0) === first)) return false;
  return read.length - at === countDigits(value);
}

/** The length of the trunk prefix of `country` that `digits` start with (the longest), 0: none. */
function trunkPrefixLength(country: string, digits: string): number {
  let length = 0;
  for (const t of facts(country).trunks) if (t.length > length && digits.startsWith(t)) length = t.length;
  return length;
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

/** The character code of the `n`th digit of `value` (from 0; separators skipped), -1 when it has fewer. */
function digitAt(value: string, n: number): number {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39 && n-- === 0) return c;
  }
  return -1;
}

/** The digits of a plain value (digits and separators). */
function countDigits(value: string): number {
  let n = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) n++;
  }
  return n;
}
