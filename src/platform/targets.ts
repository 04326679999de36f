/**
 * The two kinds of upload target and the platform's rules for each (reference:
 * ads-audiences-api.md): a custom audience takes every identifier type, `effective_at` and any
 * later `expires_at`; a do-not-reach list takes email and phone_number only, no `effective_at`,
 * and an `expires_at` before 13 months ahead. The tool's own rules by kind (consent, the minimum
 * size, names) are here too. `upload/target.ts` builds the client's `Target` from these (with
 * each kind's endpoints); the snapshot, the audit log and the journal name a target by its kind.
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

/**
 * What the platform takes of each kind, and what the tool does differently for it: every rule
 * that tells the kinds apart is one of these properties, so a new kind is one entry here (and its
 * endpoints in upload/target.ts, which the compiler asks for: a table keyed by TargetKind).
 */
export interface TargetKindRules {
  /** The option that names a target of this kind (`{ customAudienceId }`, `{ doNotReachListId }`). */
  readonly idOption: 'customAudienceId' | 'doNotReachListId';
  /** For messages: `custom audience`, `do-not-reach list`; and the short `audience`, `list`. */
  readonly name: string;
  readonly noun: string;
  /** The CLI command that lists and manages this kind. */
  readonly command: string;
  /** The identifier types the kind takes; undefined: all of them. */
  readonly types: readonly IdentifierType[] | undefined;
  readonly takesEffectiveAt: boolean;
  /** The first expiry the platform refuses (undefined: no upper bound). */
  maxExpiry(now: Date): Date | undefined;
  /**
   * Whether a row's consent decides if it is sent: a custom audience holds the people who did not
   * say no; a do-not-reach list is where those who said no belong, so every row goes to it (and it
   * cannot be the audience of the do-not-reach consent policy).
   */
  readonly filtersConsent: boolean;
  /**
   * Whether the minimum audience size applies: so small an audience is not anonymous (the
   * platform does not target it); a list of people not to reach singles nobody out.
   */
  readonly hasMinimumSize: boolean;
}

export const TARGET_KIND_RULES: Readonly<Record<TargetKind, TargetKindRules>> = Object.freeze({
  custom_audience: {
    idOption: 'customAudienceId',
    name: 'custom audience',
    noun: 'audience',
    command: 'audiences',
    types: undefined,
    takesEffectiveAt: true,
    maxExpiry: () => undefined,
    filtersConsent: true,
    hasMinimumSize: true,
  },
  do_not_reach_list: {
    idOption: 'doNotReachListId',
    name: 'do-not-reach list',
    noun: 'list',
    command: 'do-not-reach',
    types: DO_NOT_REACH_TYPES,
    takesEffectiveAt: false,
    maxExpiry: maxDoNotReachExpiry,
    filtersConsent: false,
    hasMinimumSize: false,
  },
});
