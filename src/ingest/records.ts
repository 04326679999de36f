/**
 * Record boundaries in UTF-8 CSV bytes, found in one linear pass with papaparse's quote rules,
 * and the chunker that cuts a byte stream into pieces of whole records.
 *
 * Every byte is scanned once (a resumable state machine carries the quote state from one read
 * to the next) and copied at most once into an output chunk, so one unbroken line of any length
 * costs linear time. Memory is bounded by MAX_RECORD_BYTES: a longer record is reported as a bad
 * row (`record_too_long`) and the rest of it is skipped as it streams by, never buffered.
 */

/** Why a record was skipped. */
export type CsvRowError =
  'unterminated_quote' | 'invalid_quotes' | 'field_count' | 'record_too_long' | 'invalid_utf8' | 'repeated_header';

/**
 * A piece of the input holding whole records. `text` chunks are UTF-8 bytes for
 * `parseCsvChunk`; `bad` chunks are a record the scanner gave up on, spanning `lines` lines.
 */
export type CsvChunk = { kind: 'text'; bytes: Uint8Array } | { kind: 'bad'; error: CsvRowError; lines: number };

/**
 * Default chunk size: its decoded text stays below V8's large-object size (~128 KiB), so a
 * chunk's strings die young in the worker instead of piling up in the old generation until a
 * full GC; still about 900 rows per message, so messaging costs are negligible.
 */
export const DEFAULT_CHUNK_BYTES = 64 * 1024;

/** The longest record (and header) read: no CRM row comes near it; longer is a hostile or broken file. */
export const MAX_RECORD_BYTES = 1024 * 1024;

export const QUOTE = 0x22;
export const LF = 0x0a;
export const CR = 0x0d;
/** The ASCII whitespace String.prototype.trim removes, which papaparse allows between a closing quote and the delimiter or line break. */
const isSpace = (b: number): boolean => b === 0x20 || b === 0x09 || b === 0x0b || b === 0x0c;

/**
 * The other whitespace trim removes, as UTF-8 (U+00A0, U+1680, U+2000 to U+200A, U+2028, U+2029,
 * U+202F, U+205F, U+3000, U+FEFF): each sequence's bytes as one number (`0xc2a0`), and the
 * sequences' proper starts, read a byte at a time across reads.
 */
const WIDE_SPACES = new Set([
  0xc2a0,
  0xe19a80,
  0xe280a8,
  0xe280a9,
  0xe280af,
  0xe2819f,
  0xe38080,
  0xefbbbf,
  ...Array.from({ length: 11 }, (_, i) => 0xe28080 + i),
]);
const WIDE_SPACE_STARTS = new Set([0xc2, 0xe1, 0xe19a, 0xe2, 0xe280, 0xe281, 0xe3, 0xe380, 0xef, 0xefbb]);

const enum ScanState {
  FieldStart = 0,
  Unquoted = 1,
  Quoted = 2,
  QuoteInQuoted = 3,
  SpacesAfterQuote = 4,
  /** A CR after a closing quote: a record boundary if LF follows, else whitespace after the quote. */
  CrAfterQuote = 5,
  /** After a closing quote, the first bytes of a multi-byte space (`wide` holds them). */
  WideSpaceAfterQuote = 6,
}

/**
 * Papaparse semantics, resumable across reads: a quote opens a quoted field only at the start of
 * a field; inside, `""` is an escaped quote and a quote closes the field only when followed
 * (after spaces) by the delimiter, a line break or the end. Any other quote is searched past.
 */
export class RecordScanner {
  private state: ScanState = ScanState.FieldStart;
  /** The bytes of a multi-byte space read so far (WideSpaceAfterQuote). */
  private wide = 0;

  constructor(private readonly delimiter: number) {}

  reset(): void {
    this.state = ScanState.FieldStart;
    this.wide = 0;
  }

  /** Whether the bytes scanned so far end inside a quoted field (`final`: no more bytes come). */
  inQuote(final: boolean): boolean {
    const s = this.state;
    return (
      s === ScanState.Quoted ||
      s === ScanState.CrAfterQuote ||
      s === ScanState.WideSpaceAfterQuote ||
      (!final && s === ScanState.QuoteInQuoted)
    );
  }

  /**
   * Scan buf[from, to): the offset just after the last record boundary (a line feed outside
   * quotes), or after the first one with `firstOnly` (scanning stops there), or -1 if none.
   */
  scan(buf: Uint8Array, from: number, to: number, firstOnly = false): number {
    if (this.state <= ScanState.Unquoted && !includes(buf, QUOTE, from, to))
      return this.scanUnquoted(buf, from, to, firstOnly);
    const delimiter = this.delimiter;
    let state = this.state;
    let wide = this.wide;
    let boundary = -1;
    for (let i = from; i < to; i++) {
      const b = buf[i] as number;
      if (state === ScanState.CrAfterQuote) {
        if (b === LF) {
          boundary = i + 1;
          state = ScanState.FieldStart;
          if (firstOnly) break;
          continue;
        }
        // A CR is whitespace to papaparse: what follows it decides, as after a space.
        state = ScanState.SpacesAfterQuote;
      }
      switch (state) {
        case ScanState.FieldStart:
        case ScanState.Unquoted:
          if (b === LF) {
            boundary = i + 1;
            state = ScanState.FieldStart;
            if (firstOnly) i = to;
          } else if (b === delimiter) state = ScanState.FieldStart;
          else if (state === ScanState.FieldStart) state = b === QUOTE ? ScanState.Quoted : ScanState.Unquoted;
          break;
        case ScanState.Quoted:
          if (b === QUOTE) state = ScanState.QuoteInQuoted;
          break;
        case ScanState.WideSpaceAfterQuote:
          wide = wide * 256 + b;
          if (WIDE_SPACES.has(wide)) state = ScanState.SpacesAfterQuote;
          // Not a space after all: the quote did not close the field, and this byte is in it.
          else if (!WIDE_SPACE_STARTS.has(wide)) state = b === QUOTE ? ScanState.QuoteInQuoted : ScanState.Quoted;
          break;
        default:
          // QuoteInQuoted or SpacesAfterQuote.
          if (b === QUOTE) state = state === ScanState.QuoteInQuoted ? ScanState.Quoted : ScanState.QuoteInQuoted;
          else if (b === delimiter) state = ScanState.FieldStart;
          else if (b === LF) {
            boundary = i + 1;
            state = ScanState.FieldStart;
            if (firstOnly) i = to;
          } else if (b === CR) state = ScanState.CrAfterQuote;
          else if (isSpace(b)) state = ScanState.SpacesAfterQuote;
          else if (WIDE_SPACE_STARTS.has(b)) {
            state = ScanState.WideSpaceAfterQuote;
            wide = b;
          } else state = ScanState.Quoted;
          break;
      }
    }
    this.state = state;
    this.wide = wide;
    return boundary;
  }

  /** No quote in range and none open: boundaries are plain line feeds. */
  private scanUnquoted(buf: Uint8Array, from: number, to: number, firstOnly: boolean): number {
    if (from >= to) return -1;
    const nl = firstOnly ? indexOf(buf, LF, from, to) : lastIndexOf(buf, LF, from, to);
    const end = firstOnly && nl !== -1 ? nl : to - 1;
    const last = buf[end];
    this.state = last === LF || last === this.delimiter ? ScanState.FieldStart : ScanState.Unquoted;
    return nl === -1 ? -1 : nl + 1;
  }
}

function includes(buf: Uint8Array, byte: number, from: number, to: number): boolean {
  return indexOf(buf, byte, from, to) !== -1;
}

function indexOf(buf: Uint8Array, byte: number, from: number, to: number): number {
  const i = buf.indexOf(byte, from);
  return i !== -1 && i < to ? i : -1;
}

function lastIndexOf(buf: Uint8Array, byte: number, from: number, to: number): number {
  if (to <= from) return -1;
  const i = buf.lastIndexOf(byte, to - 1);
  return i >= from ? i : -1;
}

export function countLf(buf: Uint8Array, from = 0, to = buf.length): number {
  let n = 0;
  for (let i = indexOf(buf, LF, from, to); i !== -1; i = indexOf(buf, LF, i + 1, to)) n++;
  return n;
}

/** One-shot scan of a buffer (tests, and the header): boundary, and whether it ends inside quotes. */
export function scanRecords(
  buf: Uint8Array,
  delimiter: number,
  final: boolean,
  firstOnly = false,
): { boundary: number; recordStart: number; openQuote: boolean } {
  const scanner = new RecordScanner(delimiter);
  const boundary = Math.max(0, scanner.scan(buf, 0, buf.length, firstOnly));
  return { boundary, recordStart: boundary, openQuote: scanner.inQuote(final) };
}

export interface ChunkRecordsOptions {
  delimiter: number;
  /** Target chunk size (records are never split). */
  chunkBytes: number;
  /** Longer records are bad rows (`record_too_long`, or `unterminated_quote` for an open quote). */
  maxRecordBytes: number;
}

/**
 * Cut a byte stream into chunks of whole records of about `chunkBytes`.
 *
 * A record still inside an open quote past `maxRecordBytes`, or at the end of input, is
 * unterminated: its first physical line is a bad row and scanning resumes on the next line (so
 * one stray quote costs one row, not the rest of the file). Resuming re-scans buffered bytes, so
 * the re-scanned total is capped at the input read so far plus a few records: past it, and for
 * any other over-long record, the record is a `record_too_long` bad row and is skipped to its end.
 */
export async function* chunkRecords(
  source: AsyncIterator<Buffer>,
  initial: Buffer,
  opts: ChunkRecordsOptions,
): AsyncGenerator<CsvChunk> {
  const chunker = new RecordChunker(opts, initial);
  let ended = false;
  for (;;) {
    let buf = chunker.queue.shift();
    if (buf === undefined && !ended) {
      const next = await source.next();
      if (next.done === true) ended = true;
      else {
        buf = next.value;
        chunker.consumed += buf.length;
      }
    }
    if (buf === undefined) {
      if (yield* chunker.finish()) return;
      continue;
    }
    yield* chunker.feed(buf);
  }
}

/** chunkRecords' state: the bytes read but not yet handed out, and the over-long record being skipped. */
class RecordChunker {
  private readonly scanner: RecordScanner;
  private readonly chunkBytes: number;
  private readonly maxRecordBytes: number;
  /** Bytes to process before reading more (the initial bytes, re-fed lines). */
  readonly queue: Buffer[];
  /** Bytes read from the source so far. */
  consumed = 0;
  private pending: Buffer[] = [];
  private pendingSize = 0;
  /** Bytes of `pending` that are whole records. */
  private complete = 0;
  private rescanned = 0;
  /** Lines of the over-long record being skipped, or undefined when not skipping. */
  private skipping: number | undefined;

  constructor(opts: ChunkRecordsOptions, initial: Buffer) {
    this.scanner = new RecordScanner(opts.delimiter);
    this.chunkBytes = opts.chunkBytes;
    this.maxRecordBytes = opts.maxRecordBytes;
    this.queue = initial.length > 0 ? [initial] : [];
  }

  /** Chunks of the whole records in `buf` (the rest stays pending); over-long records become bad rows. */
  *feed(buf: Buffer): Generator<CsvChunk> {
    const { scanner, chunkBytes } = this;
    let at = 0;
    while (at < buf.length) {
      if (this.skipping !== undefined) {
        const end = scanner.scan(buf, at, buf.length, true);
        this.skipping += countLf(buf, at, end === -1 ? buf.length : end - 1);
        if (end === -1) return;
        yield { kind: 'bad', error: 'record_too_long', lines: this.skipping };
        this.skipping = undefined;
        at = end;
        continue;
      }
      // Slices of at most a chunk, so chunks stay near chunkBytes whatever the read size.
      const room = this.pendingSize < chunkBytes ? chunkBytes - this.pendingSize : chunkBytes;
      const end = Math.min(buf.length, at + room);
      const boundary = scanner.scan(buf, at, end);
      this.pending.push(buf.subarray(at, end));
      this.pendingSize += end - at;
      if (boundary !== -1) this.complete = this.pendingSize - (end - boundary);
      at = end;
      if (this.pendingSize - this.complete > this.maxRecordBytes) {
        // The unread bytes go back in the queue, behind any lines giveUp re-feeds.
        if (at < buf.length) this.queue.unshift(buf.subarray(at));
        yield* this.giveUp(false);
        return;
      }
      if (this.complete > 0 && this.pendingSize >= chunkBytes) yield { kind: 'text', bytes: this.take(this.complete) };
    }
  }

  /**
   * End of input: the last record (no final newline) is whole unless it is left in a quote.
   * Returns false when lines were re-fed to the queue (the caller goes on), true when done.
   */
  *finish(): Generator<CsvChunk, boolean> {
    if (this.skipping !== undefined) yield { kind: 'bad', error: 'record_too_long', lines: this.skipping };
    else if (this.pendingSize > 0 && !this.scanner.inQuote(true))
      yield { kind: 'text', bytes: this.take(this.pendingSize) };
    else if (this.pendingSize > 0) {
      yield* this.giveUp(true);
      return false;
    }
    return true;
  }

  /** The first `end` pending bytes. A copy: the chunk owns its ArrayBuffer, so it can be transferred to a worker. */
  private take(end: number): Uint8Array {
    const out = new Uint8Array(end);
    let at = 0;
    const rest: Buffer[] = [];
    for (const piece of this.pending) {
      const n = Math.min(piece.length, end - at);
      if (n > 0) out.set(piece.subarray(0, n), at);
      if (n < piece.length) rest.push(piece.subarray(n));
      at += n;
    }
    this.pending = rest;
    this.pendingSize -= end;
    this.complete = 0;
    return out;
  }

  /** The open record is over-long or unterminated: a bad row; the lines after its first are re-fed if it is in a quote. */
  private *giveUp(final: boolean): Generator<CsvChunk> {
    if (this.complete > 0) yield { kind: 'text', bytes: this.take(this.complete) };
    const record = this.take(this.pendingSize);
    const firstLf = record.indexOf(LF);
    const rest = firstLf === -1 ? undefined : Buffer.from(record.subarray(firstLf + 1));
    const budget = this.consumed + 4 * this.maxRecordBytes;
    if (this.scanner.inQuote(final) && rest !== undefined && this.rescanned + rest.length <= budget) {
      this.rescanned += rest.length;
      this.scanner.reset();
      this.queue.unshift(rest);
      yield { kind: 'bad', error: 'unterminated_quote', lines: 1 };
    } else if (final) {
      yield {
        kind: 'bad',
        error: this.scanner.inQuote(true) ? 'unterminated_quote' : 'record_too_long',
        lines: 1 + countLf(record),
      };
    } else this.skipping = 1 + countLf(record);
  }
}
