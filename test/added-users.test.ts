import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AddedUsers } from '../src/upload/added-users.js';
import { Spool, type SpooledUser } from '../src/upload/sync-input.js';
import { tempDir } from './helpers/temp.js';

/**
 * The users a sync adds are told from repeats exactly: the first `memoryUsers` in memory, the
 * others in partitions on disk, deduplicated once the input has ended. A repeat sent twice or a
 * user lost would be silent wrongness, so every case compares with a plain Set.
 */
function dir(): string {
  const d = tempDir('ak-added-');
  mkdirSync(d, { recursive: true });
  return d;
}

/** A seeded stream of fingerprints drawn from `distinct` users (so about half the adds repeat one). */
function* fingerprints(n: number, distinct: number, seed: number): Generator<[number, number]> {
  let s = seed;
  const next = (): number => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s;
  };
  for (let i = 0; i < n; i++) {
    const u = next() % distinct;
    // Spread over every partition (the top bits) and never 0/0, like writeUserFingerprint.
    yield [(Math.imul(u + 1, 0x9e3779b1) | 1) >>> 0, Math.imul(u, 0x85ebca6b) >>> 0];
  }
}

/** Feeds `users` to `added` as a planner does; the send indexes kept, and what was refused at once. */
function feed(added: AddedUsers, users: Iterable<[number, number]>) {
  const accepted: { key: string; index: number }[] = [];
  let refusedAtOnce = 0;
  for (const [hi, lo] of users) {
    const index = accepted.length;
    if (added.add(hi, lo, index)) accepted.push({ key: `${hi}:${lo}`, index });
    else refusedAtOnce++;
  }
  const repeats = added.finish();
  const kept = accepted.filter(({ index }) => ((repeats.bySendIndex[index >>> 3] ?? 0) & (1 << (index & 7))) === 0);
  return { accepted, kept, refusedAtOnce, repeats };
}

describe('AddedUsers', () => {
  it('keeps exactly the first of each user, across the memory threshold and blocks written at different times', () => {
    const d = dir();
    const path = join(d, 'spool-t-added');
    const users = [...fingerprints(20_000, 6_000, 7)];
    const { accepted, kept, refusedAtOnce, repeats } = feed(
      new AddedUsers(path, { memoryUsers: 500, blockRecords: 16 }),
      users,
    );
    // The users kept are the distinct ones, each at its first occurrence, in input order.
    const first = new Map<string, number>();
    users.forEach(([hi, lo], i) => {
      if (!first.has(`${hi}:${lo}`)) first.set(`${hi}:${lo}`, i);
    });
    expect(kept.map((k) => k.key)).toEqual([...first.keys()]);
    expect(refusedAtOnce + repeats.count).toBe(users.length - first.size);
    // Repeats of the users held in memory are refused at once; later users' repeats are found on disk.
    expect(refusedAtOnce).toBeGreaterThan(0);
    expect(repeats.count).toBeGreaterThan(0);
    expect(accepted.length - repeats.count).toBe(first.size);
    expect(existsSync(path)).toBe(false);
  });

  it('a user first seen after the threshold and repeated is sent once, at its first place', () => {
    const d = dir();
    const added = new AddedUsers(join(d, 'spool-t-added'), { memoryUsers: 2, blockRecords: 2 });
    expect(added.add(1, 1, 0)).toBe(true);
    expect(added.add(2, 2, 1)).toBe(true);
    // In memory: a repeat is refused at once, even after the threshold.
    expect(added.add(1, 1, 2)).toBe(false);
    // After the threshold: accepted, told apart at the end.
    expect(added.add(3, 3, 2)).toBe(true);
    expect(added.add(4, 4, 3)).toBe(true);
    expect(added.add(3, 3, 4)).toBe(true);
    expect(added.add(0xffffffff, 5, 5)).toBe(true);
    expect(added.add(3, 3, 6)).toBe(true);
    expect(added.add(0xffffffff, 5, 7)).toBe(true);
    const repeats = added.finish();
    expect(repeats.count).toBe(3);
    expect([...Array(8).keys()].filter((i) => ((repeats.bySendIndex[i >>> 3] ?? 0) >> (i & 7)) & 1)).toEqual([4, 6, 7]);
  });

  it('without a file, or below the threshold, stays in memory and writes nothing', () => {
    const d = dir();
    const users = [...fingerprints(3000, 1000, 3)];
    const inMemory = feed(new AddedUsers(), users);
    const below = feed(new AddedUsers(join(d, 'spool-t-added'), { memoryUsers: 5000 }), users);
    for (const r of [inMemory, below]) {
      expect(r.repeats.count).toBe(0);
      expect(r.kept).toHaveLength(new Set(users.map(([h, l]) => `${h}:${l}`)).size);
    }
    expect(readdirSync(d)).toEqual([]);
  });

  it('removes its file when the sync stops before the end of the input; a killed sync’s file is removed by the next', () => {
    const d = dir();
    const path = join(d, 'spool-run1-added');
    const added = new AddedUsers(path, { memoryUsers: 1, blockRecords: 1 });
    for (let i = 0; i < 10; i++) added.add(i + 1, i, i);
    expect(existsSync(path)).toBe(true);
    added.remove();
    added.remove();
    expect(existsSync(path)).toBe(false);
    // A killed sync leaves its spool and the partitions' file: the next sync's start removes them.
    writeFileSync(path, 'x');
    writeFileSync(join(d, 'spool-run1'), 'x');
    writeFileSync(join(d, 'index'), 'kept');
    expect(new Spool(d, 'run2').sidePath('added')).toBe(join(d, 'spool-run2-added'));
    Spool.removeLeftovers(d);
    expect(readdirSync(d)).toEqual(['index']);
  });
});

describe('Spool.skip', () => {
  it('leaves out the repeats by the order they were pushed, in the file and in memory, and counts the rest', async () => {
    const d = dir();
    const spool = new Spool(d, 't', 256);
    for (let i = 0; i < 100; i++) spool.push(i + 1, i, i + 2, JSON.stringify({ email: [`${i}`.repeat(8)] }));
    const skipped = [0, 7, 8, 50, 99];
    const bySendIndex = new Uint8Array(13);
    for (const i of skipped) bySendIndex[i >>> 3] = (bySendIndex[i >>> 3] as number) | (1 << (i & 7));
    spool.skip({ count: skipped.length, bySendIndex });
    const back: SpooledUser[] = [];
    for await (const chunk of spool.chunks()) back.push(...chunk);
    expect(spool.count).toBe(95);
    expect(back.map((u) => u.line - 2)).toEqual([...Array(100).keys()].filter((i) => !skipped.includes(i)));
    expect(back[0]).toEqual({ hi: 2, lo: 1, line: 3, json: JSON.stringify({ email: ['11111111'] }) });
    spool.remove();
  });
});
