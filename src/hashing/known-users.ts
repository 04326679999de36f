/**
 * The users a sync already holds, as the hashing workers look them up to leave out the text of
 * users the sync will not send (and as the sync's planner looks them up on the main thread).
 * Defined here, by the layer that uses it: the sync's state produces a table of this shape
 * (`state/key-table.ts`), so state depends on hashing's type and hashing imports nothing of
 * state. Pure and free of I/O, so a worker can import it; the arrays live in SharedArrayBuffers,
 * so the workers read the table the main thread loaded instead of each receiving a copy.
 */

/**
 * Sorted 64-bit fingerprints in 6 bytes per user. The top 16 bits of each fingerprint are
 * implied by a directory of 65,536 buckets (`directory[b]` is the position of the first
 * fingerprint whose top 16 bits are >= b; `directory[65536]` is `count`); the other 48 bits are
 * kept in `mid` (bits 32..47, the high word's low half) and `lo`. At 10M users that is 60 MB,
 * with every bit of the fingerprint compared.
 */
export interface KnownUsers {
  directory: Uint32Array;
  mid: Uint16Array;
  lo: Uint32Array;
  /** Bit i set: entry i was last confirmed before the refresh cut-off. */
  stale: Uint8Array;
  count: number;
}

/**
 * Position of the fingerprint (hi, lo) in the table, or -1: the bucket of the top 16 bits, then
 * a binary search on the other 48 within it (a few comparisons however large the table).
 */
export function findKey(t: KnownUsers, hi: number, lo: number): number {
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
export const isStale = (t: KnownUsers, pos: number): boolean =>
  (((t.stale[pos >>> 3] as number) >>> (pos & 7)) & 1) === 1;

/** The user is in the table and not due for a refresh: a sync (without `full`) does not send it. */
export const isKnownFresh = (t: KnownUsers, hi: number, lo: number): boolean => {
  const pos = findKey(t, hi, lo);
  return pos >= 0 && !isStale(t, pos);
};
