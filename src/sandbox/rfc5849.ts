/**
 * The sandbox's own OAuth 1.0a check: HMAC-SHA1 signatures recomputed from RFC 5849 on
 * node:crypto. It shares no code with the client's signer (src/api/oauth.ts) on purpose: the
 * sandbox is the tests' judge of the platform, and a judge that verified with the client's own
 * base-string code would accept any mistake in it. Section numbers below are RFC 5849's.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { OAUTH_SIGNATURE_METHOD, OAUTH_VERSION } from './platform.js';

/** §3.6: the unreserved characters (RFC 3986 2.3), the only bytes left as they are. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
/** What each byte value becomes: itself when unreserved, else `%XX` in uppercase hex. */
const BYTE_TEXT = Array.from({ length: 256 }, (_, byte) => {
  const char = String.fromCharCode(byte);
  return UNRESERVED.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
});

/** §3.6: the text's UTF-8 bytes, each outside the unreserved set as `%XX`. */
export function encodeRfc5849(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) out += BYTE_TEXT[byte] ?? '';
  return out;
}

/** §3.5.1: one `name="value"` item of the header, separated by commas and optional spaces. */
const HEADER_ITEM = /[ \t]*([^\s=,"]+)[ \t]*=[ \t]*"([^"]*)"[ \t]*(?:,|$)/y;

/**
 * §3.5.1: the `Authorization: OAuth` header's parameters, names and values percent-decoded
 * (`realm` included). Null when the header is missing, is another scheme, is malformed, or
 * repeats a parameter (§3.5: a parameter MUST NOT appear more than once in a source).
 */
export function readOAuthHeader(header: string | undefined): Map<string, string> | null {
  const scheme = header === undefined ? null : /^[ \t]*OAuth(?:[ \t]+|$)/i.exec(header);
  if (header === undefined || scheme === null) return null;
  const params = new Map<string, string>();
  const rest = header.slice(scheme[0].length);
  if (rest.trim() === '') return params;
  let at = 0;
  while (at < rest.length) {
    HEADER_ITEM.lastIndex = at;
    const item = HEADER_ITEM.exec(rest);
    if (item === null) return null;
    const name = percentDecode(item[1] ?? '');
    const value = percentDecode(item[2] ?? '');
    if (name === null || value === null || params.has(name)) return null;
    params.set(name, value);
    at = HEADER_ITEM.lastIndex;
  }
  return params;
}

function percentDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

/**
 * §3.4.1.2: scheme and host in lowercase, the port only when it is not the scheme's default,
 * then the path; no query, no fragment.
 */
function baseUri(url: URL): string {
  const scheme = url.protocol.replace(/:$/, '').toLowerCase();
  const defaultPort = scheme === 'https' ? '443' : scheme === 'http' ? '80' : '';
  const port = url.port === '' || url.port === defaultPort ? '' : `:${url.port}`;
  return `${scheme}://${url.hostname.toLowerCase()}${port}${url.pathname === '' ? '/' : url.pathname}`;
}

/**
 * §3.4.1.3.2: every name and value encoded (§3.6), sorted by encoded name and then encoded
 * value in ascending byte order, `name=value` pairs joined with `&`. Encoded text is ASCII, so
 * comparing UTF-16 code units is comparing bytes.
 */
function normalizedParameters(pairs: ReadonlyArray<readonly [string, string]>): string {
  const encoded = pairs.map(([name, value]) => `${encodeRfc5849(name)}=${encodeRfc5849(value)}`);
  const byNameThenValue = (a: string, b: string): number => {
    const [an = '', av = ''] = a.split('=');
    const [bn = '', bv = ''] = b.split('=');
    if (an !== bn) return an < bn ? -1 : 1;
    return av === bv ? 0 : av < bv ? -1 : 1;
  };
  return encoded.sort(byNameThenValue).join('&');
}

export interface SignedRequest {
  method: string;
  /** The absolute URL the client addressed; its query parameters are signed (§3.4.1.3.1). */
  url: string;
  /** The header's parameters (from readOAuthHeader); `realm` and `oauth_signature` are left out of the base string. */
  oauth: ReadonlyMap<string, string>;
  /** Form-encoded body parameters, already form-decoded; empty for any other body (§3.4.1.3.1). */
  body: ReadonlyArray<readonly [string, string]>;
}

/** §3.4.1: method in uppercase, `&`, the encoded base string URI, `&`, the encoded parameters. */
export function signatureBase(request: SignedRequest): string {
  const url = new URL(request.url);
  const pairs: Array<readonly [string, string]> = [...url.searchParams];
  for (const [name, value] of request.oauth) {
    if (name !== 'realm' && name !== 'oauth_signature') pairs.push([name, value]);
  }
  pairs.push(...request.body);
  return `${request.method.toUpperCase()}&${encodeRfc5849(baseUri(url))}&${encodeRfc5849(normalizedParameters(pairs))}`;
}

/** §3.4.2: HMAC-SHA1 of the base string keyed by `encode(client secret)&encode(token secret)`, base64. */
export function hmacSha1Signature(base: string, clientSecret: string, tokenSecret: string): string {
  const key = `${encodeRfc5849(clientSecret)}&${encodeRfc5849(tokenSecret)}`;
  return createHmac('sha1', key).update(base, 'utf8').digest('base64');
}

/**
 * Whether the request carries a valid HMAC-SHA1 signature under these secrets (§3.2 item 1).
 * The method must be HMAC-SHA1 and `oauth_version`, when present, "1.0" (§3.1).
 */
export function hasValidSignature(request: SignedRequest, clientSecret: string, tokenSecret: string): boolean {
  const given = request.oauth.get('oauth_signature');
  if (given === undefined || request.oauth.get('oauth_signature_method') !== OAUTH_SIGNATURE_METHOD) return false;
  const version = request.oauth.get('oauth_version');
  if (version !== undefined && version !== OAUTH_VERSION) return false;
  const expected = Buffer.from(hmacSha1Signature(signatureBase(request), clientSecret, tokenSecret), 'latin1');
  const received = Buffer.from(given, 'latin1');
  return received.length === expected.length && timingSafeEqual(received, expected);
}
