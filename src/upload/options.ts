/**
 * Checking upload options before anything is read or sent. Messages name the library option
 * (`maxRetries`, `expiresAt`); the CLI translates them to its flags.
 */
import { ConfigError } from '../errors.js';
import type { BatchGroup, OperationType } from './plan.js';
import { describeTarget, type Target } from './target.js';
import type { UploadOperation, UploadTarget } from './types.js';

/** Measured against the sandbox on 2 cores (docs/performance.md): more gains nothing, fewer leaves the link idle. */
export const DEFAULT_UPLOAD_CONCURRENCY = 4;
export const DEFAULT_MAX_RETRIES = 5;

function parseIsoTime(value: string, option: string): string {
  const ok = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value);
  const ms = ok ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new ConfigError(
      'invalid_time',
      `${option} must be an ISO 8601 date-time such as 2030-01-31T00:00:00Z, got "${value}"`,
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
 * Check the operation parameters before anything is sent; returns the batch group (times
 * normalized to UTC). Do-not-reach lists refuse effective_at and take expires_at only up to
 * 13 months ahead.
 */
export function resolveUploadGroup(o: {
  target: UploadTarget;
  operation?: UploadOperation;
  effectiveAt?: string | undefined;
  expiresAt?: string | undefined;
  now?: Date;
}): BatchGroup {
  const now = o.now ?? new Date();
  const group: BatchGroup = { operationType: operationType(o.operation) };
  const target = describeTarget(o.target);
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

/** Check the sending options (ConfigError naming the option); runUpload calls it before opening the journal. */
export function resolveSendOptions(o: { concurrency?: number | undefined; maxRetries?: number | undefined }): {
  concurrency: number;
  maxRetries: number;
} {
  return {
    concurrency: wholeNumber(o.concurrency, DEFAULT_UPLOAD_CONCURRENCY, 'concurrency', 1, 64),
    maxRetries: wholeNumber(o.maxRetries, DEFAULT_MAX_RETRIES, 'maxRetries', 0, 100),
  };
}

function wholeNumber(value: number | undefined, fallback: number, option: string, min: number, max: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(
      'invalid_option',
      `${option} must be a whole number from ${min} to ${max}, got ${String(v)}`,
      {
        fix: `pass ${option} within ${min}..${max}, or omit it for the default ${fallback}`,
      },
    );
  }
  return v;
}
