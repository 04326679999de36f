/**
 * A target's snapshot files in the database: the committed files as versioned blobs (parts of
 * at most 1 MiB, streamed from and to the local files so memory stays bounded whatever the
 * snapshot's size) and the write-ahead rows of a sync under way.
 */
import { closeSync, existsSync, openSync, readdirSync, readSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { z } from 'zod';
import { corrupt } from '../snapshot-format.js';

const PART_BYTES = 1 << 20;
/** Write-ahead rows read per query when a killed sync's records are replayed. */
const WAL_PAGE = 16;

/** The snapshot's committed files (what `persist` stores); `pending` and spools are not. */
export const COMMITTED_FILE = /^(index|data\.\d+|unrecovered\.json)$/;
const WAL_FILE = /^(pending|data\.\d+)$/;

/** A file's identity on disk: a commit that rewrote or appended to it changes it. */
export type FileStamps = Map<string, string>;

export function stampFiles(dir: string): FileStamps {
  const stamps: FileStamps = new Map();
  for (const name of readdirSync(dir)) {
    if (!COMMITTED_FILE.test(name)) continue;
    const s = statSync(join(dir, name), { bigint: true });
    stamps.set(name, `${s.ino}:${s.size}:${s.mtimeNs}`);
  }
  return stamps;
}

const fileRow = z.object({ name: z.string().regex(COMMITTED_FILE), size: z.coerce.number().int().nonnegative() });
const walRow = z.object({
  seq: z.number().int(),
  file: z.string().regex(WAL_FILE),
  offset: z.coerce.number().int().nonnegative(),
  data: z.instanceof(Buffer),
});

/** Write the committed files of `target` into `dir`, part by part; checks each file's size. */
export async function readCommittedFiles(client: pg.ClientBase, target: string, dir: string): Promise<void> {
  const files = await client.query('SELECT name, size FROM audience_kit_snapshot_files WHERE target = $1', [target]);
  for (const raw of files.rows) {
    const { name, size } = fileRow.parse(raw);
    const fd = openSync(join(dir, name), 'w', 0o600);
    try {
      let written = 0;
      for (let part = 0; written < size; part++) {
        const r = await client.query<{ data: Buffer }>(
          'SELECT data FROM audience_kit_snapshot_parts WHERE target = $1 AND name = $2 AND part = $3',
          [target, name, part],
        );
        const data = r.rows[0]?.data;
        if (data === undefined || data.length === 0) break;
        writeWhole(fd, data, written);
        written += data.length;
      }
      if (written !== size)
        throw corrupt(`the state database holds ${written} of the ${size} bytes of the snapshot's file ${name}`);
    } finally {
      closeSync(fd);
    }
  }
}

/** Replay the write-ahead rows of `version` over the files in `dir`, in order; returns the last seq (0: none). */
export async function replayWriteAhead(
  client: pg.ClientBase,
  target: string,
  version: string,
  dir: string,
): Promise<number> {
  let last = 0;
  for (;;) {
    const page = await client.query(
      'SELECT seq, file, "offset", data FROM audience_kit_snapshot_wal WHERE target = $1 AND version = $2 AND seq > $3 ORDER BY seq LIMIT $4',
      [target, version, last, WAL_PAGE],
    );
    for (const raw of page.rows) {
      const row = walRow.parse(raw);
      // Offset 0 of `pending` starts a new log (the Snapshot writes its header there).
      const path = join(dir, row.file);
      // Not 'a': an append-mode descriptor ignores the position.
      const fresh = (row.file === 'pending' && row.offset === 0) || !existsSync(path);
      const fd = openSync(path, fresh ? 'w' : 'r+', 0o600);
      try {
        writeWhole(fd, row.data, row.offset);
      } finally {
        closeSync(fd);
      }
      last = row.seq;
    }
    if (page.rows.length < WAL_PAGE) return last;
  }
}

/** Store the file `name` of `dir` as the target's (inside the caller's transaction), streamed in parts. */
export async function writeCommittedFile(
  client: pg.ClientBase,
  target: string,
  dir: string,
  name: string,
): Promise<void> {
  await client.query('DELETE FROM audience_kit_snapshot_files WHERE target = $1 AND name = $2', [target, name]);
  const path = join(dir, name);
  const size = statSync(path).size;
  await client.query('INSERT INTO audience_kit_snapshot_files (target, name, size) VALUES ($1, $2, $3)', [
    target,
    name,
    size,
  ]);
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(Math.min(PART_BYTES, Math.max(size, 1)));
    for (let pos = 0, part = 0; pos < size; part++) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, size - pos), pos);
      if (n === 0) throw new Error(`internal error: ${name} shrank while it was stored`);
      await client.query('INSERT INTO audience_kit_snapshot_parts (target, name, part, data) VALUES ($1, $2, $3, $4)', [
        target,
        name,
        part,
        buf.subarray(0, n),
      ]);
      pos += n;
    }
  } finally {
    closeSync(fd);
  }
}

function writeWhole(fd: number, data: Buffer, position: number): void {
  for (let done = 0; done < data.length;) done += writeSync(fd, data, done, data.length - done, position + done);
}
