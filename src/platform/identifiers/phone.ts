/**
 * Phone validation with results identical to libphonenumber-js (default `min` metadata):
 * `parsePhoneNumberFromString(value, country)?.isValid()` and `.number`.
 *
 * Why: the library costs ~19 µs per number, mostly because it rebuilds its RegExps (national number pattern,
 * national prefix, type patterns, IDD prefix) from metadata strings on every call; at 1M rows that dominates
 * the whole pipeline. This module replays the library's own parsing algorithm (parse.js, extractCountryCallingCode,
 * stripIddPrefix, extractCountryCallingCodeFromInternationalNumberWithoutPlusSign, extractNationalNumber,
 * getCountryByCallingCode/getCountryByNationalNumber, checkNumberLength, isValid/getNumberType) step by step,
 * on the same metadata object, with each pattern compiled once per numbering plan and cached.
 *
 * It only does so for the plain shapes CRM exports contain: ASCII digits, the separators space - . ( ) /,
 * and one leading `+`. Anything else (letters, extensions, `tel:` URIs, other Unicode digits or spaces,
 * a `+` after a digit, fewer than 3 digits, non-geographic calling codes) goes to the library itself.
 * test/phone-differential.test.ts proves equality on a generated corpus.
 */
import { createRequire } from 'node:module';
import type * as PhoneLibrary from 'libphonenumber-js';
import type { CountryCode } from 'libphonenumber-js';
import type { parsePhoneNumberFromString as parseMaxNumber } from 'libphonenumber-js/max';
import metadataJson from 'libphonenumber-js/min/metadata';
import libraryPackage from 'libphonenumber-js/package.json' with { type: 'json' };
import { memoByKey } from '../../util/memo.js';

/** The parts of the v4 metadata JSON the algorithm reads (see libphonenumber-js METADATA.md). */
type CountryTuple = readonly unknown[];
interface MetadataShape {
  country_calling_codes: Record<string, string[]>;
  countries: Record<string, CountryTuple>;
  nonGeographic?: Record<string, CountryTuple>;
}
const metadata = metadataJson as unknown as MetadataShape;

/**
 * The fast path reads the metadata arrays by position, a layout libphonenumber-js does not
 * promise to keep. It is used only with the library version the differential test proved it
 * against (package.json pins that version exactly), metadata schema 4, and tuples of the shape
 * read below; otherwise every number goes to the library (slower, never wrong). Upgrading the
 * library: bump both pins, run test/phone-differential.test.ts.
 */
export const PHONE_FAST_PATH_LIBRARY_VERSION = '1.13.16';
const METADATA_SCHEMA = 4;

const isStr = (v: unknown): boolean => typeof v === 'string';
/** Optional fields are absent, 0 (the compact form of "none") or of the expected type. */
const optional = (v: unknown, check: (v: unknown) => boolean): boolean => v === undefined || v === 0 || check(v);

function countryTupleFits(t: unknown): boolean {
  return (
    Array.isArray(t) &&
    isStr(t[0]) &&
    isStr(t[1]) &&
    isStr(t[2]) &&
    Array.isArray(t[3]) &&
    (t[3] as unknown[]).every((n) => typeof n === 'number') &&
    optional(t[5], isStr) &&
    optional(t[7], isStr) &&
    optional(t[8], isStr) &&
    optional(t[10], isStr) &&
    optional(t[11], Array.isArray)
  );
}

/** Whether the fast path may run on `meta` from libphonenumber-js `libraryVersion`. */
export function phoneFastPathSupports(meta: unknown, libraryVersion: string): boolean {
  if (libraryVersion !== PHONE_FAST_PATH_LIBRARY_VERSION) return false;
  const m = meta as Partial<MetadataShape> & { version?: unknown };
  if (m === null || typeof m !== 'object' || m.version !== METADATA_SCHEMA) return false;
  const codes = m.country_calling_codes;
  const countries = m.countries;
  if (codes === null || typeof codes !== 'object' || countries === null || typeof countries !== 'object') return false;
  for (const list of Object.values(codes)) {
    if (!Array.isArray(list) || !list.every((c) => typeof c === 'string')) return false;
    // Every country a calling code names must have a plan (countryPlan looks it up unchecked).
    for (const c of list) if (c.length === 2 && !countryTupleFits(countries[c])) return false;
  }
  return Object.values(countries).every(countryTupleFits);
}

/** Decided once per thread: the metadata does not change while the process runs. */
const FAST_PATH = phoneFastPathSupports(metadataJson, libraryPackage.version);

/** Whether this process uses the fast path (false: every number goes to libphonenumber-js). */
export function phoneFastPathEnabled(): boolean {
  return FAST_PATH;
}

const MIN_LENGTH_FOR_NSN = 2;
const MAX_LENGTH_FOR_NSN = 17;
const MAX_LENGTH_COUNTRY_CODE = 3;
/** Longer inputs are rare and the library has its own limits (250 chars): let it decide. */
const MAX_FAST_INPUT = 64;
const NON_DIGITS = /[^0-9]/g;

interface NumberType {
  re: RegExp;
  lengths: readonly number[];
}
/** One country's numbering plan with every pattern compiled once. */
interface Plan {
  callingCode: string;
  /** `^(?:idd)`: the library tests `search(idd) === 0`, i.e. a match at the start. */
  idd: RegExp;
  /** `^(?:pattern)$`, as matchesEntirely builds it. */
  nationalNumber: RegExp;
  lengths: readonly number[];
  /** `^(?:national_prefix_for_parsing)` (or the national prefix when that is absent). */
  nationalPrefix: RegExp | undefined;
  nationalPrefixTransformRule: string | undefined;
  /** `^(?:leading_digits)`: getCountryByNationalNumber tests `search(ld) === 0`. */
  leadingDigits: RegExp | undefined;
  /** Type patterns (fixed line, mobile, ...) with a non-empty pattern; undefined when the plan has no types. */
  types: readonly NumberType[] | undefined;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function compilePlan(tuple: CountryTuple): Plan {
  const lengths = tuple[3] as number[];
  const prefixForParsing = str(tuple[7]) ?? str(tuple[5]);
  const rawTypes = tuple[11];
  let types: NumberType[] | undefined;
  // hasTypes(): an absent (0) or empty list means "validate with the national number pattern alone".
  if (Array.isArray(rawTypes) && rawTypes.length > 0) {
    types = [];
    // getType() knows ten types (fixed line, mobile, toll free, ..., shared cost), in this order.
    for (const t of (rawTypes as unknown[]).slice(0, 10)) {
      // A missing type is 0; an empty pattern means "same as fixed line" and never matches on its own.
      if (!Array.isArray(t) || !str(t[0])) continue;
      types.push({
        re: new RegExp('^(?:' + (t[0] as string) + ')$'),
        lengths: (t[1] as number[] | undefined) ?? lengths,
      });
    }
  }
  const leadingDigits = str(tuple[10]);
  return {
    callingCode: tuple[0] as string,
    idd: new RegExp('^(?:' + (tuple[1] as string) + ')'),
    nationalNumber: new RegExp('^(?:' + (tuple[2] as string) + ')$'),
    lengths,
    nationalPrefix: prefixForParsing === undefined ? undefined : new RegExp('^(?:' + prefixForParsing + ')'),
    nationalPrefixTransformRule: str(tuple[8]),
    leadingDigits: leadingDigits === undefined ? undefined : new RegExp('^(?:' + leadingDigits + ')'),
    types,
  };
}

/** A country's plan, compiled on first use. */
const countryPlan = memoByKey((country: string): Plan => compilePlan(metadata.countries[country]!));

/** Plans of the countries using `callingCode`, in metadata order (the first one is the "main" country); undefined for unknown and non-geographic codes. */
const plansForCallingCode = memoByKey((callingCode: string): readonly { country: string; plan: Plan }[] | undefined => {
  const countries = metadata.country_calling_codes[callingCode];
  if (countries === undefined || (countries.length === 1 && countries[0]!.length === 3)) return undefined;
  return countries.map((country) => ({ country, plan: countryPlan(country) }));
});

/** getNumberType(...) !== undefined: the national pattern and at least one type pattern match. */
function hasNumberType(nationalNumber: string, plan: Plan): boolean {
  if (!plan.nationalNumber.test(nationalNumber)) return false;
  const types = plan.types;
  if (types === undefined) return false;
  for (let i = 0; i < types.length; i++) {
    const t = types[i]!;
    if (t.lengths.includes(nationalNumber.length) && t.re.test(nationalNumber)) return true;
  }
  return false;
}

/**
 * The last getCountryByCallingCode answer. One parse asks the same question up to twice (after stripping a
 * national prefix, then for the result) and type patterns are the costliest regexes, so it is remembered;
 * `typeMatched` says the country was chosen by its type patterns, which is exactly its validity check.
 */
const lastLookup = {
  callingCode: '',
  nationalNumber: '',
  country: undefined as string | undefined,
  typeMatched: false,
};

/** getCountryByCallingCode: the exact country of a national number among those sharing its calling code. */
function countryByCallingCode(callingCode: string, nationalNumber: string): string | undefined {
  if (lastLookup.nationalNumber === nationalNumber && lastLookup.callingCode === callingCode) return lastLookup.country;
  let country: string | undefined;
  let typeMatched = false;
  const list = plansForCallingCode(callingCode);
  if (list !== undefined && list.length === 1) country = list[0]!.country;
  else if (list !== undefined) {
    for (let i = 0; i < list.length; i++) {
      const candidate = list[i]!;
      const leadingDigits = candidate.plan.leadingDigits;
      if (leadingDigits !== undefined) {
        if (nationalNumber !== '' && leadingDigits.test(nationalNumber)) {
          country = candidate.country;
          break;
        }
      } else if (hasNumberType(nationalNumber, candidate.plan)) {
        country = candidate.country;
        typeMatched = true;
        break;
      }
    }
  }
  lastLookup.callingCode = callingCode;
  lastLookup.nationalNumber = nationalNumber;
  lastLookup.country = country;
  lastLookup.typeMatched = typeMatched;
  return country;
}

type LengthCheck = 'IS_POSSIBLE' | 'TOO_SHORT' | 'TOO_LONG' | 'INVALID_LENGTH';
function checkNumberLength(nationalNumber: string, lengths: readonly number[]): LengthCheck {
  const n = nationalNumber.length;
  const min = lengths[0]!;
  if (min === n) return 'IS_POSSIBLE';
  if (min > n) return 'TOO_SHORT';
  if (lengths[lengths.length - 1]! < n) return 'TOO_LONG';
  return lengths.indexOf(n, 1) >= 0 ? 'IS_POSSIBLE' : 'INVALID_LENGTH';
}

/** extractNationalNumberFromPossiblyIncompleteNumber: strips a national (trunk) prefix / applies the transform. */
function stripNationalPrefix(number: string, plan: Plan): string {
  const re = plan.nationalPrefix;
  if (number === '' || re === undefined) return number;
  const m = re.exec(number);
  if (m === null) return number;
  const groups = m.length - 1;
  const hasCapturedGroups = groups > 0 && Boolean(m[groups]);
  if (plan.nationalPrefixTransformRule !== undefined && hasCapturedGroups) {
    return number.replace(re, plan.nationalPrefixTransformRule);
  }
  return number.slice(m[0].length);
}

/** extractNationalNumber: strips the national prefix only when what remains still looks like a number. */
function extractNationalNumber(number: string, plan: Plan): string {
  const nationalNumber = stripNationalPrefix(number, plan);
  if (nationalNumber === number) return number;
  if (plan.nationalNumber.test(number) && !plan.nationalNumber.test(nationalNumber)) return number;
  const country = countryByCallingCode(plan.callingCode, nationalNumber);
  const lengths = country === undefined ? plan.lengths : countryPlan(country).lengths;
  const check = checkNumberLength(nationalNumber, lengths);
  if (check === 'TOO_SHORT' || check === 'INVALID_LENGTH') return number;
  return nationalNumber;
}

/** What the fast path concluded: an E.164 number, `null` (the library returns no valid number), or "ask the library". */
const FALLBACK = 0;
type FastResult = string | null | typeof FALLBACK;

/**
 * The metadata's calling codes by their value (1-999; none starts with 0): the code as written, or
 * NON_GEOGRAPHIC (+800, +882...). Read one digit at a time instead of looking up each 1-3 digit prefix
 * as a string.
 */
const NON_GEOGRAPHIC = 0;
let callingCodeByValue: (string | typeof NON_GEOGRAPHIC | undefined)[] | undefined;

function callingCodeTable(): (string | typeof NON_GEOGRAPHIC | undefined)[] {
  const table = new Array<string | typeof NON_GEOGRAPHIC | undefined>(1000).fill(undefined);
  const code = /^[1-9][0-9]{0,2}$/;
  for (const c of Object.keys(metadata.nonGeographic ?? {})) if (code.test(c)) table[Number(c)] = NON_GEOGRAPHIC;
  // At the same prefix the library looks for a country's calling code first.
  for (const c of Object.keys(metadata.country_calling_codes)) if (code.test(c)) table[Number(c)] = c;
  return table;
}

/**
 * An international number (`digits` without its `+`): the calling code is the first 1-3 digit prefix the
 * metadata knows (no calling code is a prefix of another); non-geographic codes (+800, +882...) go to the library.
 */
function international(digits: string): FastResult {
  if (digits.charCodeAt(0) === 0x30) return null;
  const table = (callingCodeByValue ??= callingCodeTable());
  let value = 0;
  for (let i = 0; i < MAX_LENGTH_COUNTRY_CODE && i < digits.length; i++) {
    value = value * 10 + digits.charCodeAt(i) - 0x30;
    const callingCode = table[value];
    if (callingCode === undefined) continue;
    if (callingCode === NON_GEOGRAPHIC) return FALLBACK;
    const list = plansForCallingCode(callingCode);
    if (list === undefined) return FALLBACK;
    return finish(callingCode, undefined, list[0]!.plan, digits.slice(i + 1));
  }
  return null;
}

/** parsePhoneNumber's tail, then the length checks of parse() and isValid(). */
function finish(callingCode: string, givenCountry: string | undefined, plan: Plan, number: string): FastResult {
  if (number === '') return null;
  const nationalNumber = extractNationalNumber(number, plan);
  const country = countryByCallingCode(callingCode, nationalNumber) ?? givenCountry;
  if (nationalNumber.length < MIN_LENGTH_FOR_NSN || nationalNumber.length > MAX_LENGTH_FOR_NSN) return null;
  // isValid(): the plan of the exact country (else the calling code's main one), types when it has them.
  let valid: boolean;
  if (lastLookup.typeMatched && country === lastLookup.country) valid = true;
  else {
    const validation = country === undefined ? plansForCallingCode(callingCode)![0]!.plan : countryPlan(country);
    valid =
      validation.types !== undefined
        ? hasNumberType(nationalNumber, validation)
        : validation.nationalNumber.test(nationalNumber);
  }
  return valid ? '+' + callingCode + nationalNumber : null;
}

/** A national-format number (no `+`) with a known default country. */
function national(digits: string, country: string): FastResult {
  const plan = countryPlan(country);
  // stripIddPrefix: "00 44 ..." dialled from the default country is international, unless a 0 follows the IDD.
  const idd = plan.idd.exec(digits);
  if (idd !== null && idd[0] !== '') {
    const rest = digits.slice(idd[0].length);
    if (rest !== '' && rest.charCodeAt(0) !== 0x30) return international(rest);
  }
  // extractCountryCallingCodeFromInternationalNumberWithoutPlusSign: "44 20 ..." with country GB.
  const callingCode = plan.callingCode;
  if (digits.startsWith(callingCode)) {
    const shorter = digits.slice(callingCode.length);
    const shorterNational = extractNationalNumber(shorter, plan);
    const fullNational = extractNationalNumber(digits, plan);
    if (
      (!plan.nationalNumber.test(fullNational) && plan.nationalNumber.test(shorterNational)) ||
      checkNumberLength(fullNational, plan.lengths) === 'TOO_LONG'
    ) {
      // The calling code selects its main country's plan, as for "+44 ...".
      return finish(callingCode, undefined, plansForCallingCode(callingCode)![0]!.plan, shorter);
    }
  }
  return finish(callingCode, country, plan, digits);
}

/**
 * The fast path proper. Reads `value` once: ASCII digits, separators, an optional `+` before the first digit.
 * Mirrors extractFormattedPhoneNumber + isViablePhoneNumber + parseIncompletePhoneNumber for these shapes
 * (none of them can hold an extension).
 */
function fastE164(value: string, country: string | undefined): FastResult {
  if (value.length > MAX_FAST_INPUT) return FALLBACK;
  let plus = false;
  let digitCount = 0;
  // The digits before `from`, gathered run by run (cheaper than a replace of the non-digits afterwards).
  let digits = '';
  let from = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      digitCount++;
      continue;
    }
    // A `+` starts the number only before any digit; elsewhere the library's grammar decides.
    if (c === 0x2b && !plus && digitCount === 0) plus = true;
    else if (c !== 0x20 && c !== 0x2d && c !== 0x2e && c !== 0x28 && c !== 0x29 && c !== 0x2f) return FALLBACK;
    if (i > from) digits += value.slice(from, i);
    from = i + 1;
  }
  // Fewer than 3 digits: the library's viability grammar has special cases (a bare 2-digit number).
  if (digitCount < 3) return FALLBACK;
  if (from === 0) digits = value;
  else if (from < value.length) digits += value.slice(from);
  if (plus) return international(digits);
  if (country === undefined) return null;
  return national(digits, country);
}

/**
 * libphonenumber-js's `isSupportedCountry` (default `min` metadata), read from the metadata this
 * module holds: looking a country up does not load the library (about 50 ms of CPU in each thread
 * that resolves a row's country, and on the main thread for a country index).
 */
export function isSupportedCountry(country: string): boolean {
  return Object.hasOwn(metadata.countries, country);
}

/**
 * libphonenumber-js itself (default `min` metadata), loaded on first use, as CommonJS: a thread
 * that reads no phone, or whose phones all take the fast path, never loads it, and its CommonJS
 * build loads in about 45 ms of CPU against 70-90 ms for its 115 ES modules (each hashing worker
 * imports this module at start).
 */
let library: typeof PhoneLibrary | undefined;
export function phoneLibrary(): typeof PhoneLibrary {
  return (library ??= createRequire(import.meta.url)('libphonenumber-js') as typeof PhoneLibrary);
}

function libraryE164(value: string, country: string | undefined): string | undefined {
  const parsed = phoneLibrary().parsePhoneNumberFromString(value, country as CountryCode | undefined);
  return parsed !== undefined && parsed.isValid() ? parsed.number : undefined;
}

/**
 * E.164 form of `value` when libphonenumber-js (default metadata) parses it as a valid number, `undefined`
 * otherwise. `country` must be a supported ISO code (or undefined): it is the default country of national numbers.
 */
export function phoneToE164(value: string, country: string | undefined): string | undefined {
  const fast = FAST_PATH ? fastE164(value, country) : FALLBACK;
  return fast !== FALLBACK ? (fast ?? undefined) : libraryE164(value, country);
}

/**
 * Loaded on the first value with two readings (its 157 KB of metadata cost each worker thread about
 * as much start-up time again as the rest of the library; most files never need it).
 */
let parseUnderMax: typeof parseMaxNumber | undefined;
interface MaxApi {
  parsePhoneNumberFromString: typeof parseMaxNumber;
}

/**
 * The number types a person's own line can be. The others (toll free, premium rate, shared cost,
 * UAN, pager, voicemail) are services: nobody's own number, in a customer list a company's.
 */
const PERSONAL_TYPES: ReadonlySet<string> = new Set([
  'MOBILE',
  'FIXED_LINE',
  'FIXED_LINE_OR_MOBILE',
  'VOIP',
  'PERSONAL_NUMBER',
]);

/**
 * How the E.164 number `e164` stands in the ranges its country assigns, from libphonenumber-js's
 * `max` metadata (every number type's pattern and lengths; the default `min` metadata accepts
 * almost any length): 2, a range a person's own line can be in (mobile, fixed line, VoIP,
 * personal); 1, a service range (toll free, premium rate, shared cost, UAN, pager, voicemail);
 * 0, no assigned range. Costs a library parse (~20 µs): only for values with two readings.
 */
export function phoneRangeRank(e164: string): 0 | 1 | 2 {
  parseUnderMax ??= (createRequire(import.meta.url)('libphonenumber-js/max') as MaxApi).parsePhoneNumberFromString;
  const parsed = parseUnderMax(e164);
  if (parsed === undefined || !parsed.isValid()) return 0;
  const type = parsed.getType();
  return type !== undefined && PERSONAL_TYPES.has(type) ? 2 : 1;
}

/** The digits a national-prefix formatting rule (`0$1`, `8 ($1)`, `(06 $1)`) writes before the number. */
function ruleDigits(rule: unknown): string {
  const at = typeof rule === 'string' ? rule.indexOf('$1') : -1;
  return at < 0 ? '' : (rule as string).slice(0, at).replace(NON_DIGITS, '');
}

/**
 * The trunk prefixes `country`'s national format writes before a number: its declared national
 * prefix (`0`; `8` in Russia, `06` in Hungary) and the digits of its formatting rules (Gabon declares
 * none, yet formats its 7-digit numbers `0$1`); none in Italy, whose `0` is part of the number. Read
 * by position (the formats, their rule, the country's default rule), so only from the metadata
 * layout the fast path checked; otherwise `0`, the usual one.
 */
export function phoneTrunkPrefixes(country: string): readonly string[] {
  const tuple = metadata.countries[country];
  if (!FAST_PATH || tuple === undefined) return ['0'];
  const found = new Set<string>([str(tuple[5]) ?? '', ruleDigits(tuple[6])]);
  for (const format of Array.isArray(tuple[4]) ? (tuple[4] as unknown[]) : [])
    if (Array.isArray(format)) found.add(ruleDigits(format[3]));
  found.delete('');
  return [...found];
}

/**
 * The international prefixes people write before a calling code, from the metadata: `00` (the ITU's,
 * most countries'), each country's international prefix when its pattern is one string of digits
 * starting with `0` (`011` of North America, `010` of Japan, `000` of Kenya) and each preferred
 * one starting with `00` (`0011` of Australia). Left out: `00` and one more digit (`001` of Guyana
 * and Mongolia, `009` of Nigeria), since `001 212…` and `0091 98…` are `00` + the calling codes 1
 * and 91 as most people write them (no calling code starts with 0, so `000` stays); the
 * alternatives of a pattern (Korea's `002`…, Hong Kong's `0030`, Brazil's carrier forms `0021`…,
 * Singapore's `0[0-3]\d`, Mauritius' `020`), also `00` + a calling code or the start of national
 * numbers elsewhere (London's `020`). The row's own country reads all of its own (libphonenumber-js does).
 * From another metadata layout than the fast path's, `00` alone.
 */
export function phoneWrittenInternationalPrefixes(): readonly string[] {
  const found = new Set<string>(['00']);
  // Read by position (the preferred prefix is the 13th field): only from the layout the fast path checked.
  if (!FAST_PATH) return [...found];
  for (const tuple of Object.values(metadata.countries)) {
    if (typeof tuple[1] === 'string' && /^0[0-9]+$/.test(tuple[1])) found.add(tuple[1]);
    if (typeof tuple[12] === 'string' && /^00[0-9]*$/.test(tuple[12])) found.add(tuple[12]);
  }
  for (const prefix of found) if (/^00[1-9]$/.test(prefix)) found.delete(prefix);
  return [...found];
}
