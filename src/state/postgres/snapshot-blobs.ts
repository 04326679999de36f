/**
 * A target's snapshot files in the database, as the mirror (state/mirror-files.ts) reads and
 * writes them: `audience_kit_snapshot_files` (a head a file: size, SHA-256, sealed block digests),
 * `audience_kit_snapshot_patches` (its patch rows by `seq`) and `audience_kit_snapshot_wal` (the
 * write-ahead records of a sync under way, by `version` and `seq`).
 */
import type pg from 'pg';
import { z } from 'zod';
import type { CommittedView, CommitWriter, StoredFileHead, WriteAheadRecord } from '../backend.js';
import { corrupt } from '../snapshot-format.js';
import { copyIntBytes, CopyFormatError } from './copy-out.js';

/*
 * Patch rows are read by one binary COPY a file (copy-out.ts), each into one reused row buffer.
 * As bytea text (hex parsed into a new Buffer per row, 16 rows a query) the open of a 1M-user
 * snapshot took the process from 123 to 239 MB resident before the sync had begun.
 */

const fileRow = z.object({
  name: z.string(),
  size: z.coerce.number().int().nonnegative(),
  sha256: z.instanceof(Buffer).nullable(),
});
const walRow = z.object({
  seq: z.number().int(),
  file: z.string(),
  offset: z.coerce.number().int().nonnegative(),
  data: z.instanceof(Buffer),
});

/** The target's committed files and write-ahead rows of `version`, read through `client` (inside the caller's transaction). */
export function committedView(client: pg.ClientBase, target: string, version: string): CommittedView {
  return {
    fence: version,
    files: async (): Promise<StoredFileHead[]> => {
      const r = await client.query('SELECT name, size, sha256 FROM audience_kit_snapshot_files WHERE target = $1', [
        target,
      ]);
      return r.rows.map((raw) => fileRow.parse(raw));
    },
    rows: (name, into) => patchRows(client, target, name, into),
    staleRecords: async () => {
      const r = await client.query<{ n: string }>(
        'SELECT count(*)::text AS n FROM audience_kit_snapshot_wal WHERE target = $1 AND version <> $2',
        [target, version],
      );
      return Number(r.rows[0]?.n ?? 1);
    },
    records: async (after, limit): Promise<WriteAheadRecord[]> => {
      const r = await client.query(
        'SELECT seq, file, "offset", data FROM audience_kit_snapshot_wal WHERE target = $1 AND version = $2 AND seq > $3 ORDER BY seq LIMIT $4',
        [target, version, after, limit],
      );
      return r.rows.map((raw) => walRow.parse(raw));
    },
  };
}

/** The file's patch rows in `seq` order (only row `seq` when given), each read into `into`. */
async function* patchRows(
  client: pg.ClientBase,
  target: string,
  name: string,
  into: Buffer,
  seq?: number,
): AsyncGenerator<{ seq: number; bytes: Buffer }> {
  const one = seq === undefined ? '' : ` AND seq = ${Math.trunc(seq)}`;
  try {
    for await (const { int, bytes } of copyIntBytes(
      client,
      `SELECT seq, data FROM audience_kit_snapshot_patches WHERE target = ${client.escapeLiteral(target)} AND name = ${client.escapeLiteral(name)}${one} ORDER BY seq`,
      into,
    ))
      yield { seq: int, bytes };
  } catch (error) {
    if (error instanceof CopyFormatError)
      throw corrupt(`a row of the snapshot's file ${name} could not be read: ${error.message}`);
    throw error;
  }
}

/** What a commit writes, through `client` inside its transaction. */
export function commitWriter(client: pg.ClientBase, target: string): CommitWriter {
  return {
    blocks: (name, size, sealedBytes) => readBlocks(client, target, name, size, sealedBytes),
    remove: async (name) => {
      await client.query('DELETE FROM audience_kit_snapshot_files WHERE target = $1 AND name = $2', [target, name]);
    },
    put: async ({ name, size, sha256, blocks }, whole) => {
      if (!whole) {
        await client.query(
          'UPDATE audience_kit_snapshot_files SET size = $3, sha256 = $4, blocks = $5 WHERE target = $1 AND name = $2',
          [target, name, size, sha256, blocks],
        );
        return;
      }
      // Its patch rows cascade.
      await client.query('DELETE FROM audience_kit_snapshot_files WHERE target = $1 AND name = $2', [target, name]);
      await client.query(
        'INSERT INTO audience_kit_snapshot_files (target, name, size, sha256, blocks) VALUES ($1, $2, $3, $4, $5)',
        [target, name, size, sha256, blocks],
      );
    },
    row: async (name, seq, bytes) => {
      await client.query(
        'INSERT INTO audience_kit_snapshot_patches (target, name, seq, data) VALUES ($1, $2, $3, $4)',
        [target, name, seq, bytes],
      );
    },
    storedRow: async (name, seq, into) => {
      let row: Buffer | undefined;
      for await (const { bytes } of patchRows(client, target, name, into, seq)) row = bytes;
      return row;
    },
    replaceRow: async (name, seq, bytes) => {
      await client.query(
        'UPDATE audience_kit_snapshot_patches SET data = $4 WHERE target = $1 AND name = $2 AND seq = $3',
        [target, name, seq, bytes],
      );
    },
  };
}

/**
 * The file's SHA-256 and sealed digests (schema 3) when the row says `size` bytes and they have
 * their lengths; one statement, so the value and the row it is checked against are read together.
 */
async function readBlocks(
  client: pg.ClientBase,
  target: string,
  name: string,
  size: number,
  sealedBytes: number,
): Promise<Buffer | undefined> {
  const into = Buffer.allocUnsafe(sealedBytes);
  let row: Buffer | undefined;
  try {
    for await (const { bytes } of copyIntBytes(
      client,
      `SELECT 0::int4, sha256 || blocks FROM audience_kit_snapshot_files WHERE target = ${client.escapeLiteral(target)} AND name = ${client.escapeLiteral(name)} AND size = ${size} AND length(sha256) = 32 AND length(sha256 || blocks) = ${sealedBytes}`,
      into,
    ))
      row = bytes;
  } catch (error) {
    // Digests choose only what a commit stores: a value that cannot be read is not used.
    if (error instanceof CopyFormatError) return undefined;
    throw error;
  }
  return row;
}
