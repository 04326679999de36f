/**
 * For unattended pipelines: stop a run whose input loses too much, instead of ending `completed`
 * with most customers missing. The guard wraps a stream of hashed items (a hashCsv or hashRecords
 * run, or what uploadAudience reads) and throws InputError from the stream when the share of
 * rejected values passes a limit or when the input ended without a single user, so an upload
 * stops before sending what it has not sent yet (the last, partial batch included).
 */
import { ConfigError, InputError } from '../errors.js';
import type { HashSummary } from './summary.js';

export interface RejectGuardOptions {
  /** Largest acceptable share (0..1) of rejected values (malformed rows counted as rejected). */
  maxRejectRate?: number;
  /** An input that produced no user at all is an error (`input_no_users`). */
  requireUsers?: boolean;
}

/** The guard options of `o`, validated (ConfigError for a rate outside 0..1). */
export function rejectGuardOptions(o: RejectGuardOptions): RejectGuardOptions {
  const out: RejectGuardOptions = {};
  if (o.maxRejectRate !== undefined) {
    if (!(o.maxRejectRate >= 0 && o.maxRejectRate <= 1)) {
      throw new ConfigError('invalid_option', `maxRejectRate ${o.maxRejectRate} is not a share between 0 and 1`, {
        fix: 'pass for example 0.05 for 5%',
      });
    }
    out.maxRejectRate = o.maxRejectRate;
  }
  if (o.requireUsers === true) out.requireUsers = true;
  return out;
}

/** Mid-stream, the rate is judged only once this many values were seen (a bad first page is not the file). */
export const REJECT_GUARD_MIN_VALUES = 1000;

/** Rejected values (and malformed rows) and all values of a summary. */
export function rejectCounts(summary: HashSummary): { rejected: number; total: number } {
  let rejected = summary.malformed.count;
  let total = summary.malformed.count;
  for (const counts of Object.values(summary.types)) {
    rejected += counts.invalid;
    total += counts.valid + counts.invalid + counts.digests;
  }
  return { rejected, total };
}

const percent = (share: number): string => `${Math.round(share * 1000) / 10}%`;

/** Throw when `summary` breaks the limits; `ended`: the input was read to its end. */
export function checkRejects(summary: HashSummary, opts: RejectGuardOptions, ended: boolean, fix?: string): void {
  const { rejected, total } = rejectCounts(summary);
  const limit = opts.maxRejectRate;
  if (limit !== undefined && total > 0 && (ended || total >= REJECT_GUARD_MIN_VALUES) && rejected / total > limit) {
    throw new InputError(
      'input_reject_rate_exceeded',
      `${percent(rejected / total)} of the values were rejected (${rejected} of ${total}${ended ? '' : ' so far'}), above maxRejectRate ${percent(limit)}`,
      { fix: fix ?? 'see the rejected values by reason in the summary' },
    );
  }
  if (ended && opts.requireUsers === true && summary.users === 0) {
    throw new InputError('input_no_users', `no row produced a user (${summary.rows} rows read)`, {
      fix: fix ?? 'check the column mapping and the rejected values by reason',
    });
  }
}

/** checkRejects at the end of an input, as a value: the error, or undefined when the input passes. */
export function guardFailure(summary: HashSummary, opts: RejectGuardOptions, fix?: string): InputError | undefined {
  try {
    checkRejects(summary, opts, true, fix);
    return undefined;
  } catch (error) {
    if (error instanceof InputError) return error;
    throw error;
  }
}

/**
 * `items` with the guard applied between items and at the end. `summary` is read when checking
 * (a run's running summary, or the one its consumer keeps); `fix` (given the summary) names
 * the likely fix in the error. The run's other members (summary, close, byte counts) are kept.
 */
export function guardInput<T, R extends AsyncIterable<T> | Iterable<T>>(
  items: R,
  summary: () => HashSummary,
  opts: RejectGuardOptions,
  fix?: (summary: HashSummary) => string | undefined,
): R {
  if (opts.maxRejectRate === undefined && opts.requireUsers !== true) return items;
  const check = (ended: boolean): void => checkRejects(summary(), opts, ended, fix?.(summary()));
  async function* guarded(): AsyncGenerator<T> {
    for await (const item of items as AsyncIterable<T>) {
      check(false);
      yield item;
    }
    check(true);
  }
  return new Proxy(items, {
    get(target, key, receiver) {
      if (key === Symbol.asyncIterator) return guarded;
      if (key === Symbol.iterator) return undefined;
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
    has: (target, key) => key === Symbol.asyncIterator || (key !== Symbol.iterator && Reflect.has(target, key)),
  });
}
