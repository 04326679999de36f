import { ConfigError } from '../errors.js';

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
  total_count?: number;
  request?: unknown;
}

/**
 * Follows `next_cursor` until null, yielding items one by one. `fetchPage(undefined)` fetches
 * the first page; pass `withTotalCount` only then (the platform refuses it with a cursor).
 */
export async function* paginate<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncIterable<T> {
  let cursor: string | undefined;
  const seen = new Set<string>();
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.data;
    if (page.next_cursor === null || page.next_cursor === '') return;
    // A server that hands back a cursor it already gave would loop forever.
    if (seen.has(page.next_cursor)) return;
    seen.add(page.next_cursor);
    cursor = page.next_cursor;
  }
}

function invalid(parameter: string, message: string, allowed: string): ConfigError {
  return new ConfigError('invalid_parameter', `Invalid ${parameter}: ${message}`, { fix: `Use ${allowed}` });
}

/** count: an integer in [min, max] (checked before sending). */
export function checkCount(parameter: string, value: number | undefined, min: number, max: number): void {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw invalid(parameter, `${String(value)} is out of range`, `an integer from ${min} to ${max}`);
  }
}

/** Comma-separated id lists: at most `max` ids, none empty or containing a comma. */
export function checkIdList(parameter: string, ids: readonly string[] | undefined, max: number): void {
  if (ids === undefined) return;
  if (ids.length === 0 || ids.length > max) {
    throw invalid(parameter, `${ids.length} ids given`, `from 1 to ${max} ids`);
  }
  if (ids.some((id) => id === '' || id.includes(','))) {
    throw invalid(parameter, 'an id is empty or contains a comma', 'non-empty ids without commas');
  }
}

/** `with_total_count` and `cursor` cannot be combined (the platform refuses it). */
export function checkTotalCountCursor(withTotalCount: boolean | undefined, cursor: string | undefined): void {
  if (withTotalCount === true && cursor !== undefined) {
    throw invalid(
      'with_total_count',
      'cannot be combined with cursor',
      'with_total_count only on the first page (no cursor)',
    );
  }
}
