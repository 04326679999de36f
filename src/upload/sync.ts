/**
 * `syncAudience()`: make the users this tool has confirmed on a target exactly the users of the
 * input, sending only what changed. One more caller of the upload engine (sendUsers), the run's
 * target check and the audit log; the target's snapshot (state/snapshot.ts) is its journal.
 *
 * 1. Under the target's lock, the snapshot is opened and checked (against itself, its target and
 *    the audit log's last record; rebuilt first with `recover`), committing what a killed sync
 *    left: users of batches without a clear outcome become uncertain, due for a re-send.
 * 2. The input is read and hashed like an upload's and each user is classified against the
 *    snapshot (sync-plan.ts); the users to send wait in a spool (sync-input.ts).
 * 3. The plan is checked (empty input, removal cap) and every record a Delete will send is read
 *    back and checked, before anything is sent.
 * 4. The removals go as `Delete` with the objects the snapshot kept, all confirmed before the
 *    adds and refreshes go as `Update`; each chunk of users is written ahead to the snapshot
 *    before the sender gets it, each confirmed batch recorded as it is confirmed, and the
 *    snapshot is committed at the end (or by the next open).
 */
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { createHashSummary } from '../hashing/summary.js';
import type { HashRecordsOptions } from '../hashing/pipeline.js';
import type { NormalizeOptions } from '../identifiers/types.js';
import { newRunId, type AuditRunStart, type AuditSnapshotState } from '../state/audit.js';
import { Snapshot, writeAheadLost } from '../state/snapshot.js';
import { SnapshotError, type SnapshotTarget } from '../state/snapshot-format.js';
import { refuseUnfinishedMove, type AuditLog, type TakeoverWait, type TargetSession } from '../state/store.js';
import { openSyncState, resolveStorage, STATE_FIELDS, type StateOption, type SyncStorage } from './state-option.js';
import { recoverSnapshot, type SnapshotRecovery } from '../state/snapshot-recover.js';
import { addUnrecovered, clearUnrecovered, readUnrecovered } from '../state/snapshot-unrecovered.js';
import type { Clock } from '../util/clock.js';
import { VERSION } from '../version.js';
import { readInput, type ReadResult } from './input.js';
import {
  needsClient,
  orIssue,
  parseOptions,
  recordRules,
  runSignal,
  SEND_FIELDS,
  UPLOAD_FIELDS,
  type ResolvedSendOptions,
} from './options.js';
import { asKitError, targetRef } from './report.js';
import { auditOptions, identify, type RunInput, type RunInputOption } from './run-facts.js';
import { checkTargets } from './target-check.js';
import { AddedUsers } from './added-users.js';
import {
  bothTargets,
  checkConsentTarget,
  CONSENT_FIELD,
  doNotReachPass,
  type DoNotReachConsent,
  type ListTarget,
} from './do-not-reach.js';
import { DEFAULT_MIN_AUDIENCE_SIZE, withMinimumUsers } from './audience-size.js';
import { InFlight, PlanCollector, snapshotUsers, Spool } from './sync-input.js';
import {
  checkSyncPlan,
  DEFAULT_REFRESH_AFTER_DAYS,
  parseRemovalCap,
  SyncPlanner,
  type RemovalCap,
  type SyncPlanCounts,
} from './sync-plan.js';
import {
  buildSyncReport,
  syncAuditEnd,
  type SyncOversized,
  type SyncPlanned,
  type SyncReport,
  type SyncSent,
  type SyncStatus,
} from './sync-report.js';
import type { SendOptions, UploadUsers } from './types.js';
import { hashedUsers, sendResolved } from './upload.js';
import { oversizedTest } from './plan.js';
import { snapshotTarget, type Target } from './target.js';
import type { RowRules } from '../identifiers/rows.js';
import { collectGarbage } from '../util/collect.js';
import { MEMBERSHIP_DAYS } from '../platform/batch.js';

/** Memberships expire 13 months after an upload (`MEMBERSHIP_DAYS`): a refresh window must be shorter. */
export const MAX_REFRESH_AFTER_DAYS = MEMBERSHIP_DAYS;

export interface SyncAudienceOptions extends SendOptions {
  /** The whole export: every form `uploadAudience` takes (with `records`, raw records). */
  users: UploadUsers;
  records?: HashRecordsOptions;
  /** Where the target's snapshot lives (`<stateDir>/snapshots/`); or give `state`. */
  stateDir?: string;
  /**
   * The state store instead of `stateDir`: a PostgreSQL URL (`postgres://user@host/db`, opened
   * and closed by the sync), or a store object (left open). Its audit log is the sync's unless
   * `auditLog` names a file.
   */
  state?: StateOption;
  /** Audit log file (e.g. defaultAuditLogPath(stateDir)); with `stateDir`, none when omitted; none on a dry run. */
  auditLog?: string;
  /** Send every user of the input as `Update`, not only the new ones. */
  full?: boolean;
  /** Re-send users last confirmed longer ago than this (default 180, at most 390). */
  refreshAfterDays?: number;
  /** Most users a sync may remove: a number, or a share of the snapshot such as `'10%'` (the default). */
  maxRemovals?: number | string;
  /** An input without a valid user may empty the target. */
  allowEmpty?: boolean;
  /**
   * A custom audience the sync would leave with fewer users than this is refused before anything
   * is sent (ConfigError `audience_too_small`; default 100, 0 turns it off; emptying it with
   * `allowEmpty` is not refused). Not for do-not-reach lists.
   */
  minAudienceSize?: number;
  /** Plan only: nothing is sent, the snapshot is not changed (no client needed). */
  dryRun?: boolean;
  /** Read the target back before the input is read (default true). */
  checkTarget?: boolean;
  runId?: string;
  /** The input's identity, for the audit record (with `path` it is measured and fingerprinted). */
  input?: RunInputOption;
  /** The options the users were hashed with, for the audit record. */
  normalize?: NormalizeOptions;
  /** Recorded in the audit record. */
  sandbox?: boolean;
  /**
   * Rebuild a damaged snapshot first from what can be read (every salvaged user due for a
   * re-send: Delete when the input lacks it, Update otherwise); users that cannot be recovered
   * are counted and the sync does not end `completed`.
   */
  recover?: boolean;
  /**
   * Acknowledge the users earlier recoveries could not read back (they may stay on the platform
   * until their membership expires): later syncs no longer end `partial` for them.
   */
  acceptUnrecovered?: boolean;
  /** The audit log refused the end record (disk full): called instead of throwing, so the report comes back. */
  onAuditError?: (error: unknown) => void;
  /**
   * `planned` once the plan is known and accepted, then `removing` and `updating` as they start;
   * `target` says which (the audience's, or with a do-not-reach consent policy the list's).
   */
  onPhase?: (
    phase: 'planned' | 'removing' | 'updating',
    plan: SyncPlanCounts,
    target: ReturnType<typeof targetRef>,
  ) => void;
  /**
   * How often the sync proves it still holds its lock on the target (default 10 000 ms): the
   * heartbeat's period and the longest wait between two proofs (docs/design.md, the lease).
   */
  leaseIntervalMs?: number;
  /**
   * Called before a sync that took its target over from a holder that ended uncleanly waits out
   * any request that holder could still have in flight (80 s with the defaults; PostgreSQL store).
   */
  onTakeoverWait?: (wait: TakeoverWait) => void;
  /**
   * `{ policy: 'do-not-reach', doNotReachListId }`: the custom audience holds the rows that do not
   * say no (the users' own policy must be `exclude`, the default), and the list is synced in the same
   * call to the rows that say no (`report.do_not_reach`; an input without any empties it): an
   * opt-out leaves the audience and joins the list, an opt-in back the reverse. The input is read
   * again for it: a hashCsv run of a file, or raw records given as an array with `records`;
   * anything else is refused. Each target keeps its own snapshot: a kill between the two converges
   * on the next call.
   */
  consent?: DoNotReachConsent;
}

/** syncAudience's options: the sending ones, and the sync's own. */
const SYNC_FIELDS = {
  ...SEND_FIELDS,
  users: UPLOAD_FIELDS.users,
  records: UPLOAD_FIELDS.records,
  ...STATE_FIELDS,
  auditLog: z.string().optional(),
  full: z.boolean().default(false),
  refreshAfterDays: z.unknown().optional(),
  maxRemovals: z.union([z.number(), z.string()]).optional(),
  allowEmpty: z.boolean().default(false),
  minAudienceSize: z.number().int().min(0).default(DEFAULT_MIN_AUDIENCE_SIZE),
  dryRun: z.boolean().default(false),
  checkTarget: z.boolean().default(true),
  runId: z.string().optional(),
  input: z.custom<RunInputOption>().optional(),
  normalize: z.custom<NormalizeOptions>().optional(),
  sandbox: z.boolean().default(false),
  recover: z.boolean().default(false),
  acceptUnrecovered: z.boolean().default(false),
  onAuditError: z.custom<(error: unknown) => void>().optional(),
  onPhase: z.custom<NonNullable<SyncAudienceOptions['onPhase']>>().optional(),
  leaseIntervalMs: z.number().int().positive().max(600_000).optional(),
  onTakeoverWait: z.custom<(wait: TakeoverWait) => void>().optional(),
  consent: CONSENT_FIELD,
  // An upload's options a sync does not take: refused, never ignored (the caller would believe them applied).
  expiresAt: z
    .undefined({
      error:
        'a sync does not take expiresAt: it refreshes its users before the platform lets them expire (refreshAfterDays); uploadAudience takes it',
    })
    .optional(),
  effectiveAt: z
    .undefined({
      error: 'a sync does not take effectiveAt: it sends what changed when it runs; uploadAudience takes it',
    })
    .optional(),
};
const SYNC_SCHEMA = z
  .object(SYNC_FIELDS)
  .transform((o, ctx) => settleSync(o, ctx))
  .superRefine((o, ctx) => needsClient(o, ctx, 'syncAudience'));
const { users: _users, client: _client, ...SYNC_CHECK_FIELDS } = SYNC_FIELDS;
const SYNC_CHECK_SCHEMA = z.object(SYNC_CHECK_FIELDS).transform((o, ctx) => settleSync(o, ctx));

/** syncAudience's options, resolved: the removal cap parsed, the refresh window checked, the storage, the clock's `now`. */
export type ResolvedSyncOptions = z.output<typeof SYNC_SCHEMA>;

/** The options of syncAudience, parsed once (ConfigError naming the first option refused). */
export function resolveSyncOptions(o: unknown): ResolvedSyncOptions {
  return parseOptions(SYNC_SCHEMA, o);
}

/**
 * syncAudience's options but the values only a session brings (`users`, `client`), checked with
 * its schema: what the CLI's `sync` does with its flags before it opens the input or the sandbox.
 */
export function checkSyncOptions(o: Omit<SyncAudienceOptions, 'users' | 'client'>): void {
  parseOptions(SYNC_CHECK_SCHEMA, o);
}

function settleSync<
  T extends {
    refreshAfterDays?: unknown;
    maxRemovals?: number | string | undefined;
    dryRun: boolean;
    recover: boolean;
    clock: Clock;
    signal?: AbortSignal | undefined;
    cancelSignal?: AbortSignal | undefined;
    stateDir?: string | undefined;
    state?: StateOption | undefined;
    auditLog?: string | undefined;
    target: Target;
    records?: HashRecordsOptions | undefined;
    consent?: DoNotReachConsent | undefined;
  },
>(
  o: T,
  ctx: z.RefinementCtx,
): Omit<T, 'refreshAfterDays' | 'maxRemovals' | 'records' | 'stateDir' | 'state' | 'auditLog'> & {
  refreshAfterDays: number;
  maxRemovals: RemovalCap;
  now: () => number;
  records: RowRules | undefined;
  storage: SyncStorage;
} {
  return orIssue(ctx, () => {
    const { stateDir, state, auditLog, refreshAfterDays, maxRemovals, records, ...rest } = o;
    const storage = resolveStorage({ stateDir, state, auditLog }, 'syncAudience');
    checkConsentTarget(o.consent, o.target);
    if (o.dryRun && o.recover) {
      throw new ConfigError('invalid_option', 'recover rebuilds the snapshot on disk: it cannot be a dry run', {
        fix: 'run the recovery without dryRun',
      });
    }
    const clock = o.clock;
    return {
      ...rest,
      storage,
      refreshAfterDays: refreshWindow(refreshAfterDays ?? DEFAULT_REFRESH_AFTER_DAYS),
      maxRemovals: parseRemovalCap(maxRemovals),
      now: () => clock.now(),
      signal: runSignal(o),
      records: recordRules(records, o.target),
    };
  });
}

const refreshSchema = z.number().positive().max(MAX_REFRESH_AFTER_DAYS);

function refreshWindow(refreshAfterDays: unknown): number {
  const parsed = refreshSchema.safeParse(refreshAfterDays);
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    'invalid_option',
    `refreshAfterDays must be a number of days above 0 and at most ${MAX_REFRESH_AFTER_DAYS}, got ${String(refreshAfterDays)}`,
    {
      fix: `memberships expire 13 months after an upload: pass at most ${MAX_REFRESH_AFTER_DAYS}, or omit it for 180`,
    },
  );
}

/**
 * Sync a custom audience or do-not-reach list to the input; returns the report. With a
 * do-not-reach consent policy, the list's sync follows the audience's (do-not-reach.ts).
 */
export async function syncAudience(options: SyncAudienceOptions): Promise<SyncReport> {
  const o = resolveSyncOptions(options);
  return bothTargets(
    doNotReachPass(o.consent, o.users, o.records),
    o.signal,
    (alsoCheck) => syncOne(o, alsoCheck),
    (list) => syncOne(listSync(o, list)),
  );
}

/** The list's sync to the rows that say no: the audience's options. */
function listSync(o: ResolvedSyncOptions, { target, users, records }: ListTarget): ResolvedSyncOptions {
  return {
    ...o,
    target,
    users,
    records,
    consent: undefined,
    // Read back with the audience, before anything was sent.
    checkTarget: false,
    minAudienceSize: 0,
    // Nobody saying no any more empties the list, as the file says.
    allowEmpty: true,
    runId: undefined,
  };
}

/** One target's sync; `alsoCheck` (the do-not-reach list) is read back with the target, before anything is sent. */
async function syncOne(resolved: ResolvedSyncOptions, alsoCheck?: Target): Promise<SyncReport> {
  const state = await openSyncState(resolved.storage);
  try {
    // A store an unfinished state move is writing is refused before any request (lockTarget refuses it too).
    await closingOnError(resolved, refuseUnfinishedMove(state.store));
    const checked = !resolved.dryRun && resolved.client !== undefined && resolved.checkTarget;
    // Too small an audience is refused before the target check's GET: a refused sync sends nothing.
    const o = checked ? await withSyncMinimum(resolved) : resolved;
    if (checked && o.client !== undefined)
      await closingOnError(o, checkTargets(o.client, o.accountId, o.target, alsoCheck));
    // The input's fingerprint (for the audit record) is read beside the planning, not before it.
    const input = identify(o.input, o.dryRun);
    input.catch(() => undefined);
    const target = snapshotTarget(o.accountId, o.target);
    const runId = o.runId ?? newRunId();
    // One sync per target: a second one is refused at once, naming the holder.
    const session = await closingOnError(
      o,
      state.store.lockTarget(target, {
        runId,
        ...(o.client === undefined ? {} : { requestTimeoutMs: o.client.requestTimeoutMs }),
        ...(o.leaseIntervalMs === undefined ? {} : { proofIntervalMs: o.leaseIntervalMs }),
        ...(o.onTakeoverWait === undefined ? {} : { onTakeoverWait: o.onTakeoverWait }),
        sleep: (ms) => o.clock.sleep(ms, o.signal),
        now: () => o.clock.now(),
      }),
    );
    try {
      return await syncLocked(o, { session, audit: state.audit, target, runId }, input);
    } finally {
      await session.release();
    }
  } finally {
    await state.close();
  }
}

/**
 * The input read ahead to the minimum audience size (raw records hashed first): ConfigError
 * `audience_too_small` when it holds fewer users, none excepted (checkSyncPlan judges those).
 */
async function withSyncMinimum(o: ResolvedSyncOptions): Promise<ResolvedSyncOptions> {
  if (o.minAudienceSize === 0) return o;
  const users = await withMinimumUsers(hashedUsers(o.users, o.records), o.minAudienceSize, o.target, 'update', true);
  return { ...o, users, records: undefined };
}

/** `step`; the input read ahead is closed when it fails (its hashing may have started). */
async function closingOnError<T>(o: ResolvedSyncOptions, step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (error) {
    await o.users.close?.();
    throw error;
  }
}

/** The locked target, its store session and the audit log the sync records in. */
interface Locked {
  session: TargetSession;
  audit: AuditLog | undefined;
  target: SnapshotTarget;
  runId: string;
}

async function syncLocked(
  o: ResolvedSyncOptions,
  l: Locked,
  input: Promise<RunInput | undefined>,
): Promise<SyncReport> {
  const { dir } = l.session;
  const recorded = await l.audit?.lastRecordedSnapshot(l.target);
  if (o.acceptUnrecovered && !o.dryRun) clearUnrecovered(dir);
  // Damage the store found, or a killed run's write-ahead record lost: nothing is sent but a recovery.
  const damage = l.session.damage ?? writeAheadLost(dir, recorded);
  if (damage !== undefined && !o.recover) throw damage;
  const writeAheadGone = damage !== undefined && damage.code !== 'snapshot_corrupt';
  const recovery = o.recover
    ? recoverSnapshot(dir, { target: l.target, now: o.now, recordedUsers: recorded?.users })
    : undefined;
  // The frames of the users that run was adding were in the lost record when a store keeps them
  // there (the directory's data file holds them, and the recovery salvaged them): they cannot be removed.
  if (writeAheadGone && l.session.writeAhead !== undefined) addUnrecovered(dir, 0, false);
  // A recovered snapshot is new: the audit log's last record is of the one it replaces.
  const snapshot = Snapshot.open(dir, {
    target: l.target,
    now: o.now,
    recorded: recovery ? undefined : recorded,
    writeAhead: l.session.writeAhead,
  });
  try {
    // Not the membership the audit log last recorded (an older copy restored): users may be missing.
    if (recovery?.lost === 0 && !writeAheadGone && recorded !== undefined && recorded.digest !== snapshot.digest)
      addUnrecovered(dir, Math.abs(recorded.users - snapshot.count), false);
    // What the open committed (a killed sync's records), recovered or marked is the store's before anything is sent.
    await l.session.persist({ recovered: recovery !== undefined });
    return await syncWith(o, snapshot, l, input, recovery);
  } finally {
    snapshot.close();
  }
}

/** Users a recovery could not read back stay on the platform: the sync says so and is not `completed`. */
function unrecovered(report: SyncReport, dir: string, recovery: SnapshotRecovery | undefined): SyncReport {
  const marker = readUnrecovered(dir);
  if (marker === undefined) return report;
  const howMany = marker.exact
    ? `${marker.users}`
    : marker.users === 0
      ? 'an unknown number of'
      : `at least ${marker.users}`;
  const salvaged = recovery === undefined ? '' : ` (${recovery.salvaged} users recovered)`;
  report.error ??= new SnapshotError(
    'snapshot_users_unrecovered',
    `${howMany} users of a damaged sync snapshot could not be recovered: they were not removed if the file no longer holds them${salvaged}`,
    {
      fix: 'to remove them now, create a new audience, sync the input to it (with a new stateDir), move the campaigns to it and delete this one; otherwise they leave the audience when their membership expires, 13 months after their last upload; then acknowledge them with acceptUnrecovered: true',
    },
  );
  if (report.status === 'completed') report.status = 'partial';
  return report;
}

/** What planning produced. */
interface SyncPlan extends SyncPlanned {
  planner: SyncPlanner;
  read: ReadResult;
  spool: Spool;
}

async function syncWith(
  o: ResolvedSyncOptions,
  snapshot: Snapshot,
  l: Locked,
  identified: Promise<RunInput | undefined>,
  recovery: SnapshotRecovery | undefined,
): Promise<SyncReport> {
  const runId = l.runId;
  Spool.removeLeftovers(snapshot.dir);
  const spool = new Spool(snapshot.dir, runId);
  try {
    // What opening a large snapshot left (a database store's copy of it: 1.1 GB read at 10M users)
    // is collected before the planning loads its table and starts the hashing workers.
    if (snapshot.count >= LARGE_SYNC_USERS) collectGarbage();
    const plan = await planSync(o, snapshot, spool, runId);
    const finish = (sent: SyncSent, status?: SyncStatus): SyncReport =>
      buildSyncReport({
        accountId: o.accountId,
        target: o.target,
        dryRun: o.dryRun,
        full: o.full,
        refreshAfterDays: o.refreshAfterDays,
        plan,
        sent,
        snapshot,
        endedMs: o.now(),
        ...(status === undefined ? {} : { status }),
      });
    // Nothing sent yet: a failure to read the input is thrown, an interrupt reported.
    if (plan.read.error !== undefined) throw plan.read.error;
    if (plan.read.interrupted) return finish({}, 'interrupted');
    let refusal: ConfigError | undefined;
    try {
      const { maxRemovals, allowEmpty, minAudienceSize, target } = o;
      checkSyncPlan(plan.counts, { maxRemovals, allowEmpty, minAudienceSize, target });
    } catch (error) {
      if (!(error instanceof ConfigError) || !o.dryRun) throw error;
      refusal = error;
    }
    // Every record a Delete will send is read and checked against its user before anything is sent.
    if (plan.counts.removes > 0) snapshot.checkUsersNotIn(plan.planner.seen);
    if (o.dryRun) return finish({ ...(await dryRunSends(o, plan, snapshot)), error: refusal }, refusal && 'refused');
    const input = await identified;
    // The planning's garbage is collected before the sending allocates its request bodies.
    if (large(plan.counts)) collectGarbage();
    o.onPhase?.('planned', plan.counts, targetRef(o.target));
    const stored = await beginWriteAhead(plan, snapshot, l.session);
    return await audited(o, l.audit, plan, input, stored, async () => {
      const sent = await send(o, plan, snapshot, l.session, stored);
      return { report: unrecovered(finish(sent), snapshot.dir, recovery), sent };
    });
  } finally {
    spool.remove();
  }
}

/** Where a sync's sends stand in the store: the snapshot it holds, and the write-ahead record's. */
interface Stored {
  after: AuditSnapshotState;
  /** The write-ahead record begun before the run's start record (over this index), and whether the store took its commit. */
  writeAhead?: { indexSeq: number; committed: boolean };
}

/**
 * A sync with users to send begins its write-ahead record, durable in the store, before the audit
 * log records its start: until its commit, the next open finds that record or refuses the target.
 */
async function beginWriteAhead(plan: SyncPlan, snapshot: Snapshot, session: TargetSession): Promise<Stored> {
  if (plan.counts.removes === 0 && plan.spool.count === 0) return { after: plan.before };
  const indexSeq = snapshot.beginWriteAhead();
  await session.durable();
  return { after: plan.before, writeAhead: { indexSeq, committed: false } };
}

/**
 * From a million users a sync's phases each leave tens of MB for the collector (opening the
 * snapshot, planning, sending): a full collection between them keeps their peaks from adding
 * up. Below it the garbage is small, and each collection is a pass over the whole heap.
 */
/**
 * A user's recorded send time this far past the sync's own clock was written by a clock running
 * fast: refreshed now (machines in sync within seconds never come near it).
 */
const FUTURE_TOLERANCE_SEC = 3600;
const LARGE_SYNC_USERS = 1_000_000;
const large = (c: SyncPlanCounts): boolean => c.users + c.removes >= LARGE_SYNC_USERS;
const COLLECT_EVERY_BATCHES = 4;

async function planSync(o: ResolvedSyncOptions, snapshot: Snapshot, spool: Spool, runId: string): Promise<SyncPlan> {
  const startedMs = o.now();
  const target = o.target;
  const source = hashedUsers(o.users, o.records);
  const ownSummary = source.summary === undefined ? createHashSummary() : undefined;
  const nowSec = Math.floor(startedMs / 1000);
  const known = snapshot.keys(nowSec - Math.round(o.refreshAfterDays * 86_400), nowSec + FUTURE_TOLERANCE_SEC);
  const added = new AddedUsers(spool.sidePath('added'));
  const planner = new SyncPlanner(known, { full: o.full, added });
  const collector = new PlanCollector(planner, spool);
  let read: ReadResult;
  try {
    // A file's hashing workers leave out the text of the users this sync will not send.
    if (!o.full) source.leaveOutKnownUsers?.(known);
    read = await readInput({
      users: source,
      packer: collector,
      handle: collector.handle,
      target,
      ownSummary,
      signal: o.signal,
      onPacked: () => Promise.resolve(),
      onItem: () => undefined,
      stopped: () => false,
    });
    spool.skip(planner.endInput());
  } finally {
    // Stopped before or while reading the run (aborted): the run must not keep the table for its next use.
    source.leaveOutKnownUsers?.(undefined);
    added.remove();
  }
  return {
    planner,
    counts: planner.counts,
    summary: source.summary ?? ownSummary ?? createHashSummary(),
    read,
    spool,
    firstSync: !snapshot.existed,
    runId,
    startedMs,
    before: { users: snapshot.count, digest: snapshot.digest },
  };
}

/** The sending options of both operations: the caller's, with what sync decides. */
function sendOptions(o: ResolvedSyncOptions, signal: AbortSignal | undefined): ResolvedSendOptions {
  const { client, accountId, target, limits, concurrency, maxRetries, retryBaseMs, clock, random, cancelSignal } = o;
  // Users are sent once already (the plan deduplicates): no second set of fingerprints.
  return {
    client,
    accountId,
    target,
    limits,
    concurrency,
    maxRetries,
    retryBaseMs,
    clock,
    random,
    signal,
    cancelSignal,
    dedupe: false,
  };
}

/** A dry run: the requests and bytes each operation would take (packed, not sent). */
async function dryRunSends(o: ResolvedSyncOptions, plan: SyncPlan, snapshot: Snapshot): Promise<SyncSent> {
  const { client: _client, ...base } = sendOptions(o, o.signal);
  const removed = new InFlight(undefined, oversizedTest(o.limits, { operationType: 'Delete' }));
  const deletes = await sendResolved(base, {
    dryRun: true,
    operationType: 'Delete',
    users: removed.chunks(snapshotUsers(snapshot, plan.planner.seen)),
  });
  const updated = new InFlight(undefined, oversizedTest(o.limits, { operationType: 'Update' }));
  const updates = await sendResolved(base, {
    dryRun: true,
    operationType: 'Update',
    users: updated.chunks(plan.spool.chunks()),
  });
  return { deletes, updates, oversized: oversizedOf(removed, updated) };
}

/** The users each operation left out as too large for one request. */
function oversizedOf(removed: InFlight, updated: InFlight): SyncOversized {
  return { deletes: removed.oversized, updates: updated.oversized, lines: updated.oversizedLines };
}

/**
 * Deletes, confirmed, then Updates; each confirmed batch recorded in the snapshot. A snapshot
 * that cannot be written (disk full, the store's connection lost) stops the sending: a
 * confirmation must not be lost. `stored.after` becomes the committed snapshot once the store has it.
 */
async function send(
  o: ResolvedSyncOptions,
  plan: SyncPlan,
  snapshot: Snapshot,
  session: TargetSession,
  stored: Stored,
): Promise<SyncSent> {
  const stop = new AbortController();
  const { lease } = session;
  const signal = AbortSignal.any([...(o.signal === undefined ? [] : [o.signal]), stop.signal, lease.signal]);
  const sent: SyncSent = {};
  const record = (write: () => void): boolean => {
    try {
      write();
      return true;
    } catch (error) {
      sent.error ??= asKitError(error);
      stop.abort();
      return false;
    }
  };
  // A confirmation is recorded, and durable in the store, before its batch frees its slot: a kill
  // leaves at most the batches in flight confirmed but unrecorded.
  let settled = 0;
  const confirmed = async (write: () => void): Promise<void> => {
    // Each batch leaves its 5 MB body (and the text it was made of) for the collector, which V8
    // lets pile up to 100 MB and more in a long sync: collected every few batches instead.
    if (large(plan.counts) && ++settled % COLLECT_EVERY_BATCHES === 0) collectGarbage();
    if (!record(write)) return;
    try {
      await session.durable();
    } catch (error) {
      sent.error ??= asKitError(error);
      stop.abort();
    }
  };
  // Every request is sent under the lease: proven before each attempt, cut when it is lost.
  const base = { ...sendOptions(o, signal), lease };
  const { removed, updated } = writingAhead(o, snapshot, session);
  if (plan.counts.removes > 0) {
    o.onPhase?.('removing', plan.counts, targetRef(o.target));
    sent.deletes = await sendResolved(base, {
      operationType: 'Delete',
      users: removed.chunks(snapshotUsers(snapshot, plan.planner.seen)),
      onConfirmed: (b) => confirmed(() => snapshot.recordDeletes(removed.take(b.lines), o.now())),
    });
  }
  const deletesDone = sent.error === undefined && (sent.deletes === undefined || sent.deletes.status === 'completed');
  if (plan.spool.count > 0 && deletesDone) {
    o.onPhase?.('updating', plan.counts, targetRef(o.target));
    sent.updates = await sendResolved(base, {
      operationType: 'Update',
      users: updated.chunks(plan.spool.chunks()),
      onConfirmed: (b) => confirmed(() => snapshot.recordUpdates(updated.take(b.lines), o.now())),
    });
    // Refused users are reported by input line, not by their place in the send order.
    for (const e of sent.updates.operation_errors) if (e.line !== null) e.line = updated.lineOf(e.line);
  }
  sent.oversized = oversizedOf(removed, updated);
  for (const e of sent.deletes?.operation_errors ?? []) e.line = null;
  sent.updatesPending = plan.spool.count > 0 && sent.updates === undefined;
  // A lost lock: another process may hold the target now, and its snapshot is not this one's to commit.
  if (lease.signal.aborted) {
    sent.error ??= asKitError(lease.signal.reason);
    return sent;
  }
  // The sending's dead request bodies are collected before the commit sorts and merges the changes.
  if (large(plan.counts)) collectGarbage();
  if (!record(() => snapshot.commit())) return sent;
  try {
    await session.persist();
    stored.after = { users: snapshot.count, digest: snapshot.digest };
    if (stored.writeAhead !== undefined) stored.writeAhead.committed = true;
  } catch (error) {
    sent.error ??= asKitError(error);
  }
  return sent;
}

/**
 * The users of each operation in flight. The write-ahead record: each chunk's users are recorded
 * (fsync, and stored) before the sender gets them; a user no request can carry is left out
 * before that, so it is never recorded as sent.
 */
function writingAhead(
  o: ResolvedSyncOptions,
  snapshot: Snapshot,
  session: TargetSession,
): { removed: InFlight; updated: InFlight } {
  const removed = new InFlight(
    async (users) => {
      snapshot.recordIntentDeletes(users);
      await session.durable();
    },
    oversizedTest(o.limits, { operationType: 'Delete' }),
  );
  const updated = new InFlight(
    async (users) => {
      snapshot.recordIntentUpdates(users);
      await session.durable();
    },
    oversizedTest(o.limits, { operationType: 'Update' }),
  );
  return { removed, updated };
}

/** The audit log's run_start and run_end records around the sends. */
async function audited(
  o: ResolvedSyncOptions,
  audit: AuditLog | undefined,
  plan: SyncPlan,
  input: RunInput | undefined,
  stored: Stored,
  run: () => Promise<{ report: SyncReport; sent: SyncSent }>,
): Promise<SyncReport> {
  if (audit !== undefined) await audit.append(startRecord(o, plan, input, stored));
  let done: { report: SyncReport; sent: SyncSent } | undefined;
  let thrown: unknown;
  try {
    done = await run();
    return done.report;
  } catch (error) {
    thrown = error;
    throw error;
  } finally {
    if (audit !== undefined) {
      // The snapshot the store holds: a commit it could not take is not recorded as the target's.
      const committed = stored.writeAhead?.committed;
      const end = audit.append(syncAuditEnd({ plan, input, ...done, thrown, after: stored.after, committed }));
      // The sync's own error is the one to report, even when the audit log fails too.
      if (thrown !== undefined || o.onAuditError !== undefined) await end.catch(o.onAuditError ?? (() => undefined));
      else await end;
    }
  }
}

function startRecord(
  o: ResolvedSyncOptions,
  plan: SyncPlan,
  input: RunInput | undefined,
  stored: Stored,
): AuditRunStart {
  return {
    event: 'run_start',
    run_id: plan.runId,
    at: new Date().toISOString(),
    tool_version: VERSION,
    account_id: o.accountId,
    target: targetRef(o.target),
    operation: 'sync',
    input: input ?? { name: 'users', size: null, sha256: null },
    options: auditOptions({ normalize: o.normalize, users: o.users, limits: o.limits }, { operationType: 'Update' }),
    resumed: false,
    sandbox: o.sandbox,
    snapshot_before: plan.before,
    ...(stored.writeAhead === undefined ? {} : { write_ahead: { index_seq: stored.writeAhead.indexSeq } }),
  };
}
