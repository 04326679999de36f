/**
 * The on-disk formats of the sync snapshot (format 2), pinned by the golden files in
 * `test/golden/snapshot-v2/`: the index header, the data file's header and framed user records,
 * and the type codes of a record. A store written in a newer format is refused, never misread.
 *
 * - index header (128 bytes): magic `AKSNAP01`, format, data generation, commit sequence, users,
 *   live data bytes, commit time, membership digest (SHA-256 of the fingerprints in order), the
 *   membership digest of the index this one was derived from, the target's 12-byte hash, CRC-32.
 * - data file: a 32-byte header (magic `AKSNAPDT`, format, generation, target hash), then frames:
 *   body length (u32), CRC-32 of fingerprint + body, the user's 8-byte fingerprint, the body.
 *   A frame whose fingerprint and body are all zero is a scrubbed (removed) user.
 * - body: the user object in a compact binary form: types (by the code of `TYPE_CODES`), each
 *   with its values, a digest in 32 bytes, other values (partner_user_id) as UTF-8.
 */
import { crc32 } from 'node:zlib';
import { StateError } from '../errors.js';
import { writeUserFingerprint } from '../identifiers/serialize.js';
import type { AudienceUser, IdentifierType } from '../platform/users.js';
import type { TargetKind } from '../platform/targets.js';
import { sha256Hex } from '../util/sha256.js';

/** The snapshot cannot be read as it is. */
export class SnapshotError extends StateError {}

export interface SnapshotTarget {
  accountId: string;
  kind: TargetKind;
  id: string;
}

/** The snapshot format this version writes and reads. */
export const SNAPSHOT_FORMAT = 2;
export const INDEX_MAGIC = 'AKSNAP01';
export const DATA_MAGIC = 'AKSNAPDT';
export const INDEX_HEADER_BYTES = 128;
export const DATA_HEADER_BYTES = 32;
export const FRAME_HEAD_BYTES = 16;
export const SNAPSHOT_ENTRY_BYTES = 24;
/** The snapshot's committed files (what a store keeps); `pending` and spools are not. */
export const COMMITTED_FILE = /^(index|data\.\d+|unrecovered\.json)$/;

/**
 * The type code written on disk for each identifier type: an explicit table, so a change to the
 * order of IDENTIFIER_TYPES cannot change what existing records mean.
 */
export const TYPE_CODES: Readonly<Record<IdentifierType, number>> = {
  email: 0,
  phone_number: 1,
  handle: 2,
  device_id: 3,
  service_id: 4,
  partner_user_id: 5,
};
const TYPE_OF_CODE = new Map(Object.entries(TYPE_CODES).map(([t, c]) => [c, t as IdentifierType]));

/** The 12 bytes that name a target in the index and data headers (and, in hex, its directory). */
export function targetHash(target: SnapshotTarget): Buffer {
  return Buffer.from(sha256Hex(`${target.accountId}\0${target.kind}\0${target.id}`).slice(0, 24), 'hex');
}

export const RECOVER_FIX =
  'run the sync again with recover: true: it rebuilds the snapshot from what can be read and sends as the input dictates, removals included';

export function corrupt(what: string): SnapshotError {
  return new SnapshotError('snapshot_corrupt', `the sync snapshot is damaged: ${what}; nothing was sent`, {
    fix: RECOVER_FIX,
  });
}

/** A store written by another format: newer is refused (upgrade), older is recovered. */
export function formatError(what: string, found: number): SnapshotError {
  if (found > SNAPSHOT_FORMAT) {
    return new SnapshotError(
      'snapshot_newer_format',
      `the sync snapshot's ${what} is format ${found}, written by a newer audience-kit; this version reads format ${SNAPSHOT_FORMAT}; nothing was sent`,
      { fix: 'run the sync with the audience-kit version that wrote it (or a newer one)' },
    );
  }
  return new SnapshotError(
    'snapshot_old_format',
    `the sync snapshot's ${what} is format ${found}, written by an older audience-kit; nothing was sent`,
    { fix: RECOVER_FIX },
  );
}

// ---------------------------------------------------------------------------------------------
// Record bodies: canonical JSON <-> compact binary.

const HEX64 = /^[0-9a-f]{64}$/;

/** Upper bound of the frame size of a user whose canonical JSON is `json`. */
export const frameBound = (json: string): number => 2 * json.length + 16 + FRAME_HEAD_BYTES;

/** Write the body of a user given as canonical JSON (serializeUser) at `at`; returns the end. */
function writeBody(json: string, buf: Buffer, at: number): number {
  const user = JSON.parse(json) as AudienceUser;
  const start = at;
  buf[start] = 0;
  let p = at + 1;
  for (const [type, values] of Object.entries(user) as [IdentifierType, string[]][]) {
    if (values.length === 0) continue;
    buf[start] = buf[start] + 1;
    buf[p] = TYPE_CODES[type];
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

/** The canonical JSON (serializeUser's text) of a body written by writeBody. */
export function decodeUserRecord(buf: Buffer): string {
  let out = '{';
  let p = 1;
  for (let n = buf[0] ?? 0; n > 0; n--) {
    if (p + 3 > buf.length) throw corrupt('a user record is truncated');
    const type = TYPE_OF_CODE.get(buf[p] as number);
    const count = buf.readUInt16BE(p + 1);
    p += 3;
    if (type === undefined) throw corrupt('a user record names an unknown identifier type');
    out += `${out.length > 1 ? ',' : ''}"${type}":[`;
    for (let i = 0; i < count; i++) {
      if (i > 0) out += ',';
      const len = buf[p] === 0 ? 32 : buf.readUInt16BE(p + 1);
      const from = buf[p] === 0 ? p + 1 : p + 3;
      if (from + len > buf.length) throw corrupt('a user record is truncated');
      out +=
        buf[p] === 0
          ? `"${buf.toString('hex', from, from + len)}"`
          : JSON.stringify(buf.toString('utf8', from, from + len));
      p = from + len;
    }
    out += ']';
  }
  if (p !== buf.length) throw corrupt('a user record has the wrong length');
  return `${out}}`;
}

/** A user's record body alone (tests, sizes). */
export function encodeUserRecord(json: string): Buffer {
  const buf = Buffer.alloc(2 * json.length + 16);
  return buf.subarray(0, writeBody(json, buf, 0));
}

// ---------------------------------------------------------------------------------------------
// Frames.

/** Write a user's frame at `at` (fingerprint hi/lo and canonical JSON); returns the end. */
export function writeFrame(u: { hi: number; lo: number; json: string }, buf: Buffer, at: number): number {
  const end = writeBody(u.json, buf, at + FRAME_HEAD_BYTES);
  buf.writeUInt32BE(end - at - FRAME_HEAD_BYTES, at);
  buf.writeUInt32BE(u.hi, at + 8);
  buf.writeUInt32BE(u.lo, at + 12);
  buf.writeUInt32BE(crc32(buf.subarray(at + 8, end)), at + 4);
  return end;
}

/** The fingerprint of a canonical JSON text, as two unsigned words. */
export function fingerprintOf(json: string): [number, number] {
  const fp = new Uint32Array(2);
  writeUserFingerprint(json, fp, 0);
  return [fp[0] as number, fp[1] as number];
}

/**
 * The canonical JSON of a whole frame, checked: its length, CRC, the fingerprint it carries
 * (`expect`, when given, is the one the index names) and the fingerprint of the decoded user.
 * Undefined for a scrubbed frame.
 */
export function readFrame(frame: Buffer, expect?: { hi: number; lo: number }): string | undefined {
  if (frame.length < FRAME_HEAD_BYTES || frame.readUInt32BE(0) !== frame.length - FRAME_HEAD_BYTES)
    throw corrupt('a user record has the wrong length');
  const hi = frame.readUInt32BE(8);
  const lo = frame.readUInt32BE(12);
  if (hi === 0 && lo === 0 && frame.subarray(FRAME_HEAD_BYTES).every((b) => b === 0)) return undefined;
  if (crc32(frame.subarray(8)) !== frame.readUInt32BE(4)) throw corrupt('a user record fails its checksum');
  if (expect !== undefined && (expect.hi !== hi || expect.lo !== lo))
    throw corrupt('the index points at the record of another user');
  const json = decodeUserRecord(frame.subarray(FRAME_HEAD_BYTES));
  const [fh, fl] = fingerprintOf(json);
  if (fh !== hi || fl !== lo) throw corrupt("a user record does not match its user's fingerprint");
  return json;
}

/** A scrubbed frame of `len` bytes: the length kept (so the file can still be walked), the rest zero. */
export function scrubbedFrame(len: number): Buffer {
  const buf = Buffer.alloc(len);
  buf.writeUInt32BE(len - FRAME_HEAD_BYTES, 0);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Headers.

export interface IndexHeader {
  format: number;
  gen: number;
  seq: number;
  count: number;
  liveBytes: number;
  committedAtMs: number;
  /** SHA-256 of the users' 8-byte fingerprints in index order: the membership, times excluded. */
  digest: string;
  /** The digest of the index this one was committed over (the rollback check accepts either). */
  parentDigest: string;
  target: string;
}

export function encodeIndexHeader(h: IndexHeader): Buffer {
  const buf = Buffer.alloc(INDEX_HEADER_BYTES);
  buf.write(INDEX_MAGIC, 0, 'latin1');
  buf.writeUInt32BE(SNAPSHOT_FORMAT, 8);
  buf.writeUInt32BE(h.gen, 12);
  buf.writeDoubleBE(h.seq, 16);
  buf.writeDoubleBE(h.count, 24);
  buf.writeDoubleBE(h.liveBytes, 32);
  buf.writeDoubleBE(h.committedAtMs, 40);
  buf.write(h.digest, 48, 'hex');
  buf.write(h.parentDigest, 80, 'hex');
  buf.write(h.target, 112, 'hex');
  buf.writeUInt32BE(crc32(buf.subarray(0, 124)), 124);
  return buf;
}

/** The header of an index file's first bytes; throws on damage or another format. */
export function decodeIndexHeader(buf: Buffer, n: number): IndexHeader {
  if (n < 12 || buf.toString('latin1', 0, 8) !== INDEX_MAGIC) throw corrupt('the index header is unreadable');
  const format = buf.readUInt32BE(8);
  if (format !== SNAPSHOT_FORMAT) throw formatError('index', format);
  if (n < INDEX_HEADER_BYTES || crc32(buf.subarray(0, 124)) !== buf.readUInt32BE(124))
    throw corrupt('the index header fails its checksum');
  return {
    format,
    gen: buf.readUInt32BE(12),
    seq: buf.readDoubleBE(16),
    count: buf.readDoubleBE(24),
    liveBytes: buf.readDoubleBE(32),
    committedAtMs: buf.readDoubleBE(40),
    digest: buf.toString('hex', 48, 80),
    parentDigest: buf.toString('hex', 80, 112),
    target: buf.toString('hex', 112, 124),
  };
}

export function encodeDataHeader(gen: number, target: string): Buffer {
  const buf = Buffer.alloc(DATA_HEADER_BYTES);
  buf.write(DATA_MAGIC, 0, 'latin1');
  buf.writeUInt32BE(SNAPSHOT_FORMAT, 8);
  buf.writeUInt32BE(gen, 12);
  buf.write(target, 16, 'hex');
  return buf;
}

/** Checks a data file's header: this format, this generation and target. */
export function checkDataHeader(buf: Buffer, n: number, gen: number, target: string): void {
  if (n < 12 || buf.toString('latin1', 0, 8) !== DATA_MAGIC) throw corrupt(`data.${gen} has no readable header`);
  const format = buf.readUInt32BE(8);
  if (format !== SNAPSHOT_FORMAT) throw formatError(`data.${gen}`, format);
  if (n < DATA_HEADER_BYTES || buf.readUInt32BE(12) !== gen) throw corrupt(`data.${gen} has another generation`);
  if (buf.toString('hex', 16, 28) !== target) throw wrongTarget(`data.${gen}`);
}

export function wrongTarget(what: string): SnapshotError {
  return new SnapshotError(
    'snapshot_wrong_target',
    `the sync snapshot's ${what} belongs to another account or audience (copied in?); nothing was sent`,
    {
      fix: "move it away and put back this target's own snapshot directory; if that is lost, run the sync with recover: true (it counts the users it cannot remove)",
    },
  );
}
