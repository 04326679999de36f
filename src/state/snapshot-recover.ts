/**
 * Rebuilding a damaged sync snapshot (`sync --recover`): every user object that can still be read
 * is salvaged, from the index's entries (format 2, or format 1's unframed records) and from a walk
 * of every data file's frames (length, CRC and fingerprint checked; the frames of a sync's
 * write-ahead record are among them). Each salvaged user is written back as *uncertain* (time 0),
 * so the sync that follows sends Delete for those the file no longer holds and Update for the
 * others. Users the old index named whose object cannot be read are counted: nothing can remove
 * them from the platform.
 */
import { closeSync, existsSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDir } from './fs.js';
import { IndexWriter, readAt, syncFd, writeAt } from './snapshot-index.js';
import {
  DATA_HEADER_BYTES,
  DATA_MAGIC,
  decodeUserRecord,
  encodeDataHeader,
  fingerprintOf,
  FRAME_HEAD_BYTES,
  INDEX_MAGIC,
  readFrame,
  SNAPSHOT_ENTRY_BYTES,
  SNAPSHOT_FORMAT,
  targetHash,
  writeFrame,
  frameBound,
  type SnapshotTarget,
} from './snapshot-format.js';
import { sortKeyOrder } from './snapshot-index.js';
import { addUnrecovered } from './snapshot-unrecovered.js';
import { EMPTY_SNAPSHOT_DIGEST, fsyncPath } from './snapshot.js';

export interface SnapshotRecovery {
  /** Distinct users whose object was read back (all now due for a re-send). */
  salvaged: number;
  /** Users the old index named whose object could not be read. */
  lost: number;
  /**
   * False when the index itself could not be read: `lost` is then the audit log's last user
   * count minus the users salvaged, a lower bound.
   */
  exact: boolean;
}

/** The largest frame the walk believes (a user object is a few hundred bytes). */
const MAX_FRAME = 1 << 20;

type Salvaged = Map<bigint, string>;
const keyOf = (hi: number, lo: number): bigint => (BigInt(hi) << 32n) | BigInt(lo);

/** Rebuild the snapshot of `dir` from what can be read; `recordedUsers`: the audit log's last count. */
export function recoverSnapshot(
  dir: string,
  o: { target: SnapshotTarget; now?: () => number; recordedUsers?: number | undefined },
): SnapshotRecovery {
  ensureDir(dir);
  const target = targetHash(o.target).toString('hex');
  const salvaged: Salvaged = new Map();
  const files = readdirSync(dir);
  const gens = files.filter((f) => /^data\.\d+$/.test(f)).map((f) => Number(f.slice(5)));
  for (const gen of gens) walkFrames(join(dir, `data.${gen}`), target, salvaged);
  const named = salvageFromIndex(dir, target, salvaged);
  const lost = named === undefined ? undefined : named.filter((k) => !salvaged.has(k)).length;
  const gen = Math.max(-1, ...gens) + 1;
  const recovery = {
    salvaged: salvaged.size,
    lost: lost ?? Math.max(0, (o.recordedUsers ?? 0) - salvaged.size),
    exact: lost !== undefined,
  };
  // Recorded before the rebuilt index replaces the old one: every later sync reports them.
  if (recovery.lost > 0) addUnrecovered(dir, recovery.lost, recovery.exact);
  writeRecovered(dir, gen, target, salvaged, o.now ?? Date.now);
  return recovery;
}

/** Every readable frame of a data file of this target (a damaged stretch is stepped over byte by byte). */
function walkFrames(path: string, target: string, into: Salvaged): void {
  const fd = openSync(path, 'r');
  try {
    const size = statSync(path).size;
    const head = readAt(fd, 0, Math.min(size, DATA_HEADER_BYTES));
    // Another target's or another format's data: nothing of it belongs to this target.
    if (head.length < DATA_HEADER_BYTES || head.toString('latin1', 0, 8) !== DATA_MAGIC) return;
    if (head.readUInt32BE(8) !== SNAPSHOT_FORMAT || head.toString('hex', 16, 28) !== target) return;
    for (let pos = DATA_HEADER_BYTES; pos + FRAME_HEAD_BYTES <= size;) {
      const len = FRAME_HEAD_BYTES + readAt(fd, pos, 4).readUInt32BE(0);
      const json = len <= MAX_FRAME && pos + len <= size ? tryFrame(readAt(fd, pos, len)) : null;
      if (json === null) {
        pos += 1;
        continue;
      }
      if (json !== undefined) {
        const [hi, lo] = fingerprintOf(json);
        into.set(keyOf(hi, lo), json);
      }
      pos += len;
    }
  } finally {
    closeSync(fd);
  }
}

/** The user of a frame, undefined for a scrubbed one, null for one that does not check. */
function tryFrame(frame: Buffer): string | undefined | null {
  try {
    return readFrame(frame);
  } catch {
    return null;
  }
}

/**
 * The fingerprints the old index names (undefined when it cannot be read), salvaging format 1's
 * records through it (they carry no frame for the walk to find).
 */
function salvageFromIndex(dir: string, target: string, into: Salvaged): bigint[] | undefined {
  const path = join(dir, 'index');
  if (!existsSync(path)) return undefined;
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(128);
    const n = readSync(fd, head, 0, 128, 0);
    if (n < 12 || head.toString('latin1', 0, 8) !== INDEX_MAGIC) return undefined;
    const format = head.readUInt32BE(8);
    if (format !== 1 && format !== SNAPSHOT_FORMAT) return undefined;
    // Another target's index (copied in) names none of this target's users.
    if (format === SNAPSHOT_FORMAT && head.toString('hex', 112, 124) !== target) return undefined;
    const headerBytes = format === 1 ? 96 : 128;
    const count = Math.floor((statSync(path).size - headerBytes) / SNAPSHOT_ENTRY_BYTES);
    const entries = readAt(fd, headerBytes, count * SNAPSHOT_ENTRY_BYTES);
    const keys: bigint[] = [];
    const data = format === 1 ? join(dir, `data.${head.readUInt32BE(12)}`) : undefined;
    const dataFd = data !== undefined && existsSync(data) ? openSync(data, 'r') : -1;
    try {
      for (let at = 0; at < entries.length; at += SNAPSHOT_ENTRY_BYTES) {
        const [hi, lo] = [entries.readUInt32BE(at), entries.readUInt32BE(at + 4)];
        keys.push(keyOf(hi, lo));
        if (dataFd >= 0) salvageFormat1(dataFd, entries, at, into);
      }
    } finally {
      if (dataFd >= 0) closeSync(dataFd);
    }
    return keys;
  } finally {
    closeSync(fd);
  }
}

/** A format 1 record: the bare body at the entry's offset, checked against the entry's fingerprint. */
function salvageFormat1(fd: number, entries: Buffer, at: number, into: Salvaged): void {
  try {
    const json = decodeUserRecord(readAt(fd, entries.readUIntBE(at + 8, 6), entries.readUInt32BE(at + 16)));
    const [hi, lo] = fingerprintOf(json);
    if (hi === entries.readUInt32BE(at) && lo === entries.readUInt32BE(at + 4)) into.set(keyOf(hi, lo), json);
  } catch {
    // Unreadable: counted as lost.
  }
}

/**
 * Write the salvaged users as a new generation (data file, then index renamed into place), every
 * user at time 0; then remove the old files (the next open also drops them: other generation).
 */
function writeRecovered(dir: string, gen: number, target: string, salvaged: Salvaged, now: () => number): void {
  const users = [...salvaged].map(([key, json]) => ({ hi: Number(key >> 32n), lo: Number(key & 0xffffffffn), json }));
  const hi = Uint32Array.from(users, (u) => u.hi);
  const lo = Uint32Array.from(users, (u) => u.lo);
  const order = sortKeyOrder(hi, lo, users.length);
  const dataPath = join(dir, `data.${gen}`);
  const fd = openSync(dataPath, 'w', 0o600);
  const tmp = join(dir, 'index.tmp');
  const writer = new IndexWriter(tmp);
  try {
    writeAt(fd, encodeDataHeader(gen, target), 0, dataPath);
    let offset = DATA_HEADER_BYTES;
    for (const k of order) {
      const u = users[k] as (typeof users)[number];
      const frame = Buffer.alloc(frameBound(u.json));
      const len = writeFrame(u, frame, 0);
      writeAt(fd, frame.subarray(0, len), offset, dataPath);
      writer.add({ hi: u.hi, lo: u.lo, offset, len, time: 0 });
      offset += len;
    }
    syncFd(fd, dataPath);
  } finally {
    closeSync(fd);
  }
  writer.finish({
    format: SNAPSHOT_FORMAT,
    gen,
    seq: 1,
    committedAtMs: now(),
    parentDigest: EMPTY_SNAPSHOT_DIGEST,
    target,
  });
  renameSync(tmp, join(dir, 'index'));
  fsyncPath(dir);
  for (const f of readdirSync(dir))
    if ((/^data\.\d+$/.test(f) && f !== `data.${gen}`) || f === 'pending') rmSync(join(dir, f), { force: true });
  fsyncPath(dir);
}
