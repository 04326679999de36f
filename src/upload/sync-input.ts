/**
 * The users a sync sends, between planning and sending. Planning reads the whole input before
 * anything is sent (the removals, and so the safety checks, are known only at its end), so the
 * users to send (adds and refreshes) wait in a spool: as bytes, not objects, in memory up to
 * 1 MiB, then in a file in the target's snapshot directory (mode 0600; hashed values only, like
 * the snapshot), so a sync's memory does not grow with its users. The users of batches in flight
 * are kept by sequence number until their batch is confirmed, when they go to the snapshot.
 */
import { closeSync, openSync, readdirSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { PackedUsers } from '../hashing/chunk.js';
import type { AddedRepeats } from './added-users.js';
import { writeUserFingerprint } from '../identifiers/serialize.js';
import type { Snapshot, SnapshotUser } from '../state/snapshot.js';
import { OVERSIZED_LINES_KEPT, type GroupHandle, type PackedBatch } from './plan.js';
import { PLAN_ADD, PLAN_REFRESH, type SyncPlanner } from './sync-plan.js';
import type { UploadPackedChunk } from './types.js';

/** A user waiting to be sent: its fingerprint, canonical JSON and input line. */
export interface SpooledUser extends SnapshotUser {
  line: number;
}

/** What a spool keeps in memory before it goes to its file (the size of its writes and reads). */
export const SPOOL_MEMORY_BYTES = 1 << 20;
const CHUNK_USERS = 4096;
/** Characters of text per packed chunk handed to the sender (below V8's large-object size). */
const PIECE_CHARS = 48 * 1024;
/** A record's head: input line, fingerprint (two words), byte length of the JSON text. */
const HEAD = 16;

/**
 * Users to send, in the order pushed, as records (head + UTF-8 JSON) in blocks of bytes: the
 * block being filled is in memory, every full one is written to `<dir>/spool-<id>`.
 */
export class Spool {
  private block: Buffer;
  private used = 0;
  private fd = -1;
  private readonly path: string;
  /** Bit i set: the i-th user pushed is left out (a repeat found once the input had ended). */
  private repeats: Uint8Array = new Uint8Array(0);
  /** Users to send: pushed, less the repeats. */
  count = 0;

  constructor(
    dir: string,
    id: string,
    private readonly blockBytes = SPOOL_MEMORY_BYTES,
  ) {
    this.path = join(dir, `spool-${id}`);
    this.block = Buffer.allocUnsafe(blockBytes);
  }

  /** A file of this sync's beside the spool (`spool-<id>-<name>`): removeLeftovers removes it too. */
  sidePath(name: string): string {
    return `${this.path}-${name}`;
  }

  /** The spools of syncs that were killed, and their side files (the caller holds the target's lock: none is in use). */
  static removeLeftovers(dir: string): void {
    for (const f of readdirSync(dir)) if (f.startsWith('spool-')) rmSync(join(dir, f), { force: true });
  }

  /** The user whose JSON is `text.slice(start, end)` (the whole text by default). */
  push(hi: number, lo: number, line: number, text: string, start = 0, end = text.length): void {
    const json = start === 0 && end === text.length ? text : text.slice(start, end);
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (this.used + HEAD + 3 * json.length > this.block.length) this.seal(HEAD + 3 * json.length);
    const b = this.block;
    const at = this.used;
    const bytes = b.write(json, at + HEAD, 'utf8');
    b.writeUInt32LE(line, at);
    b.writeUInt32LE(hi, at + 4);
    b.writeUInt32LE(lo, at + 8);
    b.writeUInt32LE(bytes, at + 12);
    this.used = at + HEAD + bytes;
    this.count++;
  }

  /** Leave out the users that repeat an earlier one (AddedUsers, by the order they were pushed). */
  skip(repeats: AddedRepeats): void {
    this.repeats = repeats.bySendIndex;
    this.count -= repeats.count;
  }

  /** The current block is full: write it, and start one with room for `need` bytes. */
  private seal(need: number): void {
    if (this.fd < 0) this.fd = openSync(this.path, 'w', 0o600);
    const buf = this.block;
    for (let done = 0; done < this.used;) done += writeSync(this.fd, buf, done, this.used - done);
    if (buf.length < Math.max(need, this.blockBytes)) this.block = Buffer.allocUnsafe(Math.max(need, this.blockBytes));
    this.used = 0;
  }

  /** The users in chunks, in the order pushed (the file first, then what is still in memory), repeats left out. */
  async *chunks(): AsyncGenerator<SpooledUser[]> {
    let chunk: SpooledUser[] = [];
    let i = 0;
    for (const bytes of this.blocks()) {
      for (let at = 0; at < bytes.length; i++) {
        const len = bytes.readUInt32LE(at + 12);
        const start = at;
        at += HEAD + len;
        if ((((this.repeats[i >>> 3] ?? 0) >>> (i & 7)) & 1) === 1) continue;
        chunk.push({
          line: bytes.readUInt32LE(start),
          hi: bytes.readUInt32LE(start + 4),
          lo: bytes.readUInt32LE(start + 8),
          json: bytes.toString('utf8', start + HEAD, at),
        });
        if (chunk.length >= CHUNK_USERS) {
          yield chunk;
          chunk = [];
        }
      }
    }
    if (chunk.length > 0) yield chunk;
  }

  /** Runs of whole records: the file's, read a block at a time, then the block in memory. */
  private *blocks(): Generator<Buffer> {
    if (this.fd >= 0) {
      const fd = openSync(this.path, 'r');
      try {
        let buf: Buffer = Buffer.allocUnsafe(SPOOL_MEMORY_BYTES);
        let kept = 0;
        for (let position = 0; ;) {
          const n = readSync(fd, buf, kept, buf.length - kept, position);
          position += n;
          const filled = kept + n;
          const whole = wholeRecords(buf, filled);
          if (whole > 0) yield buf.subarray(0, whole);
          kept = filled - whole;
          if (n === 0) {
            if (kept > 0) throw new Error('internal error: the sync spool ends in a torn record');
            break;
          }
          // The rest (a record cut by the read) moves to the front; a record larger than the buffer grows it.
          if (whole === 0 && kept === buf.length) {
            const grown = Buffer.allocUnsafe(2 * buf.length);
            buf.copy(grown, 0, 0, filled);
            buf = grown;
          } else buf.copy(buf, 0, whole, filled);
        }
      } finally {
        closeSync(fd);
      }
    }
    yield this.block.subarray(0, this.used);
  }

  remove(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
    this.block = Buffer.alloc(0);
    this.used = 0;
    rmSync(this.path, { force: true });
  }
}

/** The length of the whole records at the start of `buf[0, filled)`. */
function wholeRecords(buf: Buffer, filled: number): number {
  let at = 0;
  while (at + HEAD <= filled) {
    const end = at + HEAD + buf.readUInt32LE(at + 12);
    if (end > filled) break;
    at = end;
  }
  return at;
}

/**
 * Stands in for the batch packer while planning: `readInput` hands it every input user (any
 * shape the uploader takes, summary and checks included); it classifies them against the
 * snapshot and spools the ones to send. It never closes a batch.
 */
export class PlanCollector {
  readonly handle: GroupHandle = { group: { operationType: 'Update' } };
  private readonly scratch = new Uint32Array(2);

  constructor(
    private readonly planner: SyncPlanner,
    private readonly spool: Spool,
  ) {}

  add(_handle: GroupHandle, json: string, line: number, fingerprint?: readonly [number, number]): undefined {
    let hi: number;
    let lo: number;
    if (fingerprint === undefined) {
      writeUserFingerprint(json, this.scratch, 0);
      hi = this.scratch[0] as number;
      lo = this.scratch[1] as number;
    } else [hi, lo] = fingerprint;
    const action = this.planner.classify(hi, lo);
    if (action === PLAN_ADD || action === PLAN_REFRESH) this.spool.push(hi, lo, line, json);
    return undefined;
  }

  /**
   * A chunk of the file pipeline: classified by fingerprint (or by the snapshot position the
   * workers found), text cut out only for users to send (the workers left out the others' text).
   */
  addPacked({ jsonLines, lines, fingerprints, positions }: PackedUsers): void {
    for (let start = 0, k = 0; start < jsonLines.length; k++) {
      let end = jsonLines.indexOf('\n', start);
      if (end < 0) end = jsonLines.length;
      const hi = fingerprints[2 * k] as number;
      const lo = fingerprints[2 * k + 1] as number;
      const pos = positions?.[k];
      const action = pos === undefined ? this.planner.classify(hi, lo) : this.planner.classifyAt(pos, hi, lo);
      if (action === PLAN_ADD || action === PLAN_REFRESH) {
        // The workers leave out only users the planner calls unchanged (found, not stale).
        if (end === start) throw new Error('internal error: a user to send arrived without its text');
        this.spool.push(hi, lo, lines[k] ?? 0, jsonLines, start, end);
      }
      start = end + 1;
    }
  }

  finish(): PackedBatch[] {
    return [];
  }
}

/** A user whose batch is in flight: what the snapshot records once it is confirmed (its text is written ahead). */
export type SentUser = Omit<SpooledUser, 'json'>;

/**
 * Users being sent, by sequence number (the `line` the engine hands back in `onConfirmed`):
 * taken out when their batch is confirmed; what remains at the end was not confirmed.
 * `beforeSend` hears of each chunk, and is awaited, before the sender gets it (the snapshot's
 * write-ahead record, durable in the state store). Then a chunk's users become packed text
 * (below V8's large-object size: 4,096 users' text in one string took the heap to 170 MB) and
 * typed arrays in pages of 4,096: no object per user lives while its batch is in flight, so
 * nothing per user is promoted to the old generation.
 */
export class InFlight {
  private readonly pages = new Map<number, SentPage>();
  private next = 1;
  /** Users left out as too large for one request (`tooLarge`): never written ahead, never sent. */
  oversized = 0;
  /** The first input lines of those users (none for a Delete's: they are in no input). */
  readonly oversizedLines: number[] = [];

  /**
   * `tooLarge` (plan.ts's oversizedTest): the users no request can carry are left out before
   * `beforeSend` hears of them, so the snapshot never records them as sent, and counted.
   */
  constructor(
    private readonly beforeSend?: (users: SpooledUser[]) => void | Promise<void>,
    private readonly tooLarge?: (json: string) => boolean,
  ) {}

  /** The users as packed chunks for sendUsers, each registered under its sequence number. */
  async *chunks(source: AsyncIterable<SpooledUser[]> | Iterable<SpooledUser[]>): AsyncGenerator<UploadPackedChunk> {
    const it = Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
    // The users' objects are dropped before the first piece waits for the sender.
    for (let pieces = await this.nextPieces(it); pieces !== undefined; pieces = await this.nextPieces(it))
      for (const packed of pieces) yield { packed };
  }

  /** The next chunk, written ahead (awaited), as packed pieces; undefined at the end. */
  private async nextPieces(
    it: Iterator<SpooledUser[]> | AsyncIterator<SpooledUser[]>,
  ): Promise<PackedUsers[] | undefined> {
    const next = await it.next();
    if (next.done === true) return undefined;
    const users = this.sendable(next.value);
    if (users.length === 0) return [];
    await this.beforeSend?.(users);
    const pieces: PackedUsers[] = [];
    for (let from = 0; from < users.length;) {
      let to = from;
      for (let chars = 0; to < users.length && chars < PIECE_CHARS; to++)
        chars += (users[to] as SpooledUser).json.length + 1;
      pieces.push(this.piece(users, from, to));
      from = to;
    }
    return pieces;
  }

  /** The chunk without the users too large for one request (counted). */
  private sendable(users: SpooledUser[]): SpooledUser[] {
    const test = this.tooLarge;
    if (test === undefined) return users;
    return users.filter((u) => {
      if (!test(u.json)) return true;
      this.oversized++;
      if (u.line > 0 && this.oversizedLines.length < OVERSIZED_LINES_KEPT) this.oversizedLines.push(u.line);
      return false;
    });
  }

  private piece(users: SpooledUser[], from: number, to: number): PackedUsers {
    const lines = new Uint32Array(to - from);
    const fingerprints = new Uint32Array(2 * (to - from));
    const texts: string[] = [];
    for (let i = 0; i < to - from; i++) {
      const u = users[from + i] as SpooledUser;
      const seq = this.next++;
      this.page(seq).set(seq & PAGE_MASK, u);
      lines[i] = seq;
      fingerprints[2 * i] = u.hi;
      fingerprints[2 * i + 1] = u.lo;
      texts.push(u.json);
    }
    // join, not +=: one flat string, not a tree that keeps every user's string alive.
    return { jsonLines: `${texts.join('\n')}\n`, lines, fingerprints };
  }

  private page(seq: number): SentPage {
    let page = this.pages.get(seq >>> PAGE_BITS);
    if (page === undefined) this.pages.set(seq >>> PAGE_BITS, (page = new SentPage()));
    return page;
  }

  /** The users of a confirmed batch, forgotten here. */
  take(seqs: Uint32Array): SentUser[] {
    const out: SentUser[] = [];
    for (const seq of seqs) {
      const page = this.pages.get(seq >>> PAGE_BITS);
      const u = page?.take(seq & PAGE_MASK);
      if (u === undefined) continue;
      out.push(u);
      if (page?.left === 0) this.pages.delete(seq >>> PAGE_BITS);
    }
    return out;
  }

  /** The input line of a user still here (a refused user), or null. */
  lineOf(seq: number): number | null {
    return this.pages.get(seq >>> PAGE_BITS)?.lineOf(seq & PAGE_MASK) ?? null;
  }
}

const PAGE_BITS = 12;
const PAGE_MASK = (1 << PAGE_BITS) - 1;

/** 4,096 sequence numbers' users in flight, as columns (offset -1: a Delete's user, no frame). */
class SentPage {
  private readonly hi = new Uint32Array(1 << PAGE_BITS);
  private readonly lo = new Uint32Array(1 << PAGE_BITS);
  private readonly line = new Uint32Array(1 << PAGE_BITS);
  private readonly len = new Uint32Array(1 << PAGE_BITS);
  private readonly offset = new Float64Array(1 << PAGE_BITS);
  private readonly present = new Uint8Array(1 << PAGE_BITS);
  left = 0;

  set(i: number, u: SpooledUser): void {
    this.hi[i] = u.hi;
    this.lo[i] = u.lo;
    this.line[i] = u.line;
    this.offset[i] = u.offset ?? -1;
    this.len[i] = u.len ?? 0;
    this.present[i] = 1;
    this.left++;
  }

  take(i: number): SentUser | undefined {
    if (this.present[i] !== 1) return undefined;
    this.present[i] = 0;
    this.left--;
    const [hi, lo, line, offset] = [
      this.hi[i] as number,
      this.lo[i] as number,
      this.line[i] as number,
      this.offset[i] as number,
    ];
    return offset < 0 ? { hi, lo, line } : { hi, lo, line, offset, len: this.len[i] as number };
  }

  lineOf(i: number): number | null {
    return this.present[i] === 1 ? (this.line[i] as number) : null;
  }
}

/** The snapshot users whose bit in `keep` is clear, as spool chunks (line 0: they are in no input). */
export function* snapshotUsers(snapshot: Snapshot, keep: Uint8Array): Generator<SpooledUser[]> {
  for (const chunk of snapshot.usersNotIn(keep, CHUNK_USERS)) yield chunk.map((u) => ({ ...u, line: 0 }));
}
