/**
 * Builds the snapshot's fingerprints into the table the sync's planner and the hashing workers
 * look users up in. The table's shape and its lookup belong to the hashing layer that uses them
 * (`hashing/known-users.ts`); the snapshot only produces it. The arrays are SharedArrayBuffers:
 * the workers read the table the main thread loaded instead of each receiving a copy.
 */
import type { KnownUsers } from '../hashing/known-users.js';

/** The snapshot's name for its fingerprint table. */
export type KeyTable = KnownUsers;

const shared = <T>(kind: new (buffer: SharedArrayBuffer) => T, bytes: number): T =>
  new kind(new SharedArrayBuffer(bytes));

/** Builds a KeyTable from fingerprints pushed in ascending order. */
export class KeyTableBuilder {
  private readonly t: KeyTable;
  private n = 0;
  private nextBucket = 0;

  constructor(count: number) {
    this.t = {
      directory: shared(Uint32Array, 65537 * 4),
      mid: shared(Uint16Array, count * 2),
      lo: shared(Uint32Array, count * 4),
      stale: shared(Uint8Array, Math.ceil(count / 8)),
      count,
    };
  }

  push(hi: number, lo: number, stale: boolean): void {
    const pos = this.n++;
    for (const bucket = hi >>> 16; this.nextBucket <= bucket; this.nextBucket++)
      this.t.directory[this.nextBucket] = pos;
    this.t.mid[pos] = hi & 0xffff;
    this.t.lo[pos] = lo;
    if (stale) this.t.stale[pos >>> 3] = (this.t.stale[pos >>> 3] as number) | (1 << (pos & 7));
  }

  finish(): KeyTable {
    for (; this.nextBucket <= 65536; this.nextBucket++) this.t.directory[this.nextBucket] = this.n;
    return this.t;
  }
}
