import { describe, expect, it } from 'vitest';
import {
  encodeRfc5849,
  hasValidSignature,
  hmacSha1Signature,
  readOAuthHeader,
  signatureBase,
  type SignedRequest,
} from '../src/sandbox/rfc5849.js';

/**
 * The sandbox's own OAuth 1.0a verifier (src/sandbox/rfc5849.ts) against published test vectors
 * only: nothing here comes from the client's signer, so the two implementations check each other.
 */
const form = (body: string): Array<[string, string]> => [...new URLSearchParams(body)];

describe('percent-encoding (RFC 5849 3.6)', () => {
  it('leaves only ALPHA, DIGIT, "-", ".", "_", "~"; UTF-8 bytes in uppercase hex', () => {
    expect(encodeRfc5849('AZaz09-._~')).toBe('AZaz09-._~');
    expect(encodeRfc5849("Ladies + Gentlemen, !*'()")).toBe('Ladies%20%2B%20Gentlemen%2C%20%21%2A%27%28%29');
    expect(encodeRfc5849('é☃/=&%')).toBe('%C3%A9%E2%98%83%2F%3D%26%25');
  });
});

describe('the Authorization header (RFC 5849 3.5.1)', () => {
  it('decodes names and values, keeps realm, tolerates spaces around "=" and ","', () => {
    expect(readOAuthHeader('OAuth realm="Example",oauth_nonce = "a%20b" , oauth_token="%2B"')).toEqual(
      new Map([
        ['realm', 'Example'],
        ['oauth_nonce', 'a b'],
        ['oauth_token', '+'],
      ]),
    );
  });

  it('refuses another scheme, a repeated parameter, an unquoted value, bad escapes and junk', () => {
    for (const header of [
      undefined,
      'Bearer abc',
      'OAuthx a="1"',
      'OAuth a="1", a="2"',
      'OAuth a=1',
      'OAuth a="%E0%A4%A"',
      'OAuth a="1" b="2"',
      'OAuth a="1",, b="2"',
    ]) {
      expect(readOAuthHeader(header), String(header)).toBeNull();
    }
  });
});

// RFC 5849 3.4.1.1 (with errata 2550, which gives the secrets and the signature the example lacked).
describe('RFC 5849 3.4.1.1 example request', () => {
  const request: SignedRequest = {
    method: 'POST',
    url: 'http://example.com/request?b5=%3D%253D&a3=a&c%40=&a2=r%20b',
    oauth:
      readOAuthHeader(
        'OAuth realm="Example", oauth_consumer_key="9djdj82h48djs9d2", oauth_token="kkk9d7dh3k39sjv7", oauth_signature_method="HMAC-SHA1", oauth_timestamp="137131201", oauth_nonce="7d8f3e4a", oauth_signature="r6%2FTJjbCOr97%2F%2BUU0NsvSne7s5g%3D"',
      ) ?? new Map(),
    body: form('c2&a3=2+q'),
  };

  it('has the base string the RFC prints (realm and oauth_signature left out)', () => {
    expect(signatureBase(request)).toBe(
      'POST&http%3A%2F%2Fexample.com%2Frequest&a2%3Dr%2520b%26a3%3D2%2520q%26a3%3Da%26b5%3D%253D%25253D%26c%2540%3D%26c2%3D%26oauth_consumer_key%3D9djdj82h48djs9d2%26oauth_nonce%3D7d8f3e4a%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D137131201%26oauth_token%3Dkkk9d7dh3k39sjv7',
    );
  });

  it('accepts its signature under its secrets', () => {
    expect(hasValidSignature(request, 'j49sk3j29djd', 'dh893hdasih9')).toBe(true);
  });
});

// RFC 5849 1.2: the three signed requests of the photo-printing example.
describe('RFC 5849 1.2 example', () => {
  const cases: Array<[what: string, method: string, url: string, oauth: Record<string, string>, tokenSecret: string]> =
    [
      [
        'temporary credentials request: oauth_callback, no token',
        'POST',
        'https://photos.example.net/initiate',
        {
          oauth_timestamp: '137131200',
          oauth_nonce: 'wIjqoS',
          oauth_callback: 'http://printer.example.com/ready',
          oauth_signature: '74KNZJeDHnMBp0EMJ9ZHt/XKycU=',
        },
        '',
      ],
      [
        'token request: oauth_verifier, temporary token secret',
        'POST',
        'https://photos.example.net/token',
        {
          oauth_token: 'hh5s93j4hdidpola',
          oauth_timestamp: '137131201',
          oauth_nonce: 'walatlh',
          oauth_verifier: 'hfdp7dh39dks9884',
          oauth_signature: 'gKgrFCywp7rO0OXSjdot/IHF7IU=',
        },
        'hdhd0244k9j7ao03',
      ],
      [
        'resource request: query parameters signed',
        'GET',
        'http://photos.example.net/photos?file=vacation.jpg&size=original',
        {
          oauth_token: 'nnch734d00sl2jdk',
          oauth_timestamp: '137131202',
          oauth_nonce: 'chapoH',
          oauth_signature: 'MdpQcU8iPSUjWoN/UDMsK2sui9I=',
        },
        'pfkkdhi9sl3r4s00',
      ],
    ];
  it.each(cases)('%s', (_what, method, url, fields, tokenSecret) => {
    const common = { oauth_consumer_key: 'dpf43f3p2l4k3l03', oauth_signature_method: 'HMAC-SHA1' };
    const oauth = new Map(Object.entries({ ...common, ...fields }));
    expect(hasValidSignature({ method, url, oauth, body: [] }, 'kd94hf93k423kf44', tokenSecret)).toBe(true);
  });
});

// The platform's "Creating a signature" guide (developer.x.com/en/docs/authentication/oauth-1-0a/
// creating-a-signature) and its "Authorizing a request" header: a query parameter and a form body.
describe('the platform\'s "Creating a signature" example', () => {
  const CONSUMER_SECRET = 'kAcSOqF21Fu85e7zjz7ZN2U4ZRhfV3WpwPAoE3Z7kBw';
  const TOKEN_SECRET = 'LswwdoUaIvS8ltyTt5jkRh4J50vUPVVHtR2YPi5kE';
  const HEADER =
    'OAuth oauth_consumer_key="xvz1evFS4wEEPTGEFPHBog", oauth_nonce="kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg", oauth_signature="hCtSmYh%2BiHYCEqBWrE7C7hYmtUk%3D", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1318622958", oauth_token="370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb", oauth_version="1.0"';
  const request: SignedRequest = {
    method: 'POST',
    url: 'https://api.twitter.com/1.1/statuses/update.json?include_entities=true',
    oauth: readOAuthHeader(HEADER) ?? new Map(),
    body: form('status=Hello%20Ladies%20%2b%20Gentlemen%2c%20a%20signed%20OAuth%20request%21'),
  };
  const BASE =
    'POST&https%3A%2F%2Fapi.twitter.com%2F1.1%2Fstatuses%2Fupdate.json&include_entities%3Dtrue%26oauth_consumer_key%3Dxvz1evFS4wEEPTGEFPHBog%26oauth_nonce%3DkYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D1318622958%26oauth_token%3D370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb%26oauth_version%3D1.0%26status%3DHello%2520Ladies%2520%252B%2520Gentlemen%252C%2520a%2520signed%2520OAuth%2520request%2521';

  it('has the documented base string and signature', () => {
    expect(signatureBase(request)).toBe(BASE);
    expect(hmacSha1Signature(BASE, CONSUMER_SECRET, TOKEN_SECRET)).toBe('hCtSmYh+iHYCEqBWrE7C7hYmtUk=');
    expect(hasValidSignature(request, CONSUMER_SECRET, TOKEN_SECRET)).toBe(true);
  });

  it('ignores what is not signed: realm, the default port, the case of scheme and host', () => {
    const oauth = new Map(request.oauth).set('realm', 'https://api.twitter.com/');
    expect(hasValidSignature({ ...request, oauth }, CONSUMER_SECRET, TOKEN_SECRET)).toBe(true);
    const url = 'HTTPS://API.Twitter.com:443/1.1/statuses/update.json?include_entities=true';
    expect(hasValidSignature({ ...request, url }, CONSUMER_SECRET, TOKEN_SECRET)).toBe(true);
  });

  it('rejects each tampered part of the request', () => {
    const withOauth = (name: string, value: string): SignedRequest => ({
      ...request,
      oauth: new Map(request.oauth).set(name, value),
    });
    const tampered: Record<string, SignedRequest> = {
      method: { ...request, method: 'PUT' },
      scheme: { ...request, url: request.url.replace('https:', 'http:') },
      host: { ...request, url: request.url.replace('api.twitter.com', 'api.twitter.co') },
      port: { ...request, url: request.url.replace('.com/', '.com:8443/') },
      path: { ...request, url: request.url.replace('update', 'destroy') },
      query: { ...request, url: request.url.replace('true', 'false') },
      'extra query parameter': { ...request, url: `${request.url}&trim_user=1` },
      body: { ...request, body: form('status=Hello%20Ladies%20%2b%20Gentlemen%2c%20a%20signed%20OAuth%20request%3F') },
      'body dropped': { ...request, body: [] },
      nonce: withOauth('oauth_nonce', 'kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cH'),
      timestamp: withOauth('oauth_timestamp', '1318622959'),
      token: withOauth('oauth_token', '370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEc'),
      'consumer key': withOauth('oauth_consumer_key', 'xvz1evFS4wEEPTGEFPHBoh'),
      signature: withOauth('oauth_signature', 'hCtSmYh+iHYCEqBWrE7C7hYmtUK='),
      'signature padding': withOauth('oauth_signature', 'hCtSmYh+iHYCEqBWrE7C7hYmtUk'),
      'signature method': withOauth('oauth_signature_method', 'PLAINTEXT'),
      version: withOauth('oauth_version', '2.0'),
    };
    for (const [part, changed] of Object.entries(tampered)) {
      expect(hasValidSignature(changed, CONSUMER_SECRET, TOKEN_SECRET), part).toBe(false);
    }
    expect(hasValidSignature(request, `${CONSUMER_SECRET}x`, TOKEN_SECRET), 'consumer secret').toBe(false);
    expect(hasValidSignature(request, CONSUMER_SECRET, ''), 'token secret').toBe(false);
    const unsigned = new Map(request.oauth);
    unsigned.delete('oauth_signature');
    expect(hasValidSignature({ ...request, oauth: unsigned }, CONSUMER_SECRET, TOKEN_SECRET), 'unsigned').toBe(false);
  });
});
