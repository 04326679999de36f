/**
 * The options boundary. Each entry (uploadAudience, runUpload and syncAudience, and the CLI's
 * sending commands) parses its options once with its zod schema into one resolved value:
 * defaults filled in, limits and times checked, the target described, the batch group built.
 * Everything below an entry takes that value and checks nothing again. Messages name the
 * library option (`maxRetries`, `expiresAt`); the CLI translates them to its flags.
 *
 * A new option is one line in the fields of the entries that take it.
 */
import { givenLabel } from '../identifiers/labels.js';
import { z } from 'zod';
import type { AdsClient } from '../api/client.js';
import { DEFAULT_MIN_AUDIENCE_SIZE } from './audience-size.js';
import { ConfigError } from '../errors.js';
import { resolveRowRules, type HashRecordsOptions } from '../hashing/pipeline.js';
import type { RowRules } from '../identifiers/rows.js';
import { rejectGuardOptions, type RejectGuardOptions } from '../hashing/reject-guard.js';
import type { UploadJournal } from '../state/journal.js';
import { realClock, type Clock } from '../util/clock.js';
import type { Lease } from '../util/lease.js';
import { resolveBatchLimits, type BatchLimits, type PackedBatch } from './plan.js';
import type { BatchGroup, OperationType } from '../platform/batch.js';
import { TARGET_KINDS } from '../platform/targets.js';
import { describeTarget, type Target } from './target.js';
import type { ConfirmedBatchInfo, UploadOperation, UploadProgress, UploadUsers } from './types.js';
import type { UploadTarget } from '../platform/targets.js';

/** Measured against the sandbox on 2 cores (docs/performance.md): more gains nothing, fewer leaves the link idle. */
export const DEFAULT_UPLOAD_CONCURRENCY = 4;
export const DEFAULT_MAX_RETRIES = 5;
export const DEFAULT_RETRY_BASE_MS = 1000;
export const DEFAULT_PROGRESS_INTERVAL_MS = 250;

// ---------------------------------------------------------------------------------------------
// Field checks: each throws a ConfigError naming the option.

function parseIsoTime(value: string, option: string): string {
  const ok = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value);
  const ms = ok ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new ConfigError(
      'invalid_time',
      `${option} must be an ISO 8601 date-time such as 2030-01-31T00:00:00Z, got ${givenLabel(value)}`,
      { fix: `pass ${option} in UTC, e.g. 2030-01-31T00:00:00Z` },
    );
  }
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

export function operationType(operation: UploadOperation | undefined): OperationType {
  const op = operation ?? 'update';
  if (op !== 'update' && op !== 'delete') {
    throw new ConfigError('invalid_operation', `operation must be update or delete, got "${String(op)}"`, {
      fix: "pass operation 'update' or 'delete'",
    });
  }
  return op === 'update' ? 'Update' : 'Delete';
}

/**
 * The batch group of an upload (times normalized to UTC). Do-not-reach lists refuse effective_at
 * and take expires_at only up to 13 months ahead.
 */
function uploadGroup(
  target: Target,
  o: { operation?: UploadOperation | undefined; effectiveAt?: string | undefined; expiresAt?: string | undefined },
  now: Date,
): BatchGroup {
  const group: BatchGroup = { operationType: operationType(o.operation) };
  if (o.effectiveAt !== undefined) {
    if (!target.takesEffectiveAt) {
      throw new ConfigError(
        'dnr_effective_at',
        'do-not-reach lists do not take effectiveAt (membership starts when the upload is processed)',
        { fix: 'drop effectiveAt' },
      );
    }
    group.effectiveAt = parseIsoTime(o.effectiveAt, 'effectiveAt');
  }
  if (o.expiresAt !== undefined) group.expiresAt = checkExpiry(o.expiresAt, group, target, now);
  return group;
}

/** The batch group of `o` alone (what the entries' schemas build): for a caller that checks one. */
export function resolveUploadGroup(o: {
  target: UploadTarget;
  operation?: UploadOperation;
  effectiveAt?: string | undefined;
  expiresAt?: string | undefined;
  now?: Date;
}): BatchGroup {
  return uploadGroup(describeTarget(o.target), o, o.now ?? new Date());
}

function checkExpiry(value: string, group: BatchGroup, target: Target, now: Date): string {
  const expiresAt = parseIsoTime(value, 'expiresAt');
  const expires = Date.parse(expiresAt);
  const from = group.effectiveAt === undefined ? now.getTime() : Date.parse(group.effectiveAt);
  if (expires <= from) {
    throw new ConfigError(
      'invalid_expiry',
      `expiresAt ${expiresAt} is not after ${group.effectiveAt === undefined ? 'now' : 'effectiveAt'}`,
      { fix: 'pass a later expiresAt' },
    );
  }
  const max = target.maxExpiry(now);
  if (max !== undefined && expires >= max.getTime()) {
    throw new ConfigError(
      'dnr_expiry_too_far',
      `expiresAt ${expiresAt} is not under 13 months ahead; do-not-reach memberships last less than 13 months`,
      {
        fix: `pass expiresAt before ${max.toISOString()}, or omit it for the platform default`,
      },
    );
  }
  return expiresAt;
}

function wholeNumber(value: unknown, fallback: number, option: string, min: number, max: number): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(
      'invalid_option',
      `${option} must be a whole number from ${min} to ${max}, got ${typeof v === 'number' ? String(v) : typeof v}`,
      {
        fix: `pass ${option} within ${min}..${max}, or omit it for the default ${fallback}`,
      },
    );
  }
  return v;
}

/** The target as `describeTarget` gives it (a Target already described is taken as it is). */
function describeUploadTarget(target: unknown): Target {
  if (typeof target === 'object' && target !== null && 'postUsers' in target) return target as Target;
  const t = target as Record<string, unknown> | null;
  const ids = TARGET_KINDS.map((k) => k.idOption);
  const named = typeof t === 'object' && t !== null ? ids.filter((option) => typeof t[option] === 'string') : [];
  // One kind, named by its option: a target naming two is refused, not one of them picked.
  if (named.length !== 1) {
    throw new ConfigError('invalid_option', `target must be ${ids.map((i) => `{ ${i} }`).join(' or ')}`, {
      fix: `pass target: ${ids.map((i) => `{ ${i}: '…' }`).join(' or ')}`,
    });
  }
  return describeTarget(target as UploadTarget);
}

// ---------------------------------------------------------------------------------------------
// Schemas.

/** `check`'s result; a ConfigError it throws becomes the parse's issue (and, by parseOptions, its error). */
export function orIssue<T>(ctx: z.RefinementCtx, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    ctx.addIssue({ code: 'custom', message: error.message, params: { error } });
    return z.NEVER;
  }
}

/** A field whose value `check` resolves. */
function checked<T>(check: (value: unknown) => T) {
  return z
    .unknown()
    .optional()
    .transform((value, ctx): T => orIssue(ctx, () => check(value)));
}

/** A value handed through as it is (a client, a stream, a callback): nothing to check. */
const given = <T>() => z.custom<T>((v) => v !== undefined).optional();
const callback = <T extends (...args: never[]) => unknown>() =>
  z.custom<T>((v) => typeof v === 'function', { message: 'must be a function' }).optional();

/** The options of how batches are sent: every entry takes them. */
export const SEND_FIELDS = {
  client: given<AdsClient>(),
  accountId: z.string(),
  target: checked(describeUploadTarget),
  limits: checked((v) => resolveBatchLimits(v as Partial<BatchLimits> | undefined)),
  dedupe: z.boolean().default(true),
  concurrency: checked((v) => wholeNumber(v, DEFAULT_UPLOAD_CONCURRENCY, 'concurrency', 1, 64)),
  maxRetries: checked((v) => wholeNumber(v, DEFAULT_MAX_RETRIES, 'maxRetries', 0, 100)),
  retryBaseMs: z.number().min(0).default(DEFAULT_RETRY_BASE_MS),
  signal: given<AbortSignal>(),
  cancelSignal: given<AbortSignal>(),
  /** A sync's lease on its target (set by sync, not a caller): every request is sent under it. */
  lease: given<Lease>(),
  onConfirmed: callback<(batch: ConfirmedBatchInfo) => void | Promise<void>>(),
  clock: z.custom<Clock>().default(realClock),
  random: z.custom<() => number>((v) => typeof v === 'function').default(() => Math.random),
};

/** What the users are and what is done with them: uploadAudience's and runUpload's. */
export const UPLOAD_FIELDS = {
  ...SEND_FIELDS,
  operation: checked((v): UploadOperation =>
    operationType(v as UploadOperation | undefined) === 'Update' ? 'update' : 'delete',
  ),
  effectiveAt: z.string().optional(),
  expiresAt: z.string().optional(),
  users: z.custom<UploadUsers>((v) => typeof v === 'object' && v !== null, { message: 'must be iterable' }),
  records: given<HashRecordsOptions>(),
  maxRejectRate: z.number().optional(),
  requireUsers: z.boolean().optional(),
  minAudienceSize: z.number().int().min(0).default(DEFAULT_MIN_AUDIENCE_SIZE),
  journal: given<UploadJournal>(),
  dryRun: z.boolean().default(false),
  runId: z.string().optional(),
  onBatch: callback<(batch: PackedBatch) => void>(),
  onProgress: callback<(p: UploadProgress) => void>(),
  progressIntervalMs: z.number().min(0).default(DEFAULT_PROGRESS_INTERVAL_MS),
  inputProgress: callback<() => { bytesRead: number; totalBytes?: number }>(),
};

/** The fields every upload entry has (runUpload has all but `journal`). */
type UploadCore = z.output<z.ZodObject<Omit<typeof UPLOAD_FIELDS, 'journal' | 'users' | 'client'>>>;
type Settled<T> = Omit<T, 'operation' | 'effectiveAt' | 'expiresAt' | 'maxRejectRate' | 'requireUsers' | 'records'> & {
  operation: UploadOperation;
  group: BatchGroup;
  guard: RejectGuardOptions;
  records: RowRules | undefined;
};

/**
 * How raw records (the `records` option) become users, resolved once: the normalization options
 * checked and the mapping limited to the identifier types the target takes (unless `records.types` says).
 */
export function recordRules(records: HashRecordsOptions | undefined, target: Target): RowRules | undefined {
  if (records === undefined) return undefined;
  const rules = resolveRowRules({ ...(target.types === undefined ? {} : { types: target.types }), ...records });
  // Do-not-reach lists are never filtered: the people who said no belong there.
  return target.filtersConsent ? rules : { ...rules, consent: 'include' };
}

/** The signal that stops a run: `signal`, or `cancelSignal`, which also cuts the requests on the wire. */
export function runSignal(o: { signal?: AbortSignal | undefined; cancelSignal?: AbortSignal | undefined }) {
  const { signal, cancelSignal } = o;
  if (signal === undefined || cancelSignal === undefined) return signal ?? cancelSignal;
  return AbortSignal.any([signal, cancelSignal]);
}

/** The upload's resolved value from its parsed fields: the batch group, the reject guard and the records' rules. */
function settleUpload<T extends UploadCore>(o: T, ctx: z.RefinementCtx): Settled<T> {
  const { operation, effectiveAt, expiresAt, maxRejectRate, requireUsers, records, ...rest } = o;
  return orIssue(ctx, () => ({
    ...rest,
    signal: runSignal(o),
    operation,
    records: recordRules(records, o.target),
    group: uploadGroup(o.target, { operation, effectiveAt, expiresAt }, new Date(o.clock.now())),
    guard: rejectGuardOptions({
      ...(maxRejectRate === undefined ? {} : { maxRejectRate }),
      ...(requireUsers === undefined ? {} : { requireUsers }),
    }),
  }));
}

/** An entry's schema over `fields`: the upload's group and guard settled, and a client required unless `dryRun`. */
export function uploadSchema<F extends Omit<typeof UPLOAD_FIELDS, 'journal'>>(fields: F, entry: string) {
  return z
    .object(fields)
    .transform((o, ctx) => settleUpload(o as z.output<z.ZodObject<F>> & UploadCore, ctx))
    .superRefine((o, ctx) => needsClient(o, ctx, entry));
}

/**
 * The same without the values only a session brings (`users`, `client`): what the CLI parses from
 * its flags before the input is opened or the client made, and completes with them later.
 */
export function uploadSettingsSchema<F extends Omit<typeof UPLOAD_FIELDS, 'journal'>>(fields: F) {
  const { users: _users, client: _client, ...settings } = fields;
  return z.object(settings).transform((o, ctx) => settleUpload(o as typeof o & UploadCore, ctx));
}

/** No client is needed for a dry run only. */
export function needsClient(o: { client?: unknown; dryRun: boolean }, ctx: z.RefinementCtx, entry: string): void {
  if (o.dryRun || o.client !== undefined) return;
  orIssue(ctx, () => {
    throw new ConfigError('missing_client', `${entry} needs a client unless dryRun is set`, {
      fix: 'pass client: createClient({...})',
    });
  });
}

const UPLOAD_SCHEMA = uploadSchema(UPLOAD_FIELDS, 'uploadAudience');

/** uploadAudience's options, resolved: what the upload below its entry takes. */
export type ResolvedUploadOptions = z.output<typeof UPLOAD_SCHEMA>;

/** The options of uploadAudience, parsed once (ConfigError naming the first option refused). */
export function resolveUploadOptions(o: unknown): ResolvedUploadOptions {
  return parseOptions(UPLOAD_SCHEMA, o);
}

/** The sending part of a resolved value, for a caller that sends without the upload's extras (sync). */
export type ResolvedSendOptions = z.output<z.ZodObject<typeof SEND_FIELDS>>;

/** Parse `o` with `schema`; the first refused option is thrown as a ConfigError naming it. */
export function parseOptions<S extends z.ZodType>(schema: S, o: unknown): z.output<S> {
  const parsed = schema.safeParse(o);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const known: unknown =
    issue?.code === 'custom' ? (issue.params as { error?: unknown } | undefined)?.error : undefined;
  if (known instanceof ConfigError) throw known;
  const option = issue === undefined || issue.path.length === 0 ? 'options' : issue.path.join('.');
  throw new ConfigError('invalid_option', `${option}: ${issue?.message ?? 'invalid'}`, {
    fix: `correct ${option} (the options are listed in docs/library.md)`,
  });
}
