/**
 * The two kinds of upload target and the platform's rules for each (reference:
 * ads-audiences-api.md): a custom audience takes every identifier type, `effective_at` and any
 * later `expires_at`; a do-not-reach list takes email and phone_number only, no `effective_at`,
 * and an `expires_at` before 13 months ahead. `upload/target.ts` builds the client's `Target`
 * from these; the snapshot, the audit log and the journal name a target by its kind.
 */
import type { IdentifierType } from './users.js';

export const TARGET_KINDS = ['custom_audience', 'do_not_reach_list'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

/** The identifier types a do-not-reach list takes (custom audiences take all of them). */
export const DO_NOT_REACH_TYPES: readonly IdentifierType[] = ['email', 'phone_number'];

/**
 * 13 calendar months after `now`, the platform's longest do-not-reach membership; an expiry
 * must be before it. A day the target month lacks (Jan 31 -> Feb) is clamped to its last day
 * instead of overflowing into the month after.
 */
export function maxDoNotReachExpiry(now: Date): Date {
  const d = new Date(now.getTime());
  const day = d.getUTCDate();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() + 13);
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
  d.setUTCDate(Math.min(day, lastDay));
  return d;
}

/** What the platform takes of each kind. */
export interface TargetKindRules {
  /** The identifier types the kind takes; undefined: all of them. */
  readonly types: readonly IdentifierType[] | undefined;
  readonly takesEffectiveAt: boolean;
  /** The first expiry the platform refuses (undefined: no upper bound). */
  maxExpiry(now: Date): Date | undefined;
}

export const TARGET_KIND_RULES: Readonly<Record<TargetKind, TargetKindRules>> = Object.freeze({
  custom_audience: { types: undefined, takesEffectiveAt: true, maxExpiry: () => undefined },
  do_not_reach_list: { types: DO_NOT_REACH_TYPES, takesEffectiveAt: false, maxExpiry: maxDoNotReachExpiry },
});
