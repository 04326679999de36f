/**
 * OAuth 1.0a verification for the sandbox: consumer key, token, timestamp and nonce here; the
 * signature is recomputed by the sandbox's own RFC 5849 code (rfc5849.ts), which shares nothing
 * with the client's signer, so a signing mistake in the client fails against the sandbox.
 */
import { hasValidSignature, readOAuthHeader } from './rfc5849.js';
import type { SandboxStore, TokenRec } from './state.js';

/**
 * How far `oauth_timestamp` may be from the server clock. The reference gives no figure (RFC 5849
 * 3.3 leaves it to the server); five minutes is the sandbox's choice.
 */
export const TIMESTAMP_WINDOW_S = 300;

export interface VerifiedRequest {
  consumerKey: string;
  /** Absent for request_token (consumer-only signature). */
  token?: string;
  tokenRec?: TokenRec;
  oauth: Record<string, string>;
}

export type AuthOutcome = { ok: true; value: VerifiedRequest } | { ok: false; message: string };

export interface AuthInput {
  method: string;
  /** Absolute URL as the client addressed it. */
  url: string;
  authorization: string | undefined;
  bodyParams: Array<[string, string]>;
  /** 'access': ads endpoints; 'request': access_token step; 'none': request_token step. */
  tokenKind: 'access' | 'request' | 'none';
}

export class OAuthVerifier {
  /** Per consumer key: nonce -> timestamp, pruned once entries leave the timestamp window. */
  private readonly nonces = new Map<string, Map<string, number>>();
  private inserts = 0;

  constructor(
    private readonly consumerKey: string,
    private readonly consumerSecret: string,
    private readonly store: SandboxStore,
    private readonly now: () => number,
  ) {}

  verify(input: AuthInput): AuthOutcome {
    const header = readOAuthHeader(input.authorization);
    if (header === null) return { ok: false, message: 'Missing or malformed Authorization: OAuth header' };
    const oauth = Object.fromEntries(header);
    const key = oauth['oauth_consumer_key'];
    if (key === undefined || key !== this.consumerKey) return { ok: false, message: 'Unknown consumer key' };
    const token = oauth['oauth_token'];
    let tokenRec: TokenRec | undefined;
    if (input.tokenKind !== 'none') {
      tokenRec = token === undefined ? undefined : this.store.tokens.get(token);
      if (tokenRec === undefined || tokenRec.kind !== input.tokenKind) {
        return { ok: false, message: token === undefined ? 'Missing oauth_token' : 'Invalid or expired token' };
      }
    }
    const ts = Number(oauth['oauth_timestamp']);
    const nowS = this.now() / 1000;
    if (!Number.isFinite(ts) || Math.abs(ts - nowS) > TIMESTAMP_WINDOW_S) {
      return { ok: false, message: 'Timestamp out of bounds (more than 300 seconds from the server clock)' };
    }
    const nonce = oauth['oauth_nonce'];
    if (nonce === undefined || nonce === '') return { ok: false, message: 'Missing oauth_nonce' };
    const valid = hasValidSignature(
      { method: input.method, url: input.url, oauth: header, body: input.bodyParams },
      this.consumerSecret,
      tokenRec?.secret ?? '',
    );
    if (!valid) return { ok: false, message: 'Could not authenticate you (signature mismatch)' };
    // Only a correctly signed request consumes its nonce, so garbage cannot burn real nonces.
    if (!this.rememberNonce(key, nonce, ts)) return { ok: false, message: 'Nonce already used' };
    return {
      ok: true,
      value: {
        consumerKey: key,
        ...(token === undefined ? {} : { token }),
        ...(tokenRec === undefined ? {} : { tokenRec }),
        oauth,
      },
    };
  }

  private rememberNonce(key: string, nonce: string, ts: number): boolean {
    let seen = this.nonces.get(key);
    if (seen === undefined) {
      seen = new Map();
      this.nonces.set(key, seen);
    }
    if (seen.has(nonce)) return false;
    seen.set(nonce, ts);
    this.inserts += 1;
    if (this.inserts % 1024 === 0) {
      const oldest = this.now() / 1000 - 2 * TIMESTAMP_WINDOW_S;
      for (const [n, t] of seen) if (t < oldest) seen.delete(n);
    }
    return true;
  }
}
