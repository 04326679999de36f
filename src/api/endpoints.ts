/**
 * Typed endpoint functions. Parameters go in the query string (as the ads API does); ids are
 * path-encoded; bounds from the reference are checked before anything is sent.
 */
import type { Lease } from '../util/lease.js';
import { ConfigError, HttpError } from '../errors.js';
import { ID_LIST_MAX, LIST_COUNT_MAX, USER_BATCH_LIMITS, type OperationType } from '../platform/batch.js';
import { CUSTOM_AUDIENCE, customAudiencePath, customAudiencesPath } from '../platform/kinds/custom-audience.js';
import { DO_NOT_REACH_LIST, doNotReachListPath, doNotReachListsPath } from '../platform/kinds/do-not-reach-list.js';
import { pathSegment as seg, type RequestSpec } from '../platform/request.js';
import type { AudienceUser } from '../platform/users.js';
import type { AdsClient } from './client.js';
import { checkCount, checkIdList, checkTotalCountCursor, type Page } from './pagination.js';
import {
  accessTokenSchema,
  audiencePermissionSchema,
  requestTokenSchema,
  targetingRecordSchema,
  type AccessTokenResponse,
  type AudiencePermission,
  type PermissionLevel,
  type RequestTokenResponse,
  type TargetingRecord,
} from './schemas.js';
import {
  customAudienceSchema,
  dataEnvelope,
  doNotReachListSchema,
  pageEnvelope,
  type CustomAudience,
  type DoNotReachList,
} from '../platform/responses.js';

export type UserOperation = {
  operation_type: OperationType;
  params: { users: AudienceUser[]; effective_at?: string; expires_at?: string };
};

/** Either operations to serialize, or the exact JSON array the caller already serialized (text or UTF-8 bytes). */
export type UserBatchBody =
  { operations: UserOperation[]; body?: never } | { body: string | Buffer; operations?: never };

function batchBody(input: UserBatchBody): Buffer {
  if (input.operations !== undefined && input.operations.length > USER_BATCH_LIMITS.maxOperations) {
    throw new ConfigError(
      'invalid_parameter',
      `Invalid operations: ${input.operations.length} operations in one request`,
      {
        fix: `Send at most ${USER_BATCH_LIMITS.maxOperations} operations per request`,
      },
    );
  }
  const given = input.body ?? JSON.stringify(input.operations);
  const body = typeof given === 'string' ? Buffer.from(given) : given;
  const bytes = body.length;
  if (bytes > USER_BATCH_LIMITS.maxBodyBytes) {
    throw new ConfigError('invalid_parameter', `Invalid body: ${bytes} bytes`, {
      fix: `Send at most ${USER_BATCH_LIMITS.maxBodyBytes} bytes per request`,
    });
  }
  return body;
}

/**
 * A DELETE is retried after a lost answer (reset, timeout, 500), and the retry can meet the 404
 * that its own first attempt caused. Only in that case `current()` decides: the resource as it
 * is now, returned when it is indeed deleted (the platform answers a DELETE with the object and
 * `deleted: true`, so this is the result the first attempt would have given); otherwise the 404
 * stands. A 404 on the first attempt is never second-guessed.
 */
async function deleteOnce<T extends { deleted?: boolean | undefined }>(
  send: () => Promise<T>,
  current: () => Promise<T | undefined>,
): Promise<T> {
  try {
    return await send();
  } catch (e) {
    if (!(e instanceof HttpError) || e.status !== 404 || e.attempts < 2) throw e;
    const now = await current().catch(() => undefined);
    if (now?.deleted !== true) throw e;
    return now;
  }
}

// ---- requests the platform folder states ------------------------------------------------------

/** How a request is sent: passed to the client as they are (ApiRequest's fields of the same names). */
export interface RequestHow {
  /** Ends the request: its waits, its retries and the attempt on the wire. */
  signal?: AbortSignal | undefined;
  /** Ends the request's waits and retries, not an attempt already sent (ApiRequest.stopSignal). */
  stopSignal?: AbortSignal | undefined;
  onAttempt?: (() => void) | undefined;
  lease?: Lease | undefined;
}

/** A request a target kind states (platform/kinds/), sent through the client; what its schema reads. */
export async function sendRequest<R>(c: AdsClient, spec: RequestSpec<R>, how: RequestHow = {}): Promise<R> {
  const { method, path, query, json, idempotent, schema } = spec;
  const res = await c.request({
    method,
    path,
    schema,
    ...(query === undefined ? {} : { query }),
    ...(json === undefined ? {} : { json }),
    ...(idempotent === undefined ? {} : { idempotent }),
    ...(how.signal === undefined ? {} : { signal: how.signal }),
    ...(how.stopSignal === undefined ? {} : { stopSignal: how.stopSignal }),
    ...(how.onAttempt === undefined ? {} : { onAttempt: how.onAttempt }),
    ...(how.lease === undefined ? {} : { lease: how.lease }),
  });
  return res.body;
}

/** One user batch to a kind's endpoint: the body checked against the limits, then sent (a refusal rejects). */
export async function postUserBatch<R>(
  c: AdsClient,
  post: (body: Buffer) => RequestSpec<R>,
  input: UserBatchBody & RequestHow,
): Promise<R> {
  return sendRequest(c, post(batchBody(input)), input);
}

export function postCustomAudienceUsers(
  c: AdsClient,
  p: { accountId: string; customAudienceId: string } & RequestHow & UserBatchBody,
) {
  return postUserBatch(c, (body) => CUSTOM_AUDIENCE.endpoints.postUsers(p.accountId, p.customAudienceId, body), p);
}

export function postDoNotReachListUsers(
  c: AdsClient,
  p: { accountId: string; doNotReachListId: string } & RequestHow & UserBatchBody,
) {
  return postUserBatch(c, (body) => DO_NOT_REACH_LIST.endpoints.postUsers(p.accountId, p.doNotReachListId, body), p);
}

// ---- custom audiences ---------------------------------------------------------------------

/**
 * The platform's `permission_scope` of the audience listing: `OWNER` (its default: the account's own
 * audiences) or `SHARED` (audiences other accounts granted it), as its API reference spells them
 * (source: docs/design.md).
 */
export const PERMISSION_SCOPES = ['OWNER', 'SHARED'] as const;
export type PermissionScope = (typeof PERMISSION_SCOPES)[number];

export interface ListCustomAudiencesParams {
  accountId: string;
  /** Name prefix, case-insensitive. */
  q?: string;
  count?: number;
  cursor?: string;
  withDeleted?: boolean;
  withTotalCount?: boolean;
  customAudienceIds?: string[];
  /** Without it the platform lists only the account's own audiences (`OWNER`). */
  permissionScope?: PermissionScope;
  /** `field-asc` or `field-desc`, e.g. `created_at-desc`. */
  sortBy?: string;
}

export async function listCustomAudiences(c: AdsClient, p: ListCustomAudiencesParams): Promise<Page<CustomAudience>> {
  checkCount('count', p.count, 1, LIST_COUNT_MAX);
  checkIdList('custom_audience_ids', p.customAudienceIds, ID_LIST_MAX);
  checkTotalCountCursor(p.withTotalCount, p.cursor);
  const res = await c.request({
    method: 'GET',
    path: customAudiencesPath(p.accountId),
    query: {
      q: p.q,
      count: p.count,
      cursor: p.cursor,
      with_deleted: p.withDeleted,
      with_total_count: p.withTotalCount,
      custom_audience_ids: p.customAudienceIds,
      permission_scope: p.permissionScope,
      sort_by: p.sortBy,
    },
    schema: pageEnvelope(customAudienceSchema),
  });
  return toPage(res.body);
}

/** `withDeleted`: a deleted audience is a 404 without it (the platform defaults it to false). */
export async function getCustomAudience(
  c: AdsClient,
  p: { accountId: string; customAudienceId: string; withDeleted?: boolean },
): Promise<CustomAudience> {
  const res = await c.request({
    method: 'GET',
    path: customAudiencePath(p.accountId, p.customAudienceId),
    query: { with_deleted: p.withDeleted },
    schema: dataEnvelope(customAudienceSchema),
  });
  return res.body.data;
}

export async function createCustomAudience(
  c: AdsClient,
  p: { accountId: string; name: string; description?: string },
): Promise<CustomAudience> {
  const res = await c.request({
    method: 'POST',
    path: customAudiencesPath(p.accountId),
    query: { name: p.name, description: p.description },
    schema: dataEnvelope(customAudienceSchema),
    idempotent: false,
  });
  return res.body.data;
}

export async function updateCustomAudience(
  c: AdsClient,
  p: { accountId: string; customAudienceId: string; name?: string; description?: string },
): Promise<CustomAudience> {
  const res = await c.request({
    method: 'PUT',
    path: customAudiencePath(p.accountId, p.customAudienceId),
    query: { name: p.name, description: p.description },
    schema: dataEnvelope(customAudienceSchema),
  });
  return res.body.data;
}

/** A deleted audience stays readable with `with_deleted=true` (`deleted: true`), which settles a retried DELETE's 404. */
export async function deleteCustomAudience(
  c: AdsClient,
  p: { accountId: string; customAudienceId: string },
): Promise<CustomAudience> {
  return deleteOnce(
    async () => {
      const res = await c.request({
        method: 'DELETE',
        path: customAudiencePath(p.accountId, p.customAudienceId),
        schema: dataEnvelope(customAudienceSchema),
      });
      return res.body.data;
    },
    () => getCustomAudience(c, { accountId: p.accountId, customAudienceId: p.customAudienceId, withDeleted: true }),
  );
}

// ---- do-not-reach lists -------------------------------------------------------------------
// The calls platform/kinds/do-not-reach-list.ts describes: no GET of one list, it is found in
// the listing.

export async function listDoNotReachLists(
  c: AdsClient,
  p: { accountId: string; withDeleted?: boolean },
): Promise<Page<DoNotReachList>> {
  const res = await c.request({
    method: 'GET',
    path: doNotReachListsPath(p.accountId),
    query: { with_deleted: p.withDeleted },
    schema: pageEnvelope(doNotReachListSchema),
  });
  return toPage(res.body);
}

/** The list with this id, found through the listing (there is no GET of one list); undefined if absent. */
export async function findDoNotReachList(
  c: AdsClient,
  p: { accountId: string; doNotReachListId: string; withDeleted?: boolean },
): Promise<DoNotReachList | undefined> {
  const page = await listDoNotReachLists(c, {
    accountId: p.accountId,
    ...(p.withDeleted === undefined ? {} : { withDeleted: p.withDeleted }),
  });
  return page.data.find((l) => l.id === p.doNotReachListId);
}

/** At most one list per account: a second create is refused by the platform. */
export async function createDoNotReachList(
  c: AdsClient,
  p: { accountId: string; description?: string },
): Promise<DoNotReachList> {
  const res = await c.request({
    method: 'POST',
    path: doNotReachListsPath(p.accountId),
    query: { description: p.description },
    schema: dataEnvelope(doNotReachListSchema),
    idempotent: false,
  });
  return res.body.data;
}

/** A deleted list stays in the listing with `with_deleted=true`, which settles a retried DELETE's 404. */
export async function deleteDoNotReachList(
  c: AdsClient,
  p: { accountId: string; doNotReachListId: string },
): Promise<DoNotReachList> {
  return deleteOnce(
    async () => {
      const res = await c.request({
        method: 'DELETE',
        path: doNotReachListPath(p.accountId, p.doNotReachListId),
        schema: dataEnvelope(doNotReachListSchema),
      });
      return res.body.data;
    },
    () => findDoNotReachList(c, { ...p, withDeleted: true }),
  );
}

// ---- audience permissions (custom: v12, tailored: v5) --------------------------------------

export type AudienceKind = 'custom' | 'tailored';

function permissionsPath(kind: AudienceKind, accountId: string, audienceId: string): string {
  const account = seg(accountId, 'account id');
  const audience = seg(audienceId, 'audience id');
  return kind === 'custom'
    ? `/12/accounts/${account}/custom_audiences/${audience}/permissions`
    : `/5/accounts/${account}/tailored_audiences/${audience}/permissions`;
}

export interface ListAudiencePermissionsParams {
  kind: AudienceKind;
  accountId: string;
  audienceId: string;
  count?: number;
  cursor?: string;
  grantedAccountIds?: string[];
  permissionIds?: string[];
  withTotalCount?: boolean;
  sortBy?: string;
}

export async function listAudiencePermissions(
  c: AdsClient,
  p: ListAudiencePermissionsParams,
): Promise<Page<AudiencePermission>> {
  const idsParam = p.kind === 'custom' ? 'custom_audience_permission_ids' : 'tailored_audience_permission_ids';
  checkCount('count', p.count, 1, LIST_COUNT_MAX);
  checkIdList('granted_account_ids', p.grantedAccountIds, ID_LIST_MAX);
  checkIdList(idsParam, p.permissionIds, ID_LIST_MAX);
  checkTotalCountCursor(p.withTotalCount, p.cursor);
  const res = await c.request({
    method: 'GET',
    path: permissionsPath(p.kind, p.accountId, p.audienceId),
    query: {
      count: p.count,
      cursor: p.cursor,
      granted_account_ids: p.grantedAccountIds,
      [idsParam]: p.permissionIds,
      sort_by: p.sortBy,
      with_total_count: p.withTotalCount,
    },
    schema: pageEnvelope(audiencePermissionSchema),
  });
  return toPage(res.body);
}

export async function grantAudiencePermission(
  c: AdsClient,
  p: {
    kind: AudienceKind;
    accountId: string;
    audienceId: string;
    grantedAccountId: string;
    permissionLevel: PermissionLevel;
  },
): Promise<AudiencePermission> {
  const res = await c.request({
    method: 'POST',
    path: permissionsPath(p.kind, p.accountId, p.audienceId),
    query: { granted_account_id: p.grantedAccountId, permission_level: p.permissionLevel },
    schema: dataEnvelope(audiencePermissionSchema),
    idempotent: false,
  });
  return res.body.data;
}

/**
 * What a retried revoke can say when its lost first attempt already revoked the permission: revoked
 * permissions cannot be read back, so the grantee and the level are unknown then.
 */
export type RevokedPermission = Pick<AudiencePermission, 'id' | 'custom_audience_id' | 'tailored_audience_id'> & {
  deleted: true;
  granted_account_id?: undefined;
  permission_level?: undefined;
};

/**
 * Only the DELETE is sent, as the platform's SDKs do. If a retried DELETE meets the 404 of its own
 * lost first attempt, the permission is gone either way: the result says so without the fields
 * that only the lost answer carried.
 */
export async function revokeAudiencePermission(
  c: AdsClient,
  p: { kind: AudienceKind; accountId: string; audienceId: string; permissionId: string },
): Promise<AudiencePermission | RevokedPermission> {
  const path = `${permissionsPath(p.kind, p.accountId, p.audienceId)}/${seg(p.permissionId, 'permission id')}`;
  const audienceKey = p.kind === 'custom' ? 'custom_audience_id' : 'tailored_audience_id';
  return deleteOnce<AudiencePermission | RevokedPermission>(
    async () => {
      const res = await c.request({ method: 'DELETE', path, schema: dataEnvelope(audiencePermissionSchema) });
      return res.body.data;
    },
    () => Promise.resolve({ id: p.permissionId, [audienceKey]: p.audienceId, deleted: true }),
  );
}

// ---- targeted campaigns -------------------------------------------------------------------

export async function listTargetedCampaigns(
  c: AdsClient,
  p: { accountId: string; customAudienceId: string; withActive?: boolean; cursor?: string },
): Promise<Page<TargetingRecord>> {
  const res = await c.request({
    method: 'GET',
    path: `${customAudiencePath(p.accountId, p.customAudienceId)}/targeted`,
    query: { with_active: p.withActive, cursor: p.cursor },
    schema: pageEnvelope(targetingRecordSchema),
  });
  return toPage(res.body);
}

// ---- OAuth 1.0a PIN / callback flow (core API base URL) -----------------------------------

/** Step 1: temporary credentials, signed with the consumer key only, `oauth_callback` = 'oob' (PIN) or a URL. */
export async function requestToken(c: AdsClient, p: { callback: string }): Promise<RequestTokenResponse> {
  const res = await c.request({
    method: 'POST',
    base: 'api',
    path: '/oauth/request_token',
    token: null,
    oauthParams: { oauth_callback: p.callback },
    responseType: 'form',
    schema: requestTokenSchema,
    idempotent: false,
  });
  return res.body;
}

/** Step 2: the page where the user approves the app (and, for 'oob', reads the PIN). */
export function authorizeUrl(apiBaseUrl: string, oauthToken: string): string {
  const u = new URL(apiBaseUrl);
  u.pathname = `${u.pathname.replace(/\/$/, '')}/oauth/authorize`;
  u.search = `oauth_token=${encodeURIComponent(oauthToken)}`;
  return u.toString();
}

/** Step 3: exchange the request token and the verifier (PIN) for access credentials. */
export async function accessToken(
  c: AdsClient,
  p: { oauthToken: string; oauthTokenSecret: string; verifier: string },
): Promise<AccessTokenResponse> {
  const res = await c.request({
    method: 'POST',
    base: 'api',
    path: '/oauth/access_token',
    token: { key: p.oauthToken, secret: p.oauthTokenSecret },
    oauthParams: { oauth_verifier: p.verifier },
    responseType: 'form',
    schema: accessTokenSchema,
    idempotent: false,
  });
  return res.body;
}

function toPage<T>(body: {
  data: T[];
  next_cursor?: string | null | undefined;
  total_count?: number | undefined;
  request?: unknown;
}): Page<T> {
  return {
    data: body.data,
    next_cursor: body.next_cursor ?? null,
    ...(body.total_count === undefined ? {} : { total_count: body.total_count }),
    ...(body.request === undefined ? {} : { request: body.request }),
  };
}
