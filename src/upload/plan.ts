/**
 * The batch plan: packing users into request bodies for the audience user-batch endpoints,
 * within the platform's limits (2,500 operations, 5,000,000 bytes per request).
 *
 * Input is each user's canonical JSON (`serializeUser`), so sizes are exact and nothing is
 * serialized twice: a body is written as UTF-8 straight into the buffer that is sent, and its byte length is
 * tracked incrementally. Packing is deterministic: the same users in the same order with the
 * same limits give the same batches (the run journal relies on it to resume).
 */
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { writeUserFingerprint } from '../identifiers/serialize.js';
import { USER_BATCH_LIMITS, type BatchGroup } from '../platform/batch.js';

export interface BatchLimits {
  /** Exact UTF-8 byte length of a request body (the serialized JSON array). */
  maxBodyBytes: number;
  /** Operation objects per request. */
  maxOperations: number;
  /** Users per operation object (the platform documents no limit; smaller operations localize operation_errors). */
  maxUsersPerOperation: number;
}

/**
 * What the platform accepts. `maxUsersPerOperation` has no documented platform limit; the cap
 * here only rejects values that cannot be meant (a 5 MB body never holds a million users).
 */
export const PLATFORM_BATCH_LIMITS: Readonly<BatchLimits> = Object.freeze({
  ...USER_BATCH_LIMITS,
  maxUsersPerOperation: 1_000_000,
});

export const DEFAULT_BATCH_LIMITS: Readonly<BatchLimits> = Object.freeze({
  ...USER_BATCH_LIMITS,
  maxUsersPerOperation: 10_000,
});

const limitsSchema = z.object({
  maxBodyBytes: z.number().int().min(1024).max(PLATFORM_BATCH_LIMITS.maxBodyBytes),
  maxOperations: z.number().int().min(1).max(PLATFORM_BATCH_LIMITS.maxOperations),
  maxUsersPerOperation: z.number().int().min(1).max(PLATFORM_BATCH_LIMITS.maxUsersPerOperation),
});

/** Defaults overridden by `partial`, checked against the platform maxima (ConfigError naming the option). */
export function resolveBatchLimits(partial: Partial<BatchLimits> = {}): BatchLimits {
  const merged = { ...DEFAULT_BATCH_LIMITS };
  for (const [k, v] of Object.entries(partial) as [keyof BatchLimits, number | undefined][]) {
    if (v !== undefined) merged[k] = v;
  }
  const parsed = limitsSchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = (issue?.path[0] ?? 'maxBodyBytes') as keyof BatchLimits;
    const min = key === 'maxBodyBytes' ? 1024 : 1;
    throw new ConfigError(
      'invalid_batch_limit',
      `limits.${key} must be an integer from ${min} to ${PLATFORM_BATCH_LIMITS[key]}, got ${String(merged[key])}`,
      {
        fix: `use a value within the platform's limit of ${PLATFORM_BATCH_LIMITS[key]}, or omit it for the default ${DEFAULT_BATCH_LIMITS[key]}`,
      },
    );
  }
  return parsed.data;
}

/** One request body, ready to send. */
export interface PackedBatch {
  /** 0-based, in the order batches are closed (deterministic for the same input and options). */
  index: number;
  group: BatchGroup;
  /** The JSON array of operation objects as UTF-8, exactly as sent. */
  body: Buffer;
  /** Byte length of `body`. */
  bytes: number;
  /** Users in each operation, in order (the DNR endpoint answers one count pair per operation). */
  operationUsers: number[];
  users: number;
  /** Input line number of each user, in body order (maps operation_errors back to the input). */
  lines: Uint32Array;
  /** Why the batch was closed: the byte limit, the operation limit, or the end of the input. */
  closedBy: 'bytes' | 'operations' | 'end';
}

export interface PackStats {
  /** Users accepted into batches (after deduplication). */
  users: number;
  /** Users identical to one already packed in this run (sent once). */
  duplicates: number;
  /** Users whose own operation would exceed the body limit: never sendable, counted and skipped. */
  oversized: number;
  /** First few input lines of oversized users. */
  oversizedLines: number[];
  /** Batches closed so far. */
  batches: number;
  /** Sum of closed body bytes. */
  bytes: number;
}

/** How many oversized users' input lines a report keeps. */
export const OVERSIZED_LINES_KEPT = 20;

/** Opaque handle for a group, so adding a user costs no key lookup. */
export interface GroupHandle {
  readonly group: BatchGroup;
}

interface OpenGroup extends GroupHandle {
  prefix: string;
  prefixBytes: number;
  /** The open body, allocated at maxBodyBytes when its first user arrives. */
  body: Buffer | undefined;
  bytes: number;
  operationUsers: number[];
  opUsers: number;
  users: number;
  lines: Uint32Array;
}

/** Bodies kept for reuse at most: about the batches in flight at once (the default concurrency, 4). */
const MAX_SPARE_BODIES = 4;

// `{"operation_type":..,"params":{..,"users":[` + users + `]}}`
const SUFFIX = ']}}';
const SUFFIX_BYTES = 3;
const COMMA = 0x2c;

function operationPrefix(g: BatchGroup): string {
  let params = '';
  if (g.effectiveAt !== undefined) params += `"effective_at":${JSON.stringify(g.effectiveAt)},`;
  if (g.expiresAt !== undefined) params += `"expires_at":${JSON.stringify(g.expiresAt)},`;
  return `{"operation_type":${JSON.stringify(g.operationType)},"params":{${params}"users":[`;
}

/** A user whose operation alone (`[` + prefix + user + `]}}]`) is over the body limit. */
function overBody(limits: BatchLimits, prefixBytes: number, userBytes: number): boolean {
  return prefixBytes + userBytes + SUFFIX_BYTES + 2 > limits.maxBodyBytes;
}

/**
 * The test the packer applies to each user of `group`, for callers that must know before they
 * hand users to it (a sync never writes ahead a user that cannot be sent): true when the user's
 * canonical JSON is too large for a request of its own, so no batch can ever carry it.
 */
export function oversizedTest(limits: BatchLimits, group: BatchGroup): (json: string) => boolean {
  const prefixBytes = Buffer.byteLength(operationPrefix(group));
  return (json) => overBody(limits, prefixBytes, Buffer.byteLength(json));
}

/**
 * Streams users into batches. `add` returns a batch when adding the user closed one (at most
 * one per call); `finish` returns the open batches. Every batch respects all three limits;
 * a batch closed by the byte limit is at least `maxBodyBytes - (largest user + one operation
 * overhead)` bytes, i.e. over 99.9% full for hashed users, so the request count stays within
 * (one per group) + total bytes / maxBodyBytes.
 */
export class BatchPacker {
  readonly limits: BatchLimits;
  private readonly groups = new Map<string, OpenGroup>();
  private readonly dedupe: UserDedupe | undefined;
  private nextIndex = 0;
  private readonly s: PackStats = { users: 0, duplicates: 0, oversized: 0, oversizedLines: [], batches: 0, bytes: 0 };
  /** Each body this packer handed out, by its memory, with the index of the batch holding it now. */
  private readonly holders = new WeakMap<ArrayBufferLike, number>();
  /** Bodies given back (`release`), filled again before a new one is allocated. */
  private readonly spares: Buffer[] = [];

  constructor(limits: BatchLimits, options: { dedupe?: boolean } = {}) {
    this.limits = limits;
    this.dedupe = options.dedupe === false ? undefined : new UserDedupe();
  }

  get stats(): Readonly<PackStats> {
    return this.s;
  }

  /** Room in the dedupe for `users` distinct users in all (UserDedupe.reserve); nothing without a dedupe. */
  reserve(users: number): void {
    this.dedupe?.reserve(users);
  }

  group(group: BatchGroup): GroupHandle {
    const key = `${group.operationType}\u0000${group.effectiveAt ?? ''}\u0000${group.expiresAt ?? ''}`;
    let g = this.groups.get(key);
    if (g === undefined) {
      const prefix = operationPrefix(group);
      g = {
        group: { ...group },
        prefix,
        prefixBytes: Buffer.byteLength(prefix),
        body: undefined,
        bytes: 0,
        operationUsers: [],
        opUsers: 0,
        users: 0,
        lines: new Uint32Array(1024),
      };
      this.groups.set(key, g);
    }
    return g;
  }

  /**
   * Add one user (its canonical JSON) from input line `line`. Returns the batch this closed,
   * if any. Duplicates and oversized users are counted and dropped. `fingerprint` (from
   * `writeUserFingerprint`, high and low word) saves computing it here.
   */
  add(
    handle: GroupHandle,
    json: string,
    line: number,
    fingerprint?: readonly [hi: number, lo: number],
  ): PackedBatch | undefined {
    const g = handle as OpenGroup;
    const userBytes = Buffer.byteLength(json);
    const newOpBytes = g.prefixBytes + userBytes + SUFFIX_BYTES;
    if (overBody(this.limits, g.prefixBytes, userBytes)) {
      this.s.oversized++;
      if (this.s.oversizedLines.length < OVERSIZED_LINES_KEPT) this.s.oversizedLines.push(line);
      return undefined;
    }
    if (
      this.dedupe !== undefined &&
      !(fingerprint === undefined ? this.dedupe.add(json) : this.dedupe.addFingerprint(fingerprint[0], fingerprint[1]))
    ) {
      this.s.duplicates++;
      return undefined;
    }
    let closed: PackedBatch | undefined;
    for (;;) {
      const empty = g.operationUsers.length === 0 && g.opUsers === 0;
      const sameOp = g.opUsers > 0 && g.opUsers < this.limits.maxUsersPerOperation;
      if (empty) {
        // allocUnsafeSlow: memory of the body's own at every size (allocUnsafe cuts bodies under
        // 4 KiB out of a slab shared with other buffers), which `release` takes back whole.
        g.body = this.spares.pop() ?? Buffer.allocUnsafeSlow(this.limits.maxBodyBytes);
        g.bytes = g.body.write(`[${g.prefix}`, 0);
        g.bytes += g.body.write(json, g.bytes);
        break;
      }
      // Each check is on the bytes the body would have once closed (`]}}]`) with this user in it.
      if (sameOp) {
        if (g.bytes + 1 + userBytes + SUFFIX_BYTES + 1 <= this.limits.maxBodyBytes) {
          const body = g.body as Buffer;
          body[g.bytes++] = COMMA;
          g.bytes += body.write(json, g.bytes);
          break;
        }
        closed = this.close(g, 'bytes');
        continue;
      }
      // The current operation is full: this user starts a new one.
      if (g.operationUsers.length + 2 > this.limits.maxOperations) {
        closed = this.close(g, 'operations');
        continue;
      }
      if (g.bytes + SUFFIX_BYTES + 1 + newOpBytes + 1 <= this.limits.maxBodyBytes) {
        const body = g.body as Buffer;
        g.bytes += body.write(`${SUFFIX},${g.prefix}`, g.bytes);
        g.bytes += body.write(json, g.bytes);
        g.operationUsers.push(g.opUsers);
        g.opUsers = 0;
        break;
      }
      closed = this.close(g, 'bytes');
    }
    g.opUsers++;
    if (g.users === g.lines.length) {
      const grown = new Uint32Array(g.lines.length * 2);
      grown.set(g.lines);
      g.lines = grown;
    }
    g.lines[g.users++] = line;
    this.s.users++;
    return closed;
  }

  /** Close and return every open batch (end of input). */
  finish(): PackedBatch[] {
    const out: PackedBatch[] = [];
    for (const g of this.groups.values()) {
      if (g.opUsers > 0) out.push(this.close(g, 'end'));
    }
    return out;
  }

  /**
   * Take back the body of batch `index` for a later batch, instead of allocating 5 MB again and
   * leaving this one to the collector. The engine calls it once the batch was confirmed at its
   * first request: the platform counted every user, so it read every byte, and the HTTP client
   * reads none of it any more. Never for a batch that failed, stopped, timed out or took a second
   * attempt (an earlier attempt's socket may in principle still be writing it), nor when a caller
   * was given the batch (`onBatch`: it may keep it). A body that is not this packer's, or that no
   * longer belongs to batch `index` (released already), is left alone, so no two batches share one.
   */
  release(batch: { index: number; body: Buffer }): void {
    const memory = batch.body.buffer;
    if (this.holders.get(memory) !== batch.index || this.spares.length >= MAX_SPARE_BODIES) return;
    this.holders.delete(memory);
    this.spares.push(Buffer.from(memory, 0, this.limits.maxBodyBytes));
  }

  private close(g: OpenGroup, closedBy: PackedBatch['closedBy']): PackedBatch {
    const buffer = g.body as Buffer;
    const bytes = g.bytes + buffer.write(`${SUFFIX}]`, g.bytes);
    const body = buffer.subarray(0, bytes);
    this.holders.set(buffer.buffer, this.nextIndex);
    const batch: PackedBatch = {
      index: this.nextIndex++,
      group: g.group,
      body,
      bytes,
      operationUsers: [...g.operationUsers, g.opUsers],
      users: g.users,
      lines: g.lines.slice(0, g.users),
      closedBy,
    };
    g.body = undefined;
    g.bytes = 0;
    g.operationUsers = [];
    g.opUsers = 0;
    g.users = 0;
    this.s.batches++;
    this.s.bytes += bytes;
    return batch;
  }
}

/**
 * Set of users seen in this run, keyed by a 64-bit fingerprint (the first 8 bytes of the
 * SHA-256 of the user's canonical JSON), against ~70 bytes per entry for a Set of 16-byte
 * strings. 256 shards (by the fingerprint's top 8 bits), each an open-addressing table (linear
 * probing) of 7 bytes a slot, grown by a quarter when MAX_FILL full: 7.5 to 9.4 bytes per
 * distinct user (10M users reserved: about 78 MB), and a shard grows alone, so the set never holds two
 * copies of itself (a single table doubling held 67 + 134 MB at 6M users). Trade-off: two
 * distinct users with the same 64-bit fingerprint would be taken as duplicates and one not
 * sent; for n users that happens with probability about n²/2^65 (3e-6 for 10M users), far
 * below any other risk.
 */
export class UserDedupe {
  // The shard is the fingerprint's top byte: its tables keep the other 7.
  private readonly shards = Array.from({ length: 256 }, () => new FingerprintShard(0, 3));
  private count = 0;
  private readonly scratch = new Uint32Array(2);

  get size(): number {
    return this.count;
  }

  /** Returns false when the user was already added. */
  add(json: string): boolean {
    writeUserFingerprint(json, this.scratch, 0);
    return this.addFingerprint(this.scratch[0] as number, this.scratch[1] as number);
  }

  /** The same for a fingerprint computed beforehand (`writeUserFingerprint`, e.g. in a hashing worker). */
  addFingerprint(hi: number, lo: number): boolean {
    if (!(this.shards[hi >>> 24] as FingerprintShard).add(hi, lo)) return false;
    this.count++;
    return true;
  }

  has(hi: number, lo: number): boolean {
    return (this.shards[hi >>> 24] as FingerprintShard).has(hi, lo);
  }

  /**
   * Size every shard at once for `users` distinct users in all (an estimate of the input's), 1%
   * over a shard's expected share for the spread of fingerprints among shards (10M users: 39,000
   * a shard, give or take 200): the tables are filled to MAX_FILL instead of MAX_FILL / 1.25 to
   * MAX_FILL, and do not leave the garbage of ten growths each to the collector. More users than
   * that are still taken: a shard that gets them grows alone, as before.
   */
  reserve(users: number): void {
    const perShard = Math.ceil((users / this.shards.length) * 1.01);
    for (const shard of this.shards) shard.reserve(perShard);
  }
}

/**
 * One shard of UserDedupe (and the table of a partition of AddedUsers), an open-addressing table
 * of fingerprints. A fingerprint whose kept bytes are all zero marks an empty slot: such a user
 * (one in 2^56 or 2^64) is taken as new each time it comes, so sent again, never dropped.
 */
export class FingerprintShard {
  /**
   * Slot i's low word, as int32 (a Uint32Array hands back words from 2^31 up as heap numbers,
   * which made each probe slower: UserDedupe, 1M adds, about 350 against 450 ms of CPU). A probe
   * reads only these, and the slot's high bytes when its low word matches or is 0 (empty, or a
   * fingerprint whose low word is 0), which an insert writes next.
   */
  private lo: Int32Array;
  /** Slot i's high word, its low `hiBytes` bytes (little-endian) at hiBytes * i. */
  private hi: Uint8Array;
  private n = 0;

  /**
   * Room for `expected` fingerprints before the table first grows. `hiBytes` 3: the high word's
   * top byte is the same for every fingerprint of the table (UserDedupe's shard is chosen by it)
   * and is not kept, 7 bytes a slot instead of 8.
   */
  constructor(
    expected = 0,
    private readonly hiBytes: 3 | 4 = 4,
  ) {
    this.lo = new Int32Array(slotsFor(expected));
    this.hi = new Uint8Array(this.lo.length * hiBytes);
  }

  add(hi: number, lo: number): boolean {
    if (this.n >= this.lo.length * MAX_FILL) this.resize(Math.ceil(this.lo.length * 1.25));
    if (!this.insert(this.kept(hi), lo | 0)) return false;
    this.n++;
    return true;
  }

  /** Empty the table, keeping its size. */
  clear(): void {
    this.lo.fill(0);
    this.hi.fill(0);
    this.n = 0;
  }

  has(hi: number, lo: number): boolean {
    const i = this.slot(this.kept(hi), lo | 0);
    return this.lo[i] !== 0 || readHigh(this.hi, i, this.hiBytes) !== 0;
  }

  /** The bytes of `hi` the table keeps, as an int32. */
  private kept(hi: number): number {
    return this.hiBytes === 3 ? hi & 0xffffff : hi | 0;
  }

  /** `hi` (its kept bytes) and `lo` as int32. */
  private insert(hi: number, lo: number): boolean {
    const i = this.slot(hi, lo);
    if (this.lo[i] !== 0 || readHigh(this.hi, i, this.hiBytes) !== 0) return false;
    this.lo[i] = lo;
    const b = this.hi;
    const at = i * this.hiBytes;
    b[at] = hi;
    b[at + 1] = hi >>> 8;
    b[at + 2] = hi >>> 16;
    if (this.hiBytes === 4) b[at + 3] = hi >>> 24;
    return true;
  }

  /** The index of the slot holding (hi, lo) (kept bytes, int32), or of the empty slot where it would go. */
  private slot(hi: number, lo: number): number {
    const los = this.lo;
    const end = los.length;
    // The fingerprint is uniform: its low word spreads the slots.
    for (let i = (lo & 0x7fffffff) % end; ;) {
      const l = los[i] as number;
      if (l === lo || l === 0) {
        const h = readHigh(this.hi, i, this.hiBytes);
        if ((l === lo && h === hi) || (l === 0 && h === 0)) return i;
      }
      if (++i === end) i = 0;
    }
  }

  /** Room for `expected` fingerprints in all before the table grows (none taken away). */
  reserve(expected: number): void {
    const slots = slotsFor(expected);
    if (slots > this.lo.length) this.resize(slots);
  }

  private resize(slots: number): void {
    const { lo: oldLo, hi: oldHi, hiBytes } = this;
    this.lo = new Int32Array(slots);
    this.hi = new Uint8Array(slots * hiBytes);
    for (let i = 0; i < oldLo.length; i++) {
      const l = oldLo[i] as number;
      const h = readHigh(oldHi, i, hiBytes);
      if (l !== 0 || h !== 0) this.insert(h, l);
    }
  }
}

/** Slot i's kept high bytes (FingerprintShard), as an int32. */
function readHigh(bytes: Uint8Array, i: number, width: 3 | 4): number {
  const at = i * width;
  const low = (bytes[at] as number) | ((bytes[at + 1] as number) << 8) | ((bytes[at + 2] as number) << 16);
  return width === 3 ? low : low | ((bytes[at + 3] as number) << 24);
}

/**
 * How full a FingerprintShard table gets before it grows. Linear probing costs more probes as a
 * table fills, but in a table filled from empty to 93% an insert takes about 7 on average (by
 * the linear-probing formula), each in the cache line of the one before. Measured with 8-byte
 * slots: 10M adds took 2.4-2.7 against 1.9-2.5 CPU-s at 85%, for 9% fewer bytes (docs/performance.md).
 */
const MAX_FILL = 0.93;

/** Slots of a FingerprintShard table holding `expected` fingerprints at MAX_FILL full at most. */
function slotsFor(expected: number): number {
  return Math.max(64, Math.ceil(expected / MAX_FILL) + 1);
}
