/**
 * CSV ingestion: bytes in (file, stdin, stream; gzip and UTF-16 handled), records out with the
 * physical line number where each record starts.
 *
 * The input is cut into chunks of whole records by a quote-aware byte scanner and every chunk
 * is parsed by papaparse on its own. Chunking is what keeps memory flat with file size, and it
 * is the unit of work the parallel hasher (`hashCsv`) ships to worker threads: the same
 * scanner and the same `visitCsvChunk` (csv-text.ts) serve `readCsv` and the workers, so both paths see
 * exactly the same records with the same line numbers.
 */
import { givenLabel } from '../identifiers/labels.js';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { ConfigError, InputError } from '../errors.js';
import { SAMPLE_ROWS } from '../identifiers/content.js';
import {
  canonicalEncoding,
  detectLegacyEncoding,
  encodingLabel,
  legacyToUtf8,
  utf8WithMarks,
  type CsvEncoding,
  type CsvEncodingSource,
} from './encodings.js';
import { countLf, decodeChunk, parseCsvChunk } from './csv-text.js';
import { findLayout, type CsvDelimiter } from './preamble.js';
import {
  chunkRecords,
  countLf as countLfBytes,
  CR,
  DEFAULT_CHUNK_BYTES,
  LF,
  MAX_RECORD_BYTES,
  RecordScanner,
  type CsvChunk,
  type CsvRowError,
} from './records.js';

/** A path (`-` is stdin), a Node stream, or any async iterable of bytes. */
export type CsvSource = string | Readable | AsyncIterable<Uint8Array>;

export interface CsvRow {
  /** Physical line (1-based) where the record starts. */
  line: number;
  /** The header row, shared by every row of a file. */
  header: readonly string[];
  fields: string[];
  error?: undefined;
}

export interface CsvBadRow {
  line: number;
  error: CsvRowError;
}

export interface ReadCsvOptions {
  /** Field delimiter; auto-detected among `, ; tab |` when absent. */
  delimiter?: CsvDelimiter;
  /**
   * The text encoding (any label TextDecoder knows: `utf-8`, `windows-1252`, `latin1`, `shift_jis`…);
   * detected when absent. A byte-order mark of another encoding is refused.
   */
  encoding?: string;
  /** Where `-` reads from (default: process.stdin). */
  stdin?: Readable;
  /** Target chunk size in bytes (records are never split). Default DEFAULT_CHUNK_BYTES (64 KiB). */
  chunkBytes?: number;
  /**
   * A longer record is a bad row (`record_too_long`, or `unterminated_quote` when a quote is left
   * open), a longer header an error. Default MAX_RECORD_BYTES (1 MiB).
   */
  maxRecordBytes?: number;
}

/** An opened CSV input: header known, records not yet read. */
export interface CsvInput {
  /** Display name (file name, `stdin` or `stream`). */
  name: string;
  header: readonly string[];
  /**
   * The first data rows (at most SAMPLE_ROWS, well-formed ones only, from the bytes read with the
   * header): what the column mapping judges each column's values by. Read again by chunks().
   */
  sample: readonly (readonly string[])[];
  /**
   * Line where the header record starts: 1, or the line after a preamble (notes, a title, blank
   * lines above the header), which is skipped.
   */
  headerLine: number;
  /**
   * Line of the record after the header: the header's physical lines counted in its bytes, so a
   * line break inside a header cell (`"Email⏎"`, Alt+Enter in Excel) counts though the name is trimmed.
   */
  firstDataLine: number;
  delimiter: CsvDelimiter;
  /** The header's line ending; data records may use either (they are split on LF alone). */
  newline: '\n' | '\r\n';
  /** The encoding the text was read in (`utf-8`, `utf-16le`, `windows-1252`, `shift_jis`…). */
  encoding: CsvEncoding;
  encodingSource: CsvEncodingSource;
  compressed: boolean;
  /** Size of the file on disk (compressed size for .gz); undefined for streams. */
  totalBytes: number | undefined;
  /** Bytes consumed from the source so far (same unit as totalBytes). */
  bytesRead(): number;
  /** Whole-record chunks of the data rows, in order. Can be iterated once. */
  chunks(): AsyncIterable<CsvChunk>;
  /** Parsed data rows and bad rows, in order. Can be iterated once (shares the stream with chunks()). */
  rows(): AsyncIterable<CsvRow | CsvBadRow>;
  /** Stop reading and release the file. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Bytes: source -> decompressed, decoded UTF-8 without BOM.

interface ByteInput {
  name: string;
  totalBytes: number | undefined;
  bytesRead(): number;
  bytes: AsyncIterator<Buffer>;
  encoding: CsvEncoding;
  encodingSource: CsvEncodingSource;
  compressed: boolean;
  close(): Promise<void>;
}

async function openRaw(
  source: CsvSource,
  stdin: Readable | undefined,
): Promise<{
  name: string;
  totalBytes: number | undefined;
  stream: AsyncIterable<Uint8Array>;
  gzName: boolean;
  close(): Promise<void>;
}> {
  if (typeof source !== 'string') {
    const destroy = async (): Promise<void> => {
      if (source instanceof Readable) source.destroy();
    };
    return { name: 'stream', totalBytes: undefined, stream: source, gzName: false, close: destroy };
  }
  if (source === '-') {
    const input = stdin ?? process.stdin;
    // Destroyed on close: an upload stopped early must not wait for more input that may never come.
    return {
      name: 'stdin',
      totalBytes: undefined,
      stream: input,
      gzName: false,
      close: async () => void input.destroy(),
    };
  }
  let size: number;
  try {
    const info = await stat(source);
    if (info.isDirectory()) {
      throw new InputError('input_is_directory', `${source} is a directory, not a CSV file`, {
        fix: 'pass the path of a CSV file (or - for stdin)',
      });
    }
    size = info.size;
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw fileError(source, error);
  }
  const stream = createReadStream(source, { highWaterMark: 256 * 1024 });
  return {
    name: basename(source),
    totalBytes: size,
    stream,
    gzName: source.toLowerCase().endsWith('.gz'),
    close: async () => {
      stream.destroy();
    },
  };
}

function fileError(path: string, error: unknown): InputError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT') {
    return new InputError('input_not_found', `input file ${path} does not exist`, {
      fix: 'check the path (or pass - to read stdin)',
      cause: error,
    });
  }
  if (code === 'EACCES' || code === 'EPERM') {
    return new InputError('input_not_readable', `input file ${path} is not readable (permission denied)`, {
      fix: 'fix the file permissions or run as a user who can read it',
      cause: error,
    });
  }
  return new InputError('input_read_failed', `could not read ${path}: ${code ?? 'read error'}`, {
    fix: 'check that the file exists and is a readable CSV file',
    cause: error,
  });
}

function toBuffer(chunk: Uint8Array | string): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** Read from an iterator until at least `n` bytes are buffered (or the end). */
async function peek(it: AsyncIterator<Buffer>, n: number): Promise<Buffer[]> {
  const head: Buffer[] = [];
  let size = 0;
  while (size < n) {
    const next = await it.next();
    if (next.done === true) break;
    head.push(next.value);
    size += next.value.length;
  }
  return head;
}

async function* prepend(head: Buffer[], rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  yield* head;
  for (;;) {
    const next = await rest.next();
    if (next.done === true) return;
    yield next.value;
  }
}

function startsWith(buf: Buffer, bytes: readonly number[]): boolean {
  return bytes.every((b, i) => buf[i] === b);
}

/**
 * The input as UTF-8 bytes: counted as read, decompressed when it is gzip, its encoding found (BOM,
 * or NUL bytes of UTF-16 without one) and converted. ZIP, binary and a `.gz` name on plain data
 * are refused here, before any row is read.
 */
async function openBytes(source: CsvSource, opts: ReadCsvOptions): Promise<ByteInput> {
  const raw = await openRaw(source, opts.stdin);
  let read = 0;
  const name = raw.name;
  async function* counted(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of raw.stream) {
        const buf = toBuffer(chunk);
        read += buf.length;
        yield buf;
      }
    } catch (error) {
      if (error instanceof InputError) throw error;
      throw typeof source === 'string' && source !== '-' ? fileError(source, error) : readError(name, error);
    }
  }
  try {
    const { it, head, compressed } = await decompressed(counted(), raw);
    const { bytes, encoding, source: encodingSource } = await decoded(it, head, name, forcedEncoding(opts.encoding));
    return {
      name,
      totalBytes: raw.totalBytes,
      bytesRead: () => read,
      bytes,
      encoding,
      encodingSource,
      compressed,
      close: () => raw.close(),
    };
  } catch (error) {
    await raw.close();
    throw error;
  }
}

/** The bytes gunzipped when they start with gzip's magic number, and their first bytes. */
async function decompressed(
  counted: AsyncIterator<Buffer>,
  raw: { name: string; gzName: boolean },
): Promise<{ it: AsyncIterator<Buffer>; head: Buffer; compressed: boolean }> {
  const head = Buffer.concat(await peek(counted, 4));
  if (startsWith(head, [0x1f, 0x8b])) {
    const it = gunzip(prepend([head], counted), raw.name);
    return { it, head: Buffer.concat(await peek(it, 4)), compressed: true };
  }
  if (raw.gzName && head.length > 0) {
    throw new InputError('input_not_gzip', `${raw.name} ends in .gz but is not gzip data`, {
      fix: 'decompress or rename the file, or pass the right file',
    });
  }
  return { it: counted, head, compressed: false };
}

/** The `encoding` option's canonical name; ConfigError when no decoder knows it. */
function forcedEncoding(label: string | undefined): CsvEncoding | undefined {
  if (label === undefined) return undefined;
  const encoding = canonicalEncoding(label);
  if (encoding === undefined) {
    throw new ConfigError('invalid_option', `encoding ${givenLabel(label)} is not known`, {
      fix: 'pass an encoding name such as utf-8, windows-1252, iso-8859-2, shift_jis, gbk, big5 or euc-kr',
    });
  }
  return encoding;
}

const BOMS: readonly { encoding: CsvEncoding; bytes: readonly number[] }[] = [
  { encoding: 'utf-8', bytes: [0xef, 0xbb, 0xbf] },
  { encoding: 'utf-16le', bytes: [0xff, 0xfe] },
  { encoding: 'utf-16be', bytes: [0xfe, 0xff] },
];

interface Decoded {
  bytes: AsyncGenerator<Buffer>;
  encoding: CsvEncoding;
  source: CsvEncodingSource;
}

/**
 * The encoding (from the BOM, which is dropped; from `forced`; or from the first 64 KiB) and the
 * bytes as UTF-8.
 */
async function decoded(
  it: AsyncIterator<Buffer>,
  head: Buffer,
  name: string,
  forced: CsvEncoding | undefined,
): Promise<Decoded> {
  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04])) {
    throw new InputError('input_not_csv', `${name} is a ZIP archive (an Excel workbook?), not a CSV file`, {
      fix: 'export the sheet as "CSV UTF-8" and pass that file',
    });
  }
  const bom = BOMS.find((b) => startsWith(head, b.bytes));
  if (bom !== undefined && forced !== undefined && forced !== bom.encoding)
    throw bomMismatch(name, bom.encoding, forced);
  if (bom !== undefined && bom.encoding !== 'utf-8') {
    const bytes = prepend([head.subarray(bom.bytes.length)], it);
    return { bytes: toUtf8(bytes, bom.encoding), encoding: bom.encoding, source: 'bom' };
  }
  const rest = prepend([bom === undefined ? head : head.subarray(bom.bytes.length)], it);
  const sample = Buffer.concat(await peek(rest, SAMPLE_BYTES));
  const bytes = prepend([sample], rest);
  const encoding = encodingOf(sample.subarray(0, SAMPLE_BYTES), name, forced, bom !== undefined);
  const source = bom !== undefined ? 'bom' : forced !== undefined ? 'option' : 'detected';
  return { bytes: toUtf8(bytes, encoding), encoding, source };
}

/**
 * UTF-16 by its NUL bytes (any other NUL is binary data); else the `forced` encoding, or UTF-8
 * after a UTF-8 BOM (UTF-8 is checked); else UTF-8 when the sample is; else the legacy encoding
 * that reads best.
 */
function encodingOf(sample: Buffer, name: string, forced: CsvEncoding | undefined, utf8Bom: boolean): CsvEncoding {
  const utf16 = encodingByNul(sample.subarray(0, 4096), name);
  if (forced !== undefined) {
    if (forced === 'utf-8') checkUtf8(sample, name, true);
    return forced;
  }
  if (utf16 !== undefined) return utf16;
  if (utf8Bom) checkUtf8(sample, name, false);
  const invalidLine = utf8Bom ? undefined : firstInvalidUtf8Line(sample);
  return invalidLine === undefined ? 'utf-8' : detectLegacyEncoding(sample, name, invalidLine);
}

function toUtf8(bytes: AsyncGenerator<Buffer>, encoding: CsvEncoding): AsyncGenerator<Buffer> {
  if (encoding === 'utf-8') return bytes;
  if (encoding === 'utf-16le' || encoding === 'utf-16be') return utf16ToUtf8(bytes, encoding);
  return legacyToUtf8(bytes, encoding);
}

function bomMismatch(name: string, bom: CsvEncoding, forced: CsvEncoding): InputError {
  return new InputError(
    'input_encoding_mismatch',
    `${name} starts with a ${encodingLabel(bom)} byte-order mark, but the encoding given is ${encodingLabel(forced)}`,
    { fix: `drop --encoding (the mark says ${encodingLabel(bom)}), or pass the file it was meant for` },
  );
}

/** Without a BOM, UTF-16 shows as NUL bytes in every other position; any other NUL means binary. */
function encodingByNul(sample: Buffer, name: string): CsvEncoding | undefined {
  const nulAt = (parity: number): number => {
    let n = 0;
    for (let i = parity; i < sample.length; i += 2) if (sample[i] === 0) n++;
    return n;
  };
  const [even, odd] = [nulAt(0), nulAt(1)];
  const half = Math.floor(sample.length / 2);
  if (even + odd === 0) return undefined;
  if (odd > half * 0.3 && even === 0) return 'utf-16le';
  if (even > half * 0.3 && odd === 0) return 'utf-16be';
  throw new InputError('input_binary', `${name} contains binary data (NUL bytes), not CSV text`, {
    fix: 'pass a CSV text file',
  });
}

function readError(name: string, error: unknown): InputError {
  const message = error instanceof Error ? error.message : String(error);
  return new InputError('input_read_failed', `could not read ${name}: ${message}`, {
    fix: 'check the input stream',
    cause: error,
  });
}

async function* gunzip(input: AsyncIterable<Buffer>, name: string): AsyncGenerator<Buffer> {
  const gz = createGunzip();
  const src = Readable.from(input);
  src.on('error', (error) => gz.destroy(error));
  src.pipe(gz);
  try {
    for await (const chunk of gz) yield chunk as Buffer;
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError('input_gzip_corrupt', `${name} is not valid gzip data (${(error as Error).message})`, {
      fix: 'check the file is complete (gzip -t FILE) or pass the uncompressed CSV',
      cause: error,
    });
  } finally {
    src.destroy();
    gz.destroy();
  }
}

/**
 * UTF-16 to UTF-8. An unpaired surrogate (or an odd last byte) has no UTF-8 form: a decoder
 * would put U+FFFD there and the value would be hashed as valid. It becomes a byte that is never
 * UTF-8 (0xFF) instead, so the workers' check rejects its record as `invalid_utf8`, as for a
 * UTF-8 file. A chunk's last code unit waits for the next chunk when it is half a character.
 */
async function* utf16ToUtf8(input: AsyncIterable<Buffer>, encoding: 'utf-16le' | 'utf-16be'): AsyncGenerator<Buffer> {
  let carry: Buffer | undefined;
  for await (const chunk of input) {
    const bytes = carry === undefined ? chunk : Buffer.concat([carry, chunk]);
    let end = bytes.length - (bytes.length % 2);
    if (end >= 2 && isHighSurrogate(bytes, end - 2, encoding)) end -= 2;
    carry = end === bytes.length ? undefined : Buffer.from(bytes.subarray(end));
    if (end > 0) yield utf16Text(bytes.subarray(0, end), encoding);
  }
  if (carry !== undefined) yield utf16Text(carry, encoding);
}

function isHighSurrogate(bytes: Buffer, at: number, encoding: 'utf-16le' | 'utf-16be'): boolean {
  const unit = encoding === 'utf-16le' ? bytes.readUInt16LE(at) : bytes.readUInt16BE(at);
  return unit >= 0xd800 && unit <= 0xdbff;
}

const NOT_UTF8 = Buffer.from([0xff]);
// With the u flag a paired surrogate is one astral code point: the class matches lone ones only.
const LONE_SURROGATE = /[\ud800-\udfff]/gu;

function utf16Text(bytes: Buffer, encoding: 'utf-16le' | 'utf-16be'): Buffer {
  const le = encoding === 'utf-16le' ? bytes : Buffer.from(bytes.subarray(0, bytes.length & ~1)).swap16();
  const text = le.toString('utf16le', 0, bytes.length & ~1);
  const utf8 = utf8WithMarks(text, LONE_SURROGATE);
  return bytes.length % 2 === 1 ? Buffer.concat([utf8, NOT_UTF8]) : utf8;
}

// ---------------------------------------------------------------------------------------------
// Opening a CSV input.

/** The line of the first byte that is not UTF-8 (a sample may end inside a character), or undefined. */
function firstInvalidUtf8Line(head: Buffer): number | undefined {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
    return undefined;
  } catch {
    const text = head.toString('utf8');
    return 1 + countLf(text.slice(0, text.indexOf('\ufffd')));
  }
}

/**
 * Refuse bytes that are not UTF-8 in a file read as UTF-8 (`forced`: the encoding option says it
 * is): decoding them would turn every accented letter into U+FFFD and hash that, silently.
 */
function checkUtf8(head: Buffer, name: string, forced: boolean): void {
  const line = firstInvalidUtf8Line(head);
  if (line === undefined) return;
  const where = `${name} is not UTF-8 text (first invalid byte on line ${line})`;
  throw new InputError('input_not_utf8', forced ? `${where}, although --encoding utf-8 says it is` : where, {
    fix: forced
      ? 'drop --encoding to have the encoding detected, or pass the one the file was exported in'
      : 'pass --encoding with the encoding the file was exported in, or export it as "CSV UTF-8"',
  });
}

/** Bytes read to detect the delimiter and check the encoding before reading records. */
const SAMPLE_BYTES = 64 * 1024;

/**
 * The header's bytes are all text in the file's encoding (past the 64 KiB checked when the file was
 * opened, or holding a byte the encoding does not define, which became 0xFF).
 */
function checkHeaderBytes(header: Buffer, input: ByteInput): void {
  if (input.encoding === 'utf-8') checkUtf8(header, input.name, input.encodingSource === 'option');
  else if (!isUtf8(header)) {
    throw new InputError(
      'input_not_utf8',
      `${input.name}: the header row holds bytes that are not ${encodingLabel(input.encoding)} text`,
      { fix: 'pass --encoding with the encoding the file was exported in, or export it as "CSV UTF-8"' },
    );
  }
}

/** The most header columns read: a wider header is refused before any work per column. */
export const MAX_HEADER_COLUMNS = 10_000;

function headerTooLong(name: string, max: number): InputError {
  return new InputError('input_header_too_large', `${name}: the header row is longer than ${max} bytes`, {
    fix: 'check that the file is a CSV export whose first line names the columns',
  });
}

/** Open a CSV input and read its header row. Throws InputError when there is no header. */
export async function openCsv(source: CsvSource, opts: ReadCsvOptions = {}): Promise<CsvInput> {
  const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const maxRecordBytes = opts.maxRecordBytes ?? MAX_RECORD_BYTES;
  const input = await openBytes(source, opts);
  try {
    // Enough bytes for delimiter detection and for the header record.
    const sampled = Buffer.concat(await peek(input.bytes, SAMPLE_BYTES));
    const newline = headerLineEnding(sampled, input.name);
    const { delimiter, headerRecord } = findLayout(sampleText(sampled), opts.delimiter);
    const delimByte = delimiter.charCodeAt(0);
    const skip = recordStart(sampled, delimByte, headerRecord);
    const headerLine = 1 + countLfBytes(sampled, 0, skip);
    const scanner = new RecordScanner(delimByte);
    const { head, boundary } = await readHeaderRecord(input, sampled.subarray(skip), scanner, maxRecordBytes);
    const headerEnd = boundary === -1 ? head.length : boundary;
    checkHeaderBytes(head.subarray(0, headerEnd), input);
    const unbalanced = boundary === -1 && scanner.inQuote(true);
    const header = parseHeader(head.subarray(0, headerEnd).toString('utf8'), delimiter, unbalanced, input.name);
    const rest = head.subarray(headerEnd);
    const sample = sampleRows(rest, delimiter, header.length, skip + head.length < SAMPLE_BYTES);
    const chunks = chunkRecords(input.bytes, Buffer.from(rest), { delimiter: delimByte, chunkBytes, maxRecordBytes });
    // The header record's bytes end with its line feed (boundary), or the input ends without one.
    const headerLines = countLfBytes(head, 0, headerEnd) + (boundary === -1 ? 1 : 0);
    const firstDataLine = headerLine + headerLines;
    return csvInput(input, chunks, { header, headerLine, firstDataLine, sample }, delimiter, newline);
  } catch (error) {
    await input.close();
    throw error;
  }
}

/** The offset where the `index`-th record (0-based) of `buf` starts. */
function recordStart(buf: Buffer, delimiter: number, index: number): number {
  const scanner = new RecordScanner(delimiter);
  let at = 0;
  for (let i = 0; i < index; i++) {
    const boundary = scanner.scan(buf, at, buf.length, true);
    if (boundary === -1) break;
    at = boundary;
  }
  return at;
}

/**
 * The first well-formed data rows in `rest` (the bytes read after the header). When the input
 * goes on, the text is cut at its last line break and the last record dropped (it may be cut).
 */
function sampleRows(rest: Buffer, delimiter: CsvDelimiter, columns: number, ended: boolean): string[][] {
  const end = ended ? rest.length : rest.lastIndexOf(LF) + 1;
  if (end <= 0) return [];
  const { text, damaged } = decodeChunk(rest.subarray(0, end));
  const rows = parseCsvChunk(text, delimiter, columns, damaged).rows;
  if (!ended) rows.pop();
  return rows.flatMap((r) => (r.error === undefined ? [r.fields] : [])).slice(0, SAMPLE_ROWS);
}

/** The header's line ending; old Mac (CR-only) files are refused. */
function headerLineEnding(head: Buffer, name: string): '\n' | '\r\n' {
  const firstLf = head.indexOf(LF);
  const firstCr = head.indexOf(CR);
  if (firstCr !== -1 && (firstLf === -1 || firstCr < firstLf - 1)) {
    throw new InputError('input_cr_line_endings', `${name} uses old Mac (CR-only) line endings`, {
      fix: 'convert the line endings to LF or CRLF (for example with `tr "\\r" "\\n"`)',
    });
  }
  return firstLf > 0 && head[firstLf - 1] === CR ? '\r\n' : '\n';
}

/**
 * The whole lines of the first 64 KiB, for delimiter detection: 64 KiB even when the source
 * handed over more at once (papaparse on a long unbalanced quote is slow).
 */
function sampleText(head: Buffer): string {
  const sampleBytes = head.subarray(0, SAMPLE_BYTES);
  const sampleEnd = sampleBytes.lastIndexOf(LF);
  return sampleBytes.subarray(0, sampleEnd === -1 ? sampleBytes.length : sampleEnd + 1).toString('utf8');
}

/**
 * Reads until the header record ends: grows until a boundary appears (a quoted header may span
 * lines); each byte is scanned once. `boundary` is -1 when the input ended inside the header.
 */
async function readHeaderRecord(
  input: ByteInput,
  first: Buffer,
  scanner: RecordScanner,
  maxRecordBytes: number,
): Promise<{ head: Buffer; boundary: number }> {
  const parts: Buffer[] = [first];
  let size = first.length;
  let boundary = scanner.scan(first, 0, first.length, true);
  while (boundary === -1 && size <= maxRecordBytes) {
    const more = await input.bytes.next();
    if (more.done === true) break;
    boundary = scanner.scan(more.value, 0, more.value.length, true);
    if (boundary !== -1) boundary += size;
    parts.push(more.value);
    size += more.value.length;
  }
  const head = parts.length === 1 ? first : Buffer.concat(parts, size);
  if ((boundary === -1 ? size : boundary) > maxRecordBytes) throw headerTooLong(input.name, maxRecordBytes);
  return { head, boundary };
}

/** The header's column names (trimmed); refuses a missing, badly quoted or too wide header. */
function parseHeader(headerText: string, delimiter: CsvDelimiter, unbalanced: boolean, name: string): string[] {
  const parsedHeader = parseCsvChunk(headerText, delimiter, 0);
  const headerRow = parsedHeader.rows[0];
  // Before the count of rows: a stray quote's lines come back as rows of their own (csv-text.ts).
  const badQuotes = headerRow?.error === 'invalid_quotes' || unbalanced;
  if (headerText.trim() === '' || headerRow === undefined || (parsedHeader.rows.length !== 1 && !badQuotes)) {
    throw new InputError(
      'input_no_header',
      `${name} has no header row (the file is empty or starts with a blank line)`,
      {
        fix: 'the first line must name the columns, for example: email,phone,country',
      },
    );
  }
  if (badQuotes) {
    throw new InputError('input_bad_header', `${name}: the header row has unbalanced quotes`, {
      fix: 'fix the quoting of the first line of the file',
    });
  }
  if (headerRow.fields.length > MAX_HEADER_COLUMNS) {
    throw new InputError(
      'input_header_too_large',
      `${name}: the header row has ${headerRow.fields.length} columns (at most ${MAX_HEADER_COLUMNS} are read)`,
      { fix: 'pass a CSV export with the identifier columns (a CRM export has tens of columns, not thousands)' },
    );
  }
  return headerRow.fields.map((h) => h.trim());
}

/** The opened input: its header and the data records, which can be iterated once. */
function csvInput(
  input: ByteInput,
  chunks: AsyncGenerator<CsvChunk>,
  layout: { header: string[]; headerLine: number; firstDataLine: number; sample: string[][] },
  delimiter: CsvDelimiter,
  newline: '\n' | '\r\n',
): CsvInput {
  const { header, headerLine, firstDataLine, sample } = layout;
  let consumed = false;
  const take = (): AsyncGenerator<CsvChunk> => {
    if (consumed) throw new Error('CsvInput can be iterated only once');
    consumed = true;
    return chunks;
  };
  return {
    name: input.name,
    header,
    sample,
    headerLine,
    firstDataLine,
    delimiter,
    newline,
    encoding: input.encoding,
    encodingSource: input.encodingSource,
    compressed: input.compressed,
    totalBytes: input.totalBytes,
    bytesRead: () => input.bytesRead(),
    chunks: take,
    rows: () => rowsOf(take(), header, delimiter, firstDataLine),
    close: async () => {
      await input.close();
      // Not awaited: a generator queues return() behind a read that may still wait for bytes
      // (a source that cannot be destroyed); it finishes when that read does.
      chunks.return(undefined).catch(() => undefined);
    },
  };
}

async function* rowsOf(
  chunks: AsyncIterable<CsvChunk>,
  header: readonly string[],
  delimiter: CsvDelimiter,
  firstLine: number,
): AsyncGenerator<CsvRow | CsvBadRow> {
  let line = firstLine;
  for await (const chunk of chunks) {
    if (chunk.kind === 'bad') {
      yield { line, error: chunk.error };
      line += chunk.lines;
      continue;
    }
    const { text, damaged } = decodeChunk(chunk.bytes);
    const parsed = parseCsvChunk(text, delimiter, header.length, damaged, header);
    for (const row of parsed.rows) {
      if (row.error !== undefined) yield { line: line + row.offset, error: row.error };
      else yield { line: line + row.offset, header, fields: row.fields };
    }
    line += parsed.lines;
  }
}

/**
 * Read a CSV file (path, `-` for stdin, a stream or an async iterable of bytes) as rows with
 * line numbers. Rows that cannot be parsed come as `{ line, error }` and the reading goes on.
 */
export async function* readCsv(source: CsvSource, opts: ReadCsvOptions = {}): AsyncGenerator<CsvRow | CsvBadRow> {
  const input = await openCsv(source, opts);
  try {
    yield* input.rows();
  } finally {
    await input.close();
  }
}
