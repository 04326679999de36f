/**
 * `unrecovered.json` in a snapshot directory: users a recovery (`sync --recover`) could not read
 * back, who may still be on the platform. Every later sync ends `partial` while it is there; it is
 * removed only by an explicit acknowledgement (`acceptUnrecovered`).
 */
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileNoFollow } from './fs.js';
import { corrupt, SnapshotError } from './snapshot-format.js';
import { fsyncPath } from './snapshot.js';

const MARKER_FORMAT = 1;
const FILE = 'unrecovered.json';

const Marker = z.object({
  format: z.literal(MARKER_FORMAT),
  /** Users not recovered, over every recovery since the last acknowledgement. */
  users: z.number().int().nonnegative(),
  /** False when `users` is a lower bound (0: an unknown number). */
  exact: z.boolean(),
});
export type UnrecoveredUsers = z.infer<typeof Marker>;

export function readUnrecovered(dir: string): UnrecoveredUsers | undefined {
  const path = join(dir, FILE);
  if (!existsSync(path)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw corrupt(`${FILE} is not JSON`);
  }
  const format = (json as { format?: unknown } | null)?.format;
  if (typeof format === 'number' && format > MARKER_FORMAT)
    throw new SnapshotError(
      'snapshot_newer_format',
      `${FILE} is format ${format}, written by a newer audience-kit; nothing was sent`,
      {
        fix: 'run the sync with the audience-kit version that wrote it (or a newer one)',
      },
    );
  const parsed = Marker.safeParse(json);
  if (!parsed.success) throw corrupt(`${FILE} is malformed`);
  return parsed.data;
}

/** Add `lost` users (0 and not exact: an unknown number) to the marker (written, fsynced, renamed into place). */
export function addUnrecovered(dir: string, lost: number, exact: boolean): void {
  if (lost === 0 && exact) return;
  const before = readUnrecovered(dir);
  const marker: UnrecoveredUsers = {
    format: MARKER_FORMAT,
    users: (before?.users ?? 0) + lost,
    exact: exact && (before?.exact ?? true),
  };
  const tmp = join(dir, `${FILE}.tmp`);
  writeFileNoFollow(tmp, Buffer.from(`${JSON.stringify(marker)}\n`));
  fsyncPath(tmp);
  renameSync(tmp, join(dir, FILE));
  fsyncPath(dir);
}

/** The user's acknowledgement: the unrecovered users are no longer reported. */
export function clearUnrecovered(dir: string): void {
  if (!existsSync(join(dir, FILE))) return;
  rmSync(join(dir, FILE), { force: true });
  fsyncPath(dir);
}
