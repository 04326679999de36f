import { describe, expect, it } from 'vitest';
import {
  BatchPacker,
  DEFAULT_BATCH_LIMITS,
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
