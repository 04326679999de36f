/**
 * A target's committed snapshot files, mirrored between a backend (state/backend.ts: a head and
 * patch rows a file) and a local directory: written into the directory from the rows, each checked
 * against its size and SHA-256, so memory stays bounded whatever the snapshot's size; a commit
 * stores only what changed (a data file's changed blocks, file-delta.ts; any other file whole);
 * a sync's write-ahead records replayed over the files in order. Written once for every backend.
 */
import { closeSync, existsSync, openSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { EnvironmentError, environmentError } from '../errors.js';
import { collectYoung } from '../util/collect.js';
import type { CommittedView, CommitWriter, StoredFileHead, WriteAheadRecord } from './backend.js';
import { COMMITTED_FILE, corrupt, RECOVER_FIX, SnapshotError } from './snapshot-format.js';
import { stateFs } from './fs.js';
import { writeAt } from './snapshot-index.js';
import {
  changedRanges,
  type FileScan,
  meets,
  overwrittenRanges,
  packRows,
  patches,
  rangeBytes,
  refillRow,
  rowSpan,
  type RowSpan,
  ROW_BYTES,
  scanFile,
  sealBlocks,
  sealedBlocksBytes,
  unsealBlocks,
  unpackRow,
} from './file-delta.js';

/**
 * A young-generation collection every this many rows read (4 MiB): the COPY stream's buffers are
 * garbage as soon as their row is written, and V8 let 30 MB and more of them wait, memory the
 * process then kept through the sync. A 2.2 GB copy out of the database, from 70 MB resident:
 * 108-110 MB peak without, 81-83 MB with this, in the same 3.3-4.8 s; 93-96 MB with a full
 * collection every 16 rows instead, which added 1 to 1.5 s (11 ms each).
 */
const COLLECT_EVERY_ROWS = 4;

/** Write-ahead rows read per query when a killed sync's records are replayed. */
const WAL_PAGE = 16;
const WAL_FILE = /^(pending|data\.\d+)$/;
/** Files the snapshot changes in place (appends, scrubs): stored by their changed blocks. The others are replaced by a rename. */
const IN_PLACE_FILE = /^data\.\d+$/;

/** What the session knows of a committed file as the store holds it, to store only what changes. */
export interface StoredFile {
  /** `ino:size:mtimeNs` when read or stored: the same stamp, nothing to store. */
  stamp: string;
  ino: bigint;
  size: number;
  /** Bytes the file's patch rows hold, and the next row's `seq`. */
  stored: number;
  nextSeq: number;
  /** Where in the file each stored row writes (from its first range's offset to its last byte). */
  spans: RowSpan[];
}

export type StoredFiles = Map<string, StoredFile>;

/** The committed files as read: what the store holds of each, and the first damage found. */
interface CommittedFiles {
  files: StoredFiles;
  damage: SnapshotError | undefined;
}

const SHA256_BYTES = 32;

/**
 * A file call on the private copy (in the temporary directory): its failure is the directory
 * store's error for the disk (`disk_full`, `state_not_writable`, `io_error`…, as environmentError
 * names it), the fix naming where the copy lives; never the database's (a backend's transaction
 * the call runs in would report it as its connection lost).
 */
export function onCopy<T>(doing: string, path: string, call: () => T): T {
  try {
    return call();
  } catch (error) {
    const e = environmentError(error, doing, path);
    if (!(e instanceof EnvironmentError)) throw e;
    throw new EnvironmentError(e.code, e.message, { path: e.path, cause: e.cause, fix: copyFix() });
  }
}

const copyFix = (): string =>
  `a sync keeps a private copy of its target's snapshot in the temporary directory (${tmpdir()}, from TMPDIR): free space there (about 113 bytes per user of the target) or fix its permissions, or set TMPDIR to a writable directory on another disk; then run the sync again`;

/**
 * Write the committed files of `target` into `dir`, each checked against its size and SHA-256. A
 * file that fails (a damaged, missing or misplaced row, a wrong size or digest) is left in `dir`
 * as its rows rebuilt it, for a recovery to salvage what it can, and the first such failure is
 * returned as `damage` (the sync refuses the target with it unless it recovers); the database's
 * copy of it is then never patched, only replaced whole.
 */
export async function readCommittedFiles(view: CommittedView, dir: string): Promise<CommittedFiles> {
  const files: StoredFiles = new Map();
  const buf = Buffer.allocUnsafe(ROW_BYTES);
  let damage: SnapshotError | undefined;
  for (const file of await view.files()) {
    if (!COMMITTED_FILE.test(file.name)) throw corrupt(`the state store names a file ${JSON.stringify(file.name)}`);
    const path = join(dir, file.name);
    const read = await applyRows(view.rows(file.name, buf), file, path);
    const failed = read instanceof SnapshotError ? read : checkFile(file, path, read);
    damage ??= failed;
    // A damaged file's stamp and inode match nothing: the next commit stores it whole (or removes it).
    if (failed !== undefined || read instanceof SnapshotError)
      files.set(file.name, { stamp: '', ino: -1n, size: file.size, stored: 0, nextSeq: 0, spans: [] });
    else
      files.set(file.name, {
        ...stampOf(path),
        size: file.size,
        stored: read.stored,
        nextSeq: read.nextSeq,
        spans: read.spans,
      });
  }
  return { files, damage };
}

/**
 * The digests the commit that stored the file computed, when the store holds them for a file of
 * `size` bytes and their seal is that of the file as the store holds it (its SHA-256); undefined
 * otherwise (none, a damaged value, digests of another version): the file is then stored whole.
 */
async function storedBlocks(writer: CommitWriter, name: string, size: number): Promise<Buffer | undefined> {
  const row = await writer.blocks(name, size, SHA256_BYTES + sealedBlocksBytes(size));
  return row && unsealBlocks(row.subarray(SHA256_BYTES), row.subarray(0, SHA256_BYTES), size);
}

/** A file rebuilt from its rows must be its size and SHA-256. */
function checkFile(
  file: StoredFileHead,
  path: string,
  rows: { stored: number; end: number },
): SnapshotError | undefined {
  const scan = onCopy('reading', path, () => scanFile(path, false));
  // A file of schema 1 has no SHA-256: its parts must cover it exactly, as they did there.
  const whole = file.sha256 === null ? rows.stored === file.size && rows.end === file.size : rows.end === file.size;
  if (whole && (file.sha256 === null || file.sha256.equals(scan.sha256))) return undefined;
  return corrupt(`the state store's copy of the snapshot's file ${file.name} does not match its size or SHA-256`);
}

/**
 * Apply the file's patch rows in order to a new file at `path`; what they held, and how far they
 * reached; or the damage that stopped it (a row that cannot be read or reaches outside the file).
 */
async function applyRows(
  rows: AsyncIterable<{ seq: number; bytes: Buffer }>,
  file: StoredFileHead,
  path: string,
): Promise<{ stored: number; nextSeq: number; end: number; spans: RowSpan[] } | SnapshotError> {
  const fd = onCopy('creating', path, () => openSync(path, 'w', 0o600));
  let stored = 0;
  let end = 0;
  let nextSeq = 0;
  let read = 0;
  const spans: RowSpan[] = [];
  try {
    for await (const { seq, bytes: row } of rows) {
      for (const { offset, bytes } of unpackRow(row, file.size, file.name)) {
        onCopy('writing', path, () => writeAt(fd, bytes, offset, path));
        stored += bytes.length;
      }
      const span = rowSpan(seq, row, file.size, file.name);
      end = Math.max(end, span.end);
      spans.push(span);
      nextSeq = seq + 1;
      if (++read % COLLECT_EVERY_ROWS === 0) collectYoung();
    }
    onCopy('truncating', path, () => stateFs.ftruncateSync(fd, file.size));
  } catch (error) {
    if (error instanceof SnapshotError) return error;
    throw error;
  } finally {
    closeSync(fd);
  }
  return { stored, nextSeq, end, spans };
}

function stampOf(path: string): { stamp: string; ino: bigint } {
  const s = onCopy('reading', path, () => statSync(path, { bigint: true }));
  return { stamp: `${s.ino}:${s.size}:${s.mtimeNs}`, ino: s.ino };
}

/** Whether the committed files in `dir` differ from `stored` (changed, added or removed). */
export function filesChanged(dir: string, stored: StoredFiles): boolean {
  const names = committedFiles(dir);
  return (
    names.length !== stored.size || names.some((name) => stored.get(name)?.stamp !== stampOf(join(dir, name)).stamp)
  );
}

const committedFiles = (dir: string): string[] =>
  onCopy('reading', dir, () => readdirSync(dir)).filter((name) => COMMITTED_FILE.test(name));

/**
 * Store the committed files of `dir` that differ from `stored` (inside the backend's commit):
 * a file changed in place by its changed blocks, any other whole; removed files deleted.
 * Returns what the store now holds.
 */
export async function writeCommittedFiles(
  writer: CommitWriter,
  dir: string,
  stored: StoredFiles,
  wroteAhead: boolean,
): Promise<StoredFiles> {
  const names = committedFiles(dir);
  for (const name of stored.keys()) if (!names.includes(name)) await writer.remove(name);
  const out: StoredFiles = new Map();
  for (const name of names) {
    const prev = stored.get(name);
    const path = join(dir, name);
    const stamp = stampOf(path);
    // A stamp (size, mtime) can miss a rewrite of the same size within one tick of a coarse clock:
    // once write-ahead records were written (queued or replayed), a data file is compared block by
    // block whatever its stamp (the records append to it, and a commit scrubs removed users'
    // frames in place). The other committed files are never written through the records.
    const rewritten = wroteAhead && IN_PLACE_FILE.test(name);
    const same = prev?.stamp === stamp.stamp && !rewritten;
    out.set(name, same ? prev : await writeFile(writer, path, name, stamp, prev));
  }
  return out;
}

/**
 * The ranges of the file that differ from the database's version, by the block digests stored
 * with it (read here, inside the commit's transaction: kept in memory from the open they were
 * 8.6 MB through the whole of a 10M-user sync), and those of them below the stored size whose
 * bytes the stored rows may hold otherwise; undefined when they cannot tell (no digests, another
 * file by the same name, a shrunk one).
 */
async function changedSinceStored(
  writer: CommitWriter,
  path: string,
  prev: StoredFile | undefined,
  ino: bigint,
  scan: FileScan,
): Promise<{ ranges: number[]; below: number[] } | undefined> {
  if (prev === undefined || scan.blocks === undefined || prev.ino !== ino || scan.size < prev.size) return;
  const blocks = await storedBlocks(writer, basename(path), prev.size);
  if (blocks === undefined) return;
  const old = { size: prev.size, blocks };
  const ranges = changedRanges(old, { ...scan, blocks: scan.blocks });
  return { ranges, below: onCopy('reading', path, () => overwrittenRanges(ranges, old, path)) };
}

/** Store one file: its changed blocks when it changed in place and the rows stay within FOLD times its size, else whole. */
async function writeFile(
  writer: CommitWriter,
  path: string,
  name: string,
  stamp: { stamp: string; ino: bigint },
  prev: StoredFile | undefined,
): Promise<StoredFile> {
  const scan = onCopy('reading', path, () => scanFile(path, IN_PLACE_FILE.test(name)));
  const changed = await changedSinceStored(writer, path, prev, stamp.ino, scan);
  const delta = changed?.ranges;
  // The stored rows that may hold bytes of the blocks changed below the stored size.
  const below = changed?.below ?? [];
  const touched = prev?.spans.filter((span) => meets(below, span.start, span.end)) ?? [];
  const patch =
    prev !== undefined &&
    delta !== undefined &&
    patches({
      size: scan.size,
      stored: prev.stored,
      delta: rangeBytes(delta),
      refill: touched.reduce((n, span) => n + span.bytes, 0),
    });
  const ranges = patch ? delta : scan.size > 0 ? [0, scan.size] : [];
  const sealed = scan.blocks === undefined ? null : sealBlocks(scan.sha256, scan.size, scan.blocks);
  await writer.put({ name, size: scan.size, sha256: scan.sha256, blocks: sealed }, !patch);
  if (patch) await refillOverwritten(writer, path, name, prev.size, touched, below);
  const spans = patch ? [...prev.spans] : [];
  let seq = patch ? prev.nextSeq : 0;
  const rows = onCopy('reading', path, () => packRows(path, ranges));
  for (let r; !(r = onCopy('reading', path, () => rows.next())).done; seq++) {
    await writer.row(name, seq, r.value);
    spans.push(rowSpan(seq, r.value, scan.size, name));
  }
  const stored = (patch ? prev.stored : 0) + rangeBytes(ranges);
  return { ...stamp, size: scan.size, stored, nextSeq: seq, spans };
}

/**
 * Before a commit stores a file's changed blocks, rewrite each stored row of `touched` (those whose
 * span meets `below`) that holds bytes of a block it changes below the stored size (a removed
 * user's frame the snapshot scrubbed, a refreshed user's older frame) with the bytes the file has
 * now in that row's ranges. Applied in order, the
 * rows still rebuild the file: where a later row writes, it still does; where this row was the last
 * to write, the file's bytes are unchanged outside the changed blocks, which the new rows cover. So
 * no row keeps a removed user's digests once the sync that removed it has committed.
 */
async function refillOverwritten(
  writer: CommitWriter,
  path: string,
  name: string,
  storedSize: number,
  touched: readonly RowSpan[],
  below: readonly number[],
): Promise<void> {
  if (touched.length === 0) return;
  const buf = Buffer.allocUnsafe(ROW_BYTES);
  const fd = onCopy('reading', path, () => openSync(path, 'r'));
  try {
    for (const span of touched) {
      const row = await writer.storedRow(name, span.seq, buf);
      if (row === undefined) throw corrupt(`row ${span.seq} of the snapshot's file ${name} went missing`);
      const refilled = onCopy('reading', path, () => refillRow(row, fd, path, storedSize, name, below));
      if (refilled) await writer.replaceRow(name, span.seq, row);
    }
  } finally {
    closeSync(fd);
  }
}

/** What a replay of the write-ahead rows found: the last seq replayed (0: none), and any damage. */
interface WriteAheadReplay {
  last: number;
  damage: SnapshotError | undefined;
}

/**
 * Replay the write-ahead records of the view's fence over the files in `dir`, in order. They must be
 * 1, 2, 3… of this version: a row of another version (the committed files they were written
 * over are gone) or a gap is damage, returned (the replay stops there), never skipped.
 */
export async function replayWriteAhead(view: CommittedView, dir: string): Promise<WriteAheadReplay> {
  const stale = await view.staleRecords();
  if (stale !== 0) return { last: 0, damage: writeAheadDamaged(`${stale} of them are of another version`) };
  let last = 0;
  for (;;) {
    const page = await view.records(last, WAL_PAGE);
    for (const row of page) {
      if (row.seq !== last + 1) return { last, damage: writeAheadDamaged(`row ${last + 1} is missing`) };
      if (!WAL_FILE.test(row.file) || !Number.isSafeInteger(row.offset) || row.offset < 0)
        return { last, damage: writeAheadDamaged(`row ${row.seq} names no place in the snapshot's files`) };
      replayRow(dir, row);
      last = row.seq;
    }
    if (page.length < WAL_PAGE) return { last, damage: undefined };
  }
}

function replayRow(dir: string, row: WriteAheadRecord): void {
  // Offset 0 of `pending` starts a new log (the Snapshot writes its header there).
  const path = join(dir, row.file);
  // Not 'a': an append-mode descriptor ignores the position.
  const fresh = (row.file === 'pending' && row.offset === 0) || !existsSync(path);
  onCopy('writing', path, () => {
    const fd = openSync(path, fresh ? 'w' : 'r+', 0o600);
    try {
      writeAt(fd, row.data, row.offset, path);
    } finally {
      closeSync(fd);
    }
  });
}

function writeAheadDamaged(what: string): SnapshotError {
  return new SnapshotError(
    'snapshot_write_ahead_damaged',
    `the write-ahead rows of a sync that stopped before its end are damaged (${what}): what it may have sent cannot be told; nothing was sent`,
    {
      fix: `${RECOVER_FIX}; users the damaged rows alone named are counted as not recovered, with how to re-anchor the audience`,
    },
  );
}
