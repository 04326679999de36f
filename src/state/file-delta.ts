/**
 * What a commit writes of a snapshot file that changed in place, and how the database's rows of a
 * file are laid out (schemas 2 and 3, schema.ts).
 *
 * A file is stored as its size, its SHA-256 and patch rows applied in `seq` order; each row packs
 * ranges `[offset: uint64 BE][length: uint32 BE][bytes]` (at most ROW_BYTES a row, headers
 * included). A file written whole is one range a row, from offset 0. A file changed in place (the
 * data file: frames appended, removed users' frames scrubbed) gets one more set of rows holding
 * only the blocks whose bytes changed: the database holds an 8-byte digest (SHA-256, truncated)
 * of each BLOCK_BYTES block of the file as it stored it, sealed to that version of the file
 * (sealBlocks), and the commit compares the file's blocks with them. When the rows would hold
 * more than FOLD times the file's bytes, or the file shrank, or the digests are missing or their
 * seal is not the file's, it is written whole again instead.
 *
 * Whatever goes wrong in this bookkeeping cannot be misread: the file's SHA-256, computed from
 * the local file at the commit, is checked against the bytes rebuilt from the rows on every open.
 */
import { createHash, hash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { corrupt } from './snapshot-format.js';

/** The most bytes one row holds (ranges and their headers). */
export const ROW_BYTES = 1 << 20;
/** The granularity of change detection (a scrubbed frame is about 100 bytes). */
export const BLOCK_BYTES = 1024;
const DIGEST_BYTES = 8;
export const RANGE_HEADER_BYTES = 12;
/** Rows may hold up to FOLD times the file's size before it is written whole again. */
export const FOLD = 2;
const READ_BYTES = 1 << 20;

/**
 * Whether a commit stores a file's changed blocks (`delta` bytes) as more rows, rewriting the stored
 * rows that hold bytes of them (`refill` bytes), rather than the file whole: while the rows stay
 * within FOLD times the file, and the commit writes less than the file (scattered changes can touch
 * every row).
 */
export function patches(p: { size: number; stored: number; delta: number; refill: number }): boolean {
  return p.stored + p.delta <= FOLD * p.size && p.delta + p.refill < p.size;
}

/** The bytes of the block digests of a file of `size` bytes. */
const blockDigestBytes = (size: number): number => Math.ceil(size / BLOCK_BYTES) * DIGEST_BYTES;

const SEAL_BYTES = 32;
const SEAL_CONTEXT = Buffer.from('audience-kit block digests v2\n', 'latin1');

/** SHA-256 of the digests, bound to the file they describe (its SHA-256 and size). */
function seal(fileSha256: Buffer, size: number, blocks: Buffer): Buffer {
  const sizeBytes = Buffer.alloc(8);
  sizeBytes.writeBigUInt64BE(BigInt(size));
  return createHash('sha256').update(SEAL_CONTEXT).update(fileSha256).update(sizeBytes).update(blocks).digest();
}

/** How a file's block digests are stored (schema 3, column `blocks`): a seal, then the digests. */
export function sealBlocks(fileSha256: Buffer, size: number, blocks: Buffer): Buffer {
  return Buffer.concat([seal(fileSha256, size, blocks), blocks]);
}

/** The stored value's length for a file of `size` bytes. */
export const sealedBlocksBytes = (size: number): number => SEAL_BYTES + blockDigestBytes(size);

/**
 * The digests of a stored value, when its seal is that of the file of `fileSha256` and `size`;
 * undefined otherwise (a damaged value, or digests of another version of the file).
 */
export function unsealBlocks(stored: Buffer, fileSha256: Buffer, size: number): Buffer | undefined {
  if (stored.length !== sealedBlocksBytes(size)) return undefined;
  const blocks = stored.subarray(SEAL_BYTES);
  return seal(fileSha256, size, blocks).equals(stored.subarray(0, SEAL_BYTES)) ? blocks : undefined;
}

/** A file as read once: its size, SHA-256 and (when asked) its blocks' digests. */
export interface FileScan {
  size: number;
  sha256: Buffer;
  blocks: Buffer | undefined;
}

/** Read `path` once for its SHA-256 and, with `withBlocks`, a digest per block. */
export function scanFile(path: string, withBlocks: boolean): FileScan {
  const fd = openSync(path, 'r');
  try {
    const whole = createHash('sha256');
    const digests: Buffer[] = [];
    const buf = Buffer.allocUnsafe(READ_BYTES);
    let size = 0;
    for (let n; (n = readSync(fd, buf, 0, READ_BYTES, size)) > 0; size += n) {
      const chunk = buf.subarray(0, n);
      whole.update(chunk);
      if (withBlocks) digests.push(blockDigests(chunk));
    }
    return { size, sha256: whole.digest(), blocks: withBlocks ? Buffer.concat(digests) : undefined };
  } finally {
    closeSync(fd);
  }
}

/**
 * The digests of `chunk`'s blocks (READ_BYTES is a multiple of BLOCK_BYTES: blocks never straddle
 * chunks). One-shot `hash`: a `Hash` object a block took 2.4 s for a 1.1 GB file, this 1.97 s.
 */
function blockDigests(chunk: Buffer): Buffer {
  const out = Buffer.allocUnsafe(blockDigestBytes(chunk.length));
  for (let at = 0, k = 0; at < chunk.length; at += BLOCK_BYTES, k += DIGEST_BYTES)
    hash('sha256', chunk.subarray(at, at + BLOCK_BYTES), 'buffer').copy(out, k, 0, DIGEST_BYTES);
  return out;
}

/**
 * The byte ranges of `now` that differ from `old` (as flat [start, end) pairs, coalesced): the
 * blocks whose digest differs, and everything past the old size.
 */
export function changedRanges(old: { size: number; blocks: Buffer }, now: FileScan & { blocks: Buffer }): number[] {
  const ranges: number[] = [];
  const blocks = now.blocks.length / DIGEST_BYTES;
  const oldBlocks = old.blocks.length / DIGEST_BYTES;
  for (let b = 0; b < blocks; b++) {
    const k = b * DIGEST_BYTES;
    const same = b < oldBlocks && now.blocks.compare(old.blocks, k, k + DIGEST_BYTES, k, k + DIGEST_BYTES) === 0;
    if (same) continue;
    const start = b * BLOCK_BYTES;
    const end = Math.min(now.size, start + BLOCK_BYTES);
    if (ranges.length > 0 && ranges[ranges.length - 1] === start) ranges[ranges.length - 1] = end;
    else ranges.push(start, end);
  }
  return ranges;
}

/**
 * The parts of `ranges` below the stored size whose bytes may differ from the stored ones: the
 * ranges cut at `old.size`, less the stored partial last block when its bytes are still those its
 * digest was made of (frames appended to it change its digest, not the bytes the rows hold).
 */
export function overwrittenRanges(
  ranges: readonly number[],
  old: { size: number; blocks: Buffer },
  path: string,
): number[] {
  const below: number[] = [];
  for (let i = 0; i < ranges.length && (ranges[i] as number) < old.size; i += 2)
    below.push(ranges[i] as number, Math.min(old.size, ranges[i + 1] as number));
  const tail = old.size - (old.size % BLOCK_BYTES);
  if (tail === old.size || below.at(-1) !== old.size) return below;
  const k = (tail / BLOCK_BYTES) * DIGEST_BYTES;
  const bytes = Buffer.allocUnsafe(old.size - tail);
  const fd = openSync(path, 'r');
  try {
    readWhole(fd, bytes, tail, path);
  } finally {
    closeSync(fd);
  }
  if (hash('sha256', bytes, 'buffer').compare(old.blocks, k, k + DIGEST_BYTES, 0, DIGEST_BYTES) !== 0) return below;
  // The tail block is unchanged below the stored size: cut it off the last range.
  below[below.length - 1] = tail;
  if (below.at(-2) === tail) below.length -= 2;
  return below;
}

/** The number of bytes the ranges cover. */
export function rangeBytes(ranges: readonly number[]): number {
  let n = 0;
  for (let i = 0; i < ranges.length; i += 2) n += (ranges[i + 1] as number) - (ranges[i] as number);
  return n;
}

/**
 * Packs the ranges of the file at `path` into rows of at most ROW_BYTES (range headers included),
 * read as they are needed. Each row is the same buffer: use it before asking for the next.
 */
export function* packRows(path: string, ranges: readonly number[]): Generator<Buffer> {
  const fd = openSync(path, 'r');
  const row = Buffer.allocUnsafe(ROW_BYTES);
  let used = 0;
  try {
    for (let i = 0; i < ranges.length; i += 2) {
      for (let at = ranges[i] as number, end = ranges[i + 1] as number; at < end;) {
        if (ROW_BYTES - used <= RANGE_HEADER_BYTES) {
          yield row.subarray(0, used);
          used = 0;
        }
        const len = Math.min(end - at, ROW_BYTES - used - RANGE_HEADER_BYTES);
        row.writeBigUInt64BE(BigInt(at), used);
        row.writeUInt32BE(len, used + 8);
        used += RANGE_HEADER_BYTES;
        readWhole(fd, row.subarray(used, used + len), at, path);
        used += len;
        at += len;
      }
    }
    if (used > 0) yield row.subarray(0, used);
  } finally {
    closeSync(fd);
  }
}

/** Each range of a row as (offset, bytes), checked to lie within a file of `size` bytes. */
export function* unpackRow(row: Buffer, size: number, name: string): Generator<{ offset: number; bytes: Buffer }> {
  for (let at = 0; at < row.length;) {
    if (at + RANGE_HEADER_BYTES > row.length) throw corrupt(`a row of the snapshot's file ${name} is cut short`);
    const offset = Number(row.readBigUInt64BE(at));
    const len = row.readUInt32BE(at + 8);
    at += RANGE_HEADER_BYTES;
    if (at + len > row.length || offset + len > size)
      throw corrupt(`a row of the snapshot's file ${name} holds bytes outside the file`);
    yield { offset, bytes: row.subarray(at, at + len) };
    at += len;
  }
}

/** Where a row writes in its file: from its lowest offset to its highest end. */
export interface RowSpan {
  seq: number;
  /** The row's length. */
  bytes: number;
  start: number;
  end: number;
}

/** Where row `seq` of a file of `size` bytes writes (a row without ranges: an empty span at 0). */
export function rowSpan(seq: number, row: Buffer, size: number, name: string): RowSpan {
  let start = Infinity;
  let end = 0;
  for (const { offset, bytes } of unpackRow(row, size, name)) {
    start = Math.min(start, offset);
    end = Math.max(end, offset + bytes.length);
  }
  return { seq, bytes: row.length, start: Number.isFinite(start) ? start : 0, end };
}

/**
 * Overwrite, in `row`, the bytes of each range that meets one of `changed` (flat sorted [start, end)
 * pairs) with the bytes the file of `fd` has there now; whether any range did.
 */
export function refillRow(
  row: Buffer,
  fd: number,
  path: string,
  size: number,
  name: string,
  changed: readonly number[],
): boolean {
  let refilled = false;
  for (const { offset, bytes } of unpackRow(row, size, name)) {
    if (!meets(changed, offset, offset + bytes.length)) continue;
    readWhole(fd, bytes, offset, path);
    refilled = true;
  }
  return refilled;
}

/** Whether [start, end) meets one of the sorted flat ranges. */
export function meets(ranges: readonly number[], start: number, end: number): boolean {
  let lo = 0;
  let hi = ranges.length / 2;
  // The first range that ends after `start`.
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((ranges[2 * mid + 1] as number) <= start) lo = mid + 1;
    else hi = mid;
  }
  return lo < ranges.length / 2 && (ranges[2 * lo] as number) < end;
}

function readWhole(fd: number, into: Buffer, position: number, path: string): void {
  for (let done = 0; done < into.length;) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) throw new Error(`internal error: ${path} shrank while it was stored`);
    done += n;
  }
}
