/**
 * One upload target: its kind's declaration (platform/kinds/, listed in platform/targets.ts: the
 * rules, the identifier types it takes, `effective_at`, the expiry bound, consent, the minimum
 * size, its names, and its endpoints as request specs) bound to its id, the specs sent here
 * through the client. Nothing else tells the kinds apart. (The sandbox states its own rules: it
 * does not import this.)
 */
import type { AdsClient } from '../api/client.js';
import { postUserBatch, sendRequest, type RequestHow } from '../api/endpoints.js';
import type { UserBatchResult } from '../platform/responses.js';
import type { ReadBack, TargetKindEndpoints, TargetKindRules } from '../platform/kinds/kind.js';
import {
  TARGET_KINDS,
  type TargetKindDeclared,
  type TargetIdOption,
  type TargetKind,
  type UploadTarget,
} from '../platform/targets.js';
import { snapshotDir } from '../state/snapshot.js';
import type { SnapshotTarget } from '../state/snapshot-format.js';

/** How a request of `postUsers` is sent (the run's signals, a sync's lease, the attempt counter). */
export type PostHow = RequestHow;

/** One upload target with its kind's rules: built by `describeTarget`. */
export interface Target extends TargetKindRules {
  readonly kind: TargetKind;
  readonly idOption: TargetIdOption;
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

/** The kind a caller's target names: its id option holding a string, as the options check decides it. */
function kindOf(target: UploadTarget): TargetKindDeclared {
  const t = target as Record<string, unknown>;
  const declared = TARGET_KINDS.find((d) => typeof t[d.idOption] === 'string');
  if (declared === undefined) throw new Error('internal error: an upload target that names no kind');
  return declared;
}

export function describeTarget(target: UploadTarget): Target {
  const declared = kindOf(target);
  const { flag: _flag, endpoints: _endpoints, ...rules } = declared;
  const endpoints: TargetKindEndpoints = declared.endpoints;
  const id = (target as Record<string, string>)[rules.idOption] as string;
  return {
    ...rules,
    id,
    named: { [rules.idOption]: id } as UploadTarget,
    postUsers: (client, accountId, body, how = {}) =>
      postUserBatch(client, (json) => endpoints.postUsers(accountId, id, json), { body, ...how }),
    readBack: async (client, accountId) => sendRequest(client, endpoints.readBack(accountId, id)),
  };
}

/** A new target of `like`'s kind, made through `client` (the CLI's sandbox makes its targets so). */
export async function createTargetLike(
  like: Target,
  client: AdsClient,
  accountId: string,
  name: string,
): Promise<Target> {
  const declared = TARGET_KINDS.find((d) => d.kind === like.kind);
  if (declared === undefined) throw new Error(`internal error: no target kind ${like.kind}`);
  const id = await sendRequest(client, declared.endpoints.create(accountId, name));
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
