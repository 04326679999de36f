/**
 * Planning a sync (pure: no I/O). Each input user's fingerprint is looked up in the snapshot's
 * sorted fingerprints: not there, it is an add; there and last sent before the refresh cut-off
 * (or with `full`), a refresh; otherwise unchanged. Snapshot users the input never named are the
 * removals. Duplicates (two rows that build the same user object) count once.
 */
import { givenLabel } from '../identifiers/labels.js';
import { z } from 'zod';
import { audienceTooSmall } from './audience-size.js';
import type { Target } from './target.js';
import { ConfigError } from '../errors.js';
import { findKey, isStale, type KnownUsers } from '../hashing/known-users.js';
import { AddedUsers, type AddedRepeats } from './added-users.js';

/** What a sync does with an input user. */
export const PLAN_UNCHANGED = 0;
export const PLAN_ADD = 1;
export const PLAN_REFRESH = 2;
export const PLAN_DUPLICATE = 3;
export type PlanAction = typeof PLAN_UNCHANGED | typeof PLAN_ADD | typeof PLAN_REFRESH | typeof PLAN_DUPLICATE;

export interface SyncPlanCounts {
  /** Distinct input users. */
  users: number;
  adds: number;
  removes: number;
  refreshes: number;
  unchanged: number;
  duplicates: number;
  /** Users in the snapshot before the sync. */
  snapshotUsers: number;
}

export const DEFAULT_REFRESH_AFTER_DAYS = 180;

/**
 * Classifies input users against the snapshot's KnownUsers (findKey: a few comparisons per user
 * however large the snapshot). The users it tells to send (adds and refreshes) are numbered in
 * that order, the spool's: an add found to repeat an earlier one once the input has ended
 * (AddedUsers on disk) is named by that number.
 */
export class SyncPlanner {
  private readonly t: KnownUsers;
  private readonly full: boolean;
  /** Bit i: snapshot entry i is in the input (the others are removals). */
  readonly seen: Uint8Array;
  /** The users added so far, until the input ends (in memory, or beyond a threshold on disk). */
  private readonly newUsers: AddedUsers;
  private readonly c = { adds: 0, refreshes: 0, unchanged: 0, duplicates: 0, seen: 0 };

  /** `added`: where the added users are told from repeats (default: in memory only). */
  constructor(snapshot: KnownUsers, options: { full?: boolean; added?: AddedUsers } = {}) {
    this.t = snapshot;
    this.full = options.full === true;
    this.newUsers = options.added ?? new AddedUsers();
    this.seen = new Uint8Array(Math.ceil(snapshot.count / 8));
  }

  classify(hi: number, lo: number): PlanAction {
    return this.classifyAt(findKey(this.t, hi, lo), hi, lo);
  }

  /** classify, given the user's position in the snapshot (findKey, as the hashing workers report it). */
  classifyAt(pos: number, hi: number, lo: number): PlanAction {
    if (pos < 0) {
      if (!this.newUsers.add(hi, lo, this.c.adds + this.c.refreshes)) {
        this.c.duplicates++;
        return PLAN_DUPLICATE;
      }
      this.c.adds++;
      return PLAN_ADD;
    }
    const byte = pos >>> 3;
    const bit = 1 << (pos & 7);
    if (((this.seen[byte] as number) & bit) !== 0) {
      this.c.duplicates++;
      return PLAN_DUPLICATE;
    }
    this.seen[byte] = (this.seen[byte] as number) | bit;
    this.c.seen++;
    if (this.full || isStale(this.t, pos)) {
      this.c.refreshes++;
      return PLAN_REFRESH;
    }
    this.c.unchanged++;
    return PLAN_UNCHANGED;
  }

  /**
   * The input has ended: the adds found to repeat an earlier one are counted as duplicates, and
   * returned by send index for the spool to skip; the set of added users is let go before the
   * sending starts.
   */
  endInput(): AddedRepeats {
    const repeats = this.newUsers.finish();
    this.c.adds -= repeats.count;
    this.c.duplicates += repeats.count;
    return repeats;
  }

  get counts(): SyncPlanCounts {
    const { adds, refreshes, unchanged, duplicates, seen } = this.c;
    return {
      users: adds + refreshes + unchanged,
      adds,
      removes: this.t.count - seen,
      refreshes,
      unchanged,
      duplicates,
      snapshotUsers: this.t.count,
    };
  }
}

/** `maxRemovals`: a number of users, or a percentage of the snapshot. */
export type RemovalCap = { users: number } | { percent: number };

const capSchema = z.union([
  z.number().int().min(0),
  z
    .string()
    .trim()
    .regex(/^(\d+|\d+(\.\d+)?%)$/),
]);

export function parseRemovalCap(value: string | number | undefined): RemovalCap {
  if (value === undefined) return { percent: 10 };
  const parsed = capSchema.safeParse(value);
  const text = String(value).trim();
  const percent = text.endsWith('%') ? Number(text.slice(0, -1)) : undefined;
  if (!parsed.success || (percent !== undefined && percent > 100)) {
    throw new ConfigError(
      'invalid_option',
      `maxRemovals must be a number of users or a percentage, got ${givenLabel(text)}`,
      {
        fix: 'pass maxRemovals 500 or maxRemovals 5%, or omit it for 10% of the snapshot',
      },
    );
  }
  return percent === undefined ? { users: Number(text) } : { percent };
}

/** The most users a sync may remove from a snapshot of `snapshotUsers`. */
export function removalLimit(cap: RemovalCap, snapshotUsers: number): number {
  return 'users' in cap ? cap.users : Math.floor((cap.percent / 100) * snapshotUsers);
}

/**
 * Refuse a plan before anything is sent: an input without a valid user (it would empty the
 * target) unless `allowEmpty`, and more removals than the cap allows.
 */
export function checkSyncPlan(
  counts: SyncPlanCounts,
  options: { maxRemovals: RemovalCap; allowEmpty: boolean; minAudienceSize: number; target: Target },
): void {
  if (counts.users === 0 && !options.allowEmpty) {
    throw new ConfigError(
      'sync_empty_input',
      `the input holds no valid user: a sync would remove all ${counts.snapshotUsers} users confirmed on the target`,
      {
        fix: 'check the input and its column mapping; to empty the target on purpose, pass allowEmpty: true (and maxRemovals 100%)',
      },
    );
  }
  const { minAudienceSize: min, target } = options;
  // Emptying it (allowEmpty, no user) leaves nobody to single out.
  if (target.hasMinimumSize && counts.users > 0 && counts.users < min)
    throw audienceTooSmall(counts.users, min, `after this sync, ${target.name} ${target.id}`);
  const limit = removalLimit(options.maxRemovals, counts.snapshotUsers);
  if (counts.removes > limit) {
    const share = counts.snapshotUsers === 0 ? 100 : (100 * counts.removes) / counts.snapshotUsers;
    const capText = 'users' in options.maxRemovals ? `${limit}` : `${options.maxRemovals.percent}% (${limit} users)`;
    throw new ConfigError(
      'sync_too_many_removals',
      `the sync would remove ${counts.removes} of ${counts.snapshotUsers} users confirmed on the target (${share.toFixed(1)}%), above maxRemovals ${capText}; nothing was sent`,
      {
        fix: `check that the input is the whole export; if these removals are intended, pass maxRemovals ${counts.removes} (or ${Math.ceil(share)}%)`,
      },
    );
  }
}
