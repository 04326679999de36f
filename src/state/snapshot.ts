/**
 * The sync snapshot: the users this tool has had confirmed on one target (account + audience or
 * do-not-reach list), with the time of each user's last confirmed send.
 *
 * Layout of `<stateDir>/snapshots/<target>/` (directory 0700, files 0600):
 * - `index`: a header, then one fixed 24-byte entry per user sorted by the user's 64-bit
 *   fingerprint (`writeUserFingerprint`: the first 8 bytes of the SHA-256 of its canonical JSON):
 *   fingerprint, offset and length of its record in the data file, last confirmed send (seconds).
 *   A sync loads only the fingerprints (8 bytes per user) and looks input users up in them.
 * - `data.<gen>`: the user objects as sent, in a compact binary form (a digest takes 32 bytes
 *   instead of 66 of JSON), appended as batches are confirmed. A Delete must send the exact object
 *   confirmed earlier, and the input no longer holds it. Hashed values only, plus
 *   `partner_user_id` as sent.
 * - `pending`: the confirmed batches of the sync under way (fingerprints and data offsets),
 *   appended with fsync after each confirmation, after the data they point to is on disk.
 *
 * `commit()` merges `pending` into a new index written beside the old one, fsynced, and renamed
 * over it: the index is the old one or the new one, never half-written. A sync killed at any
 * point leaves `pending`; the next open commits it (or drops it when the index it applied to was
 * already replaced), so every confirmed batch is kept and nothing confirmed is sent again.
 * When the data file holds more dead records than live ones, the commit rewrites it live-only
 * under the next generation number.
 *
 * Two different users with the same 64-bit fingerprint would be taken as one, as in the
 * uploader's dedupe: for n users that happens with probability about n^2/2^65.
 */
import { createHash, type Hash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { ConfigError } from '../errors.js';
import { IDENTIFIER_TYPES, type AudienceUser } from '../identifiers/normalize.js';
import { sha256Hex } from '../util/sha256.js';
import { KeyTableBuilder, type KeyTable } from './key-table.js';

export type { KeyTable } from './key-table.js';

/** The snapshot cannot be read as it is. */
export class SnapshotError extends ConfigError {}

export interface SnapshotTarget {
  accountId: string;
  kind: 'custom_audience' | 'do_not_reach_list';
  id: string;
}

/** The snapshot directory of a target (ids are hashed into the name: they are not file-name safe). */
export function snapshotDir(stateDir: string, target: SnapshotTarget): string {
  const name = sha256Hex(`${target.accountId}\0${target.kind}\0${target.id}`);
  return join(stateDir, 'snapshots', `${target.kind}-${name.slice(0, 24)}`);
}

export const SNAPSHOT_ENTRY_BYTES = 24;
const HEADER_BYTES = 96;
const INDEX_MAGIC = 'AKSNAP01';
const PENDING_MAGIC = 'AKPEND01';
const PENDING_HEADER_BYTES = 24;
const CHUNK_ENTRIES = 1 << 16;
const OP_UPSERT = 1;
const OP_DELETE = 2;
/** SHA-256 of no fingerprints: the digest of an empty (or absent) snapshot. */
export const EMPTY_SNAPSHOT_DIGEST = sha256Hex('');

interface IndexHeader {
  gen: number;
  seq: number;
  count: number;
  liveBytes: number;
  committedAtMs: number;
  /** SHA-256 of the users' 8-byte fingerprints in index order: the membership, times excluded. */
  digest: string;
}

// ---------------------------------------------------------------------------------------------
// User records: canonical JSON <-> compact binary.

const HEX64 = /^[0-9a-f]{64}$/;

/** Upper bound of the record size of a user whose canonical JSON is `json`. */
const recordBound = (json: string): number => 2 * json.length + 16;

/**
 * Write the data-file record of a user given as canonical JSON (serializeUser) at `at`; returns
 * the end. Digests take 33 bytes, other values (partner_user_id) their UTF-8 bytes and 3.
 */
function writeUserRecord(json: string, buf: Buffer, at: number): number {
  const user = JSON.parse(json) as AudienceUser;
  const start = at;
  let p = at + 1;
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const values = user[IDENTIFIER_TYPES[t] as (typeof IDENTIFIER_TYPES)[number]];
    if (values === undefined || values.length === 0) continue;
    buf[start] = (buf[start] as number) + 1;
    buf[p] = t;
    buf.writeUInt16BE(values.length, p + 1);
    p += 3;
    for (const v of values) {
      if (HEX64.test(v)) {
        buf[p] = 0;
        buf.write(v, p + 1, 'hex');
        p += 33;
      } else {
        buf[p] = 1;
        const len = buf.write(v, p + 3, 'utf8');
        buf.writeUInt16BE(len, p + 1);
        p += 3 + len;
      }
    }
  }
  return p;
}

/** A user object's canonical JSON (serializeUser) as a data-file record. */
export function encodeUserRecord(json: string): Buffer {
  const buf = Buffer.alloc(recordBound(json));
  return buf.subarray(0, writeUserRecord(json, buf, 0));
}

/** The canonical JSON (serializeUser's text) of a record written by encodeUserRecord. */
export function decodeUserRecord(buf: Buffer): string {
  let out = '{';
  let p = 1;
  for (let n = buf[0] ?? 0; n > 0; n--) {
    const type = IDENTIFIER_TYPES[buf[p] as number];
    const count = buf.readUInt16BE(p + 1);
    p += 3;
    if (type === undefined) throw corrupt('a user record names an unknown identifier type');
    out += `${out.length > 1 ? ',' : ''}"${type}":[`;
    for (let i = 0; i < count; i++) {
      if (i > 0) out += ',';
      if (buf[p] === 0) {
        out += `"${buf.toString('hex', p + 1, p + 33)}"`;
        p += 33;
      } else {
        const len = buf.readUInt16BE(p + 1);
        out += JSON.stringify(buf.toString('utf8', p + 3, p + 3 + len));
        p += 3 + len;
      }
    }
    out += ']';
  }
  if (p !== buf.length) throw corrupt('a user record has the wrong length');
  return `${out}}`;
}

function corrupt(what: string): SnapshotError {
  return new SnapshotError('snapshot_corrupt', `the sync snapshot is damaged: ${what}`, {
    fix: 'run the sync with full: true to send every user again and rebuild the snapshot (remove the snapshot directory first)',
  });
}

// ---------------------------------------------------------------------------------------------
// Sorting fingerprints.

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
const compareKeys = (ah: number, al: number, bh: number, bl: number): number =>
  ah !== bh ? (ah < bh ? -1 : 1) : al !== bl ? (al < bl ? -1 : 1) : 0;

// ---------------------------------------------------------------------------------------------
// Files.

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function readHeader(path: string): IndexHeader | undefined {
  if (!existsSync(path)) return undefined;
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(HEADER_BYTES);
    const n = readSync(fd, buf, 0, HEADER_BYTES, 0);
    if (n < HEADER_BYTES || buf.toString('latin1', 0, 8) !== INDEX_MAGIC || buf.readUInt32BE(8) !== 1) {
      throw corrupt('the index header is not one this version writes');
    }
    const h: IndexHeader = {
      gen: buf.readUInt32BE(12),
      seq: buf.readDoubleBE(16),
      count: buf.readDoubleBE(24),
      liveBytes: buf.readDoubleBE(32),
      committedAtMs: buf.readDoubleBE(40),
      digest: buf.toString('hex', 48, 80),
    };
    if (fstatSync(fd).size !== HEADER_BYTES + h.count * SNAPSHOT_ENTRY_BYTES) throw corrupt('the index is truncated');
    return h;
  } finally {
    closeSync(fd);
  }
}

function headerBytes(h: IndexHeader): Buffer {
  const buf = Buffer.alloc(HEADER_BYTES);
  buf.write(INDEX_MAGIC, 0, 'latin1');
  buf.writeUInt32BE(1, 8);
  buf.writeUInt32BE(h.gen, 12);
  buf.writeDoubleBE(h.seq, 16);
  buf.writeDoubleBE(h.count, 24);
  buf.writeDoubleBE(h.liveBytes, 32);
  buf.writeDoubleBE(h.committedAtMs, 40);
  buf.write(h.digest, 48, 'hex');
  return buf;
}

/** Successive chunks of the index entries (`first`: position of the chunk's first entry); the buffer is reused. */
function* entryChunks(path: string, count: number): Generator<{ buf: Buffer; n: number; first: number }> {
  if (count === 0) return;
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(CHUNK_ENTRIES * SNAPSHOT_ENTRY_BYTES);
    for (let first = 0; first < count; first += CHUNK_ENTRIES) {
      const n = Math.min(CHUNK_ENTRIES, count - first);
      readInto(fd, buf, n * SNAPSHOT_ENTRY_BYTES, HEADER_BYTES + first * SNAPSHOT_ENTRY_BYTES);
      yield { buf, n, first };
    }
  } finally {
    closeSync(fd);
  }
}

const entryOffset = (buf: Buffer, at: number): number => buf.readUIntBE(at + 8, 6);

/** A big-endian unsigned 32-bit word (a Buffer method call per entry is slow in a loop of millions). */
const uint32At = (buf: Uint8Array, at: number): number =>
  (((buf[at] as number) << 24) |
    ((buf[at + 1] as number) << 16) |
    ((buf[at + 2] as number) << 8) |
    (buf[at + 3] as number)) >>>
  0;

function writeEntry(
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
class IndexWriter {
  private readonly fd: number;
  private readonly buf = Buffer.allocUnsafe(CHUNK_ENTRIES * SNAPSHOT_ENTRY_BYTES);
  private readonly keys = Buffer.allocUnsafe(CHUNK_ENTRIES * 8);
  private n = 0;
  private position = HEADER_BYTES;
  private readonly digest: Hash = createHash('sha256');
  count = 0;
  liveBytes = 0;

  constructor(readonly path: string) {
    rmSync(path, { force: true });
    this.fd = openSync(path, 'w', 0o600);
    writeSync(this.fd, Buffer.alloc(HEADER_BYTES), 0, HEADER_BYTES, 0);
  }

  add(e: { hi: number; lo: number; offset: number; len: number; time: number }): void {
    writeEntry(this.buf, this.n * SNAPSHOT_ENTRY_BYTES, e);
    this.count++;
    this.liveBytes += e.len;
    if (++this.n === CHUNK_ENTRIES) this.flush();
  }

  /** Copy the entries at [from, to) of a chunk read from another index as they are. */
  addRaw(src: Buffer, from: number, to: number): void {
    for (let at = from; at < to;) {
      const room = (CHUNK_ENTRIES - this.n) * SNAPSHOT_ENTRY_BYTES;
      const end = Math.min(to, at + room);
      src.copy(this.buf, this.n * SNAPSHOT_ENTRY_BYTES, at, end);
      for (let e = at + 16; e < end; e += SNAPSHOT_ENTRY_BYTES) this.liveBytes += uint32At(src, e);
      const entries = (end - at) / SNAPSHOT_ENTRY_BYTES;
      this.count += entries;
      this.n += entries;
      at = end;
      if (this.n === CHUNK_ENTRIES) this.flush();
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
    for (let done = 0; done < bytes;) done += writeSync(this.fd, this.buf, done, bytes - done, this.position + done);
    this.position += bytes;
    this.n = 0;
  }

  /** Write the header, fsync and close; returns the header. */
  finish(h: Omit<IndexHeader, 'count' | 'liveBytes' | 'digest'>): IndexHeader {
    this.flush();
    const header: IndexHeader = {
      ...h,
      count: this.count,
      liveBytes: this.liveBytes,
      digest: this.digest.digest('hex'),
    };
    writeSync(this.fd, headerBytes(header), 0, HEADER_BYTES, 0);
    fsyncSync(this.fd);
    closeSync(this.fd);
    return header;
  }
}

/** Growable columns of the changes read back from `pending`. */
class Changes {
  hi = new Uint32Array(1024);
  lo = new Uint32Array(1024);
  offset = new Float64Array(1024);
  len = new Uint32Array(1024);
  time = new Uint32Array(1024);
  n = 0;

  push(hi: number, lo: number, offset: number, len: number, time: number): void {
    if (this.n === this.hi.length) {
      const grow = <T extends Uint32Array | Float64Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.hi = grow(this.hi);
      this.lo = grow(this.lo);
      this.offset = grow(this.offset);
      this.len = grow(this.len);
      this.time = grow(this.time);
    }
    this.hi[this.n] = hi;
    this.lo[this.n] = lo;
    this.offset[this.n] = offset;
    this.len[this.n] = len;
    this.time[this.n] = time;
    this.n++;
  }
}

/** A user to record as confirmed: its fingerprint and canonical JSON. */
export interface SnapshotUser {
  hi: number;
  lo: number;
  json: string;
}

export interface SnapshotOpenOptions {
  now?: () => number;
}

/**
 * One target's snapshot, opened by the one process that syncs it (the caller holds the target's
 * lock). Opening commits what a killed sync left in `pending`.
 */
export class Snapshot {
  readonly dir: string;
  private header: IndexHeader | undefined;
  private existedAtOpen: boolean;
  private readonly now: () => number;
  private dataFd = -1;
  private dataSize = 0;
  private pendingFd = -1;

  private constructor(dir: string, header: IndexHeader | undefined, now: () => number) {
    this.dir = dir;
    this.header = header;
    this.existedAtOpen = header !== undefined;
    this.now = now;
  }

  static open(dir: string, options: SnapshotOpenOptions = {}): Snapshot {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    rmSync(join(dir, 'index.tmp'), { force: true });
    rmSync(join(dir, 'index.compact'), { force: true });
    const header = readHeader(join(dir, 'index'));
    const gen = header?.gen ?? 0;
    // Leftovers of a compaction cut short, or of one whose old file was not yet removed.
    for (const f of readdirSync(dir))
      if (/^data\.\d+$/.test(f) && f !== `data.${gen}`) rmSync(join(dir, f), { force: true });
    const snapshot = new Snapshot(dir, header, options.now ?? Date.now);
    // What a killed sync had confirmed counts as known: the next sync may remove from it.
    snapshot.commit();
    snapshot.existedAtOpen = snapshot.header !== undefined;
    return snapshot;
  }

  /** True when a committed snapshot existed when it was opened (false: the target's first sync). */
  get existed(): boolean {
    return this.existedAtOpen;
  }

  get count(): number {
    return this.header?.count ?? 0;
  }

  get digest(): string {
    return this.header?.digest ?? EMPTY_SNAPSHOT_DIGEST;
  }

  /** Index and data file sizes. */
  get bytesOnDisk(): number {
    let bytes = 0;
    for (const f of ['index', `data.${this.gen}`, 'pending']) {
      const p = join(this.dir, f);
      if (existsSync(p)) bytes += statSync(p).size;
    }
    return bytes;
  }

  private get gen(): number {
    return this.header?.gen ?? 0;
  }

  private get dataPath(): string {
    return join(this.dir, `data.${this.gen}`);
  }

  /** The fingerprints as a KeyTable, with which users were last sent before `staleBeforeSec`. */
  keys(staleBeforeSec: number): KeyTable {
    const table = new KeyTableBuilder(this.count);
    for (const { buf, n } of entryChunks(join(this.dir, 'index'), this.count)) {
      for (let at = 0; at < n * SNAPSHOT_ENTRY_BYTES; at += SNAPSHOT_ENTRY_BYTES)
        table.push(uint32At(buf, at), uint32At(buf, at + 4), uint32At(buf, at + 20) < staleBeforeSec);
    }
    return table.finish();
  }

  /**
   * The users whose bit in `keep` is not set (the input no longer holds them), with the exact
   * object confirmed earlier, in chunks.
   */
  *usersNotIn(keep: Uint8Array, chunkUsers = 4096): Generator<SnapshotUser[]> {
    if (this.count === 0) return;
    const fd = openSync(this.dataPath, 'r');
    try {
      let chunk: SnapshotUser[] = [];
      for (const { buf, n, first } of entryChunks(join(this.dir, 'index'), this.count)) {
        for (let i = 0; i < n; i++) {
          const pos = first + i;
          if ((((keep[pos >>> 3] as number) >>> (pos & 7)) & 1) === 1) continue;
          const at = i * SNAPSHOT_ENTRY_BYTES;
          chunk.push({
            hi: buf.readUInt32BE(at),
            lo: buf.readUInt32BE(at + 4),
            json: decodeUserRecord(readAt(fd, entryOffset(buf, at), buf.readUInt32BE(at + 16))),
          });
          if (chunk.length >= chunkUsers) {
            yield chunk;
            chunk = [];
          }
        }
      }
      if (chunk.length > 0) yield chunk;
    } finally {
      closeSync(fd);
    }
  }

  /** Record a batch of users confirmed by an Update (added, or their send time renewed). */
  recordUpdates(users: readonly SnapshotUser[], atMs = this.now()): void {
    this.openForWriting();
    let bound = 0;
    for (const u of users) bound += recordBound(u.json);
    const data = Buffer.alloc(bound);
    const payload = Buffer.allocUnsafe(9 + users.length * 18);
    payload[0] = OP_UPSERT;
    payload.writeUInt32BE(Math.floor(atMs / 1000), 1);
    payload.writeUInt32BE(users.length, 5);
    let end = 0;
    for (let i = 0; i < users.length; i++) {
      const u = users[i] as SnapshotUser;
      const start = end;
      end = writeUserRecord(u.json, data, start);
      const at = 9 + i * 18;
      payload.writeUInt32BE(u.hi, at);
      payload.writeUInt32BE(u.lo, at + 4);
      payload.writeUIntBE(this.dataSize + start, at + 8, 6);
      payload.writeUInt32BE(end - start, at + 14);
    }
    writeAll(this.dataFd, data.subarray(0, end));
    fsyncSync(this.dataFd);
    const offset = this.dataSize + end;
    this.dataSize = offset;
    this.appendPending(payload);
  }

  /** Record a batch of users confirmed by a Delete. */
  recordDeletes(users: readonly { hi: number; lo: number }[], atMs = this.now()): void {
    this.openForWriting();
    const payload = Buffer.allocUnsafe(9 + users.length * 8);
    payload[0] = OP_DELETE;
    payload.writeUInt32BE(Math.floor(atMs / 1000), 1);
    payload.writeUInt32BE(users.length, 5);
    users.forEach((u, i) => {
      payload.writeUInt32BE(u.hi, 9 + i * 8);
      payload.writeUInt32BE(u.lo, 13 + i * 8);
    });
    this.appendPending(payload);
  }

  private openForWriting(): void {
    if (this.pendingFd >= 0) return;
    this.dataFd = openSync(this.dataPath, 'a', 0o600);
    this.dataSize = fstatSync(this.dataFd).size;
    const header = Buffer.alloc(PENDING_HEADER_BYTES);
    header.write(PENDING_MAGIC, 0, 'latin1');
    header.writeDoubleBE(this.header?.seq ?? 0, 8);
    header.writeUInt32BE(this.gen, 16);
    const path = join(this.dir, 'pending');
    writeFileSync(path, header, { mode: 0o600 });
    fsyncPath(path);
    fsyncPath(this.dir);
    this.pendingFd = openSync(path, 'a');
  }

  private appendPending(payload: Buffer): void {
    const head = Buffer.allocUnsafe(8);
    head.writeUInt32BE(payload.length, 0);
    head.writeUInt32BE(crc32(payload), 4);
    writeAll(this.pendingFd, Buffer.concat([head, payload]));
    fsyncSync(this.pendingFd);
  }

  /** The changes in `pending`, when it applies to the current index (a torn last record is dropped). */
  private readPending(): { upserts: Changes; deletes: Changes } | undefined {
    const path = join(this.dir, 'pending');
    if (!existsSync(path)) return undefined;
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      const head = Buffer.alloc(PENDING_HEADER_BYTES);
      readSync(fd, head, 0, PENDING_HEADER_BYTES, 0);
      const valid =
        size >= PENDING_HEADER_BYTES &&
        head.toString('latin1', 0, 8) === PENDING_MAGIC &&
        head.readDoubleBE(8) === (this.header?.seq ?? 0) &&
        head.readUInt32BE(16) === this.gen;
      if (!valid) return undefined; // committed before it was removed, or never written whole
      const upserts = new Changes();
      const deletes = new Changes();
      for (let pos = PENDING_HEADER_BYTES; pos + 8 <= size;) {
        const len = readAt(fd, pos, 8).readUInt32BE(0);
        if (pos + 8 + len > size) break;
        const payload = readAt(fd, pos + 8, len);
        if (crc32(payload) !== readAt(fd, pos + 4, 4).readUInt32BE(0)) break;
        parsePendingRecord(payload, upserts, deletes);
        pos += 8 + len;
      }
      return { upserts, deletes };
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Merge `pending` into a new index and make it the snapshot (write, fsync, rename). Returns
   * false when there was nothing to commit.
   */
  commit(): boolean {
    this.closeWriting();
    const changes = this.readPending();
    const pendingPath = join(this.dir, 'pending');
    if (changes === undefined) {
      rmSync(pendingPath, { force: true });
      return false;
    }
    const tmp = join(this.dir, 'index.tmp');
    const writer = new IndexWriter(tmp);
    mergeIndex(join(this.dir, 'index'), this.count, changes, writer);
    let header = writer.finish({ gen: this.gen, seq: (this.header?.seq ?? 0) + 1, committedAtMs: this.now() });
    const dataBytes = existsSync(this.dataPath) ? statSync(this.dataPath).size : 0;
    if (dataBytes - header.liveBytes > Math.max(header.liveBytes, 1 << 18)) header = this.compact(tmp, header);
    renameSync(tmp, join(this.dir, 'index'));
    fsyncPath(this.dir);
    const oldData = this.dataPath;
    this.header = header;
    if (oldData !== this.dataPath) rmSync(oldData, { force: true });
    rmSync(pendingPath, { force: true });
    fsyncPath(this.dir);
    return true;
  }

  /** Rewrite the live records of `indexPath` into the next data generation; returns the new index's header. */
  private compact(indexPath: string, header: IndexHeader): IndexHeader {
    const gen = this.gen + 1;
    const dataPath = join(this.dir, `data.${gen}`);
    const compactPath = join(this.dir, 'index.compact');
    const oldFd = openSync(this.dataPath, 'r');
    const newFd = openSync(dataPath, 'w', 0o600);
    const writer = new IndexWriter(compactPath);
    let offset = 0;
    try {
      for (const { buf, n } of entryChunks(indexPath, header.count)) {
        const records: Buffer[] = [];
        for (let i = 0; i < n; i++) {
          const at = i * SNAPSHOT_ENTRY_BYTES;
          const len = buf.readUInt32BE(at + 16);
          records.push(readAt(oldFd, entryOffset(buf, at), len));
          const e = {
            hi: buf.readUInt32BE(at),
            lo: buf.readUInt32BE(at + 4),
            offset,
            len,
            time: buf.readUInt32BE(at + 20),
          };
          writer.add(e);
          offset += len;
        }
        writeAll(newFd, Buffer.concat(records));
      }
      fsyncSync(newFd);
    } finally {
      closeSync(oldFd);
      closeSync(newFd);
    }
    const compacted = writer.finish({ gen, seq: header.seq, committedAtMs: header.committedAtMs });
    renameSync(compactPath, indexPath);
    return compacted;
  }

  private closeWriting(): void {
    if (this.pendingFd >= 0) closeSync(this.pendingFd);
    if (this.dataFd >= 0) closeSync(this.dataFd);
    this.pendingFd = -1;
    this.dataFd = -1;
  }

  /** Close without committing (what is pending is committed by the next open). */
  close(): void {
    this.closeWriting();
  }
}

function parsePendingRecord(payload: Buffer, upserts: Changes, deletes: Changes): void {
  const op = payload[0];
  const time = payload.readUInt32BE(1);
  const n = payload.readUInt32BE(5);
  if (op === OP_UPSERT) {
    for (let i = 0, at = 9; i < n; i++, at += 18) {
      upserts.push(
        payload.readUInt32BE(at),
        payload.readUInt32BE(at + 4),
        payload.readUIntBE(at + 8, 6),
        payload.readUInt32BE(at + 14),
        time,
      );
    }
  } else if (op === OP_DELETE) {
    for (let i = 0, at = 9; i < n; i++, at += 8)
      deletes.push(payload.readUInt32BE(at), payload.readUInt32BE(at + 4), 0, 0, time);
  } else {
    throw corrupt('the pending log has an unknown record');
  }
}

/**
 * Old index + upserts - deletes, in key order. A key both upserted and deleted by the
 * same pending log cannot come from one sync (removals are users the input lacks, updates users
 * it holds); the upsert wins. Of one key upserted twice, the later record wins.
 */
function mergeIndex(
  oldPath: string,
  oldCount: number,
  changes: { upserts: Changes; deletes: Changes },
  out: IndexWriter,
): void {
  const u = changes.upserts;
  const d = changes.deletes;
  const uOrder = sortKeyOrder(u.hi, u.lo, u.n);
  const dOrder = sortKeyOrder(d.hi, d.lo, d.n);
  let ui = 0;
  let di = 0;
  const upsert = (k: number): { hi: number; lo: number; offset: number; len: number; time: number } => ({
    hi: u.hi[k] as number,
    lo: u.lo[k] as number,
    offset: u.offset[k] as number,
    len: u.len[k] as number,
    time: u.time[k] as number,
  });
  /** Emit the upserts below (hi, lo), or all of them; skips earlier duplicates (the sort is stable). */
  const emitUpsertsBefore = (hi: number, lo: number, all: boolean): void => {
    while (ui < u.n) {
      const k = uOrder[ui] as number;
      if (!all && compareKeys(u.hi[k] as number, u.lo[k] as number, hi, lo) >= 0) return;
      const nk = uOrder[ui + 1];
      ui++;
      if (nk !== undefined && u.hi[nk] === u.hi[k] && u.lo[nk] === u.lo[k]) continue;
      out.add(upsert(k));
    }
  };
  for (const { buf, n } of entryChunks(oldPath, oldCount)) {
    // Entries kept as they are go in runs: copied together when the run ends.
    let run = 0;
    const end = n * SNAPSHOT_ENTRY_BYTES;
    for (let at = 0; at < end; at += SNAPSHOT_ENTRY_BYTES) {
      const hi = uint32At(buf, at);
      const lo = uint32At(buf, at + 4);
      if (
        ui < u.n &&
        compareKeys(u.hi[uOrder[ui] as number] as number, u.lo[uOrder[ui] as number] as number, hi, lo) < 0
      ) {
        out.addRaw(buf, run, at);
        run = at;
        emitUpsertsBefore(hi, lo, false);
      }
      const k = uOrder[ui];
      let dropped = k !== undefined && u.hi[k] === hi && u.lo[k] === lo; // replaced by the upsert
      if (!dropped) {
        while (
          di < d.n &&
          compareKeys(d.hi[dOrder[di] as number] as number, d.lo[dOrder[di] as number] as number, hi, lo) < 0
        )
          di++;
        const dk = dOrder[di];
        dropped = dk !== undefined && d.hi[dk] === hi && d.lo[dk] === lo;
      }
      if (dropped) {
        out.addRaw(buf, run, at);
        run = at + SNAPSHOT_ENTRY_BYTES;
      }
    }
    out.addRaw(buf, run, end);
  }
  emitUpsertsBefore(0, 0, true);
}

function readInto(fd: number, buf: Buffer, length: number, position: number): void {
  for (let got = 0; got < length;) {
    const r = readSync(fd, buf, got, length - got, position + got);
    if (r === 0) throw corrupt('a record lies beyond the end of its file');
    got += r;
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  readInto(fd, buf, length, position);
  return buf;
}

function writeAll(fd: number, data: Buffer): void {
  for (let done = 0; done < data.length;) done += writeSync(fd, data, done, data.length - done);
}
