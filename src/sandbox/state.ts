/**
 * The sandbox's in-memory platform: users, ad accounts, audiences, permissions, do-not-reach
 * lists, campaigns and tokens, plus the request log. Wire views (snake_case, as the platform
 * returns them) are built here so routes stay thin.
 */
import { ConfigError } from '../errors.js';
import type { SandboxFaultKind } from './faults.js';
import type { SandboxErrorCode } from './errors.js';

export interface SandboxRequestLog {
  method: string;
  /** Path without the query string. */
  path: string;
  /** HTTP status, or 0 when a `drop` fault destroyed the connection. */
  status: number;
  /** Wall-clock milliseconds spent answering (a measurement, not the injectable clock). */
  ms: number;
  /** User-batch requests: operations, users and body bytes seen. */
  operations?: number;
  users?: number;
  bytes?: number;
  fault?: SandboxFaultKind;
}

export interface SandboxLineItemInput {
  name: string | null;
  servable: boolean;
}

export interface SandboxCampaignInput {
  name: string;
  lineItems: SandboxLineItemInput[];
}

export interface SandboxTargetingRecord {
  campaign_id: string;
  campaign_name: string;
  line_items: Array<{ id: string; name: string | null; servable: boolean }>;
}

export type SandboxPermissionLevel = 'READ_ONLY' | 'READ_WRITE';

export interface SandboxCustomAudience {
  id: string;
  name: string;
  description: string | null;
  audience_size: number | null;
  audience_type: 'CUSTOM';
  targetable: boolean;
  reasons_not_targetable: string[];
  is_owner: boolean;
  owner_account_id: string;
  permission_level?: SandboxPermissionLevel;
  created_at: string;
  updated_at: string;
  deleted: boolean;
}

export interface SandboxDoNotReachList {
  id: string;
  name: string;
  description: string | null;
  list_size: number | null;
  targetable: boolean;
  reasons_not_targetable: string[];
  created_at: string;
  updated_at: string;
  deleted: boolean;
}

export interface SandboxPermission {
  id: string;
  custom_audience_id?: string;
  tailored_audience_id?: string;
  granted_account_id: string;
  permission_level: SandboxPermissionLevel;
  created_at: string;
  updated_at: string;
  deleted: boolean;
}

/** What tests and the CLI may do to the sandbox's state directly (no HTTP, no auth). */
export interface SandboxStateHandle {
  createCustomAudience(accountId: string, name: string, description?: string): SandboxCustomAudience;
  /** The account's one do-not-reach list (the platform names it; a second live list is refused). */
  createDoNotReachList(accountId: string, description?: string): SandboxDoNotReachList;
  addCampaign(accountId: string, audienceId: string, campaign: SandboxCampaignInput): SandboxTargetingRecord;
  /** Opens another ad account of the sandbox's user, in the same business (e.g. more grantees to share with); returns its id. */
  createAccount(): string;
  /** Distinct users currently held by a custom audience. */
  audienceSize(audienceId: string): number;
  /** Distinct users currently held by a do-not-reach list. */
  dnrListSize(listId: string): number;
  /**
   * Distinct users held by a target of `kind`, as the platform names its kinds (`custom_audience`,
   * `do_not_reach_list`): the CLI's `--sandbox` report asks it for any kind. A kind the sandbox
   * does not hold is refused.
   */
  targetSize(kind: string, id: string): number;
  /** Live request log, oldest first (the oldest entries are dropped past 50,000). */
  readonly requests: SandboxRequestLog[];
}

interface UserRec {
  id: string;
  screenName: string;
  business: string;
}
interface AccountRec {
  id: string;
  userId: string;
  business: string;
}
/**
 * The user keys of one audience or list (53-bit integers from users.ts): an open-addressing
 * table in a Float64Array. A Set of numbers this large boxes every key as a heap number; this
 * keeps a million users in 16 MB and adds one without allocating, so the sandbox keeps up with
 * a client on the same machine.
 */
export class UserKeySet {
  private static readonly EMPTY = -1;
  private static readonly DELETED = -2;
  private slots = new Float64Array(1024).fill(UserKeySet.EMPTY);
  private used = 0;
  size = 0;

  add(key: number): void {
    const i = this.find(key);
    if (this.slots[i] === key) return;
    if (this.slots[i] === UserKeySet.EMPTY) this.used++;
    this.slots[i] = key;
    this.size++;
    if (this.used > this.slots.length * 0.6) this.rehash();
  }

  delete(key: number): void {
    const i = this.find(key);
    if (this.slots[i] !== key) return;
    this.slots[i] = UserKeySet.DELETED;
    this.size--;
  }

  /** The slot holding `key`, else the first free one on its probe path. */
  private find(key: number): number {
    const mask = this.slots.length - 1;
    let free = -1;
    // The low bits of a key are already well mixed (keys are hashes).
    for (let i = (key % 4294967296) & mask; ; i = (i + 1) & mask) {
      const slot = this.slots[i] as number;
      if (slot === key) return i;
      if (slot === UserKeySet.EMPTY) return free === -1 ? i : free;
      if (slot === UserKeySet.DELETED && free === -1) free = i;
    }
  }

  private rehash(): void {
    const old = this.slots;
    // Grow only when live keys need it; otherwise the same size without the tombstones.
    this.slots = new Float64Array(this.size > old.length * 0.3 ? old.length * 2 : old.length).fill(UserKeySet.EMPTY);
    this.used = 0;
    this.size = 0;
    for (const key of old) if (key >= 0) this.add(key);
  }
}

interface Membership {
  users: UserKeySet;
  everUploaded: boolean;
  lastUploadAt: number | undefined;
}
export interface AudienceRec extends Membership {
  id: string;
  ownerAccountId: string;
  name: string;
  description: string | null;
  createdAt: number;
  updatedAt: number;
  deleted: boolean;
  campaigns: Array<{ accountId: string; record: SandboxTargetingRecord }>;
}
export interface DnrRec extends Membership {
  id: string;
  accountId: string;
  name: string;
  description: string | null;
  createdAt: number;
  updatedAt: number;
  deleted: boolean;
}
export interface PermissionRec {
  id: string;
  audienceId: string;
  grantedAccountId: string;
  level: SandboxPermissionLevel;
  createdAt: number;
  updatedAt: number;
  deleted: boolean;
}
export interface TokenRec {
  secret: string;
  userId: string;
  kind: 'access' | 'request';
  /** Request tokens: the PIN issued by /oauth/authorize. */
  verifier?: string;
}

const MAX_LOG = 50_000;
const TOO_SMALL_BELOW = 100;
const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** ISO 8601 UTC without milliseconds, as the platform prints times. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export class SandboxStore implements SandboxStateHandle {
  readonly users = new Map<string, UserRec>();
  readonly accounts = new Map<string, AccountRec>();
  readonly audiences = new Map<string, AudienceRec>();
  readonly dnrLists = new Map<string, DnrRec>();
  readonly permissions = new Map<string, PermissionRec>();
  readonly tokens = new Map<string, TokenRec>();
  readonly requests: SandboxRequestLog[] = [];
  private readonly usedIds = new Set<string>();

  constructor(
    private readonly random: () => number,
    readonly now: () => number,
    private readonly processingMs: number,
  ) {}

  randomString(length: number, alphabet = ALPHABET): string {
    let s = '';
    for (let i = 0; i < length; i++) s += alphabet[Math.floor(this.random() * alphabet.length)];
    return s;
  }

  newId(length = 6): string {
    for (;;) {
      const id = this.randomString(length);
      if (!this.usedIds.has(id)) {
        this.usedIds.add(id);
        return id;
      }
    }
  }

  addUser(screenName: string, business: string): UserRec {
    const user = { id: String(1_000_000_000 + Math.floor(this.random() * 8_999_999_999)), screenName, business };
    this.users.set(user.id, user);
    return user;
  }

  /** The user the sandbox's credentials belong to (set when the sandbox starts). */
  owner: UserRec | undefined;

  createAccount(): string {
    if (this.owner === undefined) throw new Error('the sandbox has no user yet');
    return this.addAccount(this.owner).id;
  }

  addAccount(user: UserRec): AccountRec {
    const account = { id: `18ce${this.newId(7)}`, userId: user.id, business: user.business };
    this.accounts.set(account.id, account);
    return account;
  }

  log(entry: SandboxRequestLog): void {
    if (this.requests.length >= MAX_LOG) this.requests.splice(0, MAX_LOG / 5);
    this.requests.push(entry);
  }

  private requireAccount(accountId: string): AccountRec {
    const account = this.accounts.get(accountId);
    if (account === undefined) {
      throw new ConfigError<SandboxErrorCode>('sandbox_unknown_account', `The sandbox has no account ${accountId}`, {
        fix: 'Use one of sandbox.accounts (primary, secondary, foreign)',
      });
    }
    return account;
  }

  insertAudience(accountId: string, name: string, description: string | null): AudienceRec {
    const t = this.now();
    const rec: AudienceRec = {
      id: this.newId(),
      ownerAccountId: accountId,
      name,
      description,
      createdAt: t,
      updatedAt: t,
      deleted: false,
      campaigns: [],
      users: new UserKeySet(),
      everUploaded: false,
      lastUploadAt: undefined,
    };
    this.audiences.set(rec.id, rec);
    return rec;
  }

  /** The platform's name of every do-not-reach list (it takes only a description). */
  static readonly DNR_NAME = 'Do Not Reach List';

  /** The account's live list, if any: an account holds at most one. */
  liveDnrList(accountId: string): DnrRec | undefined {
    for (const d of this.dnrLists.values()) if (d.accountId === accountId && !d.deleted) return d;
    return undefined;
  }

  insertDnrList(accountId: string, description: string | null): DnrRec {
    const name = SandboxStore.DNR_NAME;
    const t = this.now();
    const rec: DnrRec = {
      id: this.newId(),
      accountId,
      name,
      description,
      createdAt: t,
      updatedAt: t,
      deleted: false,
      users: new UserKeySet(),
      everUploaded: false,
      lastUploadAt: undefined,
    };
    this.dnrLists.set(rec.id, rec);
    return rec;
  }

  /** The active (not revoked) permission granting `accountId` access to the audience. */
  grantOf(audienceId: string, accountId: string): PermissionRec | undefined {
    for (const p of this.permissions.values()) {
      if (p.audienceId === audienceId && p.grantedAccountId === accountId && !p.deleted) return p;
    }
    return undefined;
  }

  private reasons(m: Membership): string[] {
    const reasons: string[] = [];
    if (m.lastUploadAt !== undefined && this.now() < m.lastUploadAt + this.processingMs) reasons.push('PROCESSING');
    if (m.users.size < TOO_SMALL_BELOW) reasons.push('TOO_SMALL');
    return reasons;
  }

  audienceView(a: AudienceRec, viewerAccountId: string): SandboxCustomAudience {
    const reasons = this.reasons(a);
    const isOwner = a.ownerAccountId === viewerAccountId;
    const grant = isOwner ? undefined : this.grantOf(a.id, viewerAccountId);
    return {
      id: a.id,
      name: a.name,
      description: a.description,
      audience_size: a.everUploaded ? a.users.size : null,
      audience_type: 'CUSTOM',
      targetable: reasons.length === 0,
      reasons_not_targetable: reasons,
      is_owner: isOwner,
      owner_account_id: a.ownerAccountId,
      ...(grant === undefined ? {} : { permission_level: grant.level }),
      created_at: isoTime(a.createdAt),
      updated_at: isoTime(a.updatedAt),
      deleted: a.deleted,
    };
  }

  dnrView(d: DnrRec): SandboxDoNotReachList {
    const reasons = this.reasons(d);
    return {
      id: d.id,
      name: d.name,
      description: d.description,
      list_size: d.everUploaded ? d.users.size : null,
      targetable: reasons.length === 0,
      reasons_not_targetable: reasons,
      created_at: isoTime(d.createdAt),
      updated_at: isoTime(d.updatedAt),
      deleted: d.deleted,
    };
  }

  permissionView(p: PermissionRec, kind: 'custom' | 'tailored'): SandboxPermission {
    return {
      id: p.id,
      ...(kind === 'custom' ? { custom_audience_id: p.audienceId } : { tailored_audience_id: p.audienceId }),
      granted_account_id: p.grantedAccountId,
      permission_level: p.level,
      created_at: isoTime(p.createdAt),
      updated_at: isoTime(p.updatedAt),
      deleted: p.deleted,
    };
  }

  /** Marks an upload: membership changed now (starts the PROCESSING period). */
  touch(m: Membership & { updatedAt: number }): void {
    const t = this.now();
    m.everUploaded = true;
    m.lastUploadAt = t;
    m.updatedAt = t;
  }

  // --- SandboxStateHandle ---

  createCustomAudience(accountId: string, name: string, description?: string): SandboxCustomAudience {
    this.requireAccount(accountId);
    return this.audienceView(this.insertAudience(accountId, name, description ?? null), accountId);
  }

  createDoNotReachList(accountId: string, description?: string): SandboxDoNotReachList {
    this.requireAccount(accountId);
    const live = this.liveDnrList(accountId);
    if (live !== undefined) {
      throw new ConfigError<SandboxErrorCode>(
        'sandbox_dnr_list_exists',
        `Account ${accountId} already has do-not-reach list ${live.id}`,
        {
          fix: 'an account holds at most one do-not-reach list: use it, or delete it first',
        },
      );
    }
    return this.dnrView(this.insertDnrList(accountId, description ?? null));
  }

  addCampaign(accountId: string, audienceId: string, campaign: SandboxCampaignInput): SandboxTargetingRecord {
    this.requireAccount(accountId);
    const audience = this.audiences.get(audienceId);
    if (audience === undefined) {
      throw new ConfigError<SandboxErrorCode>(
        'sandbox_unknown_audience',
        `The sandbox has no custom audience ${audienceId}`,
        {
          fix: 'Create it first with state.createCustomAudience',
        },
      );
    }
    const record: SandboxTargetingRecord = {
      campaign_id: this.newId(5),
      campaign_name: campaign.name,
      line_items: campaign.lineItems.map((li) => ({ id: this.newId(5), name: li.name, servable: li.servable })),
    };
    audience.campaigns.push({ accountId, record });
    return structuredClone(record);
  }

  audienceSize(audienceId: string): number {
    return this.audiences.get(audienceId)?.users.size ?? 0;
  }

  dnrListSize(listId: string): number {
    return this.dnrLists.get(listId)?.users.size ?? 0;
  }

  targetSize(kind: string, id: string): number {
    if (kind === 'custom_audience') return this.audienceSize(id);
    if (kind === 'do_not_reach_list') return this.dnrListSize(id);
    throw new Error(`the sandbox holds no targets of kind ${kind}`);
  }
}
