/**
 * What differs between the two kinds of upload target, in one place: a custom audience takes
 * every identifier type, `effective_at` and any later `expires_at`, and answers a batch with one
 * count; a do-not-reach list takes email and phone_number only, `expires_at` under 13 months and
 * no `effective_at`, and answers with one count per operation. The kind's name, its command and
 * its state key come from here too. (The sandbox states its own rules: it does not import this.)
 */
import type { AdsClient } from '../api/index.js';
import { postCustomAudienceUsers, postDoNotReachListUsers } from '../api/endpoints.js';
import type { UserBatchResult } from '../api/schemas.js';
import { TARGET_KIND_RULES, type TargetKind, type TargetKindRules } from '../platform/targets.js';
import { snapshotDir, type SnapshotTarget } from '../state/snapshot.js';
import type { Lease } from '../util/lease.js';

/** An upload target as a caller names it. */
export type UploadTarget = { customAudienceId: string } | { doNotReachListId: string };

/** The platform's kinds and rules (`platform/targets.ts`), re-exported where the upload reads them. */
export { DO_NOT_REACH_TYPES, maxDoNotReachExpiry, type TargetKind } from '../platform/targets.js';

/** One upload target with its kind's rules (types taken, `effective_at`, expiry bound): built by `describeTarget`. */
export interface Target extends TargetKindRules {
  readonly kind: TargetKind;
  readonly id: string;
  /** The target as a caller names it (the library's `target` option). */
  readonly named: UploadTarget;
  readonly isDoNotReach: boolean;
  /** `custom audience` or `do-not-reach list`, for messages. */
  readonly name: string;
  /** `audience` or `list`, for messages. */
  readonly noun: 'audience' | 'list';
  /** The CLI command that lists and manages this kind. */
  readonly command: 'audiences' | 'do-not-reach';
  /**
   * One user batch to the kind's endpoint; the response's shape is checked there (one count, or
   * one per operation). `onAttempt` is called as each HTTP attempt goes out (the client's retries
   * too); under `lease` (a sync's), no attempt is sent once it is lost; `stopSignal` (the run's
   * signal) ends the request's waits and retries, an attempt already sent finishing.
   */
  postUsers(
    client: AdsClient,
    accountId: string,
    body: Buffer,
    how?: {
      onAttempt?: (() => void) | undefined;
      lease?: Lease | undefined;
      stopSignal?: AbortSignal | undefined;
    },
  ): Promise<UserBatchResult | UserBatchResult[]>;
}

const CUSTOM_AUDIENCE = {
  kind: 'custom_audience',
  isDoNotReach: false,
  name: 'custom audience',
  noun: 'audience',
  command: 'audiences',
  ...TARGET_KIND_RULES.custom_audience,
} as const;

const DO_NOT_REACH_LIST = {
  kind: 'do_not_reach_list',
  isDoNotReach: true,
  name: 'do-not-reach list',
  noun: 'list',
  command: 'do-not-reach',
  ...TARGET_KIND_RULES.do_not_reach_list,
} as const;

export function describeTarget(target: UploadTarget): Target {
  if ('doNotReachListId' in target) {
    const id = target.doNotReachListId;
    return {
      ...DO_NOT_REACH_LIST,
      id,
      named: { doNotReachListId: id },
      postUsers: (client, accountId, body, how) =>
        postDoNotReachListUsers(client, { accountId, doNotReachListId: id, body, ...how }),
    };
  }
  const id = target.customAudienceId;
  return {
    ...CUSTOM_AUDIENCE,
    id,
    named: { customAudienceId: id },
    postUsers: (client, accountId, body, how) =>
      postCustomAudienceUsers(client, { accountId, customAudienceId: id, body, ...how }),
  };
}

/** The target as the snapshot and the state stores name it. */
export function snapshotTarget(accountId: string, { kind, id }: Target): SnapshotTarget {
  return { accountId, kind, id };
}

/** Where a target's sync snapshot lives under `stateDir`, and the target as the snapshot names it. */
export function targetSnapshot(
  stateDir: string,
  accountId: string,
  target: Target,
): { dir: string; target: SnapshotTarget } {
  const named = snapshotTarget(accountId, target);
  return { dir: snapshotDir(stateDir, named), target: named };
}
