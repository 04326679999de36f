/**
 * A request as the platform folder states it: plain data (method, path, query, body, the
 * response's schema with what the caller reads of it), sent by a generic executor above
 * (`sendRequest` in api/endpoints.ts), which adds the client's signals, lease and retries. The
 * platform imports no client: a target kind's endpoints are these specs (platform/kinds/).
 */
import type { z } from 'zod';
import { ConfigError } from '../errors.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';
export type QueryValue = string | number | boolean | readonly string[] | undefined;

export interface RequestSpec<R> {
  readonly method: HttpMethod;
  /** Path with already-encoded segments (`pathSegment`), e.g. `/12/accounts/abc/custom_audiences`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, QueryValue>>;
  /** The exact JSON bytes sent (a user batch, checked against the limits by the executor's caller). */
  readonly json?: Buffer;
  /** False for a request that creates something: retried only when the platform surely did not process it. */
  readonly idempotent?: boolean;
  /** The response's shape, checked by the client, and what the caller reads of it (a transform). */
  readonly schema: z.ZodType<R>;
}

/** One path segment: a non-empty id, percent-encoded (`name` for the message). */
export function pathSegment(id: string, name: string): string {
  if (id === '')
    throw new ConfigError('invalid_parameter', `Invalid ${name}: empty`, { fix: `Give a non-empty ${name}` });
  return encodeURIComponent(id);
}

/** The path of an account's resources: `/12/accounts/{accountId}`, the account id checked and encoded. */
export const accountPath = (accountId: string): string => `/12/accounts/${pathSegment(accountId, 'account id')}`;
