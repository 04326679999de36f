import { describe, expect, it } from 'vitest';
import { requestTokenSchema } from '../src/api/schemas.js';
import { ConfigError } from '../src/errors.js';
import {
  baseStringUri,
  normalizeParameters,
  oauth1Header,
  oauth1Params,
  oauth1Signature,
  parseOAuthHeader,
  percentEncode,
  signatureBaseString,
  verifyOauth1Signature,
} from '../src/api/oauth.js';

describe('percentEncode (RFC 5849 3.6)', () => {
  it('leaves only A-Z a-z 0-9 - . _ ~ unencoded, uppercase hex, UTF-8 bytes', () => {
    expect(percentEncode('AZaz09-._~')).toBe('AZaz09-._~');
    expect(percentEncode("!*'()")).toBe('%21%2A%27%28%29');
    expect(percentEncode(' +/=&%')).toBe('%20%2B%2F%3D%26%25');
    expect(percentEncode('☃é')).toBe('%E2%98%83%C3%A9');
    expect(percentEncode('Dogs, Cats & Mice')).toBe('Dogs%2C%20Cats%20%26%20Mice');
    expect(percentEncode('😀')).toBe('%F0%9F%98%80');
  });

  it('refuses a lone surrogate with a ConfigError naming the parameter, never showing the value', () => {
    for (const broken of ['\uD83D', 'ab\uDE00cd', 'x\uD83D']) {
      const e = thrown(() => percentEncode(broken, 'name'));
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).code).toBe('invalid_parameter');
      expect((e as ConfigError).message).toBe(
        'Invalid name: it contains a lone UTF-16 surrogate, which has no UTF-8 encoding',
      );
    }
    const request = {
      method: 'POST',
      url: 'https://ads.example.com/x',
      consumerKey: 'ck',
      consumerSecret: 'cs-secret',
    };
    expect(
      (thrown(() => oauth1Header({ ...request, params: { description: 'cut emoji \uD83D' } })) as Error).message,
    ).toMatch(/^Invalid description:/);
    const secret = thrown(() => oauth1Header({ ...request, consumerSecret: 'very-secret-\uDC00' })) as ConfigError;
    expect(secret.message).toMatch(/^Invalid consumer secret:/);
    expect(secret.message).not.toContain('very-secret');
  });
});

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw');
}

describe('base string URI (RFC 5849 3.4.1.2)', () => {
  it('lowercases scheme and host, drops default ports, the query and the fragment', () => {
    expect(baseStringUri('HTTP://EXAMPLE.COM:80/r%20v/X?id=123')).toBe('http://example.com/r%20v/X');
    expect(baseStringUri('https://www.example.net:8080/?q=1')).toBe('https://www.example.net:8080/');
    expect(baseStringUri('https://Api.Example.com:443/a#frag')).toBe('https://api.example.com/a');
  });
});

describe('parameter normalization (RFC 5849 3.4.1.3.2)', () => {
  it('sorts by encoded name, then by encoded value (byte order)', () => {
    expect(
      normalizeParameters([
        ['b', '2'],
        ['a', 'z'],
        ['a', 'Z'],
        ['a ', '1'],
      ]),
    ).toBe('a=Z&a=z&a%20=1&b=2');
  });
});

// RFC 5849 section 3.1 / 3.4.1.1 request: query parameters, a form body with a repeated name,
// and the base string exactly as printed. The signature printed in the RFC (bYT5CMsG...) is wrong;
// verified Errata ID 2550 gives r6/TJjbCOr97/+UU0NsvSne7s5g= for client secret j49sk3j29djd and
// token secret dh893hdasih9.
describe('RFC 5849 3.4.1 worked example (with errata 2550)', () => {
  const url = 'http://example.com/request?b5=%3D%253D&a3=a&c%40=&a2=r%20b';
  const params: Array<[string, string]> = [
    ['oauth_consumer_key', '9djdj82h48djs9d2'],
    ['oauth_token', 'kkk9d7dh3k39sjv7'],
    ['oauth_signature_method', 'HMAC-SHA1'],
    ['oauth_timestamp', '137131201'],
    ['oauth_nonce', '7d8f3e4a'],
    ['c2', ''],
    ['a3', '2 q'],
  ];
  const expectedBase =
    'POST&http%3A%2F%2Fexample.com%2Frequest&a2%3Dr%2520b%26a3%3D2%2520q%26a3%3Da%26b5%3D%253D%25253D%26c%2540%3D%26c2%3D%26oauth_consumer_key%3D9djdj82h48djs9d2%26oauth_nonce%3D7d8f3e4a%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D137131201%26oauth_token%3Dkkk9d7dh3k39sjv7';

  it('builds the base string the RFC prints', () => {
    expect(signatureBaseString('POST', url, params)).toBe(expectedBase);
  });

  it('signs it with the corrected value', () => {
    expect(oauth1Signature(expectedBase, 'j49sk3j29djd', 'dh893hdasih9')).toBe('r6/TJjbCOr97/+UU0NsvSne7s5g=');
  });

  it('verifies it from a header carrying a realm (realm is not signed)', () => {
    const header =
      'OAuth realm="Example", oauth_consumer_key="9djdj82h48djs9d2", oauth_token="kkk9d7dh3k39sjv7", oauth_signature_method="HMAC-SHA1", oauth_timestamp="137131201", oauth_nonce="7d8f3e4a", oauth_signature="r6%2FTJjbCOr97%2F%2BUU0NsvSne7s5g%3D"';
    const oauthParams = parseOAuthHeader(header);
    expect(oauthParams?.['realm']).toBe('Example');
    const input = {
      method: 'POST',
      url,
      oauthParams: oauthParams ?? {},
      bodyParams: new URLSearchParams('c2&a3=2+q'),
      consumerSecret: 'j49sk3j29djd',
      tokenSecret: 'dh893hdasih9',
    };
    expect(verifyOauth1Signature(input)).toBe(true);
    expect(verifyOauth1Signature({ ...input, bodyParams: new URLSearchParams('c2&a3=3+q') })).toBe(false);
    expect(verifyOauth1Signature({ ...input, tokenSecret: 'other' })).toBe(false);
  });
});

// RFC 5849 section 1.2: the three requests of the photo-printing example.
describe('RFC 5849 1.2 worked example', () => {
  it('temporary credentials request (oauth_callback, no token)', () => {
    const base = signatureBaseString('POST', 'https://photos.example.net/initiate', [
      ['oauth_consumer_key', 'dpf43f3p2l4k3l03'],
      ['oauth_signature_method', 'HMAC-SHA1'],
      ['oauth_timestamp', '137131200'],
      ['oauth_nonce', 'wIjqoS'],
      ['oauth_callback', 'http://printer.example.com/ready'],
    ]);
    expect(oauth1Signature(base, 'kd94hf93k423kf44')).toBe('74KNZJeDHnMBp0EMJ9ZHt/XKycU=');
  });

  it('token request (oauth_verifier, temporary token secret)', () => {
    const base = signatureBaseString('POST', 'https://photos.example.net/token', [
      ['oauth_consumer_key', 'dpf43f3p2l4k3l03'],
      ['oauth_token', 'hh5s93j4hdidpola'],
      ['oauth_signature_method', 'HMAC-SHA1'],
      ['oauth_timestamp', '137131201'],
      ['oauth_nonce', 'walatlh'],
      ['oauth_verifier', 'hfdp7dh39dks9884'],
    ]);
    expect(oauth1Signature(base, 'kd94hf93k423kf44', 'hdhd0244k9j7ao03')).toBe('gKgrFCywp7rO0OXSjdot/IHF7IU=');
  });

  it('resource request (query parameters)', () => {
    const base = signatureBaseString('GET', 'http://photos.example.net/photos?file=vacation.jpg&size=original', [
      ['oauth_consumer_key', 'dpf43f3p2l4k3l03'],
      ['oauth_token', 'nnch734d00sl2jdk'],
      ['oauth_signature_method', 'HMAC-SHA1'],
      ['oauth_timestamp', '137131202'],
      ['oauth_nonce', 'chapoH'],
    ]);
    expect(oauth1Signature(base, 'kd94hf93k423kf44', 'pfkkdhi9sl3r4s00')).toBe('MdpQcU8iPSUjWoN/UDMsK2sui9I=');
  });
});

// The platform's published example ("Creating a signature"): query parameter + form body.
describe("platform's published signature example", () => {
  const request = {
    method: 'POST',
    url: 'https://api.twitter.com/1.1/statuses/update.json?include_entities=true',
    consumerKey: 'xvz1evFS4wEEPTGEFPHBog',
    consumerSecret: 'kAcSOqF21Fu85e7zjz7ZN2U4ZRhfV3WpwPAoE3Z7kBw',
    token: '370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb',
    tokenSecret: 'LswwdoUaIvS8ltyTt5jkRh4J50vUPVVHtR2YPi5kE',
    params: { status: 'Hello Ladies + Gentlemen, a signed OAuth request!' },
    nonce: 'kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg',
    timestamp: 1318622958,
  };

  it('produces the documented base string', () => {
    const { oauth_signature: _sig, ...protocol } = oauth1Params(request);
    expect(
      signatureBaseString('POST', request.url, [...Object.entries(protocol), ...Object.entries(request.params)]),
    ).toBe(
      'POST&https%3A%2F%2Fapi.twitter.com%2F1.1%2Fstatuses%2Fupdate.json&include_entities%3Dtrue%26oauth_consumer_key%3Dxvz1evFS4wEEPTGEFPHBog%26oauth_nonce%3DkYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D1318622958%26oauth_token%3D370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb%26oauth_version%3D1.0%26status%3DHello%2520Ladies%2520%252B%2520Gentlemen%252C%2520a%2520signed%2520OAuth%2520request%2521',
    );
  });

  it('produces the documented signature and header', () => {
    expect(oauth1Header(request)).toBe(
      'OAuth oauth_consumer_key="xvz1evFS4wEEPTGEFPHBog", oauth_nonce="kYjzVBB8Y0ZFabxSWbWovY3uYSQ2pTgmZeNu2VS4cg", oauth_signature="hCtSmYh%2BiHYCEqBWrE7C7hYmtUk%3D", oauth_signature_method="HMAC-SHA1", oauth_timestamp="1318622958", oauth_token="370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb", oauth_version="1.0"',
    );
  });

  it('accepts the timestamp as a numeric string', () => {
    expect(oauth1Header({ ...request, timestamp: '1318622958' })).toBe(oauth1Header(request));
  });

  it('refuses a timestamp that is not whole Unix seconds', () => {
    for (const timestamp of [1.5, -1, Number.NaN, Infinity, 1e300, '1.5', '-1', ' 1318622958', '1e9', '', 'now']) {
      const e = thrown(() => oauth1Header({ ...request, timestamp })) as ConfigError;
      expect(e, String(timestamp)).toBeInstanceOf(ConfigError);
      expect(e.code).toBe('invalid_parameter');
      expect(e.message).toMatch(/^Invalid timestamp: .* is not a whole number of Unix seconds$/);
    }
    expect(oauth1Params({ ...request, timestamp: 0 })['oauth_timestamp']).toBe('0');
  });
});

describe('oauth1Header', () => {
  const base = {
    method: 'GET',
    url: 'https://ads.example.com/12/accounts/a/custom_audiences?count=5',
    consumerKey: 'ck',
    consumerSecret: 'cs',
  };

  it('signs query parameters: changing one breaks verification', () => {
    const oauthParams = parseOAuthHeader(oauth1Header(base)) ?? {};
    expect(verifyOauth1Signature({ method: 'GET', url: base.url, oauthParams, consumerSecret: 'cs' })).toBe(true);
    expect(
      verifyOauth1Signature({
        method: 'GET',
        url: base.url.replace('count=5', 'count=6'),
        oauthParams,
        consumerSecret: 'cs',
      }),
    ).toBe(false);
  });

  it('uses an empty token secret (key "cs&") and no oauth_token without a token', () => {
    const header = oauth1Header({ ...base, nonce: 'n', timestamp: 1 });
    expect(header).not.toContain('oauth_token=');
    const p = parseOAuthHeader(header) ?? {};
    const { oauth_signature: sig, ...rest } = p;
    expect(sig).toBe(oauth1Signature(signatureBaseString('GET', base.url, Object.entries(rest)), 'cs', ''));
  });

  it('includes extra protocol parameters (oauth_callback, oauth_verifier) in header and signature', () => {
    const header = oauth1Header({ ...base, method: 'POST', oauthParams: { oauth_callback: 'oob' } });
    expect(header).toContain('oauth_callback="oob"');
    const oauthParams = parseOAuthHeader(header) ?? {};
    expect(verifyOauth1Signature({ method: 'POST', url: base.url, oauthParams, consumerSecret: 'cs' })).toBe(true);
    expect(
      verifyOauth1Signature({
        method: 'POST',
        url: base.url,
        oauthParams: { ...oauthParams, oauth_callback: 'http://x' },
        consumerSecret: 'cs',
      }),
    ).toBe(false);
  });

  it('defaults nonce and timestamp to fresh values (a new nonce per call)', () => {
    const a = parseOAuthHeader(oauth1Header(base)) ?? {};
    const b = parseOAuthHeader(oauth1Header(base)) ?? {};
    expect(a['oauth_nonce']).toMatch(/^[0-9a-f]{32}$/);
    expect(a['oauth_nonce']).not.toBe(b['oauth_nonce']);
    expect(Math.abs(Number(a['oauth_timestamp']) - Date.now() / 1000)).toBeLessThan(5);
  });
});

describe('request token response', () => {
  it('requires oauth_callback_confirmed=true (RFC 5849 2.1)', () => {
    const base = { oauth_token: 't', oauth_token_secret: 's' };
    expect(requestTokenSchema.parse({ ...base, oauth_callback_confirmed: 'true' }).oauth_callback_confirmed).toBe(true);
    for (const v of ['false', 'True', '1', undefined]) {
      expect(requestTokenSchema.safeParse({ ...base, oauth_callback_confirmed: v }).success, String(v)).toBe(false);
    }
  });
});

describe('parseOAuthHeader', () => {
  it('rejects what is not an OAuth header', () => {
    expect(parseOAuthHeader(undefined)).toBeNull();
    expect(parseOAuthHeader('Bearer abc')).toBeNull();
    expect(parseOAuthHeader('OAuth oauth_nonce=unquoted')).toBeNull();
    expect(parseOAuthHeader('OAuth a="%E0%A4%A"')).toBeNull();
  });

  it('decodes values and tolerates spacing', () => {
    expect(parseOAuthHeader('OAuth  a="1%202" ,b="%2B"')).toEqual({ a: '1 2', b: '+' });
  });
});
