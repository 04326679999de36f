/**
 * Column mapping: which header columns feed which identifier type (and which gives the row's
 * country), detected by name or given explicitly.
 */
import { ConfigError, InputError } from '../errors.js';
import {
  CONSENT_MAP_TYPES,
  detectConsentColumns,
  mappedConsentProblem,
  opposedNameKind,
  type ConsentColumn,
} from './consent.js';
import {
  CONTACTS_SEPARATOR,
  MIN_CONTENT_VALUES,
  contentType,
  listSeparator,
  looksLikeContent,
  looksLikeIds,
  misfit,
  nationalEvidence,
  type ColumnValues,
  type NationalEvidence,
} from './content.js';
import { countryColumnShare, localeCountry } from './countries.js';
import {
  givenLabel,
  headerColumn,
  headerLabel,
  isPlaceholder,
  looksLikeData,
  quoteLabel,
  type HeaderColumn,
} from './labels.js';
import { IDENTIFIER_TYPES, type IdentifierType } from '../platform/users.js';
import { cleanValue, isEmailAddress } from '../platform/identifiers/rules.js';
import type { FieldValue, MappedRecord } from './types.js';
import { nameParts, splitWords, type WordClass } from './vocabulary/index.js';
import { AUTO_COLUMN_NAMES, GENERIC_ID_KEYS, GENERIC_ID_WORDS } from './vocabulary/names.js';

/** A header name as compared: lowercase letters and digits only (accents dropped). */
export function columnKey(name: string): string {
  return name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '');
}

const AUTO_KEYS = new Map<string, IdentifierType | 'country'>(
  Object.entries(AUTO_COLUMN_NAMES).flatMap(([type, names]) =>
    names.map((n) => [columnKey(n), type as IdentifierType | 'country'] as const),
  ),
);

/**
 * A header name's words, folded (lowercase, accents dropped): split on spaces, punctuation,
 * camelCase, between letters and digits and between Latin and Japanese script (`userId` -> user,
 * id; `E-Mail-Adresse` -> email, adresse). See vocabulary/index.ts.
 */
export function nameWords(name: string): string[] {
  return splitWords(name);
}

/** What a header name's words say (vocabulary/index.ts: ten languages, compounds split). */
interface NameInfo {
  /** The identifier types its words name. */
  ids: Set<'email' | 'phone_number'>;
  /** The classes of its words. */
  has: Set<WordClass | undefined>;
  /** Its first word saying the value is someone else's (fax, assistant, company…). */
  someoneElse?: string;
  /**
   * Its first word that is neither an identifier word, nor the person's own, numbering or a
   * pair's value word (`Mother Email`: mother): it may name someone else. Unset for a name that
   * is one unknown word (a header in a language whose words are not known).
   */
  qualifier?: string;
}

function nameInfo(column: string): NameInfo {
  const parts = nameParts(column);
  const info: NameInfo = { ids: new Set(), has: new Set() };
  for (const { word, cls } of parts) {
    info.has.add(cls);
    if (cls === 'email') info.ids.add('email');
    else if (cls === 'phone') info.ids.add('phone_number');
    else if (cls === 'someoneElse') info.someoneElse ??= word;
    else if (cls === 'line') {
      info.someoneElse ??= word;
      info.ids.add('phone_number');
    } else if (cls !== 'own' && cls !== 'pairValue' && !(parts.length === 1 && cls === undefined))
      info.qualifier ??= word;
  }
  return info;
}

/** Whether a header name says country, region or locale in one of the known languages (`Land`, `Pays`, `Locale`). */
export function isCountryLikeName(column: string): boolean {
  if (AUTO_KEYS.get(columnKey(column)) === 'country') return true;
  const info = nameInfo(column);
  return (
    info.ids.size === 0 &&
    (info.has.has('country') || info.has.has('locale') || /^(?:cc|region)$/.test(columnKey(column)))
  );
}

/**
 * Whether a header cell is a known column name: a whole name of AUTO_COLUMN_NAMES, or a name
 * with an identifier or country word of one of the known languages (`E-Mail-Adresse`, `電話番号`,
 * `Pays`). Used to tell a header line from the notes above it.
 */
export function isKnownColumnName(cell: string): boolean {
  if (AUTO_KEYS.has(columnKey(cell))) return true;
  if (looksLikeData(cell)) return false;
  const info = nameInfo(cell);
  return info.ids.size > 0 || info.has.has('country');
}

export interface MappedColumn extends HeaderColumn {
  type: IdentifierType;
  /** Named by a `map` entry (otherwise detected by its name or, with `content`, by its values). */
  mapped?: true;
  /** Detected by its values: its name is not a known one. */
  content?: true;
  /** Its cells hold lists split on this separator (seen in the sample; no valueSeparator given). */
  separator?: string;
  /**
   * A paired layout's type column (`Phone 1 - Type` for `Phone 1 - Value`): per row, a type cell
   * saying someone else's (fax, assistant, company…) keeps the value from being sent.
   */
  typeIndex?: number;
  typeColumn?: string;
  typeLabel?: string;
  /**
   * A phone column whose sampled values show national numbers, and how: in a row without a
   * country, its digits without `+` are not read as starting with a calling code
   * (`phone_maybe_national`), since each may be a national number that lost its leading 0.
   */
  national?: NationalEvidence;
}

/** A mapped column's cell as buildUser takes it (with the column's list separator). */
export function fieldOf(c: MappedColumn, raw: string): FieldValue {
  const field: FieldValue = { column: c.label, type: c.type, raw };
  if (c.separator !== undefined) field.separator = c.separator;
  if (c.typeIndex !== undefined) field.kind = '';
  if (c.national !== undefined) field.national = true;
  return field;
}

/** A row's country cell (a locale column's region; nothing for a language alone), or undefined. */
export function countryCell(country: ColumnMapping['country'], fields: readonly string[]): string | undefined {
  if (country === undefined) return undefined;
  const cell = fields[country.index];
  return cell !== undefined && country.locale === true ? localeCountry(cell) : cell;
}

/**
 * The header columns a mapping reads from each row: its identifier columns (and paired layouts'
 * type columns), consent columns and country column. The others are `ignored`, and the hashing
 * workers do not cut them out of the rows.
 */
export function readColumns(mapping: {
  columns: readonly MappedColumn[];
  consent?: readonly ConsentColumn[] | undefined;
  country?: CountryColumn | undefined;
}): Set<number> {
  const read = new Set<number>();
  for (const c of mapping.columns) {
    read.add(c.index);
    if (c.typeIndex !== undefined) read.add(c.typeIndex);
  }
  for (const c of mapping.consent ?? []) read.add(c.index);
  if (mapping.country !== undefined) read.add(mapping.country.index);
  return read;
}

/** The mapped fields of one row of `fields` (header order) as buildUser's input. */
export function mapRecord(fields: readonly string[], mapping: ColumnMapping, line: number): MappedRecord {
  const values: FieldValue[] = [];
  for (const c of mapping.columns) {
    const field = fieldOf(c, fields[c.index] ?? '');
    if (c.typeIndex !== undefined) field.kind = fields[c.typeIndex] ?? '';
    values.push(field);
  }
  const record: MappedRecord = { line, fields: values };
  const country = countryCell(mapping.country, fields);
  if (country !== undefined && country !== '') record.country = country;
  return record;
}

/** A column a name or its values suggested, left out: the reason in words (never a value). */
export interface NotUsedColumn extends HeaderColumn {
  reason: string;
  /** A generic id column whose sampled values look like ids (a hint says how to map it). */
  idLike?: true;
  /** The type its name says, when its values did not fit it (a hint says how to read it anyway). */
  misfit?: IdentifierType;
  /**
   * The type a column of unknown name may hold, not read by content: its name has a word that
   * may name someone else, or its sampled values are too few or unclear (a hint gives the --map).
   */
  unread?: 'email' | 'phone_number';
  /** Of unknown name, with values such as accepted / rejected: may record consent (a hint gives the --map). */
  maybeConsent?: true;
}

export const UNDECIDED_CONSENT = 'its values (accepted, rejected…) may be consent or the status of something else';

export interface ColumnMapping {
  /** Identifier columns in header order; several may feed one type. */
  columns: MappedColumn[];
  /**
   * `mapped`: named by a `map` entry `country=` or `countryColumn` (otherwise detected by its
   * name, or with `content` by its values); `locale`: its cells are locales (`en_GB`: GB; `fr`,
   * a language alone, gives no country).
   */
  country?: CountryColumn;
  /** Whether some identifier columns were detected (false: all come from `map`). */
  auto: boolean;
  /** The labels of the header columns that feed nothing (the `notUsed` ones included). */
  ignored: string[];
  /** Columns left out although a name or values suggested a type, with the reason (header order). */
  notUsed?: NotUsedColumn[];
  /** Consent and opt-out columns (consent.ts), never identifier columns (header order). */
  consent?: ConsentColumn[];
}

export interface CountryColumn extends HeaderColumn {
  mapped?: true;
  content?: true;
  locale?: true;
}

export interface MappingOptions {
  /**
   * `type=Column Name` entries (`country=Column` too). A type named here takes exactly the
   * columns named for it; the other types are still detected (see onlyMapped).
   */
  map?: readonly string[];
  /** Only the `map` entries (and countryColumn): nothing is detected by name or content. */
  onlyMapped?: boolean;
  /** The column holding each row's country (ISO 3166 alpha-2) for phone numbers. */
  countryColumn?: string;
  /**
   * The identifier types the target takes (default: all). Detected columns of other types are
   * left out (listed as ignored); a `map` entry naming one is an error.
   */
  types?: readonly IdentifierType[];
  /** The country of sampled phone numbers whose row has none (as NormalizeOptions.defaultCountry). */
  defaultCountry?: string;
  /** A separator given for every cell: lists are then not looked for in the sample. */
  valueSeparator?: string;
  /**
   * partner_user_id columns may hold e-mail addresses (partner ids written as addresses). Without
   * it, a partner_user_id column with an address among its sampled values is refused: it is sent
   * unhashed, and a column of the customers' addresses mapped by mistake would send them raw.
   */
  partnerIdsMayBeEmails?: boolean;
}

/** The first data rows, each with one cell per header column (shorter rows are padded with ''). */
export type SampleRows = readonly (readonly string[])[];

const columnList = (header: readonly string[]): string =>
  header.map((h, i) => quoteLabel(headerLabel(h, i))).join(', ');

/**
 * A header that names no known column while some of its cells look like values is the first
 * data row of a file without a header: say so rather than "no such column".
 */
function checkHeaderRow(header: readonly string[]): void {
  if (header.some((h) => AUTO_KEYS.has(columnKey(h))) || !header.some(looksLikeData)) return;
  throw new InputError('input_no_header', 'the first row looks like data; a header row is required', {
    fix: 'add a first line naming the columns (for example: email,phone,country), then map them with a map entry type=Column if their names are not detected',
  });
}

function findColumn(header: readonly string[], name: string, option: string): number {
  const exact = header.indexOf(name);
  if (exact !== -1) return exact;
  const key = columnKey(name);
  const loose = header.flatMap((h, i) => (columnKey(h) === key ? [i] : []));
  if (loose.length === 1) return loose[0] as number;
  checkHeaderRow(header);
  throw new ConfigError('mapping_unknown_column', `${option}: no column ${givenLabel(name)} in the header`, {
    fix: `use one of the columns: ${columnList(header)}`,
  });
}

/**
 * Records (hashRecords): every `map` entry and countryColumn must name a key that the first
 * records have (compared as header names are); otherwise ConfigError naming the keys there are.
 */
export function checkNamedKeys(keys: readonly string[], opts: MappingOptions): void {
  const named: [string, string][] = (opts.map ?? []).map((e) => [
    `map entry ${givenLabel(e, false)}`,
    e.slice(e.indexOf('=') + 1).trim(),
  ]);
  if (opts.countryColumn !== undefined) named.push(['countryColumn', opts.countryColumn]);
  for (const [option, key] of named) {
    if (key === '' || keys.includes(key) || keys.some((k) => columnKey(k) === columnKey(key))) continue;
    throw new ConfigError(
      'mapping_unknown_column',
      `${option}: none of the first records has the key ${givenLabel(key)}`,
      {
        fix: `name one of the keys the records have: ${columnList(keys)}`,
      },
    );
  }
}

interface MapEntries {
  columns: MappedColumn[];
  consent: ConsentColumn[];
  country?: CountryColumn & { mapped: true };
}

/** The types a `map` entry may name. */
const MAP_TYPES = [...IDENTIFIER_TYPES, 'country', ...CONSENT_MAP_TYPES.keys()];

/** Parse and check the `map` entries against the header. */
function parseMapEntries(header: readonly string[], opts: MappingOptions): MapEntries {
  const out: MapEntries = { columns: [], consent: [] };
  for (const entry of opts.map ?? []) {
    const eq = entry.indexOf('=');
    const typeName = entry.slice(0, eq).trim().toLowerCase();
    const column = entry.slice(eq + 1).trim();
    if (eq === -1 || column === '') {
      throw new ConfigError('mapping_invalid', `map entry ${givenLabel(entry)} is not type=Column Name`, {
        fix: 'write each map entry as type=Column Name, for example email=E-mail Address (one entry per column)',
      });
    }
    if (typeName === 'country') {
      const index = findColumn(header, column, `map entry ${givenLabel(entry, false)}`);
      out.country = { ...headerColumn(header, index), mapped: true };
      continue;
    }
    const kind = CONSENT_MAP_TYPES.get(typeName);
    if (kind !== undefined) {
      const index = findColumn(header, column, `map entry ${givenLabel(entry, false)}`);
      const before = out.consent.find((c) => c.index === index);
      if (before !== undefined && before.kind !== kind)
        throw new ConfigError(
          'mapping_invalid',
          `map entries name the column ${quoteLabel(before.label)} as two kinds of consent column`,
          {
            fix: 'map a consent column once: opt_out, opt_in or consent_status',
          },
        );
      if (before === undefined) out.consent.push({ ...headerColumn(header, index), kind, mapped: true });
      continue;
    }
    if (!(IDENTIFIER_TYPES as readonly string[]).includes(typeName)) {
      throw new ConfigError(
        'mapping_unknown_type',
        `map entry ${givenLabel(entry)}: unknown identifier type ${givenLabel(typeName)}`,
        {
          fix: `use one of: ${MAP_TYPES.join(', ')}`,
        },
      );
    }
    const type = typeName as IdentifierType;
    if (opts.types !== undefined && !opts.types.includes(type)) {
      throw new ConfigError(
        'mapping_type_not_taken',
        `map entry ${givenLabel(entry)}: this target does not take ${typeName} identifiers`,
        { fix: `map only ${opts.types.join(' and ')} columns for this target` },
      );
    }
    const index = findColumn(header, column, `map entry ${givenLabel(entry, false)}`);
    if (!out.columns.some((c) => c.index === index && c.type === type))
      out.columns.push({ ...headerColumn(header, index), type, mapped: true });
  }
  const both = out.consent.find((c) => out.columns.some((m) => m.index === c.index) || c.index === out.country?.index);
  if (both !== undefined)
    throw new ConfigError(
      'mapping_invalid',
      `map entries name the column ${quoteLabel(both.label)} both as consent and as another type`,
      {
        fix: 'map each column once: a consent or opt-out column is never an identifier or country column',
      },
    );
  return out;
}

/** The sampled cells of column `index`, each with its row's country. */
function columnValues(sample: SampleRows, index: number, countryIndex: number | undefined, opts: MappingOptions) {
  const cells = sample.map((row) => row[index] ?? '');
  const countries = sample.map((row) => {
    const own = countryIndex === undefined ? undefined : row[countryIndex]?.trim();
    return own !== undefined && own !== '' ? own : opts.defaultCountry;
  });
  return { cells, countries };
}

type NameVerdict =
  | { type: IdentifierType }
  | { someoneElse: string; type?: IdentifierType }
  | { id: true }
  | { pairType: true }
  | undefined;

/**
 * What a column's name says: a known type (a whole known name, or identifier words with words
 * of the person's own: `Telefon geschäftlich`, `Phone 1 - Value`), someone else's value, a
 * generic id, a paired layout's type column, or nothing (then its values may tell).
 */
function nameVerdict(column: string): NameVerdict {
  const known = AUTO_KEYS.get(columnKey(column));
  const type = known === 'country' ? undefined : known;
  const info = nameInfo(column);
  if (info.someoneElse !== undefined) {
    // A type for the printout: the column reads as an identifier's, and is left out with the reason.
    const named = type ?? [...info.ids][0];
    return named === undefined ? { someoneElse: info.someoneElse } : { someoneElse: info.someoneElse, type: named };
  }
  if (type !== undefined) return { type };
  const last = splitWords(column).at(-1);
  if ((last !== undefined && GENERIC_ID_WORDS.has(last)) || GENERIC_ID_KEYS.has(columnKey(column))) return { id: true };
  if (info.has.has('pairType')) return { pairType: true };
  const [only, other] = info.ids;
  if (only !== undefined && other === undefined && info.qualifier === undefined) return { type: only };
  return undefined;
}

interface Detection {
  columns: MappedColumn[];
  notUsed: NotUsedColumn[];
}

/**
 * Detect the identifier columns of `header` not named by `map`: by name when the sampled values
 * fit the type, by content when the name is unknown and the values are clearly emails or phones.
 */
function detectColumns(
  header: readonly string[],
  opts: MappingOptions,
  sample: SampleRows,
  skip: (index: number) => boolean,
  countryIndex: number | undefined,
  types: readonly IdentifierType[],
): Detection {
  const out: Detection = { columns: [], notUsed: [] };
  header.forEach((column, index) => {
    if (skip(index) || index === countryIndex) return;
    const at = headerColumn(header, index);
    const values = columnValues(sample, index, countryIndex, opts);
    const verdict = nameVerdict(column);
    if (verdict !== undefined && 'id' in verdict) {
      const reason = 'a generic id column: sent only with --map (see docs/cli.md)';
      out.notUsed.push({ ...at, reason, ...(looksLikeIds(values) ? { idLike: true as const } : {}) });
      return;
    }
    if (verdict !== undefined && 'pairType' in verdict) return; // paired with its value column below
    if (verdict !== undefined && 'someoneElse' in verdict) {
      const typed = verdict.type ?? contentType(values, types)?.type ?? looksLikeContent(values, types);
      if (typed !== undefined)
        out.notUsed.push({ ...at, reason: `not the person's own (the name says "${verdict.someoneElse}")` });
      return;
    }
    if (verdict !== undefined) {
      if (!types.includes(verdict.type)) return;
      const separator = opts.valueSeparator === undefined ? listSeparator(verdict.type, values) : undefined;
      const reason = misfit(verdict.type, values, separator);
      if (reason !== undefined) out.notUsed.push({ ...at, reason, misfit: verdict.type });
      else out.columns.push({ ...at, type: verdict.type, ...(separator === undefined ? {} : { separator }) });
      return;
    }
    if (looksLikeData(column)) return;
    const found = byContent(column, values, opts.valueSeparator === undefined ? types : [], types);
    if (found !== undefined && 'type' in found) out.columns.push({ ...at, content: true, ...found });
    else if (found !== undefined) out.notUsed.push({ ...at, ...found });
  });
  return out;
}

/**
 * A column of unknown name: read by content (its type and list separator) when its name has no
 * qualifier word that may name someone else and its values are clearly emails or phones; left out
 * with the reason when its name or values suggest one of them; undefined otherwise.
 */
function byContent(
  column: string,
  values: ColumnValues,
  contentTypes: readonly IdentifierType[],
  types: readonly IdentifierType[],
): ReturnType<typeof contentType> | Omit<NotUsedColumn, keyof HeaderColumn> | undefined {
  if (contentTypes.length === 0) return undefined; // --value-separator: nothing is read by content
  const found = contentType(values, contentTypes);
  const info = nameInfo(column);
  const named = [...info.ids].find((t) => types.includes(t));
  // A name without identifier words whose values look like emails or phones without being clearly
  // ones is said too: a column of phones is never dropped without a word.
  const type = found?.type ?? named ?? looksLikeContent(values, contentTypes);
  if (type === undefined) return undefined;
  const qualifier = info.qualifier;
  if (qualifier === undefined && found !== undefined) return found;
  const filled = values.cells.filter((c) => cleanValue(c) !== '').length;
  const reason =
    qualifier !== undefined
      ? `not read by content: the word "${qualifier}" in its name may say it is someone else's`
      : filled < MIN_CONTENT_VALUES
        ? `not read by content: ${filled} value${filled === 1 ? '' : 's'} in the first rows, too few to tell`
        : `not read by content: its values are not clearly ${type === 'email' ? 'email addresses' : "phone numbers (valid for their row's country or written with +)"}`;
  return { reason, unread: type };
}

/**
 * The country column: the one named by `map` or countryColumn, otherwise detected by a whole
 * known name, by its words (a country or locale word of a known language, no identifier,
 * someone-else or subdivision word: `Business Country/Region`, `Pays`, `国`, `Locale`) when its
 * sampled values fit, otherwise by its values alone (countryByContent).
 */
function countryColumn(
  header: readonly string[],
  opts: MappingOptions,
  explicit: MapEntries,
  sample: SampleRows,
): CountryColumn | undefined {
  if (opts.countryColumn !== undefined) {
    const index = findColumn(header, opts.countryColumn, 'countryColumn');
    return { ...headerColumn(header, index), mapped: true };
  }
  if (explicit.country !== undefined || opts.onlyMapped === true) return explicit.country;
  const free = (i: number): boolean => !explicit.columns.some((c) => c.index === i);
  const index = header.findIndex((h, i) => AUTO_KEYS.get(columnKey(h)) === 'country' && free(i));
  if (index !== -1) return headerColumn(header, index);
  return countryByWords(header, sample, free) ?? countryByContent(header, sample, free);
}

/** Whether a name's words exclude it from holding the row's country (identifiers, someone else's, a subdivision). */
const notCountryName = (info: NameInfo): boolean =>
  info.ids.size > 0 || info.someoneElse !== undefined || info.has.has('subdivision') || info.has.has('pairType');

const cellsOf = (sample: SampleRows, index: number): string[] => sample.map((row) => row[index] ?? '');

/** The named country or locale column whose sampled values fit best (at least FIT_SHARE; any with too few values). */
function countryByWords(header: readonly string[], sample: SampleRows, free: (i: number) => boolean) {
  let best: { column: CountryColumn; share: number } | undefined;
  header.forEach((column, index) => {
    const info = nameInfo(column);
    const locale = info.has.has('locale');
    if (!free(index) || notCountryName(info) || (!locale && !info.has.has('country'))) return;
    const { share, filled } = countryColumnShare(cellsOf(sample, index), locale ? 'locale' : 'name');
    const fits = filled < MIN_CONTENT_VALUES ? info.qualifier === undefined : share >= COUNTRY_FIT_SHARE;
    if (!fits || (best !== undefined && share <= best.share)) return;
    best = { column: { ...headerColumn(header, index), ...(locale ? { locale: true as const } : {}) }, share };
  });
  return best?.column;
}

/** Share of a named country column's sampled values that must be countries (or locales). */
const COUNTRY_FIT_SHARE = 0.5;
/** Share of a column's sampled values that must be countries for a column of unknown name. */
const COUNTRY_CONTENT_SHARE = 0.9;

/**
 * A column of any other name whose sampled values are countries (alpha-2 codes in capitals,
 * alpha-3 codes, names in a known language) or locales (`en_GB`, `de-DE`), at least
 * COUNTRY_CONTENT_SHARE of at least MIN_CONTENT_VALUES: the first such column.
 */
function countryByContent(
  header: readonly string[],
  sample: SampleRows,
  free: (i: number) => boolean,
): CountryColumn | undefined {
  for (let index = 0; index < header.length; index++) {
    const column = header[index] as string;
    if (!free(index) || looksLikeData(column) || notCountryName(nameInfo(column))) continue;
    const { share, filled, locales } = countryColumnShare(cellsOf(sample, index), 'content');
    if (filled < MIN_CONTENT_VALUES || share < COUNTRY_CONTENT_SHARE) continue;
    return { ...headerColumn(header, index), content: true, ...(locales ? { locale: true as const } : {}) };
  }
  return undefined;
}

/** A `map` column whose sampled cells clearly hold lists gets their separator. */
function withListSeparator(c: MappedColumn, sample: SampleRows, opts: MappingOptions, country?: number): MappedColumn {
  if (opts.valueSeparator !== undefined) return c;
  const separator = listSeparator(c.type, columnValues(sample, c.index, country, opts));
  return separator === undefined ? c : { ...c, separator };
}

/**
 * The e-mail and phone columns of a file where some column's sampled cells hold lists joined by
 * ` ::: ` (Google Contacts): each is split on it, also when its own sampled cells held no list.
 */
function withContactsSeparator(columns: MappedColumn[], opts: MappingOptions): MappedColumn[] {
  if (opts.valueSeparator !== undefined || !columns.some((c) => c.separator === CONTACTS_SEPARATOR)) return columns;
  return columns.map((c) =>
    c.separator === undefined && (c.type === 'email' || c.type === 'phone_number')
      ? { ...c, separator: CONTACTS_SEPARATOR }
      : c,
  );
}

/** The columns in header order, with what the file's sampled values say of how to read them. */
function readAs(columns: MappedColumn[], sample: SampleRows, opts: MappingOptions, country?: number): MappedColumn[] {
  return withContactsSeparator(columns, opts)
    .map((c) => withNationalEvidence(c, sample, opts, country))
    .sort((a, b) => a.index - b.index);
}

/** A phone column with the evidence of its sampled values that it holds national numbers (see MappedColumn.national). */
function withNationalEvidence(c: MappedColumn, sample: SampleRows, opts: MappingOptions, country?: number) {
  if (c.type !== 'phone_number') return c;
  const national = nationalEvidence(columnValues(sample, c.index, country, opts), c.separator ?? opts.valueSeparator);
  return national === undefined ? c : { ...c, national };
}

/**
 * Decide which columns feed which identifier type. Each type named by a `map` entry takes the
 * columns named for it; every other type (all of them without `map`) takes, unless `onlyMapped`,
 * the columns whose names are in AUTO_COLUMN_NAMES and whose values in `sample` (the first data
 * rows) fit the type, and the columns of unknown name whose sampled values are clearly emails or
 * phone numbers. Someone else's columns and generic ids are left out (`notUsed`, with the
 * reason). A column named by `map` is not detected for another type. The country column is the
 * one named by a `map` entry `country=` or `countryColumn`, otherwise detected by name (not with
 * `onlyMapped`). Throws ConfigError for unknown types or columns and when no identifier column
 * results, InputError when the header row is missing (the first row looks like data).
 */
export function resolveMapping(
  header: readonly string[],
  opts: MappingOptions = {},
  sample: SampleRows = [],
): ColumnMapping {
  if (opts.onlyMapped === true && (opts.map ?? []).length === 0) {
    throw new ConfigError('mapping_invalid', 'onlyMapped needs at least one map entry type=Column', {
      fix: 'add map entries for the columns to use, or drop onlyMapped to detect columns by name',
    });
  }
  const explicit = parseMapEntries(header, opts);
  // Without map entries naming header cells, a first row that looks like data is no header: read
  // by content, its values would become column names and the row would silently go unsent.
  if (explicit.columns.length === 0 && explicit.country === undefined && explicit.consent.length === 0)
    checkHeaderRow(header);
  const country = countryColumn(header, opts, explicit, sample);
  const columns = explicit.columns.map((c) => withListSeparator(c, sample, opts, country?.index));
  const namedTypes = new Set(columns.map((c) => c.type));
  const types = (opts.types ?? IDENTIFIER_TYPES).filter((t) => !namedTypes.has(t));
  checkMappedConsent(explicit.consent, sample);
  const mappedConsent = (i: number): boolean => explicit.consent.some((c) => c.index === i);
  const named = (i: number): boolean => columns.some((c) => c.index === i) || i === country?.index;
  // Consent columns are found whatever onlyMapped says: a row that says no is never sent unread.
  const detected = detectConsentColumns(header, sample, (i) => named(i) || mappedConsent(i));
  const consent = [...explicit.consent, ...detected.columns].sort((a, b) => a.index - b.index);
  let notUsed: NotUsedColumn[] = [];
  if (opts.onlyMapped !== true) {
    const taken = (i: number): boolean => named(i) || consent.some((c) => c.index === i);
    const found = detectColumns(header, opts, sample, taken, country?.index, types);
    columns.push(...pairTypeColumns(header, found.columns, taken));
    notUsed = found.notUsed;
  }
  if (columns.length === 0) noIdentifierColumn(header, opts, notUsed);
  for (const c of detected.undecided) {
    if (columns.some((m) => m.index === c.index) || c.index === country?.index) continue;
    // Left out already for its name: listed once, with that reason, and still hinted at as consent.
    const listed = notUsed.find((n) => n.index === c.index);
    if (listed !== undefined) listed.maybeConsent = true;
    else notUsed.push({ ...c, reason: UNDECIDED_CONSENT, maybeConsent: true });
  }
  const read = readAs(columns, sample, opts, country?.index);
  if (opts.partnerIdsMayBeEmails !== true) refuseEmailPartnerIds(read, sample);
  const used = readColumns({ columns: read, consent, country });
  const mapping: ColumnMapping = {
    columns: read,
    auto: read.some((c) => c.mapped !== true),
    ignored: header.flatMap((h, i) => (used.has(i) ? [] : [headerLabel(h, i)])),
  };
  if (notUsed.length > 0) mapping.notUsed = notUsed;
  if (consent.length > 0) mapping.consent = consent;
  if (country !== undefined) mapping.country = country;
  return mapping;
}

/** A name's words without a paired layout's type or value words (`Phone 1 - Type` and `Phone 1 - Value`: phone 1). */
function pairKey(column: string, drop: WordClass): string {
  return nameParts(column)
    .filter((p) => p.cls !== drop)
    .map((p) => p.word)
    .join(' ');
}

/**
 * Detected columns of a paired layout, each with its type column: `Phone 1 - Value` (or
 * `Phone 1`) and `Phone 1 - Type` (`E-mail 2 - Type`, `Telefon 1 - Typ`, `電話 1 種類`).
 */
function pairTypeColumns(header: readonly string[], found: MappedColumn[], taken: (i: number) => boolean) {
  const types = new Map<string, number>();
  header.forEach((column, index) => {
    if (!taken(index) && nameInfo(column).has.has('pairType')) types.set(pairKey(column, 'pairType'), index);
  });
  if (types.size === 0) return found;
  return found.map((c) => {
    const typeIndex = types.get(pairKey(c.column, 'pairValue'));
    if (typeIndex === undefined) return c;
    const type = headerColumn(header, typeIndex);
    return { ...c, typeIndex, typeColumn: type.column, typeLabel: type.label };
  });
}

/**
 * A consent map entry whose column's first values it cannot read is refused (mappedConsentProblem),
 * naming the column, never a value. One against the column's name is taken, and marked (nameKind).
 */
function checkMappedConsent(consent: ConsentColumn[], sample: SampleRows): void {
  for (const c of consent) {
    const opposed = opposedNameKind(c.column, c.kind);
    if (opposed !== undefined) c.nameKind = opposed;
    const why = mappedConsentProblem(
      c.kind,
      sample.map((row) => row[c.index] ?? ''),
    );
    if (why === undefined) continue;
    const entry = [...CONSENT_MAP_TYPES].find(([, k]) => k === c.kind)?.[0] ?? '';
    throw new ConfigError('mapping_invalid', `map entry ${entry}=${quoteLabel(c.label)}: ${why}`, {
      fix: 'map it as the kind its values say: opt_out (true, yes or a date = no), opt_in (true = yes, false = no) or consent_status (subscribed, unsubscribed…)',
    });
  }
}

/**
 * A partner_user_id column (sent unhashed) whose sampled values include e-mail addresses: the
 * customers' addresses mapped by mistake would leave the process raw. Refused before any row is
 * read, naming the column and how many, never a value.
 */
function refuseEmailPartnerIds(columns: readonly MappedColumn[], sample: SampleRows): void {
  for (const c of columns) {
    if (c.type !== 'partner_user_id') continue;
    const cells = sample.map((row) => cleanValue(row[c.index] ?? '')).filter((v) => v !== '');
    const emails = cells.filter(isEmailAddress).length;
    if (emails === 0) continue;
    throw new ConfigError(
      'mapping_partner_ids_emails',
      `the column ${quoteLabel(c.label)} is read as partner_user_id, which is sent unhashed, and ${emails} of its first ${cells.length} values are e-mail addresses`,
      {
        fix: `if it holds the customers' addresses, ${mapFix(c)}, which hashes them; if these are partner ids from ID Sync written as addresses, pass partnerIdsMayBeEmails`,
      },
    );
  }
}

/** `map entry email=Column`, or the column's position when its header cell looks like data. */
const mapFix = (c: HeaderColumn): string =>
  isPlaceholder(c.label)
    ? `map column ${c.index + 1} as email`
    : `map it as email (map entry email=${JSON.stringify(c.label)})`;

function noIdentifierColumn(header: readonly string[], opts: MappingOptions, notUsed: NotUsedColumn[]): never {
  checkHeaderRow(header);
  // The cells are not listed: with no known column name, this "header" may well be a data row.
  const left =
    notUsed.length === 0 ? '' : `; left out: ${notUsed.map((c) => `${quoteLabel(c.label)} (${c.reason})`).join(', ')}`;
  throw new ConfigError(
    'mapping_no_identifier_column',
    `none of the ${header.length} header columns has a known identifier name or values that are clearly emails or phone numbers${left}`,
    {
      fix: `name them with a map entry type="Column Name" (types: ${(opts.types ?? IDENTIFIER_TYPES).join(', ')}), or check that the first line is the header`,
    },
  );
}
