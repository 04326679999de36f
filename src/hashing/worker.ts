/**
 * The per-chunk work of `hashCsv`: parse a chunk of whole CSV records, normalize and hash every
 * row, count it in a partial summary. It runs in worker threads (this file is the worker's
 * entry point) and, with `workers: 0`, on the calling thread. It imports only what that work
 * needs, so each worker's isolate stays small.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { decodeChunk, visitCsvChunk, type CsvBadRow, type CsvDelimiter, type CsvRowError } from '../ingest/csv.js';
import type { ColumnMapping, MappedColumn } from '../identifiers/mapping.js';
import {
  buildUser,
  IDENTIFIER_TYPES,
  REJECT_REASONS,
  serializeBuiltUser,
  writeUserFingerprint,
  type BuiltUser,
  type FieldValue,
  type IdentifierType,
  type MappedRecord,
  type NormalizeOptions,
  type Reject,
  type RejectReason,
} from '../identifiers/normalize.js';

// ---------------------------------------------------------------------------------------------
// Summary.

/** How many line numbers a summary keeps per reason (enough to find the problem, bounded memory). */
export const SUMMARY_LINES = 5;

export interface HashTypeCounts {
  /** Values normalized and hashed here (after de-duplication within each user). */
  valid: number;
  /** Values rejected. */
  invalid: number;
  /** Values passed through as already-hashed digests. */
  digests: number;
}

export interface HashReasonCount {
  count: number;
  /** The first SUMMARY_LINES line numbers, ascending. */
  lines: number[];
}

export interface HashSummary {
  /** Data rows read (malformed rows included, blank lines not). */
  rows: number;
  /** Rows that produced a user (at least one valid identifier). */
  users: number;
  /** Well-formed rows without any valid identifier (no user produced). */
  emptyRows: number;
  /** Rows skipped because the CSV record was malformed. */
  malformed: HashReasonCount & { reasons: Partial<Record<CsvRowError, number>> };
  types: Partial<Record<IdentifierType, HashTypeCounts>>;
  rejects: Partial<Record<RejectReason, HashReasonCount>>;
}

export function createHashSummary(): HashSummary {
  return { rows: 0, users: 0, emptyRows: 0, malformed: { count: 0, lines: [], reasons: {} }, types: {}, rejects: {} };
}

function noteLine(into: HashReasonCount, line: number): void {
  into.count++;
  // Lines come in order; a row rejecting several values of one reason is listed once.
  if (into.lines.length < SUMMARY_LINES && into.lines[into.lines.length - 1] !== line) into.lines.push(line);
}

function typeCounts(summary: HashSummary, type: IdentifierType): HashTypeCounts {
  return (summary.types[type] ??= { valid: 0, invalid: 0, digests: 0 });
}

/** Count one built user (one well-formed data row). */
export function addUserToSummary(summary: HashSummary, built: BuiltUser): void {
  summary.rows++;
  const user = built.user;
  let any = false;
  // Only the types present (user keys), not all six: this runs once per row.
  for (const key in user) {
    const type = key as IdentifierType;
    const values = user[type];
    if (values === undefined || values.length === 0) continue;
    any = true;
    const digests = built.digests === undefined ? 0 : (built.digests[type] ?? 0);
    const counts = summary.types[type] ?? typeCounts(summary, type);
    counts.valid += values.length - digests;
    counts.digests += digests;
  }
  if (any) summary.users++;
  else summary.emptyRows++;
  const rejects = built.rejects;
  for (let i = 0; i < rejects.length; i++) {
    const r = rejects[i] as Reject;
    typeCounts(summary, r.type).invalid++;
    noteLine((summary.rejects[r.reason] ??= { count: 0, lines: [] }), r.line);
  }
}

/** Count one malformed CSV record. */
export function addBadRowToSummary(summary: HashSummary, line: number, error: CsvRowError): void {
  summary.rows++;
  noteLine(summary.malformed, line);
  summary.malformed.reasons[error] = (summary.malformed.reasons[error] ?? 0) + 1;
}

function mergeLines(into: HashReasonCount, from: HashReasonCount, lineOffset: number): void {
  into.count += from.count;
  for (const l of from.lines) {
    if (into.lines.length >= SUMMARY_LINES) break;
    if (into.lines[into.lines.length - 1] !== l + lineOffset) into.lines.push(l + lineOffset);
  }
}

/**
 * Add `from` into `into`. Merge summaries in input order (as hashCsv does) so the kept line
 * numbers are the first ones; `lineOffset` is added to `from`'s line numbers.
 */
export function mergeHashSummary(into: HashSummary, from: HashSummary, lineOffset = 0): HashSummary {
  into.rows += from.rows;
  into.users += from.users;
  into.emptyRows += from.emptyRows;
  mergeLines(into.malformed, from.malformed, lineOffset);
  for (const [reason, n] of Object.entries(from.malformed.reasons) as [CsvRowError, number][]) {
    into.malformed.reasons[reason] = (into.malformed.reasons[reason] ?? 0) + n;
  }
  for (const type of IDENTIFIER_TYPES) {
    const t = from.types[type];
    if (t === undefined) continue;
    const counts = typeCounts(into, type);
    counts.valid += t.valid;
    counts.invalid += t.invalid;
    counts.digests += t.digests;
  }
  for (const reason of REJECT_REASONS) {
    const r = from.rejects[reason];
    if (r !== undefined) mergeLines((into.rejects[reason] ??= { count: 0, lines: [] }), r, lineOffset);
  }
  return into;
}

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
  /** `serializeUser` of every user with at least one identifier, each followed by `\n`. */
  jsonLines: string;
  /** Input line of each of those users. */
  lines: Uint32Array;
  /** Dedupe fingerprint of each user (`writeUserFingerprint`): high word at 2i, low word at 2i+1. */
  fingerprints: Uint32Array;
}

// ---------------------------------------------------------------------------------------------
// One chunk (the unit of work of the fast path; runs in a worker or inline).

/** What a worker needs to process chunks of one file. Plain data: it crosses the thread boundary. */
export interface HashChunkContext {
  columns: number;
  delimiter: CsvDelimiter;
  mapping: ColumnMapping;
  normalize: NormalizeOptions;
  emit: HashEmit;
  /** For emit csv: the output columns (identifier types). */
  outputTypes: IdentifierType[];
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

const csvCell = (s: string): string => (/[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);

/** Header line of the `hash` command's CSV output. */
export function hashCsvHeader(types: readonly IdentifierType[]): string {
  return `${types.join(',')}\n`;
}

/** The identifier types a mapping produces, in IDENTIFIER_TYPES order (the CSV output columns). */
export function mappedTypes(mapping: ColumnMapping): IdentifierType[] {
  return IDENTIFIER_TYPES.filter((t) => mapping.columns.some((c) => c.type === t));
}

/**
 * Collects output lines as UTF-8 bytes. Text is gathered in pieces below V8's large-object size
 * (a flat string over ~128 KiB lives in the old generation until a full GC), so the garbage of a
 * chunk dies young; the bytes are transferred to the main thread, which writes them as they are.
 */
class OutputBuilder {
  private static readonly PIECE = 32 * 1024;
  private readonly pieces: Buffer[] = [];
  private size = 0;
  private text = '';

  add(line: string): void {
    this.text += line;
    if (this.text.length >= OutputBuilder.PIECE) this.flush();
  }

  private flush(): void {
    const piece = Buffer.from(this.text, 'utf8');
    this.pieces.push(piece);
    this.size += piece.length;
    this.text = '';
  }

  bytes(): Uint8Array {
    if (this.text !== '') this.flush();
    // Never pooled: the result owns its ArrayBuffer, so it can be transferred.
    const all = new Uint8Array(this.size);
    let at = 0;
    for (const piece of this.pieces) {
      all.set(piece, at);
      at += piece.length;
    }
    return all;
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
  const countryIndex = ctx.mapping.country?.index;
  const fieldValues: FieldValue[] = columns.map((c) => ({ column: c.column, type: c.type, raw: '' }));
  const record: MappedRecord = { line: 0, fields: fieldValues };
  const { emit, outputTypes, normalize } = ctx;
  let jsonLines = '';
  let packedCount = 0;
  let packedLines = new Uint32Array(emit === 'packed' ? 1024 : 0);
  let fingerprints = new Uint32Array(emit === 'packed' ? 2048 : 0);
  const row = (fields: string[], offset: number): void => {
    for (let i = 0; i < columns.length; i++)
      (fieldValues[i] as FieldValue).raw = fields[(columns[i] as MappedColumn).index] ?? '';
    record.line = offset;
    // Assigned even when absent (buildUser treats undefined and '' alike): keeps the object's shape stable.
    (record as { country?: string | undefined }).country =
      countryIndex === undefined ? undefined : fields[countryIndex];
    const built = buildUser(record, normalize);
    addUserToSummary(summary, built);
    for (const r of built.rejects) rejects.push(r);
    if (emit === 'packed') {
      const json = serializeBuiltUser(built.user);
      if (json === '{}') return;
      if (packedCount === packedLines.length) {
        packedLines = grow(packedLines, packedLines.length * 2);
        fingerprints = grow(fingerprints, fingerprints.length * 2);
      }
      packedLines[packedCount] = offset;
      writeUserFingerprint(json, fingerprints, packedCount++);
      jsonLines += json + '\n';
    } else if (emit === 'users') {
      (built as HashedUser).json = serializeBuiltUser(built.user);
      users.push(built as HashedUser);
    } else if (emit === 'jsonl') {
      out.add(serializeBuiltUser(built.user));
      out.add('\n');
    } else {
      let line = '';
      for (let i = 0; i < outputTypes.length; i++) {
        const type = outputTypes[i] as IdentifierType;
        const values = built.user[type];
        if (i > 0) line += ',';
        if (values !== undefined) line += type === 'partner_user_id' ? csvCell(values.join('|')) : values.join('|');
      }
      out.add(line);
      out.add('\n');
    }
  };
  const bad = (offset: number, error: CsvRowError): void => {
    malformed.push({ line: offset, error });
    addBadRowToSummary(summary, offset, error);
  };
  const { text, damaged } = decodeChunk(bytes);
  const lines = visitCsvChunk(text, ctx.delimiter, ctx.columns, { row, bad }, damaged);
  const result: HashChunkResult = { lines, users, output: out.bytes(), rejects, malformed, summary };
  if (emit === 'packed')
    result.packed = {
      jsonLines,
      lines: packedLines.slice(0, packedCount),
      fingerprints: fingerprints.slice(0, 2 * packedCount),
    };
  return result;
}

function grow(array: Uint32Array, length: number): Uint32Array<ArrayBuffer> {
  const grown = new Uint32Array(length);
  grown.set(array);
  return grown;
}

/** workerData of a hash worker. */
export interface HashWorkerData {
  hashChunkContext: HashChunkContext;
}

const data = workerData as Partial<HashWorkerData> | null;
const port = parentPort;
if (!isMainThread && port !== null && data?.hashChunkContext !== undefined) {
  const ctx = data.hashChunkContext;
  port.on('message', (message: { seq: number; bytes: Uint8Array }) => {
    try {
      const result = hashChunk(message.bytes, ctx);
      const transfer: ArrayBuffer[] = [];
      if (result.output.byteLength > 0) transfer.push(result.output.buffer as ArrayBuffer);
      if (result.packed !== undefined)
        transfer.push(result.packed.lines.buffer as ArrayBuffer, result.packed.fingerprints.buffer as ArrayBuffer);
      port.postMessage({ seq: message.seq, result }, transfer);
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      port.postMessage({ seq: message.seq, error: { message: e.message, stack: e.stack } });
    }
  });
}
