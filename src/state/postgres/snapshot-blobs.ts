/**
 * A target's snapshot files in the database: the committed files as patch rows (file-delta.ts:
 * rows of at most 1 MiB, streamed from and to the local files so memory stays bounded whatever
 * the snapshot's size; a commit stores only the blocks of the data file that changed) and the
 * write-ahead rows of a sync under way.
 */
import { closeSync, existsSync, ftruncateSync, openSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { z } from 'zod';
import { collectYoung } from '../../util/collect.js';
import { COMMITTED_FILE, corrupt, RECOVER_FIX, SnapshotError } from '../snapshot-format.js';
import { writeAt } from '../snapshot-index.js';
import { copyIntBytes, CopyFormatError } from './copy-out.js';
import {
  changedRanges,
  type FileScan,
  FOLD,
  packRows,
  rangeBytes,
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
/*
 * Patch rows are read by one binary COPY a file (copy-out.ts), each into one reused row buffer.
 * As bytea text (hex parsed into a new Buffer per row, 16 rows a query) the open of a 1M-user
 * snapshot took the process from 123 to 239 MB resident before the sync had begun.
 */

const WAL_FILE = /^(pending|data\.\d+)$/;
/** Files the snapshot changes in place (appends, scrubs): stored by their changed blocks. The others are replaced by a rename. */
const IN_PLACE_FILE = /^data\.\d+$/;

/** What the session knows of a committed file as the database holds it, to store only what changes. */
export interface StoredFile {
  /** `ino:size:mtimeNs` when read or stored: the same stamp, nothing to store. */
  stamp: string;
  ino: bigint;
  size: number;
  /** Bytes the file's patch rows hold, and the next row's `seq`. */
  stored: number;
  nextSeq: number;
}

export type StoredFiles = Map<string, StoredFile>;

/** The committed files as read: what the database holds of each, and the first damage found. */
export interface CommittedFiles {
  files: StoredFiles;
  damage: SnapshotError | undefined;
}

const SHA256_BYTES = 32;
const fileRow = z.object({
  name: z.string().regex(COMMITTED_FILE),
  size: z.coerce.number().int().nonnegative(),
  sha256: z.instanceof(Buffer).nullable(),
});
const walRow = z.object({
  seq: z.number().int(),
  file: z.string().regex(WAL_FILE),
  offset: z.coerce.number().int().nonnegative(),
  data: z.instanceof(Buffer),
});

/**
 * Write the committed files of `target` into `dir`, each checked against its size and SHA-256. A
 * file that fails (a damaged, missing or misplaced row, a wrong size or digest) is left in `dir`
 * as its rows rebuilt it, for a recovery to salvage what it can, and the first such failure is
 * returned as `damage` (the sync refuses the target with it unless it recovers); the database's
 * copy of it is then never patched, only replaced whole.
 */
export async function readCommittedFiles(client: pg.ClientBase, target: string, dir: string): Promise<CommittedFiles> {
  const rows = await client.query('SELECT name, size, sha256 FROM audience_kit_snapshot_files WHERE target = $1', [
    target,
  ]);
  const files: StoredFiles = new Map();
  const buf = Buffer.allocUnsafe(ROW_BYTES);
  let damage: SnapshotError | undefined;
  for (const raw of rows.rows) {
    const file = fileRow.parse(raw);
    const path = join(dir, file.name);
    const read = await applyRows(client, target, file, path, buf);
    const failed = read instanceof SnapshotError ? read : checkFile(file, path, read);
    damage ??= failed;
    // A damaged file's stamp and inode match nothing: the next commit stores it whole (or removes it).
    if (failed !== undefined || read instanceof SnapshotError)
      files.set(file.name, { stamp: '', ino: -1n, size: file.size, stored: 0, nextSeq: 0 });
    else files.set(file.name, { ...stampOf(path), size: file.size, stored: read.stored, nextSeq: read.nextSeq });
  }
  return { files, damage };
}

/** A file rebuilt from its rows must be its size and SHA-256. */
function checkFile(
  file: z.infer<typeof fileRow>,
  path: string,
  rows: { stored: number; end: number },
): SnapshotError | undefined {
  const scan = scanFile(path, false);
  // A file of schema 1 has no SHA-256: its parts must cover it exactly, as they did there.
  const whole = file.sha256 === null ? rows.stored === file.size && rows.end === file.size : rows.end === file.size;
  if (whole && (file.sha256 === null || file.sha256.equals(scan.sha256))) return undefined;
  return corrupt(`the state database's copy of the snapshot's file ${file.name} does not match its size or SHA-256`);
}

/**
 * The block digests the commit that stored the file computed (schema 3), when the row holds them
 * for a file of `size` bytes and their seal is that of the file as the row holds it (its SHA-256);
 * undefined otherwise (none, a damaged value, digests of another version): the file is then
 * stored whole, which needs none. One statement, so the value and the row it is checked against
 * are read together.
 */
async function readBlocks(
  client: pg.ClientBase,
  target: string,
  name: string,
  size: number,
): Promise<Buffer | undefined> {
  const sealed = sealedBlocksBytes(size);
  const into = Buffer.allocUnsafe(SHA256_BYTES + sealed);
  let row: Buffer | undefined;
  try {
    for await (const { bytes } of copyIntBytes(
      client,
      `SELECT 0::int4, sha256 || blocks FROM audience_kit_snapshot_files WHERE target = ${client.escapeLiteral(target)} AND name = ${client.escapeLiteral(name)} AND size = ${size} AND length(sha256) = ${SHA256_BYTES} AND length(blocks) = ${sealed}`,
      into,
    ))
      row = bytes;
  } catch (error) {
    // Digests choose only what a commit stores: a value that cannot be read is not used.
    if (error instanceof CopyFormatError) return undefined;
    throw error;
  }
  return row && unsealBlocks(row.subarray(SHA256_BYTES), row.subarray(0, SHA256_BYTES), size);
}

/**
 * Apply the file's patch rows in order to a new file at `path`; what they held, and how far they
 * reached; or the damage that stopped it (a row that cannot be read or reaches outside the file).
 */
async function applyRows(
  client: pg.ClientBase,
  target: string,
  file: z.infer<typeof fileRow>,
  path: string,
  buf: Buffer,
): Promise<{ stored: number; nextSeq: number; end: number } | SnapshotError> {
  const rows = copyIntBytes(
    client,
    `SELECT seq, data FROM audience_kit_snapshot_patches WHERE target = ${client.escapeLiteral(target)} AND name = ${client.escapeLiteral(file.name)} ORDER BY seq`,
    buf,
  );
  const fd = openSync(path, 'w', 0o600);
  let stored = 0;
  let end = 0;
  let nextSeq = 0;
  let read = 0;
  try {
    for await (const { int: seq, bytes: row } of rows) {
      for (const { offset, bytes } of unpackRow(row, file.size, file.name)) {
        writeAt(fd, bytes, offset, path);
        stored += bytes.length;
        end = Math.max(end, offset + bytes.length);
      }
      nextSeq = seq + 1;
      if (++read % COLLECT_EVERY_ROWS === 0) collectYoung();
    }
    ftruncateSync(fd, file.size);
  } catch (error) {
    if (error instanceof CopyFormatError)
      return corrupt(`a row of the snapshot's file ${file.name} could not be read: ${error.message}`);
    if (error instanceof SnapshotError) return error;
    throw error;
  } finally {
    closeSync(fd);
  }
  return { stored, nextSeq, end };
}

function stampOf(path: string): { stamp: string; ino: bigint } {
  const s = statSync(path, { bigint: true });
  return { stamp: `${s.ino}:${s.size}:${s.mtimeNs}`, ino: s.ino };
}

/** Whether the committed files in `dir` differ from `stored` (changed, added or removed). */
export function filesChanged(dir: string, stored: StoredFiles): boolean {
  const names = committedFiles(dir);
  return (
    names.length !== stored.size || names.some((name) => stored.get(name)?.stamp !== stampOf(join(dir, name)).stamp)
  );
}

const committedFiles = (dir: string): string[] => readdirSync(dir).filter((name) => COMMITTED_FILE.test(name));

/**
 * Store the committed files of `dir` that differ from `stored` (inside the caller's transaction):
 * a file changed in place by its changed blocks, any other whole; removed files deleted.
 * Returns what the database now holds.
 */
export async function writeCommittedFiles(
  client: pg.ClientBase,
  target: string,
  dir: string,
  stored: StoredFiles,
  wroteAhead: boolean,
): Promise<StoredFiles> {
  const names = committedFiles(dir);
  for (const name of stored.keys())
    if (!names.includes(name))
      await client.query('DELETE FROM audience_kit_snapshot_files WHERE target = $1 AND name = $2', [target, name]);
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
    out.set(name, same ? prev : await writeFile(client, target, path, name, stamp, prev));
  }
  return out;
}

/**
 * The ranges of the file that differ from the database's version, by the block digests stored
 * with it (read here, inside the commit's transaction: kept in memory from the open they were
 * 8.6 MB through the whole of a 10M-user sync); undefined when they cannot tell (no digests,
 * another file by the same name, a shrunk one).
 */
async function changedSinceStored(
  client: pg.ClientBase,
  target: string,
  name: string,
  prev: StoredFile | undefined,
  ino: bigint,
  scan: FileScan,
): Promise<number[] | undefined> {
  if (prev === undefined || scan.blocks === undefined || prev.ino !== ino || scan.size < prev.size) return;
  const old = await readBlocks(client, target, name, prev.size);
  return old && changedRanges({ size: prev.size, blocks: old }, { ...scan, blocks: scan.blocks });
}

/** Store one file: its changed blocks when it changed in place and the rows stay within FOLD times its size, else whole. */
async function writeFile(
  client: pg.ClientBase,
  target: string,
  path: string,
  name: string,
  stamp: { stamp: string; ino: bigint },
  prev: StoredFile | undefined,
): Promise<StoredFile> {
  const scan = scanFile(path, IN_PLACE_FILE.test(name));
  const delta = await changedSinceStored(client, target, name, prev, stamp.ino, scan);
  const patch = prev !== undefined && delta !== undefined && prev.stored + rangeBytes(delta) <= FOLD * scan.size;
  const ranges = patch ? delta : scan.size > 0 ? [0, scan.size] : [];
  const sealed = scan.blocks === undefined ? null : sealBlocks(scan.sha256, scan.size, scan.blocks);
  if (patch) {
    await client.query(
      'UPDATE audience_kit_snapshot_files SET size = $3, sha256 = $4, blocks = $5 WHERE target = $1 AND name = $2',
      [target, name, scan.size, scan.sha256, sealed],
    );
  } else {
    await client.query('DELETE FROM audience_kit_snapshot_files WHERE target = $1 AND name = $2', [target, name]);
    await client.query(
      'INSERT INTO audience_kit_snapshot_files (target, name, size, sha256, blocks) VALUES ($1, $2, $3, $4, $5)',
      [target, name, scan.size, scan.sha256, sealed],
    );
  }
  let seq = patch ? prev.nextSeq : 0;
  for (const row of packRows(path, ranges))
    await client.query('INSERT INTO audience_kit_snapshot_patches (target, name, seq, data) VALUES ($1, $2, $3, $4)', [
      target,
      name,
      seq++,
      row,
    ]);
  const stored = (patch ? prev.stored : 0) + rangeBytes(ranges);
  return { ...stamp, size: scan.size, stored, nextSeq: seq };
}

/** What a replay of the write-ahead rows found: the last seq replayed (0: none), and any damage. */
export interface WriteAheadReplay {
  last: number;
  damage: SnapshotError | undefined;
}

/**
 * Replay the write-ahead rows of `version` over the files in `dir`, in order. They must be
 * 1, 2, 3… of this version: a row of another version (the committed files they were written
 * over are gone) or a gap is damage, returned (the replay stops there), never skipped.
 */
export async function replayWriteAhead(
  client: pg.ClientBase,
  target: string,
  version: string,
  dir: string,
): Promise<WriteAheadReplay> {
  const other = await client.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM audience_kit_snapshot_wal WHERE target = $1 AND version <> $2',
    [target, version],
  );
  if (other.rows[0]?.n !== '0')
    return { last: 0, damage: writeAheadDamaged(`${other.rows[0]?.n ?? 'some'} of them are of another version`) };
  let last = 0;
  for (;;) {
    const page = await client.query(
      'SELECT seq, file, "offset", data FROM audience_kit_snapshot_wal WHERE target = $1 AND version = $2 AND seq > $3 ORDER BY seq LIMIT $4',
      [target, version, last, WAL_PAGE],
    );
    for (const raw of page.rows) {
      const row = walRow.parse(raw);
      if (row.seq !== last + 1) return { last, damage: writeAheadDamaged(`row ${last + 1} is missing`) };
      replayRow(dir, row);
      last = row.seq;
    }
    if (page.rows.length < WAL_PAGE) return { last, damage: undefined };
  }
}

function replayRow(dir: string, row: z.infer<typeof walRow>): void {
  // Offset 0 of `pending` starts a new log (the Snapshot writes its header there).
  const path = join(dir, row.file);
  // Not 'a': an append-mode descriptor ignores the position.
  const fresh = (row.file === 'pending' && row.offset === 0) || !existsSync(path);
  const fd = openSync(path, fresh ? 'w' : 'r+', 0o600);
  try {
    writeAt(fd, row.data, row.offset, path);
  } finally {
    closeSync(fd);
  }
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
