/**
 * Column mapping: which header columns feed which identifier type (and which gives the row's
 * country), detected by name or given explicitly.
 */
import { ConfigError, InputError } from '../errors.js';
import { IDENTIFIER_TYPES, normalizeDeviceId, type IdentifierType } from './normalize.js';

/**
 * Header names recognized without a `map` entry, compared on their letters and digits only (case,
 * spaces and punctuation ignored: `Country/Region`, `country_region` and `COUNTRY REGION` are one
 * name). They cover the exports of the common CRMs and shops and the customer-list templates of
 * the large ad platforms (fixtures/exports/ holds one sample of each); docs/cli.md lists them.
 * Names that usually hold someone else's value (`Asst. Phone`, `Fax`) are left out on purpose.
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
  ],
  handle: ['handle', 'username', 'screen_name', 'twitter handle', 'x handle'],
  device_id: [
    'device_id',
    'mobile device id',
    'madid',
    'idfa',
    'adid',
    'gaid',
    'maid',
    'aaid',
    'ifa',
    'android_id',
    'advertising_id',
    'mobile advertising id',
    'mobile_ad_id',
    'google_aid',
    'apple_idfa',
  ],
  // The platform's docs and SDKs call its user id `twitter_id`; exports name it after the platform too.
  service_id: ['user_id', 'service_id', 'twitter_id', 'x_id', 'x_user_id'],
  partner_user_id: ['partner_user_id', 'customer_id', 'external_id', 'extern_id', 'ext_id', 'crm_id'],
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
  ],
};

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

export interface MappedColumn {
  /** Position in the header. */
  index: number;
  column: string;
  type: IdentifierType;
  /** Named by a `map` entry (otherwise detected by its name). */
  mapped?: true;
}

export interface ColumnMapping {
  /** Identifier columns in header order; several may feed one type. */
  columns: MappedColumn[];
  /** `mapped`: named by a `map` entry `country=` or `countryColumn` (otherwise detected by its name). */
  country?: { index: number; column: string; mapped?: true };
  /** Whether some identifier columns were detected by name (false: all come from `map`). */
  auto: boolean;
  /** Header columns that feed nothing. */
  ignored: string[];
}

export interface MappingOptions {
  /**
   * `type=Column Name` entries (`country=Column` too). A type named here takes exactly the
   * columns named for it; the other types are still detected by name (see onlyMapped).
   */
  map?: readonly string[];
  /** Only the `map` entries (and countryColumn): nothing is detected by name. */
  onlyMapped?: boolean;
  /** The column holding each row's country (ISO 3166 alpha-2) for phone numbers. */
  countryColumn?: string;
  /**
   * The identifier types the target takes (default: all). Detected columns of other types are
   * left out (listed as ignored); a `map` entry naming one is an error.
   */
  types?: readonly IdentifierType[];
}

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

/**
 * Decide which columns feed which identifier type. Each type named by a `map` entry takes the
 * columns named for it; every other type (all of them without `map`) takes the columns whose
 * names are in AUTO_COLUMN_NAMES, unless `onlyMapped`. A column named by `map` is not detected
 * for another type. The country column is the one named by a `map` entry `country=` or `countryColumn`,
 * otherwise detected by name (not with `onlyMapped`). Throws ConfigError for unknown types or
 * columns and when no identifier column results, InputError when the header row is missing
 * (the first row looks like data).
 */
export function resolveMapping(header: readonly string[], opts: MappingOptions = {}): ColumnMapping {
  if (opts.onlyMapped === true && (opts.map ?? []).length === 0) {
    throw new ConfigError('mapping_invalid', 'onlyMapped needs at least one map entry type=Column', {
      fix: 'add map entries for the columns to use, or drop onlyMapped to detect columns by name',
    });
  }
  const explicit = parseMapEntries(header, opts);
  const columns = [...explicit.columns];
  const detect = opts.onlyMapped !== true;
  const namedTypes = new Set(columns.map((c) => c.type));
  const taken = (type: IdentifierType): boolean => opts.types === undefined || opts.types.includes(type);
  if (detect) {
    header.forEach((column, index) => {
      const type = AUTO_KEYS.get(columnKey(column));
      if (type === undefined || type === 'country' || !taken(type) || namedTypes.has(type)) return;
      if (!columns.some((c) => c.index === index)) columns.push({ index, column, type });
    });
  }
  columns.sort((a, b) => a.index - b.index);
  let country: ColumnMapping['country'] = explicit.country;
  if (opts.countryColumn !== undefined) {
    const index = findColumn(header, opts.countryColumn, 'countryColumn');
    country = { index, column: header[index] as string, mapped: true };
  }
  if (country === undefined && detect) {
    const index = header.findIndex(
      (h, i) => AUTO_KEYS.get(columnKey(h)) === 'country' && !columns.some((c) => c.index === i),
    );
    if (index !== -1) country = { index, column: header[index] as string };
  }
  if (columns.length === 0) {
    checkHeaderRow(header);
    // The cells are not listed: with no known column name, this "header" may well be a data row.
    throw new ConfigError(
      'mapping_no_identifier_column',
      `none of the ${header.length} header columns has a known identifier name`,
      {
        fix: `name them with a map entry type="Column Name" (types: ${(opts.types ?? IDENTIFIER_TYPES).join(', ')}), or check that the first line is the header`,
      },
    );
  }
  const used = new Set([...columns.map((c) => c.index), ...(country === undefined ? [] : [country.index])]);
  const mapping: ColumnMapping = {
    columns,
    auto: columns.some((c) => c.mapped !== true),
    ignored: header.filter((_, i) => !used.has(i)),
  };
  if (country !== undefined) mapping.country = country;
  return mapping;
}
