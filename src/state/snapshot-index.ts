/**
 * The snapshot's index file: sorted fixed-size entries (fingerprint, offset and length of the
 * user's frame in the data file, last confirmed send in seconds) after a 128-byte header
 * (snapshot-format.ts). Reading it in chunks, checking it whole, writing a new one, and merging
 * an old one with the changes of a `pending` log in one pass.
 */
import { createHash, type Hash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, rmSync } from 'node:fs';
import { environmentError } from '../errors.js';
import { stateFs } from './fs.js';
import {
  corrupt,
  decodeIndexHeader,
  encodeIndexHeader,
  INDEX_HEADER_BYTES,
  SNAPSHOT_ENTRY_BYTES,
  type IndexHeader,
} from './snapshot-format.js';

const HEADER_BYTES = INDEX_HEADER_BYTES;
/** Entries per read or write of the index: a buffer size, not part of the format (the bytes written do not depend on it). */
let chunkEntries = 1 << 16;

/**
 * Sets the entries per chunk and returns the previous figure: for tests, which cross chunk
 * boundaries with a few hundred users instead of 65,536 (a writer keeps the size it was made with).
 */
export function setIndexChunkEntries(entries: number): number {
  const previous = chunkEntries;
  chunkEntries = entries;
  return previous;
}

/**
 * The order that sorts the keys (hi, lo as unsigned 32-bit words) ascending: a stable LSD radix
 * sort on 16-bit digits, linear in n (a comparator sort of 10M keys takes tens of seconds).
 */
export function sortKeyOrder(hi: Uint32Array, lo: Uint32Array, n: number): Uint32Array {
  let order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let next = new Uint32Array(n);
  const counts = new Uint32Array(65537);
  for (let pass = 0; pass < 4; pass++) {
    const words = pass < 2 ? lo : hi;
    const shift = pass % 2 === 0 ? 0 : 16;
    counts.fill(0);
    for (let i = 0; i < n; i++) (counts[(((words[order[i] as number] as number) >>> shift) & 0xffff) + 1] as number)++;
    for (let d = 1; d <= 65536; d++) counts[d] = (counts[d] as number) + (counts[d - 1] as number);
    for (let i = 0; i < n; i++) {
      const k = order[i] as number;
      const d = ((words[k] as number) >>> shift) & 0xffff;
      next[counts[d] as number] = k;
      counts[d] = (counts[d] as number) + 1;
    }
    [order, next] = [next, order];
  }
  return order;
}

/** Key comparison on unsigned words. */
export const compareKeys = (ah: number, al: number, bh: number, bl: number): number =>
  ah !== bh ? (ah < bh ? -1 : 1) : al !== bl ? (al < bl ? -1 : 1) : 0;

/** Successive chunks of the index entries (`first`: position of the chunk's first entry); the buffer is reused. */
export function* entryChunks(path: string, count: number): Generator<{ buf: Buffer; n: number; first: number }> {
  if (count === 0) return;
  const fd = openSync(path, 'r');
  try {
    const chunk = chunkEntries;
    const buf = Buffer.allocUnsafe(chunk * SNAPSHOT_ENTRY_BYTES);
    for (let first = 0; first < count; first += chunk) {
      const n = Math.min(chunk, count - first);
      readInto(fd, buf, n * SNAPSHOT_ENTRY_BYTES, HEADER_BYTES + first * SNAPSHOT_ENTRY_BYTES);
      yield { buf, n, first };
    }
  } finally {
    closeSync(fd);
  }
}

export const entryOffset = (buf: Buffer, at: number): number => buf.readUIntBE(at + 8, 6);

/** A big-endian unsigned 32-bit word (a Buffer method call per entry is slow in a loop of millions). */
export const uint32At = (buf: Uint8Array, at: number): number =>
  (((buf[at] as number) << 24) |
    ((buf[at + 1] as number) << 16) |
    ((buf[at + 2] as number) << 8) |
    (buf[at + 3] as number)) >>>
  0;

export function writeEntry(
  out: Buffer,
  at: number,
  e: { hi: number; lo: number; offset: number; len: number; time: number },
): void {
  out.writeUInt32BE(e.hi, at);
  out.writeUInt32BE(e.lo, at + 4);
  out.writeUIntBE(e.offset, at + 8, 6);
  out.writeUInt16BE(0, at + 14);
  out.writeUInt32BE(e.len, at + 16);
  out.writeUInt32BE(e.time, at + 20);
}

/** Writes sorted entries to a new index file, hashing the membership as it goes. */
export class IndexWriter {
  private readonly fd: number;
  private readonly chunk = chunkEntries;
  private readonly buf = Buffer.allocUnsafe(this.chunk * SNAPSHOT_ENTRY_BYTES);
  private readonly keys = Buffer.allocUnsafe(this.chunk * 8);
  private n = 0;
  private position = HEADER_BYTES;
  private readonly digest: Hash = createHash('sha256');
  count = 0;
  liveBytes = 0;

  constructor(readonly path: string) {
    rmSync(path, { force: true });
    this.fd = openSync(path, 'w', 0o600);
    writeAt(this.fd, Buffer.alloc(HEADER_BYTES), 0, path);
  }

  add(e: { hi: number; lo: number; offset: number; len: number; time: number }): void {
    writeEntry(this.buf, this.n * SNAPSHOT_ENTRY_BYTES, e);
    this.count++;
    this.liveBytes += e.len;
    if (++this.n === this.chunk) this.flush();
  }

  /** Copy the entries at [from, to) of a chunk read from another index as they are. */
  addRaw(src: Buffer, from: number, to: number): void {
    for (let at = from; at < to;) {
      const room = (this.chunk - this.n) * SNAPSHOT_ENTRY_BYTES;
      const end = Math.min(to, at + room);
      src.copy(this.buf, this.n * SNAPSHOT_ENTRY_BYTES, at, end);
      for (let e = at + 16; e < end; e += SNAPSHOT_ENTRY_BYTES) this.liveBytes += uint32At(src, e);
      const entries = (end - at) / SNAPSHOT_ENTRY_BYTES;
      this.count += entries;
      this.n += entries;
      at = end;
      if (this.n === this.chunk) this.flush();
    }
  }

  private flush(): void {
    // The membership digest covers the fingerprints in order: their bytes gathered a chunk at a
    // time (a digest update, or a Buffer method call, per entry cost more than the rest of a commit).
    const { buf, keys } = this;
    for (let i = 0; i < this.n; i++) {
      const from = i * SNAPSHOT_ENTRY_BYTES;
      for (let b = 0; b < 8; b++) keys[i * 8 + b] = buf[from + b] as number;
    }
    this.digest.update(keys.subarray(0, this.n * 8));
    const bytes = this.n * SNAPSHOT_ENTRY_BYTES;
    writeAt(this.fd, this.buf.subarray(0, bytes), this.position, this.path);
    this.position += bytes;
    this.n = 0;
  }

  /** Write the header, fsync and close; returns the header. */
  finish(h: Omit<IndexHeader, 'count' | 'liveBytes' | 'digest'>): IndexHeader {
    try {
      this.flush();
      const header: IndexHeader = {
        ...h,
        count: this.count,
        liveBytes: this.liveBytes,
        digest: this.digest.digest('hex'),
      };
      writeAt(this.fd, encodeIndexHeader(header), 0, this.path);
      syncFd(this.fd, this.path);
      return header;
    } finally {
      closeSync(this.fd);
    }
  }
}

/** Frames no entry points to any more (replaced or removed users), for the commit to scrub. */
export class DeadFrames {
  static readonly LIMIT = 1 << 20;
  offset = new Float64Array(1024);
  len = new Uint32Array(1024);
  n = 0;
  /** More than LIMIT: the commit compacts instead of scrubbing one by one. */
  overflow = false;

  push(offset: number, len: number): void {
    if (this.n >= DeadFrames.LIMIT) {
      this.overflow = true;
      return;
    }
    if (this.n === this.offset.length) {
      const offsets = new Float64Array(this.n * 2);
      offsets.set(this.offset);
      const lens = new Uint32Array(this.n * 2);
      lens.set(this.len);
      this.offset = offsets;
      this.len = lens;
    }
    this.offset[this.n] = offset;
    this.len[this.n++] = len;
  }
}

export function readInto(fd: number, buf: Buffer, length: number, position: number): void {
  for (let got = 0; got < length;) {
    const r = readSync(fd, buf, got, length - got, position + got);
    if (r === 0) throw corrupt('a record lies beyond the end of its file');
    got += r;
  }
}

export function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  readInto(fd, buf, length, position);
  return buf;
}

/** Write all of `data` at `position` (stateFs: the tests' failing disk); EnvironmentError naming `path`. */
export function writeAt(fd: number, data: Buffer, position: number, path: string): void {
  try {
    for (let done = 0; done < data.length;) {
      const n = stateFs.writeSync(fd, data, done, data.length - done, position + done);
      if (n <= 0) throw Object.assign(new Error('write wrote nothing'), { code: 'EIO' });
      done += n;
    }
  } catch (error) {
    throw environmentError(error, 'writing', path);
  }
}

/** fsync through stateFs; EnvironmentError naming `path`. */
export function syncFd(fd: number, path: string): void {
  try {
    stateFs.fsyncSync(fd);
  } catch (error) {
    throw environmentError(error, 'writing', path);
  }
}

/** The header of the index at `path` (size checked), or undefined when there is none. */
export function readIndexHeader(path: string): IndexHeader | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw environmentError(error, 'reading', path);
  }
  try {
    const buf = Buffer.alloc(INDEX_HEADER_BYTES);
    const header = decodeIndexHeader(buf, readSync(fd, buf, 0, INDEX_HEADER_BYTES, 0));
    if (fstatSync(fd).size !== HEADER_BYTES + header.count * SNAPSHOT_ENTRY_BYTES)
      throw corrupt('the index is truncated or has bytes past its end');
    return header;
  } finally {
    closeSync(fd);
  }
}

/**
 * Checks the index against its header before anything is sent: the fingerprints strictly
 * ascending, their digest equal to the header's, every frame inside the data file after its header.
 */
export function verifyIndex(path: string, header: IndexHeader, dataBytes: number, dataStart: number): void {
  const digest = createHash('sha256');
  const keys = Buffer.allocUnsafe(chunkEntries * 8);
  let prevHi = -1;
  let prevLo = -1;
  let live = 0;
  for (const { buf, n } of entryChunks(path, header.count)) {
    for (let i = 0; i < n; i++) {
      const at = i * SNAPSHOT_ENTRY_BYTES;
      const hi = uint32At(buf, at);
      const lo = uint32At(buf, at + 4);
      if (compareKeys(hi, lo, prevHi, prevLo) <= 0 && prevHi >= 0) throw corrupt('the index is out of order');
      // No Buffer method call per entry: they cost more than the rest of the check at 10M users.
      const offset = (((buf[at + 8] as number) << 8) | (buf[at + 9] as number)) * 2 ** 32 + uint32At(buf, at + 10);
      const len = uint32At(buf, at + 16);
      if (offset < dataStart || offset + len > dataBytes)
        throw corrupt('the index points past the end of the data file');
      live += len;
      for (let b = 0; b < 8; b++) keys[i * 8 + b] = buf[at + b] as number;
      prevHi = hi;
      prevLo = lo;
    }
    digest.update(keys.subarray(0, n * 8));
  }
  if (digest.digest('hex') !== header.digest || live !== header.liveBytes)
    throw corrupt("the index does not match its header's digest");
}
