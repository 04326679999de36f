/**
 * Column mapping: which header columns feed which identifier type (and which gives the row's
 * country), detected by name or given explicitly.
 */
import { ConfigError, InputError } from '../errors.js';
import { MIN_CONTENT_VALUES, contentType, listSeparator, looksLikeIds, misfit, type ColumnValues } from './content.js';
import {
  IDENTIFIER_TYPES,
  cleanValue,
  normalizeDeviceId,
  type FieldValue,
  type IdentifierType,
  type MappedRecord,
} from './normalize.js';

/**
 * Header names recognized without a `map` entry, compared on their letters and digits only (case,
 * spaces and punctuation ignored: `Country/Region`, `country_region` and `COUNTRY REGION` are one
 * name). They cover the exports of the common CRMs and shops and the customer-list templates of
 * the large ad platforms (fixtures/exports/ holds one sample of each); docs/cli.md lists them.
 * A column found here is used only when its sampled values fit the type (content.ts). Names that
 * say the value is someone else's (SOMEONE_ELSE) and generic ids (`user_id`, `id`, `username`)
 * are never used without `map`: `service_id` and `handle` come only from names that name this
 * platform, `partner_user_id` only from its own name.
 */
export const AUTO_COLUMN_NAMES: Readonly<Record<IdentifierType | 'country', readonly string[]>> = {
  email: [
    'email',
    'e-mail',
    'email_address',
    'e-mail address',
    'emails',
    'work_email',
    'personal_email',
    'primary email',
    'additional email addresses',
    'secondary email',
    'billing email',
    'user_email',
    'person - email',
    'person - email - work',
    'person - email - home',
    'person - email - other',
  ],
  phone_number: [
    'phone',
    'phone_number',
    'phone numbers',
    'telephone',
    'telephone number',
    'mobile',
    'mobile_phone',
    'mobile_number',
    'mobile phone number',
    'cell_phone',
    'cell',
    'msisdn',
    'sms phone number',
    'default address phone',
    'billing phone',
    'shipping phone',
    'sms',
    'whatsapp',
    'landline_number',
    'home phone',
    'other phone',
    'person - phone',
    'person - phone - work',
    'person - phone - home',
    'person - phone - mobile',
    'person - phone - other',
  ],
  handle: ['twitter_handle', 'twitter', 'twitter_username', 'twitter_screen_name', 'x_handle', 'x_username'],
  device_id: [
    'device_id',
    'device_ids',
    'mobile device id',
    'madid',
    'idfa',
    'idfas',
    'adid',
    'gaid',
    'maid',
    'aaid',
    'ifa',
    'android_id',
    'advertising_id',
    'advertising_ids',
    'mobile advertising id',
    'mobile_ad_id',
    'google_aid',
    'google_ad_id',
    'google_ad_ids',
    'apple_idfa',
  ],
  // The platform's docs and SDKs call its user id `twitter_id`; exports name it after the platform too.
  service_id: ['service_id', 'twitter_id', 'twitter_user_id', 'x_id', 'x_user_id'],
  // Sent unhashed, and matches only after the platform's ID Sync with a partner: its own name only.
  partner_user_id: ['partner_user_id', 'p_user_id'],
  country: [
    'country',
    'country_code',
    'cc',
    'country/region',
    'country name',
    'mailing country',
    'mailing country code',
    'billing country',
    'billing country code',
    'default address country code',
    'default address country',
    'shipping country',
    'shipping country code',
    'address country',
    'shipping address country',
    'country of postal address',
    'person - country of postal address',
  ],
};

/**
 * Words in a column name saying its value belongs to someone other than the row's person (a
 * colleague, the company, a referrer): such a column is never used without `map`, whatever it holds.
 */
export const SOMEONE_ELSE: readonly string[] = [
  'owner',
  'assistant',
  'asst',
  'rep',
  'representative',
  'salesperson',
  'agent',
  'manager',
  'company',
  'fax',
  'referrer',
  'referral',
  'by',
];

/** Words naming a contact identifier: a column of someone else's with one of these is listed with its reason. */
const CONTACT_WORDS: ReadonlySet<string> = new Set([
  'email',
  'mail',
  'phone',
  'mobile',
  'cell',
  'fax',
  'sms',
  'telephone',
  'tel',
]);

/**
 * Content detection reads a column of unknown name only when its name says nothing of whose the
 * value is: its words are identifier words (CONTENT_ID_WORDS), words meaning the person's own
 * (OWN_WORDS), numbering, or it is one word (a header in another language). Any other word
 * (`Mother Email`, `Emergency Contact Phone`, `Recipient Email`) may name someone else: the column
 * is left out, with a hint giving the `--map` that reads it.
 */
const CONTENT_ID_WORDS: ReadonlyMap<string, 'email' | 'phone_number'> = new Map([
  ...['email', 'emails', 'e', 'mail', 'mails'].map((w) => [w, 'email'] as const),
  ...['phone', 'phones', 'tel', 'telephone', 'mobile', 'cell', 'cellphone', 'sms', 'whatsapp'].map(
    (w) => [w, 'phone_number'] as const,
  ),
]);
const OWN_WORDS: ReadonlySet<string> = new Set([
  ...['work', 'home', 'primary', 'personal', 'private', 'billing', 'main', 'business', 'contact'],
  ...['customer', 'client', 'subscriber', 'member', 'user', 'lead', 'person', 'default', 'preferred'],
  ...['other', 'secondary', 'alternate', 'alt', 'my', 'me', 'your', 'own', 'reach', 'at'],
  ...['no', 'nr', 'num', 'number', 'address', 'addr'],
]);

/** Last words of a generic id column (`id`, `user_id`, `User ID`, `external_id`): never used without `map`. */
const GENERIC_ID_WORDS: ReadonlySet<string> = new Set(['id', 'ids', 'uid', 'guid', 'uuid']);
/** Whole names of generic account columns (keys as compared). */
const GENERIC_ID_KEYS: ReadonlySet<string> = new Set(['username', 'userlogin', 'login', 'screenname', 'externid']);

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

/** A header name's words: camelCase split, lowercase, accents dropped (`userId` -> user, id). */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '');
}

export interface MappedColumn {
  /** Position in the header. */
  index: number;
  column: string;
  type: IdentifierType;
  /** Named by a `map` entry (otherwise detected by its name or, with `content`, by its values). */
  mapped?: true;
  /** Detected by its values: its name is not a known one. */
  content?: true;
  /** Its cells hold lists split on this separator (seen in the sample; no valueSeparator given). */
  separator?: string;
}

/** A mapped column's cell as buildUser takes it (with the column's list separator). */
export function fieldOf(c: MappedColumn, raw: string): FieldValue {
  return c.separator === undefined
    ? { column: c.column, type: c.type, raw }
    : { column: c.column, type: c.type, raw, separator: c.separator };
}

/** The mapped fields of one row of `fields` (header order) as buildUser's input. */
export function mapRecord(fields: readonly string[], mapping: ColumnMapping, line: number): MappedRecord {
  const values: FieldValue[] = [];
  for (const c of mapping.columns) values.push(fieldOf(c, fields[c.index] ?? ''));
  const record: MappedRecord = { line, fields: values };
  if (mapping.country !== undefined) {
    const country = fields[mapping.country.index];
    if (country !== undefined && country !== '') record.country = country;
  }
  return record;
}

/** A column a name or its values suggested, left out: the reason in words (never a value). */
export interface NotUsedColumn {
  index: number;
  column: string;
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
}

export interface ColumnMapping {
  /** Identifier columns in header order; several may feed one type. */
  columns: MappedColumn[];
  /** `mapped`: named by a `map` entry `country=` or `countryColumn` (otherwise detected by its name). */
  country?: { index: number; column: string; mapped?: true };
  /** Whether some identifier columns were detected (false: all come from `map`). */
  auto: boolean;
  /** Header columns that feed nothing (the `notUsed` ones included). */
  ignored: string[];
  /** Columns left out although a name or values suggested a type, with the reason (header order). */
  notUsed?: NotUsedColumn[];
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
}

/** The first data rows, each with one cell per header column (shorter rows are padded with ''). */
export type SampleRows = readonly (readonly string[])[];

const HEX64_LIKE = /^[0-9a-f]{64}$/i;

/**
 * Whether a header cell looks like an identifier value (an email, a phone or id number, a
 * digest, a device id). In a file without a header row the "header" is the first data row, and
 * printing its cells as column names would put raw identifiers on stderr.
 */
export function looksLikeData(cell: string): boolean {
  if (cell.includes('@') || HEX64_LIKE.test(cell) || normalizeDeviceId(cell).ok) return true;
  let digits = 0;
  for (let i = 0; i < cell.length; i++) {
    const c = cell.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39 && ++digits >= 6) return true;
  }
  return false;
}

/** A header cell as messages may show it: quoted, or a placeholder when it looks like data. */
export function columnLabel(cell: string, index: number): string {
  return looksLikeData(cell) ? `<column ${index + 1}, looks like data>` : JSON.stringify(cell);
}

const columnList = (header: readonly string[]): string => header.map(columnLabel).join(', ');

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
  throw new ConfigError('mapping_unknown_column', `${option}: no column "${name}" in the header`, {
    fix: `use one of the columns: ${columnList(header)}`,
  });
}

/**
 * Records (hashRecords): every `map` entry and countryColumn must name a key that the first
 * records have (compared as header names are); otherwise ConfigError naming the keys there are.
 */
export function checkNamedKeys(keys: readonly string[], opts: MappingOptions): void {
  const named: [string, string][] = (opts.map ?? []).map((e) => [`map entry ${e}`, e.slice(e.indexOf('=') + 1).trim()]);
  if (opts.countryColumn !== undefined) named.push(['countryColumn', opts.countryColumn]);
  for (const [option, key] of named) {
    if (key === '' || keys.includes(key) || keys.some((k) => columnKey(k) === columnKey(key))) continue;
    throw new ConfigError('mapping_unknown_column', `${option}: none of the first records has the key "${key}"`, {
      fix: `name one of the keys the records have: ${columnList(keys)}`,
    });
  }
}

interface MapEntries {
  columns: MappedColumn[];
  country?: { index: number; column: string; mapped: true };
}

/** Parse and check the `map` entries against the header. */
function parseMapEntries(header: readonly string[], opts: MappingOptions): MapEntries {
  const out: MapEntries = { columns: [] };
  for (const entry of opts.map ?? []) {
    const eq = entry.indexOf('=');
    const typeName = entry.slice(0, eq).trim().toLowerCase();
    const column = entry.slice(eq + 1).trim();
    if (eq === -1 || column === '') {
      throw new ConfigError('mapping_invalid', `map entry ${JSON.stringify(entry)} is not type=Column Name`, {
        fix: 'write each map entry as type=Column Name, for example email=E-mail Address (one entry per column)',
      });
    }
    if (typeName === 'country') {
      const index = findColumn(header, column, `map entry ${entry}`);
      out.country = { index, column: header[index] as string, mapped: true };
      continue;
    }
    if (!(IDENTIFIER_TYPES as readonly string[]).includes(typeName)) {
      throw new ConfigError(
        'mapping_unknown_type',
        `map entry ${JSON.stringify(entry)}: unknown identifier type "${typeName}"`,
        {
          fix: `use one of: ${[...IDENTIFIER_TYPES, 'country'].join(', ')}`,
        },
      );
    }
    const type = typeName as IdentifierType;
    if (opts.types !== undefined && !opts.types.includes(type)) {
      throw new ConfigError(
        'mapping_type_not_taken',
        `map entry ${JSON.stringify(entry)}: this target does not take ${typeName} identifiers`,
        { fix: `map only ${opts.types.join(' and ')} columns for this target` },
      );
    }
    const index = findColumn(header, column, `map entry ${entry}`);
    if (!out.columns.some((c) => c.index === index && c.type === type))
      out.columns.push({ index, column: header[index] as string, type, mapped: true });
  }
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

/** What a column's name says: a known type, someone else's value, a generic id, or nothing. */
function nameVerdict(
  column: string,
): { type: IdentifierType } | { someoneElse: string; type?: IdentifierType } | { id: true } | undefined {
  const known = AUTO_KEYS.get(columnKey(column));
  const type = known === 'country' ? undefined : known;
  const words = nameWords(column);
  const other = words.find((w) => SOMEONE_ELSE.includes(w));
  if (other !== undefined) {
    // A type for the printout: the column reads as an identifier's, and is left out with the reason.
    const named = type ?? (words.some((w) => CONTACT_WORDS.has(w)) ? 'email' : undefined);
    return named === undefined ? { someoneElse: other } : { someoneElse: other, type: named };
  }
  if (type !== undefined) return { type };
  const last = words.at(-1);
  if ((last !== undefined && GENERIC_ID_WORDS.has(last)) || GENERIC_ID_KEYS.has(columnKey(column))) return { id: true };
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
    const values = columnValues(sample, index, countryIndex, opts);
    const verdict = nameVerdict(column);
    if (verdict !== undefined && 'id' in verdict) {
      const reason = 'a generic id column: sent only with --map (see docs/cli.md)';
      out.notUsed.push({ index, column, reason, ...(looksLikeIds(values) ? { idLike: true as const } : {}) });
      return;
    }
    if (verdict !== undefined && 'someoneElse' in verdict) {
      if (verdict.type !== undefined || contentType(values, types) !== undefined)
        out.notUsed.push({ index, column, reason: `not the person's own (the name says "${verdict.someoneElse}")` });
      return;
    }
    if (verdict !== undefined) {
      if (!types.includes(verdict.type)) return;
      const separator = opts.valueSeparator === undefined ? listSeparator(verdict.type, values) : undefined;
      const reason = misfit(verdict.type, values, separator);
      if (reason !== undefined) out.notUsed.push({ index, column, reason, misfit: verdict.type });
      else out.columns.push({ index, column, type: verdict.type, ...(separator === undefined ? {} : { separator }) });
      return;
    }
    if (looksLikeData(column)) return;
    const found = byContent(column, values, opts.valueSeparator === undefined ? types : [], types);
    if (found !== undefined && 'type' in found) out.columns.push({ index, column, content: true, ...found });
    else if (found !== undefined) out.notUsed.push({ index, ...found });
  });
  return out;
}

/** A word of the name other than identifier words, the person's own and numbering (undefined: none). */
function qualifierWord(column: string): string | undefined {
  const words = nameWords(column);
  if (words.length === 1) return undefined;
  return words.find((w) => !CONTENT_ID_WORDS.has(w) && !OWN_WORDS.has(w) && !/^\d+$/.test(w));
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
): ReturnType<typeof contentType> | Omit<NotUsedColumn, 'index'> | undefined {
  if (contentTypes.length === 0) return undefined; // --value-separator: nothing is read by content
  const found = contentType(values, contentTypes);
  const named = nameWords(column)
    .flatMap((w) => CONTENT_ID_WORDS.get(w) ?? [])
    .find((t) => types.includes(t));
  const type = found?.type ?? named;
  if (type === undefined) return undefined;
  const qualifier = qualifierWord(column);
  if (qualifier === undefined && found !== undefined) return found;
  const filled = values.cells.filter((c) => cleanValue(c) !== '').length;
  const reason =
    qualifier !== undefined
      ? `not read by content: the word "${qualifier}" in its name may say it is someone else's`
      : filled < MIN_CONTENT_VALUES
        ? `not read by content: ${filled} value${filled === 1 ? '' : 's'} in the first rows, too few to tell`
        : `not read by content: its values are not clearly ${type === 'email' ? 'email addresses' : 'phone numbers'}`;
  return { column, reason, unread: type };
}

/** The country column: the one named by `map` or countryColumn, otherwise detected by name. */
function countryColumn(
  header: readonly string[],
  opts: MappingOptions,
  explicit: MapEntries,
): ColumnMapping['country'] | undefined {
  if (opts.countryColumn !== undefined) {
    const index = findColumn(header, opts.countryColumn, 'countryColumn');
    return { index, column: header[index] as string, mapped: true };
  }
  if (explicit.country !== undefined || opts.onlyMapped === true) return explicit.country;
  const index = header.findIndex(
    (h, i) => AUTO_KEYS.get(columnKey(h)) === 'country' && !explicit.columns.some((c) => c.index === i),
  );
  return index === -1 ? undefined : { index, column: header[index] as string };
}

/** A `map` column whose sampled cells clearly hold lists gets their separator. */
function withListSeparator(c: MappedColumn, sample: SampleRows, opts: MappingOptions, country?: number): MappedColumn {
  if (opts.valueSeparator !== undefined) return c;
  const separator = listSeparator(c.type, columnValues(sample, c.index, country, opts));
  return separator === undefined ? c : { ...c, separator };
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
  if (explicit.columns.length === 0 && explicit.country === undefined) checkHeaderRow(header);
  const country = countryColumn(header, opts, explicit);
  const columns = explicit.columns.map((c) => withListSeparator(c, sample, opts, country?.index));
  const namedTypes = new Set(columns.map((c) => c.type));
  const types = (opts.types ?? IDENTIFIER_TYPES).filter((t) => !namedTypes.has(t));
  let notUsed: NotUsedColumn[] = [];
  if (opts.onlyMapped !== true) {
    const taken = (i: number): boolean => columns.some((c) => c.index === i);
    const found = detectColumns(header, opts, sample, taken, country?.index, types);
    columns.push(...found.columns);
    notUsed = found.notUsed;
  }
  columns.sort((a, b) => a.index - b.index);
  if (columns.length === 0) noIdentifierColumn(header, opts, notUsed);
  const used = new Set([...columns.map((c) => c.index), ...(country === undefined ? [] : [country.index])]);
  const mapping: ColumnMapping = {
    columns,
    auto: columns.some((c) => c.mapped !== true),
    ignored: header.filter((_, i) => !used.has(i)),
  };
  if (notUsed.length > 0) mapping.notUsed = notUsed;
  if (country !== undefined) mapping.country = country;
  return mapping;
}

function noIdentifierColumn(header: readonly string[], opts: MappingOptions, notUsed: NotUsedColumn[]): never {
  checkHeaderRow(header);
  // The cells are not listed: with no known column name, this "header" may well be a data row.
  const left =
    notUsed.length === 0
      ? ''
      : `; left out: ${notUsed.map((c) => `${columnLabel(c.column, c.index)} (${c.reason})`).join(', ')}`;
  throw new ConfigError(
    'mapping_no_identifier_column',
    `none of the ${header.length} header columns has a known identifier name or values that are clearly emails or phone numbers${left}`,
    {
      fix: `name them with a map entry type="Column Name" (types: ${(opts.types ?? IDENTIFIER_TYPES).join(', ')}), or check that the first line is the header`,
    },
  );
}
