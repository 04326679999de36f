/**
 * What a column's values look like, read from the first rows of the input (the sample): whether
 * a column whose name says "email" holds addresses, whether a column with an unknown name clearly
 * holds emails or phone numbers, whether its cells are lists. Values are read here and never kept
 * or printed: only counts and verdicts leave this module.
 */
import { cleanValue } from '../platform/identifiers/rules.js';
import { normalizeIdentifier } from './normalize.js';
import type { IdentifierType } from '../platform/users.js';
import { spreadsheetForm } from '../platform/identifiers/phone-reading.js';
import { TYPE_RULES } from '../platform/identifiers/rules.js';

/** Data rows read from the start of the input to judge each column's values. */
export const SAMPLE_ROWS = 100;

/** A column's sampled cells, each with its row's country (the country column's value, or the default). */
export interface ColumnValues {
  cells: readonly string[];
  countries: readonly (string | undefined)[];
}

/** Non-empty values a column of unknown name needs before its values can tell its type. */
export const MIN_CONTENT_VALUES = 3;
/** Share of a column's sampled cells that must clearly be of a type for a column of unknown name. */
export const CONTENT_SHARE = 0.9;
/** Share of a named column's sampled cells that must look like its type for it to be used. */
export const FIT_SHARE = 0.5;

/** Types whose cells may hold lists that are split automatically. */
const LIST_TYPES: ReadonlySet<IdentifierType> = new Set(['email', 'phone_number', 'device_id']);
/**
 * Google Contacts joins the values of one field with ` ::: `, which no e-mail address or phone
 * number holds: a file whose columns hold such lists has them in any of its e-mail and phone columns.
 */
export const CONTACTS_SEPARATOR = ':::';
/** ` ::: ` first: its values may hold `,`. */
const LIST_SEPARATORS = [CONTACTS_SEPARATOR, ',', ';', '|'] as const;

const HEX64 = /^[0-9a-f]{64}$/i;
/**
 * An extension after the number, in the spellings the normalization drops (docs/normalization.md):
 * `x12`, `ext. 881`, `extension 5`, `#47`, `;ext=12`, `,12`, `- 503#`, `poste 12` (fr), `Durchwahl 12`
 * (de), `toestel 12` (nl), `wewn. 12` (pl), `anknytning 12` (sv), `interno 12` (es, it), `ramal 12`
 * (pt), `内線 12` (ja). Content detection must not call a column unclear for what the parser reads.
 */
const PHONE_EXTENSION =
  /\s*(?:(?:ext(?:ension|n)?|x|poste|durchwahl|dw|toestel|tst|wewn|anknytning|ank|interno|int|ramal|内線)\.?\s*:?|#|;\s*ext=|,|-\s*(?=\d{1,6}#$))\s*\d{1,6}#?$/i;
const PHONE_CHARS = /^\+?[\d\s().\-/]+$/;
const DATE_LIKE = /^(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})$/;
const DOTTED_QUAD = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/** An IPv4 address: four numbers up to 255 without leading zeros (`078.123.73.17` is a Swiss phone). */
function ipAddress(value: string): boolean {
  return DOTTED_QUAD.test(value) && value.split('.').every((n) => Number(n) <= 255 && !/^0\d/.test(n));
}

/**
 * Written like a phone number: digits with phone punctuation (6 to 17 digits), not a date or an
 * IP address; or a number as a spreadsheet writes it (`4915134117294.0`, `4,91512E+12`: read, or
 * rejected as `phone_lossy_number`, by the normalization; a column of them is a phone column).
 */
function phoneShaped(value: string): boolean {
  if (spreadsheetForm(value)) return true;
  const s = value.replace(PHONE_EXTENSION, '');
  if (!PHONE_CHARS.test(s) || DATE_LIKE.test(s) || ipAddress(s)) return false;
  const digits = s.replace(/\D/g, '').length;
  return digits >= 6 && digits <= 17;
}

/** A value that looks like one of `type` (lenient: it may still be rejected when normalized, with a reason). */
export function looksLike(type: IdentifierType, raw: string): boolean {
  const value = cleanValue(raw);
  if (type === 'partner_user_id') return value !== '';
  if (HEX64.test(value)) return true;
  switch (type) {
    case 'email':
      return value.includes('@');
    case 'phone_number':
      return phoneShaped(value);
    case 'device_id': {
      const n = normalizeIdentifier('device_id', value);
      return n.ok || n.reason === 'device_id_opt_out';
    }
    default:
      return normalizeIdentifier(type, value).ok;
  }
}

/**
 * A value that is clearly one of `type`: a valid email address, or a valid phone number written
 * as one (a `+`, or punctuation: a bare run of digits is as likely an id) for its row's country.
 */
export function clearlyIs(type: 'email' | 'phone_number', raw: string, country: string | undefined): boolean {
  const value = cleanValue(raw);
  if (type === 'email') return normalizeIdentifier('email', value).ok;
  if (!phoneShaped(value) || /^\d+$/.test(value)) return false;
  return normalizeIdentifier('phone_number', value, country === undefined ? {} : { country }).ok;
}

const nonEmpty = (cells: readonly string[]): number[] => cells.flatMap((c, i) => (cleanValue(c) === '' ? [] : [i]));

const partsOf = (cell: string, separator: string | undefined): string[] =>
  separator === undefined ? [cell] : cell.split(separator).filter((p) => cleanValue(p) !== '');

/**
 * The separator of a column whose cells clearly hold lists: some cells hold it, every cell that
 * does splits into values each clearly of `type`, and at least CONTENT_SHARE of all its cells
 * are such values or lists of them. Undefined otherwise (cells are then one value each).
 */
export function listSeparator(type: IdentifierType, values: ColumnValues): string | undefined {
  if (!LIST_TYPES.has(type)) return undefined;
  const filled = nonEmpty(values.cells);
  const strict = (part: string, i: number): boolean => {
    const country = values.countries[i];
    if (type === 'device_id') return looksLike('device_id', part);
    if (HEX64.test(cleanValue(part))) return true;
    return type === 'phone_number' ? phoneShaped(cleanValue(part)) : clearlyIs('email', part, country);
  };
  for (const separator of LIST_SEPARATORS) {
    const lists = filled.filter((i) => (values.cells[i] as string).includes(separator));
    if (lists.length === 0) continue;
    const good = (i: number): boolean => partsOf(values.cells[i] as string, separator).every((p) => strict(p, i));
    if (!lists.every(good)) continue;
    if (filled.filter(good).length >= CONTENT_SHARE * filled.length) return separator;
  }
  return undefined;
}

/**
 * Whether the values of a column named for `type` fit it: undefined when they do (or when the
 * sample holds fewer than MIN_CONTENT_VALUES, so the name alone decides and every value is
 * counted, rejected or not), otherwise the reason it is not used.
 */
export function misfit(type: IdentifierType, values: ColumnValues, separator: string | undefined): string | undefined {
  const filled = nonEmpty(values.cells);
  if (filled.length < MIN_CONTENT_VALUES) return undefined;
  const fits = filled.filter((i) => partsOf(values.cells[i] as string, separator).every((p) => looksLike(type, p)));
  if (fits.length >= FIT_SHARE * filled.length) return undefined;
  return `its values are not ${TYPE_RULES[type].noun} (${fits.length} of ${filled.length} sampled)`;
}

/** The type a column of unknown name clearly holds (emails or phone numbers, perhaps as lists), if any. */
export function contentType(
  values: ColumnValues,
  types: readonly IdentifierType[],
): { type: 'email' | 'phone_number'; separator?: string } | undefined {
  const filled = nonEmpty(values.cells);
  if (filled.length < MIN_CONTENT_VALUES) return undefined;
  for (const type of ['email', 'phone_number'] as const) {
    if (!types.includes(type)) continue;
    const separator = listSeparator(type, values);
    const clear = filled.filter((i) =>
      partsOf(values.cells[i] as string, separator).every((p) => clearlyIs(type, p, values.countries[i])),
    );
    if (clear.length >= CONTENT_SHARE * filled.length) return separator === undefined ? { type } : { type, separator };
  }
  return undefined;
}

/**
 * The type whose values a column's sampled cells look like without being clearly ones: at least
 * FIT_SHARE of its (at least MIN_CONTENT_VALUES) non-empty cells hold an `@`, or are written
 * like phone numbers with a `+` or punctuation (a bare run of digits is as likely an id).
 */
export function looksLikeContent(
  values: ColumnValues,
  types: readonly IdentifierType[],
): 'email' | 'phone_number' | undefined {
  const filled = nonEmpty(values.cells);
  if (filled.length < MIN_CONTENT_VALUES) return undefined;
  const share = (test: (value: string) => boolean): boolean =>
    filled.filter((i) => test(cleanValue(values.cells[i] as string))).length >= FIT_SHARE * filled.length;
  if (types.includes('email') && share((v) => v.includes('@'))) return 'email';
  if (types.includes('phone_number') && share((v) => phoneShaped(v) && !/^\d+$/.test(v))) return 'phone_number';
  return undefined;
}

/**
 * Why a phone column's numbers written without `+` may be national numbers whose leading 0 was
 * dropped (by a spreadsheet) rather than numbers starting with their calling code: `trunk`, some
 * of its values are written nationally with a leading 0 (`0151 48369370`, `(030) 1234567`);
 * `spreadsheet`, some are a spreadsheet's numbers (`….0`, scientific), and a spreadsheet drops a
 * leading 0 or `+`; `digits`, at least half of its values of bare digits are no valid number read
 * as starting with a calling code, or are read as a national number of their row's country.
 */
export type NationalEvidence = 'trunk' | 'spreadsheet' | 'digits';

const BARE_DIGITS = /^[1-9][0-9]{5,}$/;
const NUMBER_START = /[0-9+]/;

/** Written nationally after a trunk 0: the number's first digit is 0, not an international `00`. */
function trunkForm(value: string): boolean {
  const start = value.search(NUMBER_START);
  if (start < 0 || value.charCodeAt(start) !== 0x30) return false;
  const next = value.slice(start + 1).search(/[0-9]/);
  return next >= 0 && value.charCodeAt(start + 1 + next) !== 0x30;
}

/** Bare digits read as a national number: no valid number with a calling code, or its row's country reads them otherwise. */
function readsNationally(digits: string, country: string | undefined): boolean {
  const included = normalizeIdentifier('phone_number', digits, { countryCode: 'included' });
  if (!included.ok) return true;
  if (country === undefined) return false;
  const read = normalizeIdentifier('phone_number', digits, { country });
  return read.ok && read.value !== included.value;
}

/**
 * The evidence in a phone column's sampled values that it holds national numbers (see
 * NationalEvidence), or undefined: then its numbers without `+` in rows without a country are read
 * as starting with their calling code, as SMS tools and ad-platform templates write them.
 */
export function nationalEvidence(values: ColumnValues, separator: string | undefined): NationalEvidence | undefined {
  let bare = 0;
  let national = 0;
  let spreadsheet = false;
  for (const i of nonEmpty(values.cells)) {
    for (const part of partsOf(values.cells[i] as string, separator)) {
      const value = cleanValue(part);
      if (spreadsheetForm(value)) spreadsheet = true;
      else if (!phoneShaped(value)) continue;
      else if (trunkForm(value)) return 'trunk';
      else if (BARE_DIGITS.test(value)) {
        bare++;
        if (readsNationally(value, values.countries[i])) national++;
      }
    }
  }
  if (spreadsheet) return 'spreadsheet';
  return bare > 0 && 2 * national >= bare ? 'digits' : undefined;
}

/**
 * Whether a column's sampled values look like ids (one token each, mostly with digits or hex):
 * a generic id column is never sent, and a hint says how to map it when it should be.
 */
export function looksLikeIds(values: ColumnValues): boolean {
  const filled = nonEmpty(values.cells);
  if (filled.length === 0) return false;
  const ids = filled.filter((i) => /^[\w.:@+-]{1,256}$/.test(cleanValue(values.cells[i] as string)));
  return ids.length >= CONTENT_SHARE * filled.length;
}
