import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/errors.js';
import {
  checkSyncPlan,
  parseRemovalCap,
  PLAN_ADD,
  PLAN_DUPLICATE,
  PLAN_REFRESH,
  PLAN_UNCHANGED,
  removalLimit,
  SyncPlanner,
} from '../src/upload/sync-plan.js';
import { findKey, isKnownFresh, type KnownUsers } from '../src/hashing/known-users.js';
import { KeyTableBuilder } from '../src/state/key-table.js';
import { describeTarget } from '../src/upload/target.js';

/** A snapshot of the given keys (sorted here), with `stale` naming stale keys by value. */
function snapshotOf(keys: [number, number][], stale: [number, number][] = []): KnownUsers {
  const sorted = [...keys].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const table = new KeyTableBuilder(sorted.length);
  for (const [h, l] of sorted)
    table.push(
      h,
      l,
      stale.some(([sh, sl]) => sh === h && sl === l),
    );
  return table.finish();
}

/** The size check off, for the tests of the other checks. */
const noMinimum = { minAudienceSize: 0, target: describeTarget({ customAudienceId: 'a1' }) };

describe('SyncPlanner', () => {
  it('classifies adds, unchanged, refreshes and duplicates, and counts the removals', () => {
    const planner = new SyncPlanner(
      snapshotOf(
        [
          [1, 1],
          [1, 2],
          [0xffff0000, 5],
          [0x80000000, 0xffffffff],
          [7, 7],
        ],
        [[1, 2]],
      ),
    );
    expect(planner.classify(1, 1)).toBe(PLAN_UNCHANGED);
    expect(planner.classify(1, 2)).toBe(PLAN_REFRESH);
    expect(planner.classify(1, 2)).toBe(PLAN_DUPLICATE);
    expect(planner.classify(0x80000000, 0xffffffff)).toBe(PLAN_UNCHANGED);
    expect(planner.classify(0xffff0000, 6)).toBe(PLAN_ADD);
    expect(planner.classify(0xffff0000, 6)).toBe(PLAN_DUPLICATE);
    expect(planner.classify(2, 1)).toBe(PLAN_ADD);
    expect(planner.counts).toEqual({
      users: 5,
      adds: 2,
      removes: 2,
      refreshes: 1,
      unchanged: 2,
      duplicates: 2,
      snapshotUsers: 5,
    });
    // The removals are the entries never seen: [7,7] (position 2) and [0xffff0000,5] (position 4).
    const unseen = [0, 1, 2, 3, 4].filter((i) => ((planner.seen[0] as number) & (1 << i)) === 0);
    expect(unseen).toEqual([2, 4]);
  });

  it('with full, every user already confirmed is a refresh', () => {
    const planner = new SyncPlanner(snapshotOf([[3, 3]]), { full: true });
    expect(planner.classify(3, 3)).toBe(PLAN_REFRESH);
  });

  it('finds every key of a large random snapshot and none absent from it', () => {
    const keys: [number, number][] = [];
    for (let i = 0; i < 50_000; i++) keys.push([(Math.random() * 2 ** 32) >>> 0, (Math.random() * 2 ** 32) >>> 0]);
    const sorted = [...keys].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const table = snapshotOf(keys);
    sorted.forEach(([h, l], i) => expect(findKey(table, h, l)).toBe(i));
    // Same top 16 bits and one bit of the other 48 off: absent.
    for (const [h, l] of sorted.slice(0, 100)) {
      const flipped = (h ^ 0x8000) >>> 0;
      if (!sorted.some(([h2, l2]) => h2 === flipped && l2 === l)) expect(findKey(table, flipped, l)).toBe(-1);
    }
    expect(findKey(table, 0, 0)).toBe(-1);
    expect(findKey(table, 0xffffffff, 0xffffffff)).toBe(-1);
  });

  it('isKnownFresh (what the hashing workers leave out) is exactly what the planner calls unchanged', () => {
    const table = snapshotOf(
      [
        [1, 1],
        [2, 2],
        [3, 3],
      ],
      [[2, 2]],
    );
    const planner = new SyncPlanner(table);
    for (const [h, l] of [
      [1, 1],
      [2, 2],
      [3, 3],
      [4, 4],
    ] as const)
      expect(isKnownFresh(table, h, l)).toBe(planner.classify(h, l) === PLAN_UNCHANGED);
  });

  it('an empty snapshot makes every user an add', () => {
    const planner = new SyncPlanner(snapshotOf([]));
    expect(planner.classify(5, 5)).toBe(PLAN_ADD);
    expect(planner.counts.removes).toBe(0);
  });
});

describe('removal cap and empty input', () => {
  const counts = { users: 90, adds: 0, removes: 10, refreshes: 0, unchanged: 90, duplicates: 0, snapshotUsers: 100 };

  it('parses users and percentages, 10% by default', () => {
    expect(parseRemovalCap(undefined)).toEqual({ percent: 10 });
    expect(parseRemovalCap('25')).toEqual({ users: 25 });
    expect(parseRemovalCap('2.5%')).toEqual({ percent: 2.5 });
    expect(removalLimit({ percent: 10 }, 1005)).toBe(100);
    for (const bad of ['-1', 'ten', '150%', '5 users']) expect(() => parseRemovalCap(bad)).toThrow(ConfigError);
  });

  it('refuses more removals than the cap, with the counts and the fix', () => {
    expect(() =>
      checkSyncPlan(counts, { maxRemovals: { percent: 10 }, allowEmpty: false, ...noMinimum }),
    ).not.toThrow();
    const refuse = (): void =>
      checkSyncPlan({ ...counts, removes: 11 }, { maxRemovals: { percent: 10 }, allowEmpty: false, ...noMinimum });
    expect(refuse).toThrow(/remove 11 of 100 users .*maxRemovals 10% \(10 users\)/);
    try {
      refuse();
    } catch (error) {
      expect((error as ConfigError).code).toBe('sync_too_many_removals');
      expect((error as ConfigError).fix).toMatch(/maxRemovals 11/);
    }
  });

  it('refuses to leave a custom audience smaller than the minimum, not a do-not-reach list', () => {
    const small = { ...counts, users: 99, unchanged: 99, removes: 1 };
    const cap = { maxRemovals: { percent: 100 }, allowEmpty: false, minAudienceSize: 100 };
    const audience = describeTarget({ customAudienceId: 'a1' });
    expect(() => checkSyncPlan(small, { ...cap, target: audience })).toThrow(
      /would hold 99 users, fewer than the minimum of 100/,
    );
    expect(() => checkSyncPlan(small, { ...cap, target: describeTarget({ doNotReachListId: 'l1' }) })).not.toThrow();
    // An id option present but undefined names no kind (a library caller's spread of optional ids).
    const list = describeTarget({ customAudienceId: undefined, doNotReachListId: 'l1' } as never);
    expect([list.kind, list.id]).toEqual(['do_not_reach_list', 'l1']);
    expect(() => checkSyncPlan({ ...small, users: 100 }, { ...cap, target: audience })).not.toThrow();
  });

  it('refuses an input without a valid user unless allowed', () => {
    const empty = { ...counts, users: 0, unchanged: 0, removes: 100 };
    expect(() => checkSyncPlan(empty, { maxRemovals: { percent: 100 }, allowEmpty: false, ...noMinimum })).toThrow(
      /no valid user/,
    );
    expect(() => checkSyncPlan(empty, { maxRemovals: { percent: 100 }, allowEmpty: true, ...noMinimum })).not.toThrow();
  });
});
