/**
 * The per-chunk work of `hashCsv`: parse a chunk of whole CSV records, normalize and hash every
 * row, count it in a partial summary. Runs in the worker threads (worker.ts) and, with
 * `workers: 0`, on the calling thread. It imports only what that work needs, so each worker's
 * isolate stays small.
 */
import type { CsvBadRow } from '../ingest/csv.js';
import { csvCell, decodeChunk, visitCsvChunk } from '../ingest/csv-text.js';
import type { CsvDelimiter } from '../ingest/preamble.js';
import type { CsvRowError } from '../ingest/records.js';
import { ConsentReader, consentSends, type ConsentPolicy } from '../identifiers/consent.js';
import { countryCell, fieldOf, readColumns, type ColumnMapping, type MappedColumn } from '../identifiers/mapping.js';
import { IDENTIFIER_TYPES, type IdentifierType } from '../platform/users.js';
import { serializeRow, writeUserFingerprint } from '../identifiers/serialize.js';
import type { BuiltUser, FieldValue, MappedRecord, NormalizeOptions, Reject } from '../identifiers/types.js';
import { rowReader, type RowReader } from '../identifiers/normalize.js';
import { findKey, isStale, type KnownUsers } from './known-users.js';
import {
  addBadRowToSummary,
  addConsentToSummary,
  addRowToSummary,
  createHashSummary,
  type HashSummary,
} from './summary.js';

/**
 * What hashCsv's chunks carry: user objects, output already rendered by the workers, or
 * (`packed`) what the uploader needs and nothing more: see PackedUsers.
 */
export type HashEmit = 'users' | 'jsonl' | 'csv' | 'packed';

/**
 * The users of a chunk in the cheapest form to move between threads and pack into requests:
 * one string and two typed arrays instead of an object graph per user (structured clone of
 * user objects cost the main thread more than packing them).
 */
export interface PackedUsers {
  /**
   * `serializeUser` of every user with at least one identifier, each followed by `\n`; empty
   * for a user found fresh in the context's `knownUsers` (a sync does not send it).
   */
  jsonLines: string;
  /** Input line of each of those users. */
  lines: Uint32Array;
  /** Dedupe fingerprint of each user (`writeUserFingerprint`): high word at 2i, low word at 2i+1. */
  fingerprints: Uint32Array;
  /** With the context's `knownUsers`: each user's position in it (findKey), or -1. */
  positions?: Int32Array;
}

/** What a worker needs to process chunks of one file. Plain data: it crosses the thread boundary. */
export interface HashChunkContext {
  columns: number;
  /** The header's names (trimmed): a record that repeats them is a `repeated_header` bad row. */
  header: string[];
  delimiter: CsvDelimiter;
  mapping: ColumnMapping;
  normalize: NormalizeOptions;
  /** What a row's consent columns (mapping.consent) decide: a row the policy leaves out gives no user. */
  consent: ConsentPolicy;
  emit: HashEmit;
  /** For emit csv: the output columns (identifier types). */
  outputTypes: IdentifierType[];
  /**
   * Emit packed: a sync's snapshot. Its users that are not due for a refresh get an empty text:
   * 99% of a daily sync's users need only their fingerprint, and copying every user's JSON to
   * the main thread cost more than looking them up here (docs/performance.md).
   */
  knownUsers?: KnownUsers;
}

/** A user from hashCsv: BuiltUser plus `json` = serializeUser(user), computed in the worker. */
export interface HashedUser extends BuiltUser {
  json: string;
}

/** A chunk's result with line numbers relative to the chunk's first line (0-based). */
export interface HashChunkResult {
  lines: number;
  users: HashedUser[];
  /** Rendered output lines as UTF-8 (emit `jsonl`/`csv`); empty for `users`. */
  output: Uint8Array;
  rejects: Reject[];
  malformed: CsvBadRow[];
  summary: HashSummary;
  /** Emit `packed` only (line numbers relative to the chunk, like the others). */
  packed?: PackedUsers;
}

/** Header line of the `hash` command's CSV output. */
export function hashCsvHeader(types: readonly IdentifierType[]): string {
  return `${types.join(',')}\n`;
}

/** The identifier types a mapping produces, in IDENTIFIER_TYPES order (the CSV output columns). */
export function mappedTypes(mapping: ColumnMapping): IdentifierType[] {
  return IDENTIFIER_TYPES.filter((t) => mapping.columns.some((c) => c.type === t));
}

/**
 * Collects output lines as UTF-8 bytes. Text is gathered in short pieces (so the garbage of a
 * chunk dies young) and written as UTF-8 into one scratch buffer that every chunk of the thread
 * reuses; bytes() copies out the chunk's bytes into an array of their own, which is transferred
 * to the main thread, which writes them as they are. (A Buffer per piece and a copy of them all
 * cost about twice as much, and gave the collector a new ArrayBuffer per 32 KiB.) The scratch is
 * shared: a builder is filled and read within one synchronous hashChunk call, never two at once.
 */
class OutputBuilder {
  private static readonly PIECE = 8 * 1024;
  private static readonly KEPT = 1024 * 1024;
  private static scratch = Buffer.allocUnsafeSlow(256 * 1024);
  private size = 0;
  private text = '';

  add(line: string): void {
    this.text += line;
    if (this.text.length >= OutputBuilder.PIECE) this.flush();
  }

  private flush(): void {
    const text = this.text;
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    if (this.size + 3 * text.length > OutputBuilder.scratch.length) {
      const grown = Buffer.allocUnsafeSlow(2 * (this.size + 3 * text.length));
      OutputBuilder.scratch.copy(grown, 0, 0, this.size);
      OutputBuilder.scratch = grown;
    }
    this.size += OutputBuilder.scratch.write(text, this.size, 'utf8');
    this.text = '';
  }

  bytes(): Uint8Array {
    if (this.text !== '') this.flush();
    // A copy that owns its ArrayBuffer, so it can be transferred.
    const bytes = new Uint8Array(OutputBuilder.scratch.subarray(0, this.size));
    // A huge chunk (chunkBytes) grew the scratch: the thread does not keep that much for good.
    if (OutputBuilder.scratch.length > OutputBuilder.KEPT)
      OutputBuilder.scratch = Buffer.allocUnsafeSlow(OutputBuilder.KEPT);
    return bytes;
  }
}

/** Collects a chunk's PackedUsers; with a sync's snapshot, looks each user up in it. */
class PackedBuilder {
  private jsonLines = '';
  private n = 0;
  private lines = new Uint32Array(1024);
  private fingerprints = new Uint32Array(2048);
  private positions: Int32Array<ArrayBuffer>;

  constructor(private readonly knownUsers: KnownUsers | undefined) {
    this.positions = new Int32Array(knownUsers === undefined ? 0 : 1024);
  }

  add(json: string, line: number): void {
    const k = this.n++;
    if (k === this.lines.length) {
      this.lines = grow(this.lines, 2 * k);
      this.fingerprints = grow(this.fingerprints, 4 * k);
      if (this.knownUsers !== undefined) this.positions = grow(this.positions, 2 * k);
    }
    this.lines[k] = line;
    writeUserFingerprint(json, this.fingerprints, k);
    let fresh = false;
    if (this.knownUsers !== undefined) {
      const pos = findKey(this.knownUsers, this.fingerprints[2 * k] as number, this.fingerprints[2 * k + 1] as number);
      this.positions[k] = pos;
      fresh = pos >= 0 && !isStale(this.knownUsers, pos);
    }
    this.jsonLines += fresh ? '\n' : json + '\n';
  }

  finish(): PackedUsers {
    return {
      jsonLines: this.jsonLines,
      lines: this.lines.slice(0, this.n),
      fingerprints: this.fingerprints.slice(0, 2 * this.n),
      ...(this.knownUsers === undefined ? {} : { positions: this.positions.slice(0, this.n) }),
    };
  }
}

/** Parse, normalize and hash one chunk of whole records (UTF-8 bytes). */
export function hashChunk(bytes: Uint8Array, ctx: HashChunkContext): HashChunkResult {
  const summary = createHashSummary();
  const users: HashedUser[] = [];
  const rejects: Reject[] = [];
  const malformed: CsvBadRow[] = [];
  const out = new OutputBuilder();
  // One record object refilled per row: buildUser is synchronous and keeps no reference to it,
  // and this loop is the hot path (fewer allocations, less GC).
  const columns = ctx.mapping.columns;
  const country = ctx.mapping.country;
  const countryIndex = country?.locale === true ? undefined : country?.index;
  const fieldValues: FieldValue[] = columns.map((c) => fieldOf(c, ''));
  const paired = columns.some((c) => c.typeIndex !== undefined);
  const record: MappedRecord = { line: 0, fields: fieldValues };
  const { emit, outputTypes, normalize, knownUsers } = ctx;
  const outputIndexes = outputTypes.map((type) => IDENTIFIER_TYPES.indexOf(type));
  const reader = rowReader(normalize);
  const packed = emit === 'packed' ? new PackedBuilder(knownUsers) : undefined;
  const consent = ctx.mapping.consent === undefined ? undefined : new ConsentReader(ctx.mapping.consent);
  const leftOut = (offset: number): void => {
    if (emit === 'users') users.push({ line: offset, user: {}, rejects: [], withheld: true, json: '{}' });
    else if (emit === 'jsonl') out.add('{}\n');
    else if (emit === 'csv') out.add(`${','.repeat(Math.max(0, outputTypes.length - 1))}\n`);
  };
  const row = (fields: string[], offset: number): void => {
    if (consent !== undefined) {
      const read = consent.read(fields);
      const sent = consentSends(ctx.consent, read.verdict);
      addConsentToSummary(summary, ctx.consent, consent.columns, read, offset, sent);
      if (!sent) return leftOut(offset);
    }
    for (let i = 0; i < columns.length; i++)
      (fieldValues[i] as FieldValue).raw = fields[(columns[i] as MappedColumn).index] ?? '';
    if (paired) setKinds(fieldValues, columns, fields);
    record.line = offset;
    // Assigned even when absent (buildUser treats undefined and '' alike): keeps the object's shape stable.
    (record as { country?: string | undefined }).country =
      countryIndex !== undefined ? fields[countryIndex] : countryCell(country, fields);
    reader.read(record);
    addRowToSummary(summary, reader);
    const rowRejects = reader.rejects;
    if (rowRejects !== undefined) for (let i = 0; i < rowRejects.length; i++) rejects.push(rowRejects[i] as Reject);
    if (packed !== undefined) {
      const json = serializeRow(reader);
      if (json !== '{}') packed.add(json, offset);
    } else if (emit === 'users') {
      const built = reader.built(offset) as HashedUser;
      built.json = serializeRow(reader);
      users.push(built);
    } else if (emit === 'jsonl') {
      out.add(serializeRow(reader) + '\n');
    } else {
      out.add(csvLine(reader, outputIndexes) + '\n');
    }
  };
  const bad = (offset: number, error: CsvRowError): void => {
    malformed.push({ line: offset, error });
    addBadRowToSummary(summary, offset, error);
  };
  const { text, damaged } = decodeChunk(bytes);
  const lines = visitCsvChunk(text, ctx.delimiter, ctx.columns, { row, bad }, damaged, fieldsRead(ctx), ctx.header);
  const result: HashChunkResult = { lines, users, output: out.bytes(), rejects, malformed, summary };
  if (packed !== undefined) result.packed = packed.finish();
  return result;
}

/** The `hash` command's CSV line of a row (no newline): the values of each output type (by index) joined by `|`. */
function csvLine(row: RowReader, outputIndexes: readonly number[]): string {
  let line = '';
  for (let i = 0; i < outputIndexes.length; i++) {
    const t = outputIndexes[i] as number;
    if (i > 0) line += ',';
    const n = row.sizes[t] as number;
    if (n === 0) continue;
    const list = row.lists[t] as string[];
    let cell = list[0] as string;
    for (let k = 1; k < n; k++) cell += '|' + (list[k] as string);
    line += IDENTIFIER_TYPES[t] === 'partner_user_id' ? csvCell(cell) : cell;
  }
  return line;
}

/** Per context (one per thread and run), by column index: the cells its mapping reads (readColumns). */
const fieldsReadBy = new WeakMap<HashChunkContext, boolean[]>();
function fieldsRead(ctx: HashChunkContext): boolean[] {
  let read = fieldsReadBy.get(ctx);
  if (read === undefined) {
    const columns = readColumns(ctx.mapping);
    read = Array.from({ length: ctx.columns }, (_, i) => columns.has(i));
    fieldsReadBy.set(ctx, read);
  }
  return read;
}

/** The rows' type cells of paired columns (`Phone 1 - Type`) into their fields. */
function setKinds(fieldValues: FieldValue[], columns: readonly MappedColumn[], fields: string[]): void {
  for (let i = 0; i < columns.length; i++) {
    const typeIndex = (columns[i] as MappedColumn).typeIndex;
    if (typeIndex !== undefined) (fieldValues[i] as FieldValue).kind = fields[typeIndex] ?? '';
  }
}

function grow<T extends Uint32Array<ArrayBuffer> | Int32Array<ArrayBuffer>>(array: T, length: number): T {
  const grown = new (array.constructor as new (n: number) => T)(length);
  grown.set(array);
  return grown;
}
