/**
 * One row's user, with the rules resolved once at the hashing entry: a CSV row is mapped by its
 * header, a raw record (a database row, an object) by its keys, then normalized and hashed
 * (normalize.ts). The hashing pipeline hands each well-formed row here and counts what comes back.
 */
import { ConfigError } from '../errors.js';
import { checkConsentColumns, ConsentReader, consentSends, type ConsentPolicy, type ConsentRead } from './consent.js';
import {
  checkNamedKeys,
  mapRecord,
  resolveMapping,
  type ColumnMapping,
  type MappingOptions,
  type SampleRows,
} from './mapping.js';
import { userBuilder } from './normalize.js';
import type { BuiltUser, MappedRecord, NormalizeOptions } from './types.js';

/**
 * A raw record as library users hold it: a database row or an object keyed by column name.
 * `null` and `undefined` are empty cells; numbers, bigints and booleans are written as text.
 */
export type RawRecord = Readonly<Record<string, string | number | bigint | boolean | null | undefined>>;

/** A CSV data row: its cells in header order (ingest/csv.ts's CsvRow). */
export interface HeaderRow {
  line: number;
  fields: readonly string[];
  header: readonly string[];
}

/** How rows become users, resolved once at the hashing entry (nothing below checks them again). */
export interface RowRules {
  /** The normalization options, checked, the country canonical. */
  readonly normalize: NormalizeOptions;
  /** The mapping's options (`map`, `types`, `countryColumn`, …). */
  readonly mapping: MappingOptions;
  /** A mapping resolved beforehand: used as it is, for every row. */
  readonly given: ColumnMapping | undefined;
  /** What a row's consent columns decide (a row left out gives a `withheld` user). */
  readonly consent: ConsentPolicy;
}

export function isHeaderRow(r: unknown): r is HeaderRow {
  const o = r as Partial<HeaderRow>;
  return typeof o.line === 'number' && Array.isArray(o.fields) && Array.isArray(o.header);
}

/** A row's cells in column order, and what the mapping needs when it is resolved (again). */
interface RowCells {
  fields: readonly string[];
  line: number;
  /** Set when the mapping must be resolved over these columns (first row, or a record with new keys). */
  columns?: readonly string[];
  sample?: SampleRows;
  /** Records: a stream may show its first identifier key later, so no identifier key is not an error yet. */
  tolerant?: boolean;
  /** The first records: every key the options name must be among theirs. */
  checkNames?: boolean;
}

/**
 * The users of one stream of rows. A row's cells are read here (a raw record's by the keys seen
 * so far, see RecordKeys), the mapping is resolved when it must be (mapping.ts), then the row is
 * mapped and its user built (normalize.ts). `given` replaces the mapping's resolution.
 */
export class RowUsers {
  private readonly rules: RowRules;
  private readonly buildUser: (record: MappedRecord) => BuiltUser;
  private mapped: ColumnMapping | undefined;
  private keys: RecordKeys | undefined;
  /** Why no mapping resolves yet (no record key names an identifier): thrown if none ever does. */
  private pending: unknown;
  private consentReader: ConsentReader | undefined;
  private lastConsent: { columns: ConsentReader['columns']; read: ConsentRead } | undefined;

  constructor(rules: RowRules) {
    this.rules = rules;
    if (rules.given !== undefined) this.use(rules.given);
    this.buildUser = userBuilder(rules.normalize);
  }

  /** Reads the rows with `mapping`: a policy that needs a consent column is refused without one. */
  private use(mapping: ColumnMapping): void {
    checkConsentColumns(this.rules.consent, mapping.consent);
    this.mapped = mapping;
    this.consentReader = mapping.consent === undefined ? undefined : new ConsentReader(mapping.consent);
  }

  /** The mapping in use (resolved at the first row when not given; it grows as records show new keys). */
  get mapping(): ColumnMapping | undefined {
    return this.mapped;
  }

  /** Record keys seen so far that feed nothing (neither an identifier type nor the country). */
  get ignoredKeys(): readonly string[] {
    if (this.keys === undefined || this.mapped === undefined) return this.keys?.keys ?? [];
    return this.mapped.ignored;
  }

  /**
   * The user of one well-formed row (`{}` when no identifier was valid). `position`: the row's
   * place in the stream (a raw record's line); `head`: the stream's first rows, the mapping's sample.
   */
  build(row: HeaderRow | RawRecord, position: number, head: readonly (HeaderRow | RawRecord)[]): BuiltUser {
    const cells = isHeaderRow(row) ? this.headerCells(row, head) : this.recordCells(row, position, head);
    if (cells.columns !== undefined) this.resolve(cells.columns, cells);
    this.lastConsent = undefined;
    if (this.mapped === undefined) return { line: position, user: {}, rejects: [] };
    const reader = this.consentReader;
    if (reader !== undefined) {
      this.lastConsent = { columns: reader.columns, read: reader.read(cells.fields) };
      if (!consentSends(this.rules.consent, this.lastConsent.read.verdict))
        return { line: cells.line, user: {}, rejects: [], withheld: true };
    }
    return this.buildUser(mapRecord(cells.fields, this.mapped, cells.line));
  }

  /** What the last row's consent columns said (undefined when the mapping has none). */
  get consent(): { columns: ConsentReader['columns']; read: ConsentRead } | undefined {
    return this.lastConsent;
  }

  /** Thrown once the rows have ended when no record key ever named an identifier. */
  finish(): void {
    if (this.pending !== undefined && this.mapped === undefined) throw this.pending;
  }

  private headerCells(row: HeaderRow, head: readonly (HeaderRow | RawRecord)[]): RowCells {
    const cells = { fields: row.fields, line: row.line };
    if (this.mapped !== undefined) return cells;
    return { ...cells, columns: row.header, sample: head.filter(isHeaderRow).map((r) => r.fields) };
  }

  private recordCells(record: RawRecord, position: number, head: readonly (HeaderRow | RawRecord)[]): RowCells {
    let checkNames = false;
    if (this.keys === undefined) {
      const records = head.filter((r): r is RawRecord => !isHeaderRow(r));
      this.keys = new RecordKeys(records);
      // A key the options name that none of the first records has is a mistyped key: refused
      // before anything is hashed, rather than every value of its type silently missing.
      checkNames = this.rules.given === undefined && records.length > 0;
    }
    const grew = this.keys.take(record);
    const cells = { fields: this.keys.cells(record), line: position };
    if ((!grew && this.mapped !== undefined) || this.rules.given !== undefined) return cells;
    return { ...cells, columns: this.keys.keys, sample: this.keys.sample, tolerant: true, checkNames };
  }

  private resolve(columns: readonly string[], cells: RowCells): void {
    if (cells.checkNames === true) checkNamedKeys(columns, this.rules.mapping);
    try {
      this.use(resolveMapping(columns, this.rules.mapping, cells.sample));
      this.pending = undefined;
    } catch (error) {
      // Rows without any identifier key are rows without identifiers; the stream may still show some.
      const noKeyYet = error instanceof ConfigError && error.code === 'mapping_no_identifier_column';
      if (cells.tolerant !== true || !noKeyYet) throw error;
      this.pending = error;
    }
  }
}

const cellText = (v: RawRecord[string]): string => (v === null || v === undefined ? '' : String(v));

/**
 * The keys of plain-object records, in order of first appearance, so that a key that first
 * appears in a later record (sparse rows, a column added mid-stream) is mapped like one in the
 * first: the mapping is resolved again whenever a record brings a new key.
 */
class RecordKeys {
  readonly keys: string[] = [];
  private readonly known = new Set<string>();
  /** The first records' cells in key order (keys added later have no sampled values). */
  readonly sample: SampleRows;

  constructor(head: readonly RawRecord[]) {
    // (A key that is not there is never added as an empty column: a map entry would match it.)
    for (const record of head) for (const key of Object.keys(record)) this.add(key);
    this.sample = head.map((r) => this.cells(r));
  }

  /** Takes in the record's new keys: whether there were any. */
  take(record: RawRecord): boolean {
    let grew = false;
    for (const key of Object.keys(record)) if (this.add(key)) grew = true;
    return grew;
  }

  /** The record's cells in key order. */
  cells(record: RawRecord): string[] {
    return this.keys.map((k) => cellText(record[k]));
  }

  private add(key: string): boolean {
    if (key === '' || this.known.has(key)) return false;
    this.known.add(key);
    this.keys.push(key);
    return true;
  }
}
