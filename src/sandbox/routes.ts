/**
 * The ads endpoints of the wire contract (audiences, permissions, targeted, do-not-reach lists).
 * User batches are checked in users.ts and applied here; transport concerns (auth, body
 * reading, rate limits, faults) live in server.ts.
 */
import { invalid, pageOf, QueryReader, SandboxApiFailure } from './params.js';
import { LIST_COUNT, MAX_LISTED_IDS, PERMISSION_LEVELS } from './platform.js';
import type { AudienceRec, DnrRec, PermissionRec, SandboxStore } from './state.js';
import type { CheckedOperation } from './users.js';

export type RouteName =
  | 'audiences.list'
  | 'audiences.create'
  | 'audiences.get'
  | 'audiences.update'
  | 'audiences.delete'
  | 'audiences.users'
  | 'permissions.list'
  | 'permissions.grant'
  | 'permissions.revoke'
  | 'targeted'
  | 'dnr.list'
  | 'dnr.create'
  | 'dnr.delete'
  | 'dnr.users';

export interface AdsRoute {
  method: string;
  segments: string[];
  name: RouteName;
  /** Rate-limit family (x-rate-limit-* are counted per credentials and family). */
  family: string;
  batch?: 'custom' | 'dnr';
  permissionKind?: 'custom' | 'tailored';
}

const CA = '/12/accounts/:account_id/custom_audiences';
const TA = '/5/accounts/:account_id/tailored_audiences/:tailored_audience_id/permissions';
const DNR = '/12/accounts/:account_id/do_not_reach_lists';

function route(method: string, path: string, name: RouteName, family: string, extra: Partial<AdsRoute> = {}): AdsRoute {
  return { method, segments: path.split('/').slice(1), name, family, ...extra };
}

export const ADS_ROUTES: readonly AdsRoute[] = [
  route('GET', CA, 'audiences.list', 'custom_audiences'),
  route('POST', CA, 'audiences.create', 'custom_audiences'),
  route('GET', `${CA}/:custom_audience_id`, 'audiences.get', 'custom_audiences'),
  route('PUT', `${CA}/:custom_audience_id`, 'audiences.update', 'custom_audiences'),
  route('DELETE', `${CA}/:custom_audience_id`, 'audiences.delete', 'custom_audiences'),
  route('POST', `${CA}/:custom_audience_id/users`, 'audiences.users', 'custom_audience_users', { batch: 'custom' }),
  route('GET', `${CA}/:custom_audience_id/permissions`, 'permissions.list', 'permissions', {
    permissionKind: 'custom',
  }),
  route('POST', `${CA}/:custom_audience_id/permissions`, 'permissions.grant', 'permissions', {
    permissionKind: 'custom',
  }),
  route(
    'DELETE',
    `${CA}/:custom_audience_id/permissions/:custom_audience_permission_id`,
    'permissions.revoke',
    'permissions',
    {
      permissionKind: 'custom',
    },
  ),
  route('GET', TA, 'permissions.list', 'permissions', { permissionKind: 'tailored' }),
  route('POST', TA, 'permissions.grant', 'permissions', { permissionKind: 'tailored' }),
  route('DELETE', `${TA}/:tailored_audience_permission_id`, 'permissions.revoke', 'permissions', {
    permissionKind: 'tailored',
  }),
  route('GET', `${CA}/:custom_audience_id/targeted`, 'targeted', 'targeted'),
  route('GET', DNR, 'dnr.list', 'do_not_reach_lists'),
  route('POST', DNR, 'dnr.create', 'do_not_reach_lists'),
  route('DELETE', `${DNR}/:do_not_reach_list_id`, 'dnr.delete', 'do_not_reach_lists'),
  route(
    'POST',
    '/12/batch/accounts/:account_id/do_not_reach_lists/:do_not_reach_list_id/users',
    'dnr.users',
    'do_not_reach_users',
    {
      batch: 'dnr',
    },
  ),
];

export interface RouteMatch {
  route: AdsRoute;
  params: Record<string, string>;
}

/** Finds the route; `pathKnown` tells a wrong method (405) from an unknown path (404). */
export function matchAdsRoute(method: string, pathname: string): { match?: RouteMatch; pathKnown: boolean } {
  const parts = pathname.split('/').slice(1);
  let pathKnown = false;
  for (const r of ADS_ROUTES) {
    if (r.segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < parts.length && ok; i++) {
      const seg = r.segments[i] ?? '';
      const part = parts[i] ?? '';
      if (seg.startsWith(':')) {
        let value: string;
        try {
          value = decodeURIComponent(part);
        } catch {
          value = '';
        }
        if (value === '') ok = false;
        else params[seg.slice(1)] = value;
      } else if (seg !== part) ok = false;
    }
    if (!ok) continue;
    pathKnown = true;
    if (r.method === method) return { match: { route: r, params }, pathKnown };
  }
  return { pathKnown };
}

export interface AdsRequest {
  match: RouteMatch;
  query: URLSearchParams;
  /** The authenticated user (owner of the credentials). */
  userId: string;
}

export interface AdsReply {
  status: number;
  body: Record<string, unknown>;
}

const NAME_MAX = 255;
const DESCRIPTION_MAX = 1000;
type SortKey<T> = (x: T) => string | number;
const PERMISSION_SORT: Record<string, SortKey<PermissionRec>> = {
  id: (p) => p.id,
  created_at: (p) => p.createdAt,
  updated_at: (p) => p.updatedAt,
  granted_account_id: (p) => p.grantedAccountId,
  permission_level: (p) => p.level,
};
const AUDIENCE_SORT: Record<string, SortKey<AudienceRec>> = {
  id: (a) => a.id,
  name: (a) => a.name,
  created_at: (a) => a.createdAt,
  updated_at: (a) => a.updatedAt,
  audience_size: (a) => a.users.size,
};
/** The `permission_scope` values of the audience listing (default OWNER, as the platform documents it). */
const PERMISSION_SCOPES = ['OWNER', 'SHARED'] as const;

/** Reads `sort_by` (`field-asc` / `field-desc`, the platform's form) and sorts `items` in place. */
function sortByParam<T>(q: QueryReader, items: T[], fields: Record<string, SortKey<T>>): void {
  const sortBy = q.string('sort_by');
  if (sortBy === undefined) return;
  const m = /^([a-z_]+)-(asc|desc)$/.exec(sortBy);
  const key = m === null ? undefined : fields[m[1] ?? ''];
  if (m === null || key === undefined) {
    throw invalid('sort_by', `sort_by must be field-asc or field-desc; fields: ${Object.keys(fields).join(', ')}`);
  }
  const dir = m[2] === 'desc' ? -1 : 1;
  items.sort((x, y) => (key(x) < key(y) ? -dir : key(x) > key(y) ? dir : 0));
}
export const OWNER_ONLY_PERMISSIONS = "Only the audience's owner account can manage its permissions";

function notFound(what: string, parameter: string): SandboxApiFailure {
  return new SandboxApiFailure(404, 'NOT_FOUND', `${what} not found`, parameter);
}

/** Answers a request: `ok` with the data (and paging fields), `created` for a 201. */
type Reply = (data: unknown, extra?: Record<string, unknown>) => AdsReply;

export class AdsRoutes {
  constructor(
    private readonly store: SandboxStore,
    private readonly pageSize: number,
  ) {}

  /** The path's account, if it exists (404) and belongs to the authenticated user (403). */
  account(req: AdsRequest): string {
    const id = req.match.params['account_id'] ?? '';
    const account = this.store.accounts.get(id);
    if (account === undefined) throw notFound(`Account ${id}`, 'account_id');
    if (account.userId !== req.userId) {
      throw new SandboxApiFailure(
        403,
        'UNAUTHORIZED_CLIENT_APPLICATION',
        `The authenticated user is not authorized to use account ${id}`,
        'account_id',
      );
    }
    return id;
  }

  /** An audience the account owns or was granted; `write` requires ownership or READ_WRITE. */
  audience(req: AdsRequest, accountId: string, mode: 'read' | 'write' | 'owner'): AudienceRec {
    const param = req.match.route.permissionKind === 'tailored' ? 'tailored_audience_id' : 'custom_audience_id';
    const id = req.match.params[param] ?? '';
    const a = this.store.audiences.get(id);
    const grant = a === undefined || a.ownerAccountId === accountId ? undefined : this.store.grantOf(a.id, accountId);
    if (a === undefined || (a.ownerAccountId !== accountId && grant === undefined))
      throw notFound(`Audience ${id}`, param);
    if (mode !== 'read' && a.deleted) throw notFound(`Audience ${id} (deleted)`, param);
    if (mode === 'write' && grant !== undefined && grant.level !== 'READ_WRITE') {
      throw new SandboxApiFailure(
        403,
        'ACTION_NOT_ALLOWED',
        'This account has READ_ONLY access to the audience',
        param,
      );
    }
    if (mode === 'owner' && grant !== undefined) {
      throw new SandboxApiFailure(
        403,
        'ACTION_NOT_ALLOWED',
        req.match.route.permissionKind === undefined
          ? "Only the audience's owner account can modify or delete it"
          : OWNER_ONLY_PERMISSIONS,
        param,
      );
    }
    return a;
  }

  dnrList(req: AdsRequest, accountId: string, mode: 'read' | 'write'): DnrRec {
    const id = req.match.params['do_not_reach_list_id'] ?? '';
    const d = this.store.dnrLists.get(id);
    if (d === undefined || d.accountId !== accountId) throw notFound(`Do-not-reach list ${id}`, 'do_not_reach_list_id');
    if (mode === 'write' && d.deleted) throw notFound(`Do-not-reach list ${id} (deleted)`, 'do_not_reach_list_id');
    return d;
  }

  handle(req: AdsRequest): AdsReply {
    const accountId = this.account(req);
    const q = new QueryReader(req.query, req.match.params);
    const ok = (data: unknown, extra: Record<string, unknown> = {}): AdsReply => {
      q.finish();
      return { status: 200, body: { request: { params: q.echo }, data, ...extra } };
    };
    const created = (data: unknown): AdsReply => ({ ...ok(data), status: 201 });
    switch (req.match.route.name) {
      case 'audiences.list':
        return this.listAudiences(accountId, q, ok);
      case 'audiences.create':
        return this.createAudience(accountId, q, created);
      case 'audiences.get':
        return this.getAudience(req, accountId, q, ok);
      case 'audiences.update':
        return this.updateAudience(req, accountId, q, ok);
      case 'audiences.delete': {
        const a = this.audience(req, accountId, 'owner');
        a.deleted = true;
        a.updatedAt = this.store.now();
        return ok(this.store.audienceView(a, accountId));
      }
      case 'permissions.list':
        return this.listPermissions(req, accountId, q, ok);
      case 'permissions.grant':
        return this.grantPermission(req, accountId, q, created);
      case 'permissions.revoke':
        return this.revokePermission(req, accountId, ok);
      case 'targeted':
        return this.listTargeted(req, accountId, q, ok);
      case 'dnr.list':
        return this.listDnrLists(accountId, q, ok);
      case 'dnr.create':
        return this.createDnrList(accountId, q, created);
      case 'dnr.delete': {
        const d = this.dnrList(req, accountId, 'write');
        d.deleted = true;
        d.updatedAt = this.store.now();
        return ok(this.store.dnrView(d));
      }
      case 'audiences.users':
      case 'dnr.users':
        throw new Error('user batches are handled by applyUserBatch');
    }
  }

  /** POST audiences: a new audience of this account. */
  private createAudience(accountId: string, q: QueryReader, created: Reply): AdsReply {
    const name = q.string('name', { required: true, max: NAME_MAX }) ?? '';
    const description = q.string('description', { max: DESCRIPTION_MAX }) ?? null;
    return created(this.store.audienceView(this.store.insertAudience(accountId, name, description), accountId));
  }

  /** GET one audience: the platform defaults with_deleted to false, so a deleted one is not found without it. */
  private getAudience(req: AdsRequest, accountId: string, q: QueryReader, ok: Reply): AdsReply {
    const a = this.audience(req, accountId, 'read');
    const withDeleted = q.bool('with_deleted', false);
    if (a.deleted && !withDeleted) throw notFound(`Audience ${a.id}`, 'custom_audience_id');
    return ok(this.store.audienceView(a, accountId));
  }

  /** PUT one audience: its name and description (the owner only). */
  private updateAudience(req: AdsRequest, accountId: string, q: QueryReader, ok: Reply): AdsReply {
    const a = this.audience(req, accountId, 'owner');
    const name = q.string('name', { max: NAME_MAX });
    const description = q.string('description', { max: DESCRIPTION_MAX });
    if (name !== undefined) a.name = name;
    if (description !== undefined) a.description = description;
    a.updatedAt = this.store.now();
    return ok(this.store.audienceView(a, accountId));
  }

  /** GET do-not-reach lists: the platform documents only with_deleted here (no paging: an account holds one list). */
  private listDnrLists(accountId: string, q: QueryReader, ok: Reply): AdsReply {
    const withDeleted = q.bool('with_deleted', false);
    const lists = [...this.store.dnrLists.values()].filter(
      (d) => d.accountId === accountId && (withDeleted || !d.deleted),
    );
    return ok(
      lists.map((d) => this.store.dnrView(d)),
      { next_cursor: null },
    );
  }

  /** GET audiences: the account's own audiences, or those shared with it (permission_scope). */
  private listAudiences(accountId: string, q: QueryReader, ok: Reply): AdsReply {
    const s = this.store;
    const withTotal = q.bool('with_total_count', false);
    const count = q.int('count', LIST_COUNT.min, LIST_COUNT.max, LIST_COUNT.default);
    const offset = q.cursor(withTotal);
    const prefix = q.string('q', { max: NAME_MAX })?.toLowerCase();
    const withDeleted = q.bool('with_deleted', false);
    const ids = q.ids('custom_audience_ids', MAX_LISTED_IDS);
    const scope = q.oneOf('permission_scope', PERMISSION_SCOPES) ?? 'OWNER';
    const visible = [...s.audiences.values()].filter(
      (a) =>
        (scope === 'OWNER' ? a.ownerAccountId === accountId : s.grantOf(a.id, accountId) !== undefined) &&
        (withDeleted || !a.deleted) &&
        (prefix === undefined || a.name.toLowerCase().startsWith(prefix)) &&
        (ids === undefined || ids.includes(a.id)),
    );
    sortByParam(q, visible, AUDIENCE_SORT);
    const { data, ...rest } = pageOf(visible, offset, count, withTotal);
    return ok(
      data.map((a) => s.audienceView(a, accountId)),
      rest,
    );
  }

  /** Grants another account of the same business access to an audience, or changes the level of its grant. */
  private grantPermission(req: AdsRequest, accountId: string, q: QueryReader, created: Reply): AdsReply {
    const s = this.store;
    const a = this.audience(req, accountId, 'owner');
    const granted = q.string('granted_account_id', { required: true }) ?? '';
    const level = q.oneOf('permission_level', PERMISSION_LEVELS, { required: true }) ?? 'READ_ONLY';
    const target = s.accounts.get(granted);
    if (target === undefined) throw invalid('granted_account_id', `Account ${granted} does not exist`);
    if (granted === a.ownerAccountId) throw invalid('granted_account_id', 'The owner account already has access');
    const owner = s.accounts.get(a.ownerAccountId);
    if (owner === undefined || owner.business !== target.business) {
      throw invalid('granted_account_id', 'Audiences can be shared only between ad accounts of the same business');
    }
    const t = s.now();
    let p = s.grantOf(a.id, granted);
    if (p === undefined) {
      p = {
        id: s.newId(),
        audienceId: a.id,
        grantedAccountId: granted,
        level,
        createdAt: t,
        updatedAt: t,
        deleted: false,
      };
      s.permissions.set(p.id, p);
    } else {
      p.level = level;
      p.updatedAt = t;
    }
    return created(s.permissionView(p, req.match.route.permissionKind ?? 'custom'));
  }

  /** Revokes one grant of an audience the account owns. */
  private revokePermission(req: AdsRequest, accountId: string, ok: Reply): AdsReply {
    const s = this.store;
    const kind = req.match.route.permissionKind ?? 'custom';
    const a = this.audience(req, accountId, 'owner');
    const param = kind === 'custom' ? 'custom_audience_permission_id' : 'tailored_audience_permission_id';
    const id = req.match.params[param] ?? '';
    const p = s.permissions.get(id);
    if (p === undefined || p.audienceId !== a.id || p.deleted) throw notFound(`Permission ${id}`, param);
    p.deleted = true;
    p.updatedAt = s.now();
    return ok(s.permissionView(p, kind));
  }

  /** The account's campaigns that target an audience, with their (servable, unless with_active=false) line items. */
  private listTargeted(req: AdsRequest, accountId: string, q: QueryReader, ok: Reply): AdsReply {
    const a = this.audience(req, accountId, 'read');
    const withActive = q.bool('with_active', true);
    const offset = q.cursor(false);
    const records = a.campaigns
      .filter((c) => c.accountId === accountId)
      .map(({ record }) => ({
        ...record,
        line_items: record.line_items.filter((li) => !withActive || li.servable).map((li) => ({ ...li })),
      }))
      .filter((r) => r.line_items.length > 0);
    const { data, ...rest } = pageOf(records, offset, this.pageSize, false);
    return ok(data, rest);
  }

  /** Creates the account's do-not-reach list (an account has at most one). */
  private createDnrList(accountId: string, q: QueryReader, created: Reply): AdsReply {
    const s = this.store;
    const description = q.string('description', { max: DESCRIPTION_MAX }) ?? null;
    q.finish(); // an unknown parameter (such as `name`) refuses the request before anything is created
    const live = s.liveDnrList(accountId);
    if (live !== undefined) {
      throw new SandboxApiFailure(
        400,
        'INVALID_REQUEST',
        `Account ${accountId} already has do-not-reach list ${live.id}; an account can have at most one do-not-reach list`,
      );
    }
    return created(s.dnrView(s.insertDnrList(accountId, description)));
  }

  private listPermissions(req: AdsRequest, accountId: string, q: QueryReader, ok: Reply): AdsReply {
    const kind = req.match.route.permissionKind ?? 'custom';
    const a = this.audience(req, accountId, 'read');
    const withTotal = q.bool('with_total_count', false);
    const count = q.int('count', LIST_COUNT.min, LIST_COUNT.max, LIST_COUNT.default);
    const offset = q.cursor(withTotal);
    const granted = q.ids('granted_account_ids', MAX_LISTED_IDS);
    const ids = q.ids(
      kind === 'custom' ? 'custom_audience_permission_ids' : 'tailored_audience_permission_ids',
      MAX_LISTED_IDS,
    );
    const isOwner = a.ownerAccountId === accountId;
    const perms = [...this.store.permissions.values()].filter(
      (p) =>
        p.audienceId === a.id &&
        !p.deleted &&
        // A granted account sees only its own grant; the owner sees all.
        (isOwner || p.grantedAccountId === accountId) &&
        (granted === undefined || granted.includes(p.grantedAccountId)) &&
        (ids === undefined || ids.includes(p.id)),
    );
    sortByParam(q, perms, PERMISSION_SORT);
    const { data, ...rest } = pageOf(perms, offset, count, withTotal);
    return ok(
      data.map((p) => this.store.permissionView(p, kind)),
      rest,
    );
  }

  /** Resolves the batch's target (404/403 before the body is read). */
  batchTarget(req: AdsRequest): AudienceRec | DnrRec {
    const accountId = this.account(req);
    return req.match.route.batch === 'dnr'
      ? this.dnrList(req, accountId, 'write')
      : this.audience(req, accountId, 'write');
  }

  /**
   * Applies checked operations. `mismatch` stores every user but the first one of the request
   * and reports one fewer success, as a platform that silently dropped a record would.
   */
  applyUserBatch(
    req: AdsRequest,
    target: AudienceRec | DnrRec,
    operations: CheckedOperation[],
    mismatch: boolean,
  ): AdsReply {
    let skip = mismatch;
    const counts = operations.map((op) => {
      let success = op.keys.length;
      for (const key of op.keys) {
        if (skip) {
          skip = false;
          success -= 1;
          continue;
        }
        if (op.type === 'Update') target.users.add(key);
        else target.users.delete(key);
      }
      return { success_count: success, total_count: op.keys.length };
    });
    this.store.touch(target);
    const params = { ...req.match.params };
    if (req.match.route.batch === 'dnr') {
      return {
        status: 200,
        body: {
          request: operations.map((op) => ({ params: { ...params, ...op.echo }, operation_type: op.type })),
          data: counts,
        },
      };
    }
    const total = counts.reduce((n, c) => n + c.total_count, 0);
    const success = counts.reduce((n, c) => n + c.success_count, 0);
    return { status: 200, body: { request: { params }, data: { success_count: success, total_count: total } } };
  }
}
