/**
 * The sync snapshot: the users this tool has had confirmed on one target (account + audience or
 * do-not-reach list), with the time of each user's last confirmed send, and a write-ahead record
 * of what a sync is about to send.
 *
 * Layout of `<stateDir>/snapshots/<target>/` (directory 0700, files 0600; formats in
 * snapshot-format.ts, index in snapshot-index.ts):
 * - `index`: a header naming the target, then one 24-byte entry per user sorted by the user's
 *   64-bit fingerprint: fingerprint, offset and length of its frame in the data file, last
 *   confirmed send (seconds; 0: uncertain, due for a re-send).
 * - `data.<gen>`: the user objects as sent, one checked frame each (length, CRC, fingerprint).
 * - `pending`: the sync under way. Before a chunk of users is handed to the sender, an *intent*
 *   record (their fingerprints; for Updates, their frames written to the data file first) is
 *   appended and fsynced; each confirmed batch appends a *confirmed* record.
 *
 * `commit()` merges `pending` into a new index written beside the old one, fsynced and renamed
 * over it. Confirmed Updates are kept with their send time, confirmed Deletes removed; users of
 * an intent without confirmation (killed mid-send, a failed or timed-out batch, a confirmation
 * that could not be written) may or may not have been applied: they are kept with time 0, so the
 * next sync, whatever its input, sends Update for those in it and Delete for the others. The
 * frames of removed and replaced users are scrubbed (or the data file compacted) in the same commit.
 *
 * Two different users with the same 64-bit fingerprint would be taken as one, as in the
 * uploader's dedupe: for n users that happens with probability about n^2/2^65.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { ensureDir, writeFileNoFollow } from './fs.js';
import { KeyTableBuilder, type KeyTable } from './key-table.js';
import {
  DeadFrames,
  IndexWriter,
  entryChunks,
  entryOffset,
  readAt,
  readIndexHeader,
  syncFd,
  uint32At,
  verifyIndex,
  writeAt,
} from './snapshot-index.js';
import { Changes, mergeIndex, pendingChanges, type PendingChanges } from './snapshot-merge.js';
import {
  checkDataHeader,
  corrupt,
  DATA_HEADER_BYTES,
  encodeDataHeader,
  formatError,
  frameBound,
  readFrame,
  RECOVER_FIX,
  scrubbedFrame,
  SNAPSHOT_ENTRY_BYTES,
  SNAPSHOT_FORMAT,
  SnapshotError,
  targetHash,
  wrongTarget,
  writeFrame,
  type IndexHeader,
  type SnapshotTarget,
} from './snapshot-format.js';
import { sha256Hex } from '../util/sha256.js';
import type { SnapshotWriteAhead } from './store.js';

/** A target's snapshot name, `<kind>-<24 hex>` (ids are hashed into it: they are not file-name safe). */
export function snapshotName(target: SnapshotTarget): string {
  return `${target.kind}-${targetHash(target).toString('hex').slice(0, 24)}`;
}

/** The snapshot directory of a target. */
export function snapshotDir(stateDir: string, target: SnapshotTarget): string {
  return join(stateDir, 'snapshots', snapshotName(target));
}

const PENDING_MAGIC = 'AKPEND01';
const PENDING_HEADER_BYTES = 24;
const OP_UPSERT = 1;
const OP_DELETE = 2;
const OP_INTENT_UPDATE = 3;
const OP_INTENT_DELETE = 4;
/** SHA-256 of no fingerprints: the digest of an empty (or absent) snapshot. */
export const EMPTY_SNAPSHOT_DIGEST = sha256Hex('');

/** What the audit log last recorded of a snapshot (state/audit.ts RecordedSnapshot). */
export interface RecordedState {
  users: number;
  digest: string;
  /** A run that began its write-ahead record over the index of commit sequence `indexSeq` and recorded no commit. */
  openRun?: { runId: string; indexSeq: number } | undefined;
}

/** A user of the snapshot: its fingerprint, canonical JSON and (once written) its frame. */
export interface SnapshotUser {
  hi: number;
  lo: number;
  json: string;
  offset?: number;
  len?: number;
}

export interface SnapshotOpenOptions {
  target: SnapshotTarget;
  now?: () => number;
  /**
   * The snapshot the audit log last recorded for this target: the index found must be it or
   * committed over it (a restored or rolled-back snapshot is refused); with `openRun`, a run whose
   * write-ahead record must still be there (see writeAheadLost).
   */
  recorded?: RecordedState | undefined;
  /** Hears every write-ahead write once it is fsynced (a remote store stores it: state/store.ts). */
  writeAhead?: SnapshotWriteAhead | undefined;
}

/**
 * One target's snapshot, opened by the one process that syncs it (the caller holds the target's
 * lock). Opening checks it and commits what a killed sync left in `pending`.
 */
export class Snapshot {
  private existedAtOpen: boolean;
  private dataFd = -1;
  private dataSize = 0;
  private pendingFd = -1;
  private pendingSize = 0;
  /** A write failed: nothing more may be sent (an intent after a torn record would not be read back). */
  private broken: unknown;

  private constructor(
    readonly dir: string,
    private header: IndexHeader | undefined,
    private readonly target: string,
    private readonly now: () => number,
    private readonly writeAhead: SnapshotWriteAhead | undefined,
  ) {
    this.existedAtOpen = header !== undefined;
  }

  static open(dir: string, o: SnapshotOpenOptions): Snapshot {
    ensureDir(dir);
    rmSync(join(dir, 'index.tmp'), { force: true });
    rmSync(join(dir, 'index.compact'), { force: true });
    Changes.removeLeftovers(dir);
    const target = targetHash(o.target).toString('hex');
    const header = readIndexHeader(join(dir, 'index'));
    if (header !== undefined && header.target !== target) throw wrongTarget('index');
    if (header === undefined) checkNoIndexLeftovers(dir);
    checkRecorded(header, o.recorded);
    const gen = header?.gen ?? 0;
    if (header !== undefined) {
      const dataBytes = checkDataFile(dir, header, target);
      verifyIndex(join(dir, 'index'), header, dataBytes, DATA_HEADER_BYTES);
    }
    // Leftovers of a compaction cut short, or of one whose old file was not yet removed.
    for (const f of readdirSync(dir))
      if (/^data\.\d+$/.test(f) && f !== `data.${gen}`) rmSync(join(dir, f), { force: true });
    const snapshot = new Snapshot(dir, header, target, o.now ?? Date.now, o.writeAhead);
    // What a killed sync had confirmed counts as known, what it was sending as uncertain.
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

  /** The index's commit sequence (0: none yet). */
  get seq(): number {
    return this.header?.seq ?? 0;
  }

  /**
   * Begin the write-ahead record (`pending`, its header fsynced and handed to the store) before
   * the run is recorded as started: from then on, until its commit, the record must be there, or
   * the next open refuses the target (writeAheadLost). Returns the index's commit sequence.
   */
  beginWriteAhead(): number {
    this.guarded(() => this.openForWriting());
    return this.seq;
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

  /**
   * The fingerprints as a KeyTable, with which users are stale: last sent before `staleBeforeSec`,
   * or at a time after `futureAfterSec`, which a clock running fast recorded (trusted, it would put
   * off their refresh past the day the platform lets their membership expire).
   */
  keys(staleBeforeSec: number, futureAfterSec: number): KeyTable {
    const table = new KeyTableBuilder(this.count);
    for (const { buf, n } of entryChunks(join(this.dir, 'index'), this.count)) {
      for (let at = 0; at < n * SNAPSHOT_ENTRY_BYTES; at += SNAPSHOT_ENTRY_BYTES) {
        const sent = uint32At(buf, at + 20);
        table.push(uint32At(buf, at), uint32At(buf, at + 4), sent < staleBeforeSec || sent > futureAfterSec);
      }
    }
    return table.finish();
  }

  /**
   * The users whose bit in `keep` is not set (the input no longer holds them), with the exact
   * object confirmed earlier, in chunks; each frame checked against the user's fingerprint.
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
          const user = { hi: uint32At(buf, at), lo: uint32At(buf, at + 4) };
          const json = readFrame(readAt(fd, entryOffset(buf, at), uint32At(buf, at + 16)), user);
          if (json === undefined) throw corrupt('a user of the index has a scrubbed record');
          chunk.push({ ...user, json });
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

  /** Read and check every record usersNotIn would give (before anything is sent); returns their number. */
  checkUsersNotIn(keep: Uint8Array): number {
    let n = 0;
    for (const chunk of this.usersNotIn(keep)) n += chunk.length;
    return n;
  }

  /**
   * Write-ahead record of Updates about to be sent: the users' frames appended to the data file
   * and fsynced, then an intent record naming them (each user gets its frame's offset and length).
   */
  recordIntentUpdates(users: SnapshotUser[]): void {
    this.guarded(() => {
      this.openForWriting();
      let bound = 0;
      for (const u of users) bound += frameBound(u.json);
      const data = Buffer.alloc(bound);
      let end = 0;
      for (const u of users) {
        const start = end;
        end = writeFrame(u, data, start);
        u.offset = this.dataSize + start;
        u.len = end - start;
      }
      writeAt(this.dataFd, data.subarray(0, end), this.dataSize, this.dataPath);
      syncFd(this.dataFd, this.dataPath);
      this.writeAhead?.wrote(`data.${this.gen}`, this.dataSize, data.subarray(0, end));
      this.dataSize += end;
      this.appendPending(framePayload(OP_INTENT_UPDATE, 0, users));
    });
  }

  /** Write-ahead record of Deletes about to be sent. */
  recordIntentDeletes(users: readonly { hi: number; lo: number }[]): void {
    this.guarded(() => {
      this.openForWriting();
      this.appendPending(keyPayload(OP_INTENT_DELETE, 0, users));
    });
  }

  /** Record a batch of users confirmed by an Update (their frames written by recordIntentUpdates). */
  recordUpdates(users: readonly Omit<SnapshotUser, 'json'>[], atMs = this.now()): void {
    this.guarded(() => this.appendPending(framePayload(OP_UPSERT, Math.floor(atMs / 1000), users)));
  }

  /** Record a batch of users confirmed by a Delete. */
  recordDeletes(users: readonly { hi: number; lo: number }[], atMs = this.now()): void {
    this.guarded(() => this.appendPending(keyPayload(OP_DELETE, Math.floor(atMs / 1000), users)));
  }

  /** A write that fails leaves the snapshot refusing further writes (so nothing more is sent). */
  private guarded(write: () => void): void {
    if (this.broken !== undefined) throw this.broken;
    try {
      write();
    } catch (error) {
      this.broken = error;
      throw error;
    }
  }

  private openForWriting(): void {
    if (this.pendingFd >= 0) return;
    const header = Buffer.alloc(PENDING_HEADER_BYTES);
    header.write(PENDING_MAGIC, 0, 'latin1');
    header.writeDoubleBE(this.header?.seq ?? 0, 8);
    header.writeUInt32BE(this.gen, 16);
    header.writeUInt32BE(SNAPSHOT_FORMAT, 20);
    const path = join(this.dir, 'pending');
    writeFileNoFollow(path, header);
    fsyncPath(path);
    fsyncPath(this.dir);
    this.writeAhead?.wrote('pending', 0, header);
    this.pendingFd = openSync(path, 'a');
    this.pendingSize = PENDING_HEADER_BYTES;
    this.dataFd = openSync(this.dataPath, 'a', 0o600);
    this.dataSize = statSync(this.dataPath).size;
    if (this.dataSize === 0) {
      const dataHeader = encodeDataHeader(this.gen, this.target);
      writeAt(this.dataFd, dataHeader, 0, this.dataPath);
      this.writeAhead?.wrote(`data.${this.gen}`, 0, dataHeader);
      this.dataSize = DATA_HEADER_BYTES;
    }
  }

  private appendPending(payload: Buffer): void {
    if (this.pendingFd < 0) throw new Error('internal error: a confirmation recorded before its intent');
    const record = Buffer.allocUnsafe(8 + payload.length);
    record.writeUInt32BE(payload.length, 0);
    record.writeUInt32BE(crc32(payload), 4);
    payload.copy(record, 8);
    const path = join(this.dir, 'pending');
    writeAt(this.pendingFd, record, this.pendingSize, path);
    syncFd(this.pendingFd, path);
    this.writeAhead?.wrote('pending', this.pendingSize, record);
    this.pendingSize += record.length;
  }

  /** The changes in `pending`, when it applies to the current index (only a torn final record is dropped). */
  private readPending(): PendingChanges | undefined {
    const path = join(this.dir, 'pending');
    if (!existsSync(path)) return undefined;
    const fd = openSync(path, 'r');
    try {
      const size = statSync(path).size;
      const head = Buffer.alloc(PENDING_HEADER_BYTES);
      readSync(fd, head, 0, PENDING_HEADER_BYTES, 0);
      // A header torn by a kill before its fsync holds no record yet; a whole one must be ours.
      if (size < PENDING_HEADER_BYTES) return undefined;
      if (head.toString('latin1', 0, 8) !== PENDING_MAGIC) throw corrupt('the pending log has a wrong magic number');
      if (head.readUInt32BE(20) !== SNAPSHOT_FORMAT) throw formatError('pending log', head.readUInt32BE(20));
      // Committed before it was removed (its index was already replaced).
      if (head.readDoubleBE(8) !== (this.header?.seq ?? 0) || head.readUInt32BE(16) !== this.gen) return undefined;
      const changes = pendingChanges(this.dir);
      // Only a torn final record (a short tail) is dropped: any other damage is refused.
      for (let pos = PENDING_HEADER_BYTES; pos + 8 <= size;) {
        const len = readAt(fd, pos, 8).readUInt32BE(0);
        if (pos + 8 + len > size) break;
        const payload = readAt(fd, pos + 8, len);
        if (crc32(payload) !== readAt(fd, pos + 4, 4).readUInt32BE(0))
          throw corrupt('a record of the pending log fails its checksum');
        parsePendingRecord(payload, changes);
        pos += 8 + len;
      }
      return changes;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Merge `pending` into a new index and make it the snapshot (write, fsync, rename), scrubbing
   * the frames of removed and replaced users. Returns false when there was nothing to commit.
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
    const dead = new DeadFrames();
    mergeIndex(join(this.dir, 'index'), this.count, changes, writer, dead);
    let header = writer.finish({
      format: SNAPSHOT_FORMAT,
      gen: this.gen,
      seq: (this.header?.seq ?? 0) + 1,
      committedAtMs: this.now(),
      parentDigest: this.digest,
      target: this.target,
    });
    const dataBytes = existsSync(this.dataPath) ? statSync(this.dataPath).size : 0;
    if (dead.overflow || dataBytes - header.liveBytes > Math.max(header.liveBytes, 1 << 18))
      header = this.compact(tmp, header);
    else this.scrub(dead);
    renameSync(tmp, join(this.dir, 'index'));
    fsyncPath(this.dir);
    const oldData = this.dataPath;
    this.header = header;
    if (oldData !== this.dataPath) rmSync(oldData, { force: true });
    rmSync(pendingPath, { force: true });
    fsyncPath(this.dir);
    return true;
  }

  /** Overwrite the frames no entry points to any more (removed users' data leaves the state). */
  private scrub(dead: DeadFrames): void {
    if (dead.n === 0) return;
    const fd = openSync(this.dataPath, 'r+');
    try {
      for (let i = 0; i < dead.n; i++)
        writeAt(fd, scrubbedFrame(dead.len[i] as number), dead.offset[i] as number, this.dataPath);
      syncFd(fd, this.dataPath);
    } finally {
      closeSync(fd);
    }
  }

  /** Rewrite the live frames of `indexPath` into the next data generation; returns the new index's header. */
  private compact(indexPath: string, header: IndexHeader): IndexHeader {
    const gen = this.gen + 1;
    const dataPath = join(this.dir, `data.${gen}`);
    const compactPath = join(this.dir, 'index.compact');
    const oldFd = openSync(this.dataPath, 'r');
    const newFd = openSync(dataPath, 'w', 0o600);
    const writer = new IndexWriter(compactPath);
    let offset = DATA_HEADER_BYTES;
    try {
      writeAt(newFd, encodeDataHeader(gen, this.target), 0, dataPath);
      for (const { buf, n } of entryChunks(indexPath, header.count)) {
        const frames: Buffer[] = [];
        const start = offset;
        for (let i = 0; i < n; i++) {
          const at = i * SNAPSHOT_ENTRY_BYTES;
          const len = uint32At(buf, at + 16);
          frames.push(readAt(oldFd, entryOffset(buf, at), len));
          writer.add({ hi: uint32At(buf, at), lo: uint32At(buf, at + 4), offset, len, time: uint32At(buf, at + 20) });
          offset += len;
        }
        writeAt(newFd, Buffer.concat(frames), start, dataPath);
      }
      syncFd(newFd, dataPath);
    } finally {
      closeSync(oldFd);
      closeSync(newFd);
    }
    const compacted = writer.finish({ ...header, gen });
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

export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** An intent or confirmed record of Updates: fingerprints with their frames. */
function framePayload(op: number, timeSec: number, users: readonly Omit<SnapshotUser, 'json'>[]): Buffer {
  const payload = Buffer.allocUnsafe(9 + users.length * 18);
  payload[0] = op;
  payload.writeUInt32BE(timeSec, 1);
  payload.writeUInt32BE(users.length, 5);
  users.forEach((u, i) => {
    if (u.offset === undefined || u.len === undefined) throw new Error('internal error: a user without its frame');
    const at = 9 + i * 18;
    payload.writeUInt32BE(u.hi, at);
    payload.writeUInt32BE(u.lo, at + 4);
    payload.writeUIntBE(u.offset, at + 8, 6);
    payload.writeUInt32BE(u.len, at + 14);
  });
  return payload;
}

/** An intent or confirmed record of Deletes: fingerprints. */
function keyPayload(op: number, timeSec: number, users: readonly { hi: number; lo: number }[]): Buffer {
  const payload = Buffer.allocUnsafe(9 + users.length * 8);
  payload[0] = op;
  payload.writeUInt32BE(timeSec, 1);
  payload.writeUInt32BE(users.length, 5);
  users.forEach((u, i) => {
    payload.writeUInt32BE(u.hi, 9 + i * 8);
    payload.writeUInt32BE(u.lo, 13 + i * 8);
  });
  return payload;
}

function parsePendingRecord(payload: Buffer, c: PendingChanges): void {
  const op = payload[0];
  const time = payload.readUInt32BE(1);
  const n = payload.readUInt32BE(5);
  if (op === OP_UPSERT || op === OP_INTENT_UPDATE) {
    // An intent is an upsert at time 0: its confirmation, later in the log, replaces it.
    for (let i = 0, at = 9; i < n; i++, at += 18) {
      const [hi, lo] = [payload.readUInt32BE(at), payload.readUInt32BE(at + 4)];
      c.upserts.push(hi, lo, payload.readUIntBE(at + 8, 6), payload.readUInt32BE(at + 14), time);
    }
  } else if (op === OP_DELETE || op === OP_INTENT_DELETE) {
    const into = op === OP_DELETE ? c.deletes : c.uncertain;
    for (let i = 0, at = 9; i < n; i++, at += 8)
      into.push(payload.readUInt32BE(at), payload.readUInt32BE(at + 4), 0, 0, time);
  } else {
    throw corrupt('the pending log has an unknown record');
  }
}

/** No index: a first sync, unless a data file is there without a first sync's pending log (index deleted). */
function checkNoIndexLeftovers(dir: string): void {
  const files = readdirSync(dir);
  if (!files.some((f) => /^data\.\d+$/.test(f))) return;
  if (firstSyncPending(join(dir, 'pending'))) return;
  throw new SnapshotError(
    'snapshot_index_missing',
    "the sync snapshot's index is missing but its data file is there: this is not a first sync (a first sync would remove nobody); nothing was sent",
    { fix: RECOVER_FIX },
  );
}

/** True when `pending` is a first sync's (it applies to no index yet). */
function firstSyncPending(path: string): boolean {
  return pendingHead(path)?.readDoubleBE(8) === 0;
}

/** `pending`'s whole header (its sequence NaN when it is not a pending log); undefined when there is none. */
function pendingHead(path: string): Buffer | undefined {
  if (!existsSync(path)) return undefined;
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(PENDING_HEADER_BYTES);
    const n = readSync(fd, head, 0, PENDING_HEADER_BYTES, 0);
    if (n < PENDING_HEADER_BYTES) return undefined;
    if (head.toString('latin1', 0, 8) !== PENDING_MAGIC) head.writeDoubleBE(NaN, 8);
    return head;
  } finally {
    closeSync(fd);
  }
}

/**
 * A run the audit log records as started over this very index (same commit sequence), whose
 * commit it did not record, must have left its write-ahead record: it was begun before the run's
 * start record, and only a commit (which moves the sequence on) removes it. Without it, what the
 * run sent cannot be told (a lost `pending`, write-ahead rows a failover lost): damage, refused
 * before anything is sent. Judged on the snapshot of `dir` as it is, before it is opened or
 * recovered (an unreadable index is left to the open's checks).
 */
export function writeAheadLost(dir: string, recorded: RecordedState | undefined): SnapshotError | undefined {
  const open = recorded?.openRun;
  if (open === undefined) return undefined;
  let header: IndexHeader | undefined;
  try {
    header = readIndexHeader(join(dir, 'index'));
  } catch {
    return undefined;
  }
  if ((header?.seq ?? 0) !== open.indexSeq) return undefined;
  // Another membership under the same sequence is not this run's index (checkRecorded judges it).
  if ((header?.digest ?? EMPTY_SNAPSHOT_DIGEST) !== recorded?.digest) return undefined;
  // A log that is not one (wrong magic) is the open's to refuse as damaged.
  const pendingSeq = pendingHead(join(dir, 'pending'))?.readDoubleBE(8);
  if (pendingSeq === open.indexSeq || Number.isNaN(pendingSeq)) return undefined;
  return new SnapshotError(
    'snapshot_write_ahead_lost',
    `the sync run ${open.runId} stopped before its end, and its write-ahead record (what it was sending) is missing from the snapshot: the users it may have added or removed cannot be told; nothing was sent`,
    {
      fix: `${RECOVER_FIX}; users the lost record alone named are counted as not recovered, with how to re-anchor the audience`,
    },
  );
}

/** The snapshot found must be the one the audit log last recorded for the target, or committed over it. */
function checkRecorded(header: IndexHeader | undefined, recorded: SnapshotOpenOptions['recorded']): void {
  if (recorded === undefined) return;
  if (header === undefined) {
    if (recorded.users === 0) return;
    throw new SnapshotError(
      'snapshot_missing',
      `the audit log records ${recorded.users} users on this target's sync snapshot, but there is no snapshot in this state directory; nothing was sent`,
      {
        fix: `pass the stateDir that holds it; if it is lost, ${RECOVER_FIX}`,
      },
    );
  }
  if (header.digest === recorded.digest || header.parentDigest === recorded.digest) return;
  throw new SnapshotError(
    'snapshot_rolled_back',
    `the sync snapshot (${header.count} users, digest ${header.digest.slice(0, 12)}) is not the one the audit log last recorded for this target (${recorded.users} users, digest ${recorded.digest.slice(0, 12)}): restored from an older copy or rolled back; nothing was sent`,
    { fix: RECOVER_FIX },
  );
}

/** The data file's size, after checking it is there and is this generation's and target's. */
function checkDataFile(dir: string, header: IndexHeader, target: string): number {
  const path = join(dir, `data.${header.gen}`);
  if (!existsSync(path)) {
    if (header.count === 0) return DATA_HEADER_BYTES;
    throw new SnapshotError(
      'snapshot_data_missing',
      `the sync snapshot's data file data.${header.gen} is missing: the ${header.count} users it held could not be removed; nothing was sent`,
      { fix: RECOVER_FIX },
    );
  }
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(DATA_HEADER_BYTES);
    checkDataHeader(head, readSync(fd, head, 0, DATA_HEADER_BYTES, 0), header.gen, target);
    return statSync(path).size;
  } finally {
    closeSync(fd);
  }
}
