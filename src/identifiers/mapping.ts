/**
 * Column mapping: which header columns feed which identifier type (and which gives the row's
 * country), detected by name or given explicitly.
 */
import { ConfigError, InputError } from '../errors.js';
import { IDENTIFIER_TYPES, normalizeDeviceId, type IdentifierType } from './normalize.js';

/** Header names recognized without `--map`, compared case/space/underscore/hyphen-insensitively. */
export const AUTO_COLUMN_NAMES: Readonly<Record<IdentifierType | 'country', readonly string[]>> = {
  email: ['email', 'e-mail', 'email_address', 'work_email', 'personal_email'],
  phone_number: [
    'phone',
    'phone_number',
    'mobile',
    'msisdn',
    'mobile_phone',
    'mobile_number',
    'cell_phone',
    'telephone',
  ],
  handle: ['handle', 'username', 'screen_name'],
  device_id: ['device_id', 'idfa', 'adid', 'gaid', 'maid', 'android_id', 'aaid', 'advertising_id'],
  // The platform's docs and SDKs call its user id `twitter_id`; exports name it after the platform too.
  service_id: ['user_id', 'service_id', 'twitter_id', 'x_id', 'x_user_id'],
  partner_user_id: ['partner_user_id', 'customer_id'],
  country: ['country', 'country_code'],
};

const columnKey = (name: string): string => name.toLowerCase().replace(/[\s_-]+/g, '');

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
}

export interface ColumnMapping {
  /** Identifier columns in header order; several may feed one type. */
  columns: MappedColumn[];
  country?: { index: number; column: string };
  /** Whether identifier columns were detected by name (no --map given). */
  auto: boolean;
  /** Header columns that feed nothing. */
  ignored: string[];
}

export interface MappingOptions {
  /** `type=Column Name` entries (`country=Column` is accepted too); replaces auto-detection. */
  map?: readonly string[];
  /** The column holding each row's country (ISO 3166 alpha-2) for phone numbers. */
  countryColumn?: string;
  /**
   * The identifier types the target takes (default: all). Detected columns of other types are
   * left out (listed as ignored); a --map entry naming one is an error.
   */
  types?: readonly IdentifierType[];
}

const HEX64_LIKE = /^[0-9a-f]{64}$/i;

/**
 * Whether a header cell looks like an identifier value (an email, a phone or id number, a
 * digest, a device id). In a file without a header row the "header" is the first data row, and
 * printing its cells as column names would put raw identifiers on stderr.
 */
function looksLikeData(cell: string): boolean {
  if (cell.includes('@') || HEX64_LIKE.test(cell) || normalizeDeviceId(cell).ok) return true;
  let digits = 0;
  for (let i = 0; i < cell.length; i++) {
    const c = cell.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39 && ++digits >= 6) return true;
  }
  return false;
}

/** A header cell as messages may show it: quoted, or a placeholder when it looks like data. */
function columnLabel(cell: string, index: number): string {
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
    fix: 'add a first line naming the columns (for example: email,phone,country), then map them with --map type=Column if their names are not detected',
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
 * Decide which columns feed which identifier type: `map` entries when given, otherwise the
 * common names in AUTO_COLUMN_NAMES. The country column is the one named by `--map country=`
 * or `countryColumn`, otherwise detected by name in both cases. Throws ConfigError for unknown
 * types or columns and when no identifier column results, InputError when the header row is
 * missing (the first row looks like data).
 */
export function resolveMapping(header: readonly string[], opts: MappingOptions = {}): ColumnMapping {
  const columns: MappedColumn[] = [];
  let country: { index: number; column: string } | undefined;
  const auto = opts.map === undefined || opts.map.length === 0;
  const taken = (type: IdentifierType): boolean => opts.types === undefined || opts.types.includes(type);
  if (auto) {
    header.forEach((column, index) => {
      const type = AUTO_KEYS.get(columnKey(column));
      if (type !== undefined && type !== 'country' && taken(type)) columns.push({ index, column, type });
    });
  } else {
    for (const entry of opts.map ?? []) {
      const eq = entry.indexOf('=');
      const typeName = entry.slice(0, eq).trim().toLowerCase();
      const column = entry.slice(eq + 1).trim();
      if (eq === -1 || column === '') {
        throw new ConfigError('mapping_invalid', `--map ${JSON.stringify(entry)} is not type=Column Name`, {
          fix: 'write --map email="E-mail Address" (repeat --map for more columns)',
        });
      }
      if (typeName === 'country') {
        const index = findColumn(header, column, `--map ${entry}`);
        country = { index, column: header[index] as string };
        continue;
      }
      if (!(IDENTIFIER_TYPES as readonly string[]).includes(typeName)) {
        throw new ConfigError(
          'mapping_unknown_type',
          `--map ${JSON.stringify(entry)}: unknown identifier type "${typeName}"`,
          {
            fix: `use one of: ${[...IDENTIFIER_TYPES, 'country'].join(', ')}`,
          },
        );
      }
      if (!taken(typeName as IdentifierType)) {
        throw new ConfigError(
          'mapping_type_not_taken',
          `--map ${JSON.stringify(entry)}: this target does not take ${typeName} identifiers`,
          {
            fix: `map only ${(opts.types ?? []).join(' and ')} columns for this target`,
          },
        );
      }
      const index = findColumn(header, column, `--map ${entry}`);
      if (!columns.some((c) => c.index === index && c.type === typeName)) {
        columns.push({ index, column: header[index] as string, type: typeName as IdentifierType });
      }
    }
    columns.sort((a, b) => a.index - b.index);
  }
  if (opts.countryColumn !== undefined) {
    const index = findColumn(header, opts.countryColumn, '--country-column');
    country = { index, column: header[index] as string };
  }
  if (country === undefined) {
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
        fix: `name them with --map type="Column Name" (types: ${(opts.types ?? IDENTIFIER_TYPES).join(', ')}), or check that the first line is the header`,
      },
    );
  }
  const used = new Set([...columns.map((c) => c.index), ...(country === undefined ? [] : [country.index])]);
  const mapping: ColumnMapping = { columns, auto, ignored: header.filter((_, i) => !used.has(i)) };
  if (country !== undefined) mapping.country = country;
  return mapping;
}

/** One line per type, for printing the chosen mapping (column names only, never values). */
export function describeMapping(mapping: ColumnMapping): string {
  const lines: string[] = [];
  for (const type of IDENTIFIER_TYPES) {
    const cols = mapping.columns.filter((c) => c.type === type).map((c) => columnLabel(c.column, c.index));
    if (cols.length > 0) lines.push(`  ${type.padEnd(15)} <- ${cols.join(', ')}`);
  }
  if (mapping.country !== undefined)
    lines.push(`  ${'country'.padEnd(15)} <- ${columnLabel(mapping.country.column, mapping.country.index)}`);
  // `ignored` holds names without positions: data-looking ones are counted, not listed.
  const named = mapping.ignored.filter((c) => !looksLikeData(c)).map((c) => JSON.stringify(c));
  const dataLike = mapping.ignored.length - named.length;
  if (dataLike > 0)
    named.push(`${dataLike} column${dataLike === 1 ? '' : 's'} that look${dataLike === 1 ? 's' : ''} like data`);
  if (named.length > 0) lines.push(`  (ignored: ${named.join(', ')})`);
  return `column mapping (${mapping.auto ? 'detected by column name; override with --map type=Column' : 'from --map'}):\n${lines.join('\n')}`;
}
