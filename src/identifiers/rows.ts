/**
 * One row's user, with the rules resolved once at the hashing entry: a CSV row is mapped by its
 * header, a raw record (a database row, an object) by its keys, then normalized and hashed
 * (normalize.ts). The hashing pipeline hands each well-formed row here and counts what comes back.
 */
import { ConfigError } from '../errors.js';
import {
  checkNamedKeys,
  mapRecord,
  resolveMapping,
  type ColumnMapping,
  type MappingOptions,
  type SampleRows,
} from './mapping.js';
import { userBuilder, type BuiltUser, type MappedRecord, type NormalizeOptions } from './normalize.js';

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
}

export function isHeaderRow(r: unknown): r is HeaderRow {
  const o = r as Partial<HeaderRow>;
  return typeof o.line === 'number' && Array.isArray(o.fields) && Array.isArray(o.header);
}

/**
 * The users of one stream of rows. The mapping is resolved at the first row: from a CSV row's
 * header, or from the keys of raw records (see RecordKeys); `given` replaces both.
 */
export class RowUsers {
  private mapped: ColumnMapping | undefined;
  private objects: RecordKeys | undefined;
  private readonly rules: RowRules;
  private readonly buildUser: (record: MappedRecord) => BuiltUser;

  constructor(rules: RowRules) {
    this.rules = rules;
    this.mapped = rules.given;
    this.buildUser = userBuilder(rules.normalize);
  }

  /** The mapping in use (resolved at the first row when not given; it grows as records show new keys). */
  get mapping(): ColumnMapping | undefined {
    return this.mapped;
  }

  /** Record keys seen so far that feed nothing (neither an identifier type nor the country). */
  get ignoredKeys(): readonly string[] {
    if (this.objects === undefined || this.mapped === undefined) return this.objects?.keys ?? [];
    return this.mapped.ignored;
  }

  /**
   * The user of one well-formed row (`{}` when no identifier was valid). `position`: the row's
   * place in the stream (a raw record's line); `head`: the stream's first rows, the mapping's sample.
   */
  build(row: HeaderRow | RawRecord, position: number, head: readonly (HeaderRow | RawRecord)[]): BuiltUser {
    const record = isHeaderRow(row) ? this.ofHeaderRow(row, head) : this.ofRawRecord(row, position, head);
    return record === undefined ? { line: position, user: {}, rejects: [] } : this.buildUser(record);
  }

  /** Thrown once the rows have ended when no record key ever named an identifier. */
  finish(): void {
    if (this.objects?.pending !== undefined && this.mapped === undefined) throw this.objects.pending;
  }

  private ofHeaderRow(row: HeaderRow, head: readonly (HeaderRow | RawRecord)[]): MappedRecord {
    const sample = head.filter(isHeaderRow).map((r) => r.fields);
    this.mapped ??= resolveMapping(row.header, this.rules.mapping, sample);
    return mapRecord(row.fields, this.mapped, row.line);
  }

  private ofRawRecord(
    record: RawRecord,
    position: number,
    head: readonly (HeaderRow | RawRecord)[],
  ): MappedRecord | undefined {
    this.objects ??= new RecordKeys(
      this.rules,
      head.filter((r): r is RawRecord => !isHeaderRow(r)),
    );
    const fields = this.objects.fields(record);
    this.mapped = this.objects.mapping;
    return this.mapped === undefined ? undefined : mapRecord(fields, this.mapped, position);
  }
}

const cellText = (v: RawRecord[string]): string => (v === null || v === undefined ? '' : String(v));

/**
 * The keys of plain-object records, in order of first appearance, and the mapping over them:
 * re-resolved whenever a record brings a key not seen before, so a key that first appears in
 * a later record (sparse rows, a column added mid-stream) is mapped like one in the first.
 */
class RecordKeys {
  readonly keys: string[] = [];
  private readonly known = new Set<string>();
  mapping: ColumnMapping | undefined;
  /** Why no mapping resolves yet (no key names an identifier): thrown if none ever does. */
  pending: unknown;
  /** The first records' cells in key order (keys added later have no sampled values). */
  private readonly sample: SampleRows;

  private readonly rules: RowRules;

  constructor(rules: RowRules, head: readonly RawRecord[]) {
    this.rules = rules;
    this.mapping = rules.given;
    for (const record of head) for (const key of Object.keys(record)) this.add(key);
    // A key the options name that none of the first records has is a mistyped key: refused
    // before anything is hashed, rather than every value of its type silently missing.
    // (A key that is not there is never added as an empty column: the entry would match it.)
    if (rules.given === undefined && head.length > 0) checkNamedKeys(this.keys, rules.mapping);
    this.sample = head.map((r) => this.keys.map((k) => cellText(r[k])));
  }

  private add(key: string): boolean {
    if (key === '' || this.known.has(key)) return false;
    this.known.add(key);
    this.keys.push(key);
    return true;
  }

  /** The record's cells in key order, after taking in its new keys. */
  fields(record: RawRecord): string[] {
    let grew = false;
    for (const key of Object.keys(record)) if (this.add(key)) grew = true;
    if ((grew || this.mapping === undefined) && this.rules.given === undefined) this.resolve();
    return this.keys.map((k) => cellText(record[k]));
  }

  private resolve(): void {
    try {
      this.mapping = resolveMapping(this.keys, this.rules.mapping, this.sample);
      this.pending = undefined;
    } catch (error) {
      // Rows without any identifier key are rows without identifiers; the stream may still show some.
      if (!(error instanceof ConfigError && error.code === 'mapping_no_identifier_column')) throw error;
      this.pending = error;
    }
  }
}
