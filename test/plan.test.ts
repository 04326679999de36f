import { describe, expect, it } from 'vitest';
import {
  BatchPacker,
  DEFAULT_BATCH_LIMITS,
  FingerprintShard,
  resolveBatchLimits,
  UserDedupe,
  type BatchLimits,
  type PackedBatch,
} from '../src/upload/plan.js';
import type { BatchGroup } from '../src/platform/batch.js';
import { ConfigError } from '../src/errors.js';
import { mulberry32 } from '../src/sandbox/faults.js';

function hex(rand: () => number): string {
  let s = '';
  for (let i = 0; i < 8; i++)
    s += Math.floor(rand() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
  return s;
}

/** A user with 1..k digests of random types, sometimes a partner_user_id with non-ASCII text. */
function randomUserJson(rand: () => number, maxDigests: number): string {
  const user: Record<string, string[]> = {};
  const n = 1 + Math.floor(rand() * maxDigests);
  const types = ['email', 'phone_number', 'handle', 'device_id'];
  for (let i = 0; i < n; i++) {
    const t = types[Math.floor(rand() * types.length)] as string;
    (user[t] ??= []).push(hex(rand));
  }
  if (rand() < 0.2) user.partner_user_id = [`crm-é-${Math.floor(rand() * 1e9)}`];
  return JSON.stringify(user);
}

interface Packed {
  batches: PackedBatch[];
  packer: BatchPacker;
}

function pack(users: { json: string; line: number; group: BatchGroup }[], limits: BatchLimits): Packed {
  const packer = new BatchPacker(limits);
  const batches: PackedBatch[] = [];
  for (const u of users) {
    const b = packer.add(packer.group(u.group), u.json, u.line);
    if (b !== undefined) batches.push(b);
  }
  batches.push(...packer.finish());
  return { batches, packer };
}

type Op = { operation_type: string; params: { users: unknown[]; effective_at?: string; expires_at?: string } };

function checkInvariants(
  users: { json: string; line: number; group: BatchGroup }[],
  limits: BatchLimits,
  { batches, packer }: Packed,
  maxUserBytes: number,
): void {
  const seenUsers: string[] = [];
  const seenLines: number[] = [];
  let totalBytes = 0;
  const groups = new Set(users.map((u) => JSON.stringify(u.group)));
  batches.forEach((b, i) => expect(b.index).toBe(i));
  for (const b of batches) {
    expect(b.body.length).toBe(b.bytes);
    expect(b.bytes).toBeLessThanOrEqual(limits.maxBodyBytes);
    const ops = JSON.parse(b.body.toString('utf8')) as Op[];
    expect(ops.length).toBeLessThanOrEqual(limits.maxOperations);
    expect(ops.map((o) => o.params.users.length)).toEqual(b.operationUsers);
    for (const op of ops) {
      expect(op.params.users.length).toBeGreaterThan(0);
      expect(op.params.users.length).toBeLessThanOrEqual(limits.maxUsersPerOperation);
      expect(op.operation_type).toBe(b.group.operationType);
      expect(op.params.effective_at).toBe(b.group.effectiveAt);
      expect(op.params.expires_at).toBe(b.group.expiresAt);
      for (const u of op.params.users) seenUsers.push(JSON.stringify(u));
    }
    expect(b.lines.length).toBe(b.users);
    seenLines.push(...b.lines);
    if (b.closedBy === 'bytes') {
      // A batch closed by the byte limit lacks at most one user plus one operation's overhead.
      expect(b.bytes).toBeGreaterThan(limits.maxBodyBytes - maxUserBytes - 120);
    }
    totalBytes += b.bytes;
  }
  // Every distinct user exactly once, in input order within its group.
  const expected = new Map<string, { json: string; line: number }>();
  for (const u of users) if (!expected.has(u.json)) expected.set(u.json, u);
  expect(seenUsers.length).toBe(expected.size);
  expect(new Set(seenUsers)).toEqual(new Set(expected.keys()));
  expect(packer.stats.duplicates).toBe(users.length - expected.size);
  expect(new Set(seenLines)).toEqual(new Set([...expected.values()].map((u) => u.line)));
  expect(packer.stats.bytes).toBe(totalBytes);
  // At most one batch per group is closed by the end of input, and every batch closed by the
  // byte limit holds more than (limit - largest user - one operation overhead) bytes.
  expect(batches.filter((b) => b.closedBy === 'end').length).toBeLessThanOrEqual(groups.size);
  const byBytes = batches.filter((b) => b.closedBy === 'bytes');
  const bytesOfFull = byBytes.reduce((n, b) => n + b.bytes, 0);
  expect(byBytes.length).toBeLessThanOrEqual(bytesOfFull / (limits.maxBodyBytes - maxUserBytes - 120));
}

describe('BatchPacker (property-style, seeded)', () => {
  const groupsPool: BatchGroup[] = [
    { operationType: 'Update' },
    { operationType: 'Delete' },
    { operationType: 'Update', effectiveAt: '2030-01-01T00:00:00Z', expiresAt: '2030-06-01T00:00:00Z' },
  ];

  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`keeps every bound with random users (seed ${seed})`, () => {
      const rand = mulberry32(seed);
      const limits: BatchLimits = {
        maxBodyBytes: 2048 + Math.floor(rand() * 60_000),
        maxOperations: 1 + Math.floor(rand() * 40),
        maxUsersPerOperation: 1 + Math.floor(rand() * 300),
      };
      const nGroups = 1 + Math.floor(rand() * groupsPool.length);
      const users: { json: string; line: number; group: BatchGroup }[] = [];
      let maxUserBytes = 0;
      const n = 2000 + Math.floor(rand() * 3000);
      for (let line = 2; line < n; line++) {
        const json =
          users.length > 0 && rand() < 0.1
            ? (users[Math.floor(rand() * users.length)] as { json: string }).json
            : randomUserJson(rand, 6);
        maxUserBytes = Math.max(maxUserBytes, Buffer.byteLength(json));
        users.push({ json, line, group: groupsPool[Math.floor(rand() * nGroups)] as BatchGroup });
      }
      const packed = pack(users, limits);
      checkInvariants(users, limits, packed, maxUserBytes);
    });
  }

  it('fills requests to at least 95% of the byte limit and stays within the request-count bound', () => {
    const rand = mulberry32(42);
    const limits = resolveBatchLimits({ maxBodyBytes: 200_000 });
    const users = Array.from({ length: 20_000 }, (_, i) => ({
      json: randomUserJson(rand, 3),
      line: i + 2,
      group: { operationType: 'Update' } as BatchGroup,
    }));
    const packed = pack(users, limits);
    const full = packed.batches.filter((b) => b.closedBy === 'bytes');
    expect(full.length).toBeGreaterThan(10);
    for (const b of full) expect(b.bytes / limits.maxBodyBytes).toBeGreaterThanOrEqual(0.95);
    expect(packed.batches.length).toBeLessThanOrEqual(1 + packed.packer.stats.bytes / limits.maxBodyBytes);
    checkInvariants(users, limits, packed, 800);
  });

  it('handles users near the request size: each alone, exact fit accepted, one byte over rejected', () => {
    const limits = resolveBatchLimits({ maxBodyBytes: 4096 });
    const group: BatchGroup = { operationType: 'Update' };
    const prefixBytes =
      Buffer.byteLength('[{"operation_type":"Update","params":{"users":[') + Buffer.byteLength(']}}]');
    const room = 4096 - prefixBytes - '{"partner_user_id":[""]}'.length;
    const exact = JSON.stringify({ partner_user_id: ['x'.repeat(room)] });
    const fit = JSON.stringify({ partner_user_id: ['y'.repeat(room)] });
    expect(Buffer.byteLength(exact) + prefixBytes).toBe(4096);
    const tooBig = JSON.stringify({ partner_user_id: ['z'.repeat(room + 1)] });
    const packer = new BatchPacker(limits);
    const h = packer.group(group);
    const out: PackedBatch[] = [];
    for (const [i, json] of [exact, tooBig, fit, '{"email":["ab"]}'].entries()) {
      const b = packer.add(h, json, i + 2);
      if (b) out.push(b);
    }
    out.push(...packer.finish());
    expect(out.map((b) => b.bytes)).toEqual([
      4096,
      4096,
      Buffer.byteLength('[{"operation_type":"Update","params":{"users":[{"email":["ab"]}]}}]'),
    ]);
    expect(packer.stats.oversized).toBe(1);
    expect(packer.stats.oversizedLines).toEqual([3]);
    expect(packer.stats.users).toBe(3);
  });

  it('counts exact UTF-8 bytes for non-ASCII partner_user_id', () => {
    const packer = new BatchPacker(resolveBatchLimits({ maxBodyBytes: 1024 }));
    const h = packer.group({ operationType: 'Delete' });
    for (let i = 0; i < 100; i++) packer.add(h, JSON.stringify({ partner_user_id: [`ü😀-${i}`] }), i + 1);
    const all = packer.finish();
    expect(all.length).toBe(1);
  });

  it('is deterministic: the same input gives byte-identical batches', () => {
    const mk = (): Packed => {
      const rand = mulberry32(9);
      const users = Array.from({ length: 3000 }, (_, i) => ({
        json: randomUserJson(rand, 4),
        line: i + 2,
        group: { operationType: 'Update' } as BatchGroup,
      }));
      return pack(users, resolveBatchLimits({ maxBodyBytes: 50_000 }));
    };
    const a = mk().batches.map((b) => b.body);
    const b = mk().batches.map((x) => x.body);
    expect(a).toEqual(b);
  });
});

describe('resolveBatchLimits', () => {
  it('defaults to the platform limits', () => {
    expect(resolveBatchLimits()).toEqual(DEFAULT_BATCH_LIMITS);
    expect(DEFAULT_BATCH_LIMITS.maxBodyBytes).toBe(5_000_000);
    expect(DEFAULT_BATCH_LIMITS.maxOperations).toBe(2500);
  });

  it('refuses values above the platform maxima, naming the option', () => {
    expect(() => resolveBatchLimits({ maxBodyBytes: 5_000_001 })).toThrow(ConfigError);
    expect(() => resolveBatchLimits({ maxBodyBytes: 5_000_001 })).toThrow(/limits\.maxBodyBytes/);
    expect(() => resolveBatchLimits({ maxOperations: 2501 })).toThrow(/limits\.maxOperations.*2500/);
    expect(() => resolveBatchLimits({ maxUsersPerOperation: 0 })).toThrow(/limits\.maxUsersPerOperation/);
    expect(() => resolveBatchLimits({ maxOperations: 1.5 })).toThrow(ConfigError);
  });
});

describe('UserDedupe', () => {
  it('tells new users from repeats across table growth', () => {
    const d = new UserDedupe();
    let added = 0;
    let repeats = 0;
    for (let i = 0; i < 200_000; i++) if (d.add(`{"email":["${i}"]}`)) added++;
    for (let i = 0; i < 200_000; i += 997) if (!d.add(`{"email":["${i}"]}`)) repeats++;
    expect(added).toBe(200_000);
    expect(repeats).toBe(Math.ceil(200_000 / 997));
    expect(d.size).toBe(200_000);
  });

  it('keeps its users when reserved for more, and takes more users than reserved', () => {
    const d = new UserDedupe();
    for (let i = 0; i < 20_000; i++) d.add(`{"email":["${i}"]}`);
    d.reserve(100_000);
    let added = 0;
    for (let i = 0; i < 300_000; i++) if (d.add(`{"email":["${i}"]}`)) added++;
    expect(added).toBe(280_000);
    expect(d.size).toBe(300_000);
  });
});

describe('FingerprintShard', () => {
  // Fingerprints that differ in one byte only, each byte in turn, and low words of 0 (a slot's
  // low word 0 is also what an empty slot holds: its high bytes tell the two apart).
  const near = (hi: number, lo: number): [number, number][] => [
    [hi, lo],
    ...[0, 8, 16].map((shift): [number, number] => [hi ^ (1 << shift), lo]),
    ...[0, 8, 16, 24].map((shift): [number, number] => [hi, (lo ^ (1 << shift)) | 0]),
  ];

  it('of UserDedupe keeps 7 bytes a slot and still tells every kept byte apart, low word 0 included', () => {
    const d = new UserDedupe();
    for (const top of [0x00, 0x7f, 0xff]) {
      for (const [hi, lo] of [...near((top << 24) | 0x123456, 0x789abcde), ...near((top << 24) | 0x030000, 0)]) {
        expect(d.has(hi, lo)).toBe(false);
        expect(d.addFingerprint(hi, lo)).toBe(true);
        expect(d.addFingerprint(hi, lo)).toBe(false);
        expect(d.has(hi, lo)).toBe(true);
      }
    }
  });

  it('of an AddedUsers partition keeps all 8 bytes: the top byte tells fingerprints apart there', () => {
    const shard = new FingerprintShard();
    for (const top of [0x00, 0x01, 0x02, 0x80]) {
      expect(shard.add((top << 24) | 0xabcdef, 0x12345678)).toBe(true);
      expect(shard.add((top << 24) | 0xabcdef, 0)).toBe(true);
    }
    for (const top of [0x00, 0x01, 0x02, 0x80]) expect(shard.add((top << 24) | 0xabcdef, 0x12345678)).toBe(false);
  });

  it('keeps every fingerprint through growth and clear, against a Set', () => {
    const rand = mulberry32(34);
    for (const shard of [new FingerprintShard(), new FingerprintShard(0, 3)]) {
      const seen = new Set<string>();
      const expected: boolean[] = [];
      const got: boolean[] = [];
      for (let i = 0; i < 50_000; i++) {
        // Small ranges, so that repeats come often.
        const hi = i % 5 === 0 ? 0 : Math.floor(rand() * 0x100);
        const lo = i % 7 === 0 ? 0 : (Math.floor(rand() * 0x10000) << 16) | 0;
        const key = `${hi},${lo}`;
        if (hi === 0 && lo === 0) continue;
        expected.push(!seen.has(key));
        got.push(shard.add(hi, lo));
        seen.add(key);
      }
      expect(got).toEqual(expected);
      expect(expected.filter((fresh) => !fresh).length).toBeGreaterThan(1000);
      shard.clear();
      expect(shard.has(1, 1)).toBe(false);
      expect(shard.add(1, 1)).toBe(true);
    }
  });
});

describe('BatchPacker body reuse', () => {
  const limits: BatchLimits = { maxBodyBytes: 4096, maxOperations: 1, maxUsersPerOperation: 10 };
  const user = (i: number): string => `{"email":["${String(i).padStart(64, '0')}"]}`;
  /** Users into `packer` until it closes a batch. */
  function nextBatch(packer: BatchPacker, from: number): PackedBatch {
    const handle = packer.group({ operationType: 'Update' });
    for (let i = from; ; i++) {
      const closed = packer.add(handle, user(i), i);
      if (closed !== undefined) return closed;
    }
  }
  const copy = (b: PackedBatch): string => b.body.toString('utf8');

  it('fills a released body again, and never one that is not given back', () => {
    const packer = new BatchPacker(limits);
    const first = nextBatch(packer, 0);
    const second = nextBatch(packer, 100);
    // Not released: each batch its own memory.
    expect(second.body.buffer).not.toBe(first.body.buffer);
    const secondText = copy(second);
    packer.release(first);
    // The third batch was opened before the release; the fourth opens in first's memory.
    nextBatch(packer, 200);
    const fourth = nextBatch(packer, 300);
    expect(fourth.body.buffer).toBe(first.body.buffer);
    // A batch still held (not released) is never written over.
    expect(copy(second)).toBe(secondText);
  });

  it('reuses a body of any allowed size only as memory of its own: small bodies never overlap another batch', () => {
    // Below 4 KiB, Buffer.allocUnsafe carves buffers out of one shared 8 KiB slab: a body taken
    // back as "its memory" would then span other batches' bytes (or any other pooled buffer).
    const small = new BatchPacker({ maxBodyBytes: 1024, maxOperations: 1, maxUsersPerOperation: 10 });
    const held: PackedBatch[] = [];
    const released: PackedBatch[] = [];
    for (let i = 0; i < 36; i++) {
      const b = nextBatch(small, 100 * i);
      // Every third batch given back as soon as it is closed (confirmed at once), the others held.
      if (i % 3 === 2) {
        small.release(b);
        released.push(b);
      } else held.push(b);
    }
    const texts = held.map(copy);
    const later = Array.from({ length: 12 }, (_, i) => nextBatch(small, 10_000 + 100 * i));
    expect(held.map(copy)).toEqual(texts);
    // A refilled body is exactly a released batch's bytes, no more.
    const reused = later.filter((b) => released.some((r) => r.body.buffer === b.body.buffer));
    expect(reused.length).toBeGreaterThan(0);
    for (const b of reused)
      expect(released.some((r) => r.body.buffer === b.body.buffer && r.body.byteOffset === b.body.byteOffset)).toBe(
        true,
      );
  });

  it('gives a body to one batch at a time: a second release, a stale batch or a foreign body is ignored', () => {
    const packer = new BatchPacker(limits);
    const a = nextBatch(packer, 0);
    packer.release(a);
    packer.release(a);
    packer.release({ index: a.index, body: Buffer.alloc(limits.maxBodyBytes) });
    const bodies = new Set<ArrayBufferLike>();
    const batches = [nextBatch(packer, 100), nextBatch(packer, 200), nextBatch(packer, 300)];
    for (const b of batches) bodies.add(b.body.buffer);
    // The open body took a's memory once; the closed batches each have their own.
    expect(bodies.size).toBe(batches.length);
    const texts = batches.map(copy);
    packer.release(a); // stale: its memory belongs to a later batch now
    nextBatch(packer, 400);
    expect(batches.map(copy)).toEqual(texts);
  });
});
