/**
 * OAuth 1.0a request signing (RFC 5849, HMAC-SHA1) on node:crypto.
 *
 * Own code rather than a dependency: the whole protocol is ~100 lines and the popular packages
 * are unmaintained or pull in request-era baggage. The sandbox verifies with a separate
 * implementation (src/sandbox/rfc5849.ts), so a mistake here fails against it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../errors.js';

export interface OAuth1Request {
  method: string;
  /** Absolute URL; its query-string parameters are signed. */
  url: string | URL;
  consumerKey: string;
  consumerSecret: string;
  token?: string;
  tokenSecret?: string;
  /** Form-encoded (application/x-www-form-urlencoded) body parameters: signed. A JSON body is never signed. */
  params?: Record<string, string>;
  /** Extra protocol parameters such as `oauth_callback` or `oauth_verifier`. */
  oauthParams?: Record<string, string>;
  /** Defaults to 32 random hex characters (ASCII, as the platform requires). */
  nonce?: string;
  /** Whole Unix seconds, as a number or a string of digits; defaults to now. */
  timestamp?: number | string;
}

export type OAuthParamPairs = Iterable<readonly [string, string]>;

/**
 * RFC 5849 3.6: UTF-8 bytes, only A-Z a-z 0-9 - . _ ~ unreserved, uppercase hex. `parameter`
 * names the value in the error a lone UTF-16 surrogate causes (the value itself is never shown:
 * it may be a secret).
 */
export function percentEncode(value: string, parameter = 'value'): string {
  let encoded: string;
  try {
    encoded = encodeURIComponent(value);
  } catch (e) {
    // A lone surrogate has no UTF-8 encoding. Replacing it (as Buffer does, with U+FFFD) would
    // silently send and sign another value than the caller's, and secrets or a server decoding
    // differently would then fail as a bare 401: naming the parameter here is the useful answer.
    if (!(e instanceof URIError)) throw e;
    throw new ConfigError(
      'invalid_parameter',
      `Invalid ${parameter}: it contains a lone UTF-16 surrogate, which has no UTF-8 encoding`,
      {
        fix: `Remove the broken character from the ${parameter} (often a string cut in the middle of an emoji)`,
      },
    );
  }
  // encodeURIComponent leaves ! ' ( ) * unescaped; RFC 3986 unreserved does not include them.
  return encoded.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** RFC 5849 3.4.1.2: lowercase scheme and host, default port dropped, no query or fragment. */
export function baseStringUri(url: string | URL): string {
  const u = typeof url === 'string' ? new URL(url) : url;
  // WHATWG URL already lowercases scheme and host and drops the scheme's default port.
  return `${u.protocol}//${u.host}${u.pathname}`;
}

/** RFC 5849 3.4.1.3.2: encode names and values, sort by name then value (byte order), join. */
export function normalizeParameters(pairs: OAuthParamPairs): string {
  const encoded: Array<[string, string]> = [];
  for (const [k, v] of pairs) encoded.push([percentEncode(k, 'parameter name'), percentEncode(v, k)]);
  encoded.sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return encoded.map(([k, v]) => `${k}=${v}`).join('&');
}

/**
 * RFC 5849 3.4.1: the signature base string. `params` are every signed parameter except the
 * URL's query (which is taken from `url`): oauth_* protocol parameters (without
 * `oauth_signature` and `realm`) and form body parameters.
 */
export function signatureBaseString(method: string, url: string | URL, params: OAuthParamPairs): string {
  const u = typeof url === 'string' ? new URL(url) : url;
  const all: Array<[string, string]> = [...u.searchParams];
  for (const [k, v] of params) all.push([k, v]);
  return [method.toUpperCase(), percentEncode(baseStringUri(u)), percentEncode(normalizeParameters(all))].join('&');
}

/** RFC 5849 3.4.2: HMAC-SHA1 keyed with `enc(consumer_secret)&enc(token_secret)`, base64. */
export function oauth1Signature(baseString: string, consumerSecret: string, tokenSecret = ''): string {
  const key = `${percentEncode(consumerSecret, 'consumer secret')}&${percentEncode(tokenSecret, 'token secret')}`;
  return createHmac('sha1', key).update(baseString).digest('base64');
}

function entries(params: Record<string, string> | undefined): Array<[string, string]> {
  return params === undefined ? [] : Object.entries(params);
}

/** `oauth_timestamp`: whole seconds, so that "1.5" or "1e9" never reach a server that would refuse them. */
function timestampParam(timestamp: number | string | undefined): string {
  if (timestamp === undefined) return String(Math.floor(Date.now() / 1000));
  if (
    typeof timestamp === 'number' ? Number.isSafeInteger(timestamp) && timestamp >= 0 : /^\d{1,15}$/.test(timestamp)
  ) {
    return String(timestamp);
  }
  throw new ConfigError(
    'invalid_parameter',
    `Invalid timestamp: ${JSON.stringify(String(timestamp)).slice(0, 40)} is not a whole number of Unix seconds`,
    {
      fix: 'Pass the timestamp as whole Unix seconds, a number or a string of digits (for example 1318622958), or leave it out for the current time',
    },
  );
}

/** The signed protocol parameters, `oauth_signature` included (what goes into the header). */
export function oauth1Params(request: OAuth1Request): Record<string, string> {
  const protocol: Record<string, string> = {
    oauth_consumer_key: request.consumerKey,
    oauth_nonce: request.nonce ?? randomBytes(16).toString('hex'),
    oauth_signature_method: 'HMAC-SHA1',
    oauth_timestamp: timestampParam(request.timestamp),
    oauth_version: '1.0',
    ...(request.token === undefined ? {} : { oauth_token: request.token }),
    ...request.oauthParams,
  };
  const base = signatureBaseString(request.method, request.url, [
    ...Object.entries(protocol),
    ...entries(request.params),
  ]);
  protocol['oauth_signature'] = oauth1Signature(base, request.consumerSecret, request.tokenSecret ?? '');
  return protocol;
}

/** The `Authorization` header value: `OAuth k="v", ...` (sorted, percent-encoded). */
export function oauth1Header(request: OAuth1Request): string {
  const fields = Object.entries(oauth1Params(request))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${percentEncode(k, 'parameter name')}="${percentEncode(v, k)}"`);
  return `OAuth ${fields.join(', ')}`;
}

/**
 * Parses an `Authorization: OAuth ...` header into decoded parameters (`realm` included).
 * Returns null when the header is not a well-formed OAuth header.
 */
export function parseOAuthHeader(header: string | undefined): Record<string, string> | null {
  if (header === undefined) return null;
  const m = /^\s*OAuth\s+(.*)$/is.exec(header);
  if (m === null) return null;
  const body = (m[1] ?? '').trim();
  const out: Record<string, string> = {};
  if (body === '') return out;
  const re = /\s*([^=\s,]+)\s*=\s*"([^"]*)"\s*(?:,|$)/gy;
  let consumed = 0;
  for (let hit = re.exec(body); hit !== null; hit = re.exec(body)) {
    try {
      out[decodeURIComponent(hit[1] ?? '')] = decodeURIComponent(hit[2] ?? '');
    } catch {
      return null;
    }
    consumed = re.lastIndex;
    if (consumed >= body.length) break;
  }
  return consumed === body.length ? out : null;
}

export interface OAuth1Verification {
  method: string;
  /** The absolute URL as the client addressed it (scheme, Host header, path, query). */
  url: string | URL;
  /** Parsed header parameters (from `parseOAuthHeader`), `oauth_signature` included. */
  oauthParams: Record<string, string>;
  /** Form-encoded body parameters, when the body is application/x-www-form-urlencoded. */
  bodyParams?: Record<string, string> | OAuthParamPairs;
  consumerSecret: string;
  tokenSecret?: string;
}

/** Recomputes the signature with the signing code and compares in constant time. */
export function verifyOauth1Signature(v: OAuth1Verification): boolean {
  const given = v.oauthParams['oauth_signature'];
  if (given === undefined || v.oauthParams['oauth_signature_method'] !== 'HMAC-SHA1') return false;
  const signed = Object.entries(v.oauthParams).filter(([k]) => k !== 'oauth_signature' && k !== 'realm');
  const body =
    v.bodyParams === undefined ? [] : isPairs(v.bodyParams) ? [...v.bodyParams] : Object.entries(v.bodyParams);
  const expected = oauth1Signature(
    signatureBaseString(v.method, v.url, [...signed, ...body]),
    v.consumerSecret,
    v.tokenSecret ?? '',
  );
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function isPairs(p: Record<string, string> | OAuthParamPairs): p is OAuthParamPairs {
  return typeof (p as Partial<OAuthParamPairs>)[Symbol.iterator] === 'function';
}
