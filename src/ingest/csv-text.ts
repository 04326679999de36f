/**
 * The text of a chunk of whole records (records.ts cuts them): its records and their fields,
 * and the cells written back out. This is the hashing workers' hot loop, kept apart from the
 * rest of CSV ingestion (csv.ts: opening, sniffing, decoding the input) so that a worker loads
 * only what it runs: papaparse, for the chunks that hold a quote, is loaded on the first such
 * chunk (a worker starts about 20 ms sooner without it; most chunks of most exports have none).
 */
import { isUtf8 } from 'node:buffer';
import { createRequire } from 'node:module';
import type { CsvDelimiter } from './preamble.js';
import { CR, type CsvRowError } from './records.js';

export interface ParsedChunkRow {
  /** Line offset of the record from the chunk's first line (0-based). */
  offset: number;
  fields: string[];
  error?: CsvRowError;
}

export interface ParsedChunk {
  rows: ParsedChunkRow[];
  /** Physical lines the chunk spans. */
  lines: number;
}

/** Receives the records of a chunk in order; `offset` is the record's line offset from the chunk start. */
export interface CsvChunkVisitor {
  row(fields: string[], offset: number): void;
  bad(offset: number, error: CsvRowError, fields: string[]): void;
}

/**
 * Parse a chunk of whole records with papaparse's rules and hand each record to `visit` (no per-row
 * wrapper objects: this is the workers' hot loop). Blank lines are dropped (they count as lines,
 * not rows); records whose field count differs from the header's are `field_count`.
 * Returns the number of physical lines the chunk spans.
 *
 * Records are split on LF alone, whatever the header's line ending: files mix LF and CRLF (a
 * CRLF header over LF rows, a stray CRLF line in an LF file), and splitting on the header's
 * ending would merge the other kind of lines into one record. LF is also exactly where the
 * record scanner cuts chunks. Papaparse keeps everything inside quotes, so a CRLF in a quoted
 * field stays CRLF; the CR that ends a CRLF line is dropped below (after a closing quote,
 * papaparse skips it already).
 *
 * `read` (by column index): the fields the visitor reads. In a chunk without quotes, the others
 * are left '' instead of cut from the text (the workers read 3 of an export's 6 to 40 columns);
 * a line without a delimiter is cut whole (it may be a one-field record, not a blank line), and a
 * damaged chunk is cut whole (each field is searched for U+FFFD).
 */
export function visitCsvChunk(
  text: string,
  delimiter: CsvDelimiter,
  columns: number,
  visit: CsvChunkVisitor,
  damaged = false,
  read?: readonly boolean[],
  header?: readonly string[],
): number {
  const hasCr = text.includes('\r');
  const headerAgain = header === undefined ? undefined : headerMatcher(header, read);
  const record = (fields: string[], offset: number, quoteError: boolean): void => {
    if (hasCr) {
      // The CR of a CRLF line (also the whole of a blank CRLF line). A CR closing a quoted last
      // field goes too: values are trimmed before use anyway.
      const lastIndex = fields.length - 1;
      const last = fields[lastIndex] as string;
      if (last.charCodeAt(last.length - 1) === CR) fields[lastIndex] = last.slice(0, -1);
    }
    if (fields.length === 1 && fields[0] === '' && columns !== 1) return; // a blank line: a line, not a row
    if (damaged && fields.some((f) => f.includes('\ufffd'))) visit.bad(offset, 'invalid_utf8', fields);
    else if (quoteError) visit.bad(offset, 'invalid_quotes', fields);
    else if (fields.length !== columns) visit.bad(offset, 'field_count', fields);
    else if (headerAgain?.(fields) === true) visit.bad(offset, 'repeated_header', fields);
    else visit.row(fields, offset);
  };
  if (text.includes('"')) return visitQuoted(text, delimiter, record);
  return visitUnquoted(text, delimiter, record, damaged ? undefined : read);
}

/**
 * Whether a record is the header again (exports joined one after the other, each with its
 * header): every cell read (`read`; all when undefined) is the header's, trimmed. Its names are
 * no values: a `Customer ID` or a `handle` cell would otherwise be sent as a user.
 */
function headerMatcher(header: readonly string[], read: readonly boolean[] | undefined): (fields: string[]) => boolean {
  const cells = header.flatMap((h, i) => ((read === undefined || read[i] === true) && h !== '' ? [i] : []));
  return (fields) => {
    for (let k = 0; k < cells.length; k++) {
      const i = cells[k] as number;
      const f = fields[i] as string;
      if (f !== header[i] && f.trim() !== header[i]) return false;
    }
    return cells.length > 0;
  };
}

type Papaparse = typeof import('papaparse');
let papa: Papaparse | undefined;
const papaparse = (): Papaparse => (papa ??= createRequire(import.meta.url)('papaparse') as Papaparse);

type RecordVisit = (fields: string[], offset: number, quoteError: boolean) => void;

/**
 * Papaparse over the whole chunk, then its records in order (a quoted field may span lines).
 *
 * A record with a stray quote (`A1,"Bobby" Smith,a1@x.com`) runs, by papaparse's rules, up to
 * the next quote that closes a field, which may be lines further (the next quoted field): those
 * lines would be one malformed record, the rows on them neither read nor counted. So such a
 * record's first line is the bad row and the lines after it, up to the record's end, are read
 * again on their own (as an unterminated quote's are, records.ts): one stray quote costs one row.
 * The lines read again in a chunk are at most its length or RECOVERY_CHARS (`budget`, in
 * characters); past it (quotes that never balance), each line of such a record is a bad row of
 * its own, so a chunk costs at most two parses (and a small one that many characters more).
 */
function visitQuoted(
  text: string,
  delimiter: CsvDelimiter,
  record: RecordVisit,
  budget = { chars: Math.max(text.length, RECOVERY_CHARS) },
): number {
  const parsed = papaparse().parse<string[]>(text, { delimiter, newline: '\n', quoteChar: '"', header: false });
  const data = parsed.data;
  let quoteErrors: Set<number> | undefined;
  for (const e of parsed.errors) if (e.row !== undefined && e.type === 'Quotes') (quoteErrors ??= new Set()).add(e.row);
  let offset = 0;
  let count = data.length;
  if (count > 0 && text.endsWith('\n')) {
    const last = data[count - 1];
    if (last !== undefined && last.length === 1 && last[0] === '') count--;
  }
  const lines = new LineCursor(text);
  for (let r = 0; r < count; r++) {
    const fields = data[r] as string[];
    let extraLines = 0;
    for (const f of fields) extraLines += countLf(f);
    const quoteError = quoteErrors?.has(r) === true;
    if (quoteError && extraLines > 0) {
      const from = lines.start(offset);
      const span = text.slice(from, lines.start(offset + 1 + extraLines)).split('\n');
      const first = offset;
      record([span[0] as string], first, true);
      const rest = span.slice(1, 1 + extraLines).join('\n') + '\n';
      if (rest.length <= budget.chars) {
        budget.chars -= rest.length;
        visitQuoted(rest, delimiter, (f, o, q) => record(f, first + 1 + o, q), budget);
      } else for (let k = 1; k <= extraLines; k++) record([span[k] as string], first + k, true);
    } else record(fields, offset, quoteError);
    offset += 1 + extraLines;
  }
  return offset;
}

/**
 * The least a chunk may read again for its stray quotes (see visitQuoted), whatever its size: a
 * small chunk (a small `chunkBytes`, the last of a file) reads them as the default chunk does.
 */
const RECOVERY_CHARS = 64 * 1024;

/** Where each line of a text starts, asked in increasing order (one pass over the text in all). */
class LineCursor {
  private line = 0;
  private at = 0;

  constructor(private readonly text: string) {}

  /** Where line `n` starts (n at least the last one asked); the text's length past its last line. */
  start(n: number): number {
    while (this.line < n) {
      const lf = this.text.indexOf('\n', this.at);
      this.at = lf === -1 ? this.text.length : lf + 1;
      this.line++;
    }
    return this.at;
  }
}

/**
 * A chunk without a quote, one line at a time: exactly what papaparse does with such text (its
 * fast mode splits on the newline, then on the delimiter, after dropping a leading U+FEFF), without
 * holding every record of the chunk at once. Most chunks of most exports take this path.
 */
function visitUnquoted(
  chunk: string,
  delimiter: CsvDelimiter,
  record: RecordVisit,
  read: readonly boolean[] | undefined,
): number {
  const text = chunk.charCodeAt(0) === 0xfeff ? chunk.slice(1) : chunk;
  let offset = 0;
  for (let start = 0; start < text.length; offset++) {
    const lf = text.indexOf('\n', start);
    const end = lf === -1 ? text.length : lf;
    record(splitLine(text, start, end, delimiter, read), offset, false);
    // Past the text after its last line: papaparse's empty record after a final LF is dropped.
    start = lf === -1 ? text.length : lf + 1;
  }
  return offset;
}

/**
 * `text.slice(start, end).split(delimiter)`, without the line's own string: each field is cut
 * from the chunk directly (a third less CPU per row than slicing the line, then splitting it).
 * With `read`, only the fields it marks are cut, the others are '' (see visitCsvChunk).
 */
function splitLine(
  text: string,
  start: number,
  end: number,
  delimiter: CsvDelimiter,
  read: readonly boolean[] | undefined,
): string[] {
  const fields: string[] = [];
  for (let from = start, i = 0; ; i++) {
    const at = text.indexOf(delimiter, from);
    if (at === -1 || at >= end) {
      fields.push(i === 0 || read === undefined || read[i] === true ? text.slice(from, end) : '');
      return fields;
    }
    fields.push(read === undefined || read[i] === true ? text.slice(from, at) : '');
    from = at + delimiter.length;
  }
}

/**
 * Decode a chunk of whole records. `damaged`: the bytes are not valid UTF-8, so decoding put
 * U+FFFD in place of some bytes; visitCsvChunk then rejects the records holding U+FFFD
 * (`invalid_utf8`) rather than hash a value that decoding changed. Checked per chunk, so the
 * whole input is covered, not only the sample read when it is opened.
 */
export function decodeChunk(bytes: Uint8Array): { text: string; damaged: boolean } {
  return { text: UTF8.decode(bytes), damaged: !isUtf8(bytes) };
}

const UTF8 = new TextDecoder();

/** visitCsvChunk collecting the records (header parsing, readCsv). */
export function parseCsvChunk(
  text: string,
  delimiter: CsvDelimiter,
  columns: number,
  damaged = false,
  header?: readonly string[],
): ParsedChunk {
  const rows: ParsedChunkRow[] = [];
  const visitor: CsvChunkVisitor = {
    row: (fields, offset) => rows.push({ offset, fields }),
    bad: (offset, error, fields) => rows.push({ offset, fields, error }),
  };
  const lines = visitCsvChunk(text, delimiter, columns, visitor, damaged, undefined, header);
  return { rows, lines };
}

/** Line feeds in `s`. */
export function countLf(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

/**
 * One CSV cell of a file meant for people (the `hash` CSV output, its list of rejects): quoted when it
 * holds a quote, delimiter or line break, and prefixed with `'` when it starts with a character
 * a spreadsheet reads as a formula (= + - @, tab, CR), so opening the file runs nothing.
 */
export function csvCell(s: string): string {
  const safe = FORMULA_START.test(s) ? `'${s}` : s;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

const FORMULA_START = /^[=+\-@\t\r]/;
