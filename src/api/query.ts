/**
 * Query parameters of a request: their type and their encoding. Shared by the client (which
 * sends and signs them) and the rate limiter (whose rules can match on them).
 */
import type { QueryValue } from '../platform/request.js';
import { percentEncode } from './oauth.js';

/** A parameter's value: its type is the platform folder's, whose request specs state queries too. */
export type { QueryValue };

/** Query string with RFC 3986 encoding (the same encoding the signature uses). */
export function buildQueryString(query: Record<string, QueryValue> | undefined): string {
  if (query === undefined) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    const value = Array.isArray(v) ? v.join(',') : String(v);
    parts.push(`${percentEncode(k, 'query parameter name')}=${percentEncode(value, k)}`);
  }
  return parts.join('&');
}
