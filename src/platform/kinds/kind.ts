/**
 * What a target kind is, as one declaration (platform/kinds/*.ts, listed in platform/targets.ts):
 * the platform's rules for it and the tool's own, the CLI flag that names one, and its endpoints
 * as request specs. Every rule that tells the kinds apart is one of these properties: the
 * upload, the sync and the CLI read them and test no kind by name.
 */
import type { RequestSpec } from '../request.js';
import type { UserBatchResult } from '../responses.js';
import type { IdentifierType } from '../users.js';

/**
 * A target read back: `missing` (absent or deleted), `read_only` (this account may read it but
 * not change it), or `writable`.
 */
export type ReadBack = 'missing' | 'read_only' | 'writable';

export interface TargetKindRules {
  /** The kind's name in the report, the snapshot, the audit log and the journal. */
  readonly kind: string;
  /** The option that names a target of this kind (`{ customAudienceId }`, `{ doNotReachListId }`). */
  readonly idOption: string;
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

/** The CLI flag of `upload` and `sync` that names a target of the kind (`--audience ID`). */
export interface TargetFlag {
  readonly name: string;
  readonly describe: string;
}

/** A kind's endpoints, as requests on the target's account and id. */
export interface TargetKindEndpoints {
  /** One user batch (its exact bytes): one count for the request, or one per operation object. */
  postUsers(accountId: string, id: string, body: Buffer): RequestSpec<UserBatchResult | UserBatchResult[]>;
  /** The target read back before anything is sent (a 404 is thrown as the client's HttpError). */
  readBack(accountId: string, id: string): RequestSpec<ReadBack>;
  /** A new target of the kind (the CLI sandbox's), read as its id. */
  create(accountId: string, name: string): RequestSpec<string>;
}

export interface TargetKindDeclaration extends TargetKindRules {
  readonly flag: TargetFlag;
  readonly endpoints: TargetKindEndpoints;
}

/** A kind's declaration as it is written, its literal names kept (the registry's types derive from them). */
export const declareKind = <const D extends TargetKindDeclaration>(declaration: D): D => Object.freeze(declaration);
