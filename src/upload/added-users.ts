/**
 * The users a sync adds, told from repeats exactly in bounded memory. A first sync of 10M users
 * adds 10M: held in one in-memory set until the input ended, they took about 100 MB and put its
 * peak RSS above 300 MB (docs/performance.md). Here the first `memoryUsers` live in a UserDedupe
 * (about 10 bytes each; a repeat of one of them is known at once). Each later user not in it
 * goes, as its fingerprint and send index, to one of 64 partitions by the fingerprint's top bits:
 * a block in memory per partition, each full block written to a file beside the spool. When the
 * input has ended, each partition is read back alone and deduplicated in a table of its own:
 * its records are in send order, so a user's first record is kept and the later ones are its
 * repeats, which the spool then skips. Memory: the set, the 64 blocks (3 MB) and one partition
 * at the end (10M users: 1.8 MB, and its table 1.4 MB), whatever the number of users.
 */
import { closeSync, openSync, rmSync } from 'node:fs';
import { readInto, writeAt } from '../state/snapshot-index.js';
import { FingerprintShard, UserDedupe } from './plan.js';

const PARTITION_BITS = 6;
/** A record: the fingerprint's two words and the send index. */
const WORDS = 3;

export interface AddedUsersOptions {
  /** Users kept in the in-memory set before the others go to the partitions' file (default 262,144: about 3 MB). */
  memoryUsers?: number;
  /** Records per partition block (default 4,096: 48 KB). */
  blockRecords?: number;
}

/** The users accepted by `add` that repeat an earlier one: bit i set, the i-th user to send is a repeat. */
export interface AddedRepeats {
  count: number;
  bySendIndex: Uint8Array;
}

export class AddedUsers {
  private memory: UserDedupe | undefined = new UserDedupe();
  /** Per partition: the block being filled, the records in it, and the file offsets of its full blocks. */
  private blocks: Uint32Array[] = [];
  private readonly filled = new Uint32Array(1 << PARTITION_BITS);
  private readonly written: number[][] = [];
  private fd = -1;
  private fileBytes = 0;
  private lastIndex = -1;
  private readonly memoryUsers: number;
  private readonly blockRecords: number;
  private readonly blockBytes: number;

  /**
   * `path`: the partitions' file (created when the set is full; none: everything stays in
   * memory). The caller holds the target's lock, and removes what a killed sync left.
   */
  constructor(
    private readonly path?: string,
    o: AddedUsersOptions = {},
  ) {
    this.memoryUsers = o.memoryUsers ?? 1 << 18;
    this.blockRecords = o.blockRecords ?? 4096;
    this.blockBytes = this.blockRecords * WORDS * 4;
  }

  /**
   * False: a repeat of a user added before. True: added as the `sendIndex`-th user to send
   * (increasing from call to call), unless `finish` finds it repeats an earlier one.
   */
  add(hi: number, lo: number, sendIndex: number): boolean {
    const memory = this.memory;
    if (memory === undefined) throw new Error('internal error: a user added after the input ended');
    if (this.path === undefined || memory.size < this.memoryUsers) return memory.addFingerprint(hi, lo);
    if (memory.has(hi, lo)) return false;
    this.spill(hi, lo, sendIndex);
    return true;
  }

  private spill(hi: number, lo: number, sendIndex: number): void {
    if (this.blocks.length === 0) this.open();
    const p = hi >>> (32 - PARTITION_BITS);
    const block = this.blocks[p] as Uint32Array;
    const at = (this.filled[p] as number) * WORDS;
    block[at] = hi;
    block[at + 1] = lo;
    block[at + 2] = sendIndex;
    this.lastIndex = sendIndex;
    if (++(this.filled[p] as number) < this.blockRecords) return;
    (this.written[p] as number[]).push(this.fileBytes);
    writeAt(this.fd, Buffer.from(block.buffer, block.byteOffset, this.blockBytes), this.fileBytes, this.path as string);
    this.fileBytes += this.blockBytes;
    this.filled[p] = 0;
  }

  private open(): void {
    this.fd = openSync(this.path as string, 'w+', 0o600);
    for (let p = 0; p < 1 << PARTITION_BITS; p++) {
      this.blocks.push(new Uint32Array(this.blockRecords * WORDS));
      this.written.push([]);
    }
  }

  /** The input has ended: the repeats among the users written to the file (the file removed, the set let go). */
  finish(): AddedRepeats {
    this.memory = undefined;
    const repeats: AddedRepeats = { count: 0, bySendIndex: new Uint8Array(0) };
    if (this.blocks.length === 0) return repeats;
    repeats.bySendIndex = new Uint8Array((this.lastIndex >>> 3) + 1);
    try {
      // One array and one table, sized for the largest partition, serve them all (not 64 of each for the collector).
      const sizes = this.blocks.map((_, p) => this.recordsIn(p));
      const most = Math.max(...sizes);
      const records = new Uint32Array(most * WORDS);
      const seen = new FingerprintShard(most);
      for (let p = 0; p < sizes.length; p++) {
        seen.clear();
        repeats.count += this.repeatsIn(
          p,
          records.subarray(0, (sizes[p] as number) * WORDS),
          seen,
          repeats.bySendIndex,
        );
      }
    } finally {
      this.remove();
    }
    return repeats;
  }

  private recordsIn(p: number): number {
    return (this.written[p] as number[]).length * this.blockRecords + (this.filled[p] as number);
  }

  /** Partition p's records, read back in the order written into `records`: every one after a user's first is marked. */
  private repeatsIn(p: number, records: Uint32Array, seen: FingerprintShard, bySendIndex: Uint8Array): number {
    const offsets = this.written[p] as number[];
    const bytes = Buffer.from(records.buffer, records.byteOffset, records.byteLength);
    offsets.forEach((offset, k) => {
      const at = k * this.blockBytes;
      readInto(this.fd, bytes.subarray(at, at + this.blockBytes), this.blockBytes, offset);
    });
    const tail = (this.filled[p] as number) * WORDS;
    records.set((this.blocks[p] as Uint32Array).subarray(0, tail), records.length - tail);
    let count = 0;
    for (let at = 0; at < records.length; at += WORDS) {
      if (seen.add(records[at] as number, records[at + 1] as number)) continue;
      const i = records[at + 2] as number;
      bySendIndex[i >>> 3] = (bySendIndex[i >>> 3] as number) | (1 << (i & 7));
      count++;
    }
    return count;
  }

  /** Close and remove the file, whatever happened (idempotent). */
  remove(): void {
    this.blocks = [];
    if (this.fd < 0) return;
    closeSync(this.fd);
    this.fd = -1;
    rmSync(this.path as string, { force: true });
  }
}
