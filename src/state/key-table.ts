/**
 * The fingerprints of a sync snapshot as they are looked up: by the sync's planner on the main
 * thread and, to leave out the text of users a sync will not send, by the hashing workers. Pure
 * and free of I/O, so a worker can import it; the arrays live in SharedArrayBuffers, so the
 * workers read the table the main thread loaded instead of each receiving a copy.
 */

/**
 * 6 bytes per user instead of 8. The top 16 bits of each fingerprint are implied by a directory
 * of 65,536 buckets (`directory[b]` is the position of the first fingerprint whose top 16 bits
 * are >= b); the other 48 bits are kept in `mid` (bits 32..47 of the high word's low half) and
 * `lo`. At 10M users that is 60 MB, with every bit of the fingerprint compared.
 */
export interface KeyTable {
  directory: Uint32Array;
  mid: Uint16Array;
  lo: Uint32Array;
  /** Bit i set: entry i was last confirmed before the refresh cut-off. */
  stale: Uint8Array;
  count: number;
}

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

/**
 * Position of the fingerprint (hi, lo) in the table, or -1: the bucket of the top 16 bits, then
 * a binary search on the other 48 within it (a few comparisons however large the table).
 */
export function findKey(t: KeyTable, hi: number, lo: number): number {
  const { directory, mid, lo: low } = t;
  const m16 = hi & 0xffff;
  let a = directory[hi >>> 16] as number;
  let b = (directory[(hi >>> 16) + 1] as number) - 1;
  while (a <= b) {
    const m = (a + b) >>> 1;
    const h = mid[m] as number;
    const l = low[m] as number;
    if (h < m16 || (h === m16 && l < lo)) a = m + 1;
    else if (h > m16 || l > lo) b = m - 1;
    else return m;
  }
  return -1;
}

/** Whether entry `pos` was last confirmed before the refresh cut-off. */
export const isStale = (t: KeyTable, pos: number): boolean =>
  (((t.stale[pos >>> 3] as number) >>> (pos & 7)) & 1) === 1;

/** The user is in the table and not due for a refresh: a sync (without `full`) does not send it. */
export const isKnownFresh = (t: KeyTable, hi: number, lo: number): boolean => {
  const pos = findKey(t, hi, lo);
  return pos >= 0 && !isStale(t, pos);
};
