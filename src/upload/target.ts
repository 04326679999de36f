/**
 * One upload target: its kind's rules, stated once in platform/targets.ts (the identifier types
 * it takes, `effective_at`, the expiry bound, consent, the minimum size, its names), and the
 * kind's endpoints, here (the platform folder imports nothing): how a batch is posted (its
 * response's shape is checked there: one count, or one per operation), how a target is read back
 * before anything is sent, and how one is made. Nothing else tells the kinds apart. (The sandbox
 * states its own rules: it does not import this.)
 */
import type { AdsClient } from '../api/client.js';
import {
  createCustomAudience,
  createDoNotReachList,
  findDoNotReachList,
  getCustomAudience,
  postCustomAudienceUsers,
  postDoNotReachListUsers,
} from '../api/endpoints.js';
import type { UserBatchResult } from '../api/schemas.js';
import { TARGET_KIND_RULES, TARGET_KINDS, type TargetKind, type TargetKindRules } from '../platform/targets.js';
import { snapshotDir, type SnapshotTarget } from '../state/snapshot.js';
import type { Lease } from '../util/lease.js';

/** An upload target as a caller names it. */
export type UploadTarget = { customAudienceId: string } | { doNotReachListId: string };

/** The platform's kinds and rules (`platform/targets.ts`), re-exported where the upload reads them. */
export { DO_NOT_REACH_TYPES, maxDoNotReachExpiry, type TargetKind } from '../platform/targets.js';

/** How a request of `postUsers` is sent. */
export interface PostHow {
  /** Called as each HTTP attempt goes out (the client's retries too). */
  onAttempt?: (() => void) | undefined;
  /** A sync's lease: no attempt is sent once it is lost. */
  lease?: Lease | undefined;
  /** The run's signal: ends the request's waits and retries, an attempt already sent finishing. */
  stopSignal?: AbortSignal | undefined;
  /** The run's cancelSignal: ends the request, the attempt on the wire too. */
  signal?: AbortSignal | undefined;
}

/**
 * A target read back: `missing` (absent or deleted), `read_only` (this account may read it but
 * not change it), or `writable`.
 */
export type ReadBack = 'missing' | 'read_only' | 'writable';

/** One upload target with its kind's rules: built by `describeTarget`. */
export interface Target extends TargetKindRules {
  readonly kind: TargetKind;
  readonly id: string;
  /** The target as a caller names it (the library's `target` option). */
  readonly named: UploadTarget;
  /** One user batch to the kind's endpoint; the response's shape is checked there. */
  postUsers(
    client: AdsClient,
    accountId: string,
    body: Buffer,
    how?: PostHow,
  ): Promise<UserBatchResult | UserBatchResult[]>;
  /** The target read back (a 404 is thrown as the client's HttpError). */
  readBack(client: AdsClient, accountId: string): Promise<ReadBack>;
}

/** Each kind's endpoints. */
interface KindEndpoints {
  postUsers(
    client: AdsClient,
    accountId: string,
    id: string,
    body: Buffer,
    how: PostHow | undefined,
  ): Promise<UserBatchResult | UserBatchResult[]>;
  readBack(client: AdsClient, accountId: string, id: string): Promise<ReadBack>;
  /** A new target of the kind (the sandbox's); its id. */
  create(client: AdsClient, accountId: string, name: string): Promise<string>;
}

const ENDPOINTS: Readonly<Record<TargetKind, KindEndpoints>> = {
  custom_audience: {
    postUsers: (client, accountId, customAudienceId, body, how) =>
      postCustomAudienceUsers(client, { accountId, customAudienceId, body, ...how }),
    readBack: async (client, accountId, customAudienceId) => {
      const audience = await getCustomAudience(client, { accountId, customAudienceId });
      if (audience.deleted === true) return 'missing';
      return audience.is_owner === false && audience.permission_level !== 'READ_WRITE' ? 'read_only' : 'writable';
    },
    create: async (client, accountId, name) => (await createCustomAudience(client, { accountId, name })).id,
  },
  do_not_reach_list: {
    postUsers: (client, accountId, doNotReachListId, body, how) =>
      postDoNotReachListUsers(client, { accountId, doNotReachListId, body, ...how }),
    // The platform documents no GET of one list: it is found through the account's listing.
    readBack: async (client, accountId, doNotReachListId) => {
      const list = await findDoNotReachList(client, { accountId, doNotReachListId });
      return list === undefined || list.deleted === true ? 'missing' : 'writable';
    },
    create: async (client, accountId, description) =>
      (await createDoNotReachList(client, { accountId, description })).id,
  },
};

/** The kind a caller's target names: its id option holding a string, as the options check decides it. */
function kindOf(target: UploadTarget): TargetKind {
  const t = target as Record<string, unknown>;
  const kind = TARGET_KINDS.find((k) => typeof t[TARGET_KIND_RULES[k].idOption] === 'string');
  if (kind === undefined) throw new Error('internal error: an upload target that names no kind');
  return kind;
}

export function describeTarget(target: UploadTarget): Target {
  const kind = kindOf(target);
  const rules = TARGET_KIND_RULES[kind];
  const id = (target as Record<string, string>)[rules.idOption] as string;
  const endpoints = ENDPOINTS[kind];
  return {
    ...rules,
    kind,
    id,
    named: { [rules.idOption]: id } as UploadTarget,
    postUsers: (client, accountId, body, how) => endpoints.postUsers(client, accountId, id, body, how),
    readBack: (client, accountId) => endpoints.readBack(client, accountId, id),
  };
}

/** A new target of `like`'s kind, made through `client` (the CLI's sandbox makes its targets so). */
export async function createTargetLike(
  like: Target,
  client: AdsClient,
  accountId: string,
  name: string,
): Promise<Target> {
  const id = await ENDPOINTS[like.kind].create(client, accountId, name);
  return describeTarget({ [like.idOption]: id } as UploadTarget);
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
