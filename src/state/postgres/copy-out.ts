/**
 * The rows of a query read as a binary `COPY ... TO STDOUT`: bytea values arrive as their bytes.
 * A plain query returns bytea as text the server encodes (base64 or hex) and the client decodes;
 * at 1M users the server's encoding alone took 330 ms of the 410 ms a snapshot's 108 MiB took to
 * read, the COPY 85-105 ms (docs/design.md). pg has no COPY of its own: pg-copy-streams gives the
 * CopyData stream, with backpressure; this module reads the binary format's tuples out of it.
 *
 * Format (PostgreSQL docs, COPY, "Binary Format"): an 11-byte signature, an int32 of flags and an
 * int32 header extension length (its bytes follow); then each tuple as an int16 field count and
 * each field as an int32 length (-1: NULL) and its bytes; an int16 of -1 ends the data.
 */
import type pg from 'pg';
import { to } from 'pg-copy-streams';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** Thrown when the stream is not a well-formed binary COPY of the expected fields. */
export class CopyFormatError extends Error {}

/** Reads exact byte counts from a stream of chunks. */
class ChunkReader {
  private chunk: Buffer = Buffer.alloc(0);
  private at = 0;

  constructor(private readonly chunks: AsyncIterator<Buffer>) {}

  /** Fill `into` with the next bytes; false when the stream ended first. */
  async fill(into: Buffer): Promise<boolean> {
    for (let done = 0; done < into.length;) {
      if (this.at === this.chunk.length) {
        const next = await this.chunks.next();
        if (next.done === true) return false;
        this.chunk = next.value;
        this.at = 0;
        continue;
      }
      const n = this.chunk.copy(into, done, this.at, Math.min(this.chunk.length, this.at + into.length - done));
      this.at += n;
      done += n;
    }
    return true;
  }
}

/** A header extension is never sent by PostgreSQL 15; anything this long is not its COPY. */
const MAX_EXTENSION_BYTES = 1 << 16;

/**
 * Each tuple of `SELECT <int4>, <bytea>` read by a binary COPY, in order: the integer, and the
 * bytes in `into` (valid until the next tuple is asked for). A value longer than `into` or a NULL
 * is refused. `select` must not take parameters (COPY has none): quote values with
 * `client.escapeLiteral`. The connection is busy until the generator ends: iterate it to the end
 * or leave the loop (`break`, `throw`: the rest is read and dropped), and send no other query on
 * `client` meanwhile (pg would queue it behind the COPY, which then never ends).
 */
export async function* copyIntBytes(
  client: pg.ClientBase,
  select: string,
  into: Buffer,
): AsyncGenerator<{ int: number; bytes: Buffer }> {
  const stream = client.query(to(`COPY (${select}) TO STDOUT (FORMAT binary)`));
  const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  try {
    yield* intBytesTuples(chunks, into);
  } finally {
    // Stopped early (the caller's error, or ours): the rest is read and dropped, so the connection stays usable.
    // (Not resume(): the iterator's 'readable' listener keeps the stream from flowing.)
    try {
      while ((await chunks.next()).done !== true);
    } catch {
      // The COPY failed: pg has taken the connection back.
    }
  }
}

/** The (int4, bytea) tuples of the binary COPY data in `chunks` (copyIntBytes, which owns the stream). */
export async function* intBytesTuples(
  chunks: AsyncIterator<Buffer>,
  into: Buffer,
): AsyncGenerator<{ int: number; bytes: Buffer }> {
  const reader = new ChunkReader(chunks);
  const word = Buffer.allocUnsafe(SIGNATURE.length + 8);
  const need = async (b: Buffer): Promise<Buffer> => {
    if (!(await reader.fill(b))) throw new CopyFormatError('the COPY data ended before its end marker');
    return b;
  };
  const head = await need(word);
  if (!head.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new CopyFormatError('not a binary COPY');
  // Bits 16-31 are critical (16: OIDs, never in a COPY of a SELECT; the others unknown): refused.
  // Bits 0-15 may be ignored.
  if (head.readUInt32BE(SIGNATURE.length) >>> 16 !== 0) throw new CopyFormatError('critical header flags');
  const extension = head.readUInt32BE(SIGNATURE.length + 4);
  if (extension > MAX_EXTENSION_BYTES) throw new CopyFormatError(`a header extension of ${extension} bytes`);
  await need(Buffer.allocUnsafe(extension));
  for (;;) {
    const count = (await need(word.subarray(0, 2))).readInt16BE(0);
    if (count === -1) break;
    if (count !== 2) throw new CopyFormatError(`a tuple of ${count} fields, expected 2`);
    const intLen = (await need(word.subarray(0, 4))).readInt32BE(0);
    if (intLen !== 4) throw new CopyFormatError('the first field is not an int4');
    const int = (await need(word.subarray(0, 4))).readInt32BE(0);
    const len = (await need(word.subarray(0, 4))).readInt32BE(0);
    if (len < 0 || len > into.length) throw new CopyFormatError(`a value of ${len} bytes (at most ${into.length})`);
    yield { int, bytes: await need(into.subarray(0, len)) };
  }
  // The end marker is followed by the end of the stream.
  if (await reader.fill(word.subarray(0, 1))) throw new CopyFormatError('bytes after the end marker');
}
