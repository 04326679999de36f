import { createHash } from 'node:crypto';
import { phoneReading } from '../src/platform/identifiers/phone-reading.js';
import { reasonType, TYPE_REASONS } from '../src/platform/identifiers/types.js';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PHONE_FORMAT } from '../src/platform/identifiers/types.js';
import { IDENTIFIER_TYPES, type IdentifierType } from '../src/platform/users.js';
import { buildUser, normalizeIdentifier, normalizePhone, rowReader } from '../src/identifiers/normalize.js';
import {
  cleanValue,
  hashValue,
  normalizeDeviceId,
  normalizeEmail,
  normalizeHandle,
  normalizePartnerUserId,
  normalizeServiceId,
} from '../src/platform/identifiers/rules.js';
import { normalizeCountryCode } from '../src/identifiers/countries.js';
import { REJECT_REASONS, type FieldValue, type MappedRecord } from '../src/identifiers/types.js';
import { serializeRow, serializeUser } from '../src/identifiers/serialize.js';

const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const ok = (value: string) => ({ ok: true, value });
const no = (reason: string) => ({ ok: false, reason });
const field = (type: IdentifierType, raw: string, column: string = type): FieldValue => ({ column, type, raw });
const record = (fields: FieldValue[], extra: Partial<MappedRecord> = {}): MappedRecord => ({
  line: 7,
  fields,
  ...extra,
});

describe('reject reasons', () => {
  it("are each type's rule's, by type, then the record's own: the summary's order", () => {
    expect(REJECT_REASONS).toEqual([
      'email_invalid',
      'phone_invalid',
      'phone_needs_country',
      'phone_ambiguous',
      'phone_lossy_number',
      'phone_maybe_national',
      'country_invalid',
      'handle_invalid',
      'device_id_invalid',
      'device_id_opt_out',
      'service_id_invalid',
      'partner_user_id_invalid',
      'partner_user_id_email',
      'hash_invalid',
      'value_too_long',
      'too_many_values',
      'not_own_by_type',
    ]);
  });
  it("name the type whose rule gives them (none for the record's own)", () => {
    for (const type of IDENTIFIER_TYPES) for (const reason of TYPE_REASONS[type]) expect(reasonType(reason)).toBe(type);
    expect(reasonType('country_invalid')).toBe('phone_number');
    expect(reasonType('not_own_by_type')).toBeUndefined();
    expect(reasonType('hash_invalid')).toBeUndefined();
  });
});

describe('cleanValue', () => {
  it('trims ASCII whitespace, BOM and NBSP', () => {
    expect(cleanValue('\uFEFF  a@b.co\u00A0\t')).toBe('a@b.co');
    expect(cleanValue('\u00A0\u00A0')).toBe('');
  });
  it('applies NFC (a decomposed é becomes one code point)', () => {
    const decomposed = 'vale\u0301ry';
    expect(cleanValue(decomposed)).toBe('val\u00E9ry');
    expect(cleanValue(decomposed).length).toBe(6);
  });
  it('keeps inner whitespace', () => {
    expect(cleanValue(' a b ')).toBe('a b');
  });
});

describe('hashValue', () => {
  it('is the lowercase hex SHA-256 of the UTF-8 bytes', () => {
    expect(hashValue('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hashValue('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashValue('val\u00E9ry')).toBe(sha('val\u00E9ry'));
    expect(hashValue('정')).toBe(sha('정'));
  });
});

describe('published normalization and SHA-256 examples', () => {
  // X Ads API, Custom Audiences user data: https://developer.x.com/en/docs/x-ads-api/audiences/overview/user-data
  // ("hashing user @AdsAPI" -> "adsapi" -> 49e0be2a...470d)
  it('X: handle @AdsAPI', () => {
    const n = normalizeHandle('@AdsAPI');
    expect(n).toEqual(ok('adsapi'));
    expect(hashValue('adsapi')).toBe('49e0be2aeccfb51a8dee4c945c8a70a9ac500cf6f5cb08112575f74db9b1470d');
  });
  // Same page: IDFA lower-cased with dashes, Android id without dashes or spaces.
  it('X: device id formats', () => {
    expect(normalizeDeviceId('4B61639E-47CC-4056-A16A-C8217E029462')).toEqual(
      ok('4b61639e-47cc-4056-a16a-c8217e029462'),
    );
    expect(normalizeDeviceId('AF38-02A4-6576-7E36')).toEqual(ok('af3802a465767e36'));
  });
  // Meta Conversions API, customer information parameters:
  // https://developers.facebook.com/docs/marketing-api/conversions-api/parameters/customer-information-parameters
  it('Meta: email John_Smith@gmail.com', () => {
    expect(normalizeEmail(' John_Smith@gmail.com ')).toEqual(ok('john_smith@gmail.com'));
    expect(hashValue('john_smith@gmail.com')).toBe('62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f');
  });
  it('Meta: US phone (650)555-1212 in the digits convention (the default)', () => {
    expect(normalizePhone('(650)555-1212', { country: 'US' })).toEqual(ok('16505551212'));
    expect(normalizePhone('(650)555-1212', { country: 'US', format: 'digits' })).toEqual(ok('16505551212'));
    expect(hashValue('16505551212')).toBe('e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176');
  });
  // Google Ads UserIdentifier: "Phone numbers must be formatted in E.164 format (for example, +16502531234)":
  // https://developers.google.com/google-ads/api/reference/rpc/latest/UserIdentifier
  it('Google: E.164 example (format e164)', () => {
    expect(normalizePhone('(650) 253-1234', { country: 'US', format: 'e164' })).toEqual(ok('+16502531234'));
    expect(normalizePhone('+1 650-253-1234', { format: 'e164' })).toEqual(ok('+16502531234'));
  });
});

describe('normalizeEmail', () => {
  it('lowercases and keeps dots and +tags (no provider rewriting)', () => {
    expect(normalizeEmail('First.Last+Promo@GMail.com')).toEqual(ok('first.last+promo@gmail.com'));
  });
  it('trims BOM and NBSP', () => {
    expect(normalizeEmail('\uFEFFa@b.co\u00A0')).toEqual(ok('a@b.co'));
  });
  it.each([
    '',
    'plain',
    '@b.co',
    'a@',
    'a@b',
    'a@@b.co',
    'a@b@c.co',
    'a b@c.co',
    'a@b c.co',
    'a@.co',
    'a@b.',
    'a@b.co\u00A0x',
  ])('rejects %j', (raw) => {
    expect(normalizeEmail(raw)).toEqual(no('email_invalid'));
  });
  it('accepts internationalized addresses after NFC', () => {
    expect(normalizeEmail('Jose\u0301@Example.ES')).toEqual(ok('jos\u00E9@example.es'));
  });
  it.each([
    ['zero-width space', 'john\u200B@example.com'],
    ['zero-width joiner', 'john@exa\u200Dmple.com'],
    ['zero-width non-joiner and word joiner', '\u200Cjohn@example.com\u2060'],
    ['soft hyphen', 'jo\u00ADhn@example.com'],
    ['BOM inside', 'john@\uFEFFexample.com'],
    ['left-to-right mark', '\u200Ejohn@example.com'],
    ['angle brackets', '<john@example.com>'],
    ['name and angle brackets', 'John Smith <John@Example.com>'],
    ['quoted name', '"Smith, John" <john@example.com>'],
    ['the address as its own name', 'john@example.com <john@example.com>'],
    ['mailto:', 'mailto:john@example.com'],
    ['MAILTO: with a query', 'MAILTO:john@example.com?subject=Hello'],
    ['mailto: inside brackets', 'John <mailto:john@example.com>'],
    ['a trailing semicolon', 'john@example.com;'],
    ['a trailing comma', 'john@example.com ,'],
    ['brackets and a trailing separator', '<john@example.com>;'],
    ['single quotes', "'john@example.com'"],
    ['double quotes (CSV """john@example.com""")', '"john@example.com"'],
    ['typographic double quotes', '\u201Cjohn@example.com\u201D'],
    ['typographic single quotes', '\u2018john@example.com\u2019'],
    ['parentheses', '(john@example.com)'],
    ['quotes and a trailing separator', '"john@example.com";'],
    ['full-width letters (NFKC)', '\uFF2A\uFF2F\uFF28\uFF2E@example.com'],
  ])('cleans %s', (_name, raw) => {
    expect(normalizeEmail(raw)).toEqual(ok('john@example.com'));
  });
  it('keeps a zero-width non-joiner or joiner inside a non-Latin label (IDNA2008 CONTEXTJ)', () => {
    expect(normalizeEmail('ali@\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645.ir')).toEqual(
      ok('ali@\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645.ir'),
    );
    expect(normalizeEmail('ali\u200C@\u0645\u06CC.ir')).toEqual(ok('ali@\u0645\u06CC.ir'));
  });
  it.each([
    'a@example.com, b@example.com',
    'a@example.com;b@example.com',
    '<a@example.com>; <b@example.com>',
    'a@example.com <b@example.com>',
    'John <>',
    'John <john@example.com',
    'mailto:',
  ])('rejects %j (two addresses, or no address)', (raw) => {
    expect(normalizeEmail(raw)).toEqual(no('email_invalid'));
  });
  it.each([
    '<john@example.com',
    'john@example.com>',
    '(john@example.com',
    'john@example.com)',
    '"john@example.com',
    "john@example.com'",
    `"john@example.com'`,
    'john@example..com',
    'john..doe@example.com',
    '.john@example.com',
    'john.@example.com',
    'john@-example.com',
    'john@example-.com',
    'john@mail.-example.com',
    'john@example.com.',
    'john(x)@example.com',
  ])('rejects %j (an unmatched wrapper, or dots and hyphens RFC 5321 and RFC 1035 forbid)', (raw) => {
    expect(normalizeEmail(raw)).toEqual(no('email_invalid'));
  });
  it.each([
    ['jane.doe+news@mail.example.co.uk', 'jane.doe+news@mail.example.co.uk'],
    ["o'brien@example.com", "o'brien@example.com"],
    ["'o'brien@example.com'", "o'brien@example.com"],
    ['"john"@example.com', '"john"@example.com'],
    ['jo_hn-x@my-mail.example.com', 'jo_hn-x@my-mail.example.com'],
    ['j@b\u00FCcher.de', 'j@b\u00FCcher.de'],
    ['\u7528\u6237@\u4F8B\u5B50.\u4E2D\u56FD', '\u7528\u6237@\u4F8B\u5B50.\u4E2D\u56FD'],
    ['user@[192.0.2.1]', 'user@[192.0.2.1]'],
  ])('still accepts %j', (raw, value) => {
    expect(normalizeEmail(raw)).toEqual(ok(value));
  });
});

describe('normalizePhone', () => {
  it('national and international forms give the same number', () => {
    expect(normalizePhone('020 7946 0958', { country: 'GB' })).toEqual(ok('442079460958'));
    expect(normalizePhone('+44 20 7946 0958')).toEqual(ok('442079460958'));
    expect(normalizePhone('0044 20 7946 0958', { country: 'GB' })).toEqual(ok('442079460958'));
    expect(normalizePhone('+44 (0)20 7946 0958')).toEqual(ok('442079460958'));
    expect(normalizePhone('+44 (0)20 7946 0958', { country: 'FR' })).toEqual(ok('442079460958'));
  });
  it('US, DE, FR, IN', () => {
    expect(normalizePhone('(212) 555-0123', { country: 'us' })).toEqual(ok('12125550123'));
    expect(normalizePhone('1-212-555-0123', { country: 'US' })).toEqual(ok('12125550123'));
    expect(normalizePhone('030 901820', { country: 'DE' })).toEqual(ok('4930901820'));
    expect(normalizePhone('01 42 68 53 00', { country: 'FR' })).toEqual(ok('33142685300'));
    expect(normalizePhone('098765 43210', { country: 'IN' })).toEqual(ok('919876543210'));
  });
  it('digits by default (DEFAULT_PHONE_FORMAT); e164 keeps the plus', () => {
    expect(DEFAULT_PHONE_FORMAT).toBe('digits');
    expect(normalizePhone('+33 1 42 68 53 00')).toEqual(ok('33142685300'));
    expect(normalizePhone('+33 1 42 68 53 00', { format: 'digits' })).toEqual(ok('33142685300'));
    expect(normalizePhone('01 42 68 53 00', { country: 'FR', format: 'e164' })).toEqual(ok('+33142685300'));
  });
  it('drops extensions', () => {
    expect(normalizePhone('(212) 555-0123 ext. 42', { country: 'US' })).toEqual(ok('12125550123'));
    expect(normalizePhone('+1 212 555 0123 x42')).toEqual(ok('12125550123'));
  });
  it('follows libphonenumber-js for vanity letters: letters are not digits, so the number is too short', () => {
    expect(normalizePhone('1-800-FLOWERS', { country: 'US' })).toEqual(no('phone_invalid'));
    expect(normalizePhone('+1 800 FLOWERS')).toEqual(no('phone_invalid'));
  });
  it('valid, not merely possible', () => {
    // Ten digits (a possible length) but no US area code starts with 1.
    expect(normalizePhone('(123) 456-7890', { country: 'US' })).toEqual(no('phone_invalid'));
    expect(normalizePhone('+44 20 7946', { country: 'GB' })).toEqual(no('phone_invalid'));
    expect(normalizePhone('+1 212 555 01234 567')).toEqual(no('phone_invalid'));
    expect(normalizePhone('not a phone', { country: 'US' })).toEqual(no('phone_invalid'));
    expect(normalizePhone('', { country: 'US' })).toEqual(no('phone_invalid'));
  });
  it('a national number needs a country', () => {
    expect(normalizePhone('020 7946 0958')).toEqual(no('phone_needs_country'));
    expect(normalizePhone('020 7946 0958', { country: ' ' })).toEqual(no('phone_needs_country'));
    expect(normalizePhone('no digits')).toEqual(no('phone_invalid'));
  });
  it('an unknown country is country_invalid when the number needs it, ignored when it has +CC', () => {
    expect(normalizePhone('020 7946 0958', { country: 'XX' })).toEqual(no('country_invalid'));
    expect(normalizePhone('020 7946 0958', { country: 'Narnia' })).toEqual(no('country_invalid'));
    expect(normalizePhone('+44 20 7946 0958', { country: 'XX' })).toEqual(ok('442079460958'));
  });
  it('takes UK as GB', () => {
    expect(normalizePhone('020 7946 0958', { country: 'uk' })).toEqual(ok('442079460958'));
  });
});

describe('phones with their calling code but no + (countryCode)', () => {
  it("auto (default): the calling code is read when the digits start with the row country's code or the national reading fails", () => {
    // A GB number in a US row: not a valid US number, so read with its calling code.
    expect(normalizePhone('447400123456', { country: 'US' })).toEqual(ok('447400123456'));
    expect(normalizePhone('4402079460958', { country: 'GB' })).toEqual(ok('442079460958'));
    // Digits starting with the row's calling code, valid both ways under `min`: the number ranges
    // (`max`) decide: an IN row's 91… written with the calling code, and Indian 911x mobiles written nationally.
    expect(normalizePhone('91 98765 43210', { country: 'IN' })).toEqual(ok('919876543210'));
    expect(normalizePhone('9119463463', { country: 'India' })).toEqual(ok('919119463463'));
    expect(normalizePhone('91148 80514', { country: 'IN' })).toEqual(ok('919114880514'));
    expect(normalizePhone('48 293 35 95', { country: 'PL' })).toEqual(ok('48482933595'));
    expect(normalizePhone('55 98266 0086', { country: 'br' })).toEqual(ok('5555982660086'));
    expect(normalizePhone('48 512 345 678', { country: 'PL' })).toEqual(ok('48512345678'));
    // Both readings in assigned ranges (an Italian mobile or a La Spezia landline; a DE mobile with its
    // code or a 13-digit DE fixed line): refused, never hashed as a guess.
    expect(normalizePhone('390 187 537', { country: 'ITA' })).toEqual(no('phone_ambiguous'));
    expect(normalizePhone('4915123456789', { country: 'DE' })).toEqual(no('phone_ambiguous'));
    expect(normalizePhone('+49 15123456789', { country: 'DE' })).toEqual(ok('4915123456789'));
    // Without a country, from 11 digits on; a 10-digit national number stays national.
    expect(normalizePhone('447400123456')).toEqual(ok('447400123456'));
    expect(normalizePhone('2025550143', { country: 'US' })).toEqual(ok('12025550143'));
    expect(normalizePhone('07400 123456', { country: 'GB' })).toEqual(ok('447400123456'));
  });
  it("00 followed by the row country's own calling code is international, whatever its real prefix", () => {
    const cases: [string, string, string][] = [
      ['0055 64 91428 2813', 'BRA', '5564914282813'],
      ['0057 321 0090475', 'CO', '573210090475'],
      ['0066 2 168 3496', 'THA', '6621683496'],
      ['0082 16 2388 7727', 'South Korea', '821623887727'],
      ['0081 90 1234 5678', 'JP', '819012345678'],
      ['0062 812 3456 789', 'ID', '628123456789'],
      ['001 212 555 0123', 'US', '12125550123'],
      ['001 416 555 0123', 'CA', '14165550123'],
      ['0061 412 345 678', 'AU', '61412345678'],
      ['007 912 345 67 89', 'RU', '79123456789'],
      ['0044 20 7946 0958', 'GB', '442079460958'],
    ];
    for (const [value, country, expected] of cases) {
      expect(normalizePhone(value, { country })).toEqual(ok(expected));
      expect(normalizePhone(value, { country, countryCode: 'national' })).toEqual(ok(expected));
    }
    // Another country's code after a real international prefix is still read the library's way.
    expect(normalizePhone('0044 20 7946 0958', { country: 'DE' })).toEqual(ok('442079460958'));
    expect(normalizePhone('011 44 20 7946 0958', { country: 'US' })).toEqual(ok('442079460958'));
  });
  it("a (0) trunk after the calling code, and Mexico's retired mobile 1, are the numbers they stand for", () => {
    expect(normalizePhone('+57 (0) 321 0090475')).toEqual(ok('573210090475'));
    expect(normalizePhone('+34 (0) 612 34 56 78')).toEqual(ok('34612345678'));
    expect(normalizePhone('+52 1 55 1234 5678')).toEqual(ok('525512345678'));
    expect(normalizePhone('521 55 1234 5678', { country: 'MX' })).toEqual(ok('525512345678'));
    expect(normalizePhone('5215512345678', { country: 'Mexico' })).toEqual(ok('525512345678'));
    expect(normalizePhone('+52 55 1234 5678')).toEqual(ok('525512345678'));
    // Only when the number as written is invalid: an Italian landline keeps its 0.
    expect(normalizePhone('+39 06 6988 4101')).toEqual(ok('390669884101'));
    expect(normalizePhone('+57 (0) 12')).toEqual(no('phone_invalid'));
  });
  it('a leading 0 that may be a trunk prefix or the first digit of the number: the number ranges decide, or phone_ambiguous', () => {
    // Gabon formats its old 7-digit numbers with a 0 (`0$1`) and its 8-digit ones start with 0:
    // `02 41 42 05` is +241 2414205 or +241 02414205, both assigned.
    for (const countryCode of ['auto', 'national'] as const) {
      expect(normalizePhone('02 41 42 05', { country: 'GA', countryCode })).toEqual(no('phone_ambiguous'));
      expect(normalizePhone('06318285', { country: 'Gabon', countryCode })).toEqual(no('phone_ambiguous'));
    }
    expect(normalizePhone('+241 02 41 42 05')).toEqual(ok('24102414205'));
    expect(normalizePhone('+241 241 42 05', { country: 'GA' })).toEqual(ok('2412414205'));
    // A written (0) after the calling code, where the library keeps the 0 (GA) or strips another
    // prefix (Hungary's 06): both readings assigned.
    expect(normalizePhone('+241 (0) 6318285')).toEqual(no('phone_ambiguous'));
    expect(normalizePhone('+36 (0) 680233192', { country: 'HU' })).toEqual(no('phone_ambiguous'));
    // Read after the country's international prefix (015 in Israel, 810 in Russia) by the library,
    // yet also a national number: +32 18686328 is not in Belgium's ranges, so the Israeli one.
    expect(normalizePhone('0153218686328', { country: 'IL' })).toEqual(ok('972153218686328'));
    // Both in ranges, but +7 810 824… is toll free and +82 43-656-5042 a fixed line: the line wins.
    expect(normalizePhone('81082436565042', { country: 'RU' })).toEqual(ok('82436565042'));
    // Italy has no trunk prefix: its leading 0 is the number's, never a second reading.
    expect(normalizePhone('035 123 4567', { country: 'IT' })).toEqual(ok('390351234567'));
    expect(normalizePhone('06 6982 1234', { country: 'IT' })).toEqual(ok('390669821234'));
    expect(normalizePhone('+39 (0)6 6982 1234')).toEqual(ok('390669821234'));
    // Renumbered countries whose old numbers the metadata no longer accepts: rejected, never misread.
    expect(normalizePhone('07 12 34 56', { country: 'CI' })).toEqual(no('phone_invalid'));
    expect(normalizePhone('07 07 12 34 56', { country: 'CI' })).toEqual(ok('2250707123456'));
    expect(normalizePhone('97 12 34 56', { country: 'BJ' })).toEqual(no('phone_invalid'));
    expect(normalizePhone('01 97 12 34 56', { country: 'BJ' })).toEqual(ok('2290197123456'));
    expect(normalizePhone('06 612 3456', { country: 'CG' })).toEqual(ok('242066123456'));
    expect(normalizePhone('90 12 34 56', { country: 'TG' })).toEqual(ok('22890123456'));
    // Where the trunk rule strips the 0, one reading: France, Germany, the UK.
    expect(normalizePhone('01 42 68 53 00', { country: 'FR' })).toEqual(ok('33142685300'));
    expect(normalizePhone('07400 123456', { country: 'GB' })).toEqual(ok('447400123456'));
  });
  it('an extension does not count towards reading a calling code without + when the row has no country', () => {
    // 10 digits of a US number and an extension: not 13 digits of +20 (Egypt).
    for (const v of ['201 555 0128 x819', '(201) 555-0128 x819', '201-555-0128 ext. 819', '201 555 0128 #819']) {
      expect(normalizePhone(v)).toEqual(no('phone_needs_country'));
      expect(normalizePhone(v, { country: 'US' })).toEqual(ok('12015550128'));
    }
    expect(normalizePhone('44 20 7946 0958')).toEqual(ok('442079460958'));
  });
  it('a value with brackets, a label, tel: or full-width digits is read by the same rules as its plain form', () => {
    const cases: [string, string, string][] = [
      ['(27) 8311266', '27 8311266', 'ZA'],
      ['Mobile: 49 4308536829', '49 4308536829', 'DE'],
      ['\uff15\uff13\uff14\uff18\uff19\uff12\uff13\uff11', '53489231', 'CU'],
      ['(0055) 64 91428 2813', '0055 64 91428 2813', 'BR'],
      ['tel:0081344130662', '0081344130662', 'JP'],
      ['TEL: 0081344130662', '0081344130662', 'JP'],
      ['\uff10\uff10\uff18\uff11\uff13\uff14\uff14\uff11\uff13\uff10\uff16\uff16\uff12', '0081344130662', 'JP'],
      ['tel\uff1a0081344130662', '0081344130662', 'JP'],
      ['(27) 8311266 ext 5', '27 8311266 ext 5', 'ZA'],
      ['(212) 555-0123 ext. 42', '212 555-0123 ext. 42', 'US'],
      ['Tel.: +44 20 7946 0958', '+44 20 7946 0958', 'GB'],
      ['tel:+1-201-555-0123;ext=1234', '+1-201-555-0123', 'US'],
    ];
    for (const [value, plain, country] of cases) {
      const expected = normalizePhone(plain, { country, format: 'e164' });
      expect(normalizePhone(value, { country, format: 'e164' }), value).toEqual(expected);
    }
    expect(normalizePhone('(27) 8311266', { country: 'ZA' })).toEqual(no('phone_ambiguous'));
    expect(normalizePhone('(0055) 64 91428 2813', { country: 'BR' })).toEqual(ok('5564914282813'));
    expect(normalizePhone('tel:0081344130662', { country: 'JP' })).toEqual(ok('81344130662'));
    expect(normalizePhone('(212) 555-0123 ext. 42', { country: 'US' })).toEqual(ok('12125550123'));
    // A full-width plus is a plus (the library alone read this as a German national number, +49 44…).
    const fullWidth = '\uff0b\uff14\uff14 \uff12\uff10 \uff17\uff19\uff14\uff16 \uff10\uff19\uff15\uff18';
    expect(normalizePhone(fullWidth, { country: 'DE' })).toEqual(ok('442079460958'));
  });
  it('national: always a national number of the row country', () => {
    expect(normalizePhone('447400123456', { country: 'US', countryCode: 'national' })).toEqual(no('phone_invalid'));
    expect(normalizePhone('447400123456', { countryCode: 'national' })).toEqual(no('phone_needs_country'));
    expect(normalizePhone('4915123456789', { country: 'DE', countryCode: 'national' })).toEqual(ok('494915123456789'));
  });
  it('included: always the calling code first; values starting with 0 or + are read as before', () => {
    expect(normalizePhone('447400123456', { country: 'US', countryCode: 'included' })).toEqual(ok('447400123456'));
    expect(normalizePhone('2025550143', { country: 'US', countryCode: 'included' })).toEqual(no('phone_invalid'));
    expect(normalizePhone('07400 123456', { country: 'GB', countryCode: 'included' })).toEqual(ok('447400123456'));
    expect(normalizePhone('+1 202 555 0143', { countryCode: 'included' })).toEqual(ok('12025550143'));
  });
});

describe('phones as spreadsheets and people write them (issue 30)', () => {
  it("a spreadsheet's number forms are read as the integer they hold; rounded ones are phone_lossy_number", () => {
    // `.0` is not one more digit (it used to give +49 1513 41172940, another valid number).
    expect(normalizePhone('4915134117294.0', { country: 'AT' })).toEqual(
      normalizePhone('4915134117294', { country: 'AT' }),
    );
    expect(normalizePhone('33612345678.00', { country: 'US' })).toEqual(ok('33612345678'));
    expect(normalizePhone('9.18142423991e+11', { country: 'IN' })).toEqual(ok('918142423991'));
    expect(normalizePhone('3.3612345678E+10', { country: 'FR' })).toEqual(ok('33612345678'));
    expect(normalizePhone('3,3612345678E+10', { country: 'FR' })).toEqual(ok('33612345678'));
    expect(normalizePhone('3,3612345678E10', { country: 'FR' })).toEqual(ok('33612345678'));
    // Fewer digits in the mantissa than the exponent needs: the spreadsheet rounded them away.
    for (const value of ['4,91512E+12', '4.91512E+12', '9.1814242399e+11', '5E+12'])
      for (const country of [{}, { country: 'DE' }])
        expect(normalizePhone(value, country), value).toEqual(no('phone_lossy_number'));
    // Not an integer: not a phone number.
    expect(normalizePhone('9.181424239912e+11', { country: 'IN' })).toEqual(no('phone_invalid'));
    // A short dotted number keeps its digits (no spreadsheet writes a phone with fewer than 6).
    expect(normalizePhone('898.0', { country: 'TA' })).toEqual(ok('2908980'));
  });
  it('international prefixes people write (00, 011, 0011, 010, 001…) are read when a valid number follows', () => {
    // `00…` begins no national number: read without a country too.
    expect(normalizePhone('0044 7231 383321')).toEqual(ok('447231383321'));
    expect(normalizePhone('0011 44 7231 383321')).toEqual(ok('447231383321'));
    expect(normalizePhone('001 212 555 0123')).toEqual(ok('12125550123'));
    // `011` and `010` begin Turin's, São Paulo's, Beijing's, Rotterdam's numbers: not without a country.
    expect(normalizePhone('011 44 7231 383321')).toEqual(no('phone_needs_country'));
    // With a country whose own prefix differs: the readings decide.
    expect(normalizePhone('0044 7231 383321', { country: 'US' })).toEqual(ok('447231383321'));
    expect(normalizePhone('0044 20 7946 0958', { country: 'JP' })).toEqual(ok('442079460958'));
    expect(normalizePhone('011 44 20 7946 0958', { country: 'DE' })).toEqual(ok('442079460958'));
    expect(normalizePhone('0011 44 20 7946 0958', { country: 'FR' })).toEqual(ok('442079460958'));
    expect(normalizePhone('010 44 20 7946 0958', { country: 'GB' })).toEqual(ok('442079460958'));
    // A national number of the row's country in its ranges is that number (Delhi's 011).
    expect(normalizePhone('011 4955 2626', { country: 'IN' })).toEqual(ok('911149552626'));
    expect(normalizePhone('010 1234 5678', { country: 'CN' })).toEqual(ok('861012345678'));
    expect(normalizePhone('011 123 4567', { country: 'IT' })).toEqual(ok('390111234567'));
  });
  it('an extension, in any spelling, is dropped: the person is the main number', () => {
    const values = [
      '0081 3-1232-1715 x536',
      '0081 3-1232-1715 X 536',
      '0081 3-1232-1715 ext. 881',
      '0081 3-1232-1715 ext 881',
      '0081 3-1232-1715 #47',
      '0081 3-1232-1715 extension 5',
      '0081 3-1232-1715 poste 12',
      '0081 3-1232-1715 Durchwahl 12',
      '0081 3-1232-1715 DW 12',
      '0081 3-1232-1715;ext=12',
      '0081 3-1232-1715,12',
      '0081 3-1232-1715,,12',
      '0081 3-1232-1715 - 503#',
      '0081 3-1232-1715 内線 12',
      'tel:+81-3-1232-1715;ext=1234',
      '+81 (3) 1232 1715 (mobile)',
    ];
    for (const value of values) {
      // It used to give 810081312321715 in a JP row: the prefix read as digits of the number.
      for (const country of [{}, { country: 'JP' }, { country: 'DE' }, { country: 'US' }])
        expect(normalizePhone(value, country), value).toEqual(ok('81312321715'));
    }
    expect(normalizePhone('(212) 555-0123 x12', { country: 'US' })).toEqual(ok('12125550123'));
    expect(normalizePhone('212.555.0123 ext. 881', { country: 'US' })).toEqual(ok('12125550123'));
    expect(normalizePhone('+49 30 901820 Durchwahl 12')).toEqual(ok('4930901820'));
    expect(normalizePhone('+33 1 42 68 53 00 poste 12')).toEqual(ok('33142685300'));
  });
  it('(0) after the calling code, dots and US dash forms', () => {
    expect(normalizePhone('+44 (0)20 7946 0958')).toEqual(ok('442079460958'));
    expect(normalizePhone('+44 (0) 20.7946.0958')).toEqual(ok('442079460958'));
    expect(normalizePhone('212-555-0123', { country: 'US' })).toEqual(ok('12125550123'));
    expect(normalizePhone('(212) 555-0123', { country: 'US' })).toEqual(ok('12125550123'));
    expect(normalizePhone('1-212-555-0123', { country: 'US' })).toEqual(ok('12125550123'));
    expect(normalizePhone('06.12.34.56.78', { country: 'FR' })).toEqual(ok('33612345678'));
  });
  it("between two readings, a person's line beats a toll-free, premium-rate or shared-cost number", () => {
    // +91 18007263 is toll free, +91 91180 07263 a mobile.
    expect(normalizePhone('9118007263', { country: 'IN' })).toEqual(ok('919118007263'));
    // Both readings a person's line: still refused.
    expect(normalizePhone('390 187 537', { country: 'ITA' })).toEqual(no('phone_ambiguous'));
  });
  it("a German mobile whose 0 a spreadsheet dropped: +49 with the row's country; without one, said in a hint", () => {
    expect(normalizePhone('15148369370', { country: 'DE' })).toEqual(ok('4915148369370'));
    expect(normalizePhone('15148369370', { country: 'Deutschland' })).toEqual(ok('4915148369370'));
    // Without a country, the digits are also +1 514 836 9370 (Montreal), the form SMS tools and
    // ad-platform templates write: read so, and counted for the summary's hint (hash-cli.test.ts).
    const notes = { codeWithoutPlus: 0, twoReadings: 0, codeWithoutCountry: 0 };
    expect(phoneReading('15148369370', undefined, 'auto', notes)).toBe('+15148369370');
    expect(notes).toEqual({ codeWithoutPlus: 1, twoReadings: 0, codeWithoutCountry: 1 });
    // A value written as a spreadsheet writes numbers has lost its `+` or its `0`: only a country tells.
    expect(normalizePhone('15148369370.0')).toEqual(no('phone_needs_country'));
    expect(normalizePhone('1.5148369370E+10')).toEqual(no('phone_needs_country'));
    expect(normalizePhone('1.5148369370E+10', { country: 'DE' })).toEqual(ok('4915148369370'));
  });
});

describe('normalizeCountryCode', () => {
  it('accepts known ISO codes case-insensitively', () => {
    expect(normalizeCountryCode(' gb ')).toBe('GB');
    expect(normalizeCountryCode('UK')).toBe('GB');
    expect(normalizeCountryCode('in')).toBe('IN');
    expect(normalizeCountryCode('XX')).toBeUndefined();
    expect(normalizeCountryCode('')).toBeUndefined();
  });
  it('accepts ISO alpha-3 codes case-insensitively', () => {
    const alpha3: Record<string, string> = {
      USA: 'US',
      GBR: 'GB',
      DEU: 'DE',
      FRA: 'FR',
      IND: 'IN',
      BRA: 'BR',
      JPN: 'JP',
      CIV: 'CI',
    };
    for (const [code, expected] of Object.entries(alpha3)) expect(normalizeCountryCode(code)).toBe(expected);
    // Kosovo's XKX is user-assigned, not ISO.
    expect(normalizeCountryCode('XKX')).toBeUndefined();
    expect(normalizeCountryCode(' gbr ')).toBe('GB');
    expect(normalizeCountryCode('ZZZ')).toBeUndefined();
    // Antarctica has an alpha-3 code but no phone numbering plan in libphonenumber-js.
    expect(normalizeCountryCode('ATA')).toBeUndefined();
  });
  it('accepts English country names, ignoring case, accents and punctuation', () => {
    expect(normalizeCountryCode('United States')).toBe('US');
    expect(normalizeCountryCode('united states of america')).toBe('US');
    expect(normalizeCountryCode('United Kingdom')).toBe('GB');
    expect(normalizeCountryCode(' GERMANY ')).toBe('DE');
    expect(normalizeCountryCode('Cote d\u2019Ivoire')).toBe('CI');
    expect(normalizeCountryCode("Côte d'Ivoire")).toBe('CI');
    expect(normalizeCountryCode('South Korea')).toBe('KR');
    expect(normalizeCountryCode('Korea, Republic of')).toBe('KR');
    expect(normalizeCountryCode('Atlantis')).toBeUndefined();
    // Names CRM exports write that are not the English short names (issue 10's list, and more).
    const aliases: Record<string, string> = {
      Turkey: 'TR',
      Türkiye: 'TR',
      Deutschland: 'DE',
      'The Netherlands': 'NL',
      Holland: 'NL',
      'Great Britain': 'GB',
      'U.K.': 'GB',
      England: 'GB',
      UAE: 'AE',
      'U.A.E.': 'AE',
      'Republic of Ireland': 'IE',
      'U.S.A.': 'US',
      España: 'ES',
      Österreich: 'AT',
      Schweiz: 'CH',
      'Korea, South': 'KR',
      'Ivory Coast': 'CI',
      'Viet Nam': 'VN',
    };
    for (const [name, code] of Object.entries(aliases)) expect(normalizeCountryCode(name), name).toBe(code);
    expect(normalizeCountryCode('Narnia')).toBeUndefined();
  });
  it('gives phones the same number whatever form the country takes', () => {
    for (const country of ['GB', 'gb', 'UK', 'GBR', 'United Kingdom']) {
      expect(normalizePhone('020 7946 0958', { country })).toEqual(ok('442079460958'));
    }
  });
});

describe('normalizeHandle', () => {
  it('strips one leading @ and lowercases', () => {
    expect(normalizeHandle(' @Jack ')).toEqual(ok('jack'));
    expect(normalizeHandle('under_score_9')).toEqual(ok('under_score_9'));
    expect(normalizeHandle('@@jack')).toEqual(no('handle_invalid'));
  });
  it('1 to 15 characters of [a-z0-9_]', () => {
    expect(normalizeHandle('a'.repeat(15))).toEqual(ok('a'.repeat(15)));
    expect(normalizeHandle('@' + 'a'.repeat(15))).toEqual(ok('a'.repeat(15)));
    expect(normalizeHandle('a'.repeat(16))).toEqual(no('handle_invalid'));
    expect(normalizeHandle('@')).toEqual(no('handle_invalid'));
    expect(normalizeHandle('a-b')).toEqual(no('handle_invalid'));
    expect(normalizeHandle('jäck')).toEqual(no('handle_invalid'));
  });
});

describe('normalizeDeviceId', () => {
  it('lowercases a dashed UUID and keeps the dashes', () => {
    expect(normalizeDeviceId(' 2F5F5391-3E45-4D02-B645-4575A08F86E1 ')).toEqual(
      ok('2f5f5391-3e45-4d02-b645-4575a08f86e1'),
    );
  });
  it('compacts a 16-hex Android ID', () => {
    expect(normalizeDeviceId('af3802a465767e36')).toEqual(ok('af3802a465767e36'));
    expect(normalizeDeviceId('AF38 02A4 6576 7E36')).toEqual(ok('af3802a465767e36'));
  });
  it('dashes an undashed (32-hex) UUID', () => {
    expect(normalizeDeviceId('2F5F53913E454D02B6454575A08F86E1')).toEqual(ok('2f5f5391-3e45-4d02-b645-4575a08f86e1'));
    expect(normalizeDeviceId(' 2f5f53913e454d02b6454575a08f86e1 ')).toEqual(ok('2f5f5391-3e45-4d02-b645-4575a08f86e1'));
    // Same value, same digest, whichever way it was exported.
    const dashed = buildUser(record([field('device_id', '2f5f5391-3e45-4d02-b645-4575a08f86e1')]), {}).user;
    expect(buildUser(record([field('device_id', '2f5f53913e454d02b6454575a08f86e1')]), {}).user).toEqual(dashed);
  });
  it('the all-zero id (ad tracking disabled) is an opt-out', () => {
    expect(normalizeDeviceId('00000000-0000-0000-0000-000000000000')).toEqual(no('device_id_opt_out'));
    expect(normalizeDeviceId('00000000000000000000000000000000')).toEqual(no('device_id_opt_out'));
    expect(normalizeDeviceId('0000000000000000')).toEqual(no('device_id_opt_out'));
  });
  it.each([
    '',
    'xyz',
    '2f5f5391-3e45-4d02-b645-4575a08f86e',
    '2f5f53913e454d02b6454575a08f86e',
    '2f5f53913e454d02b6454575a08f86e1a',
    '2g5f53913e454d02b6454575a08f86e1',
    'af3802a465767e3',
    'af3802a465767e36a',
    'gf3802a465767e36',
  ])('rejects %j', (raw) => {
    expect(normalizeDeviceId(raw)).toEqual(no('device_id_invalid'));
  });
});

describe('normalizeServiceId', () => {
  it('removes leading zeros', () => {
    expect(normalizeServiceId('000143567')).toEqual(ok('143567'));
    expect(normalizeServiceId(' 143567 ')).toEqual(ok('143567'));
  });
  it('1 to 20 digits (after leading zeros)', () => {
    expect(normalizeServiceId('9'.repeat(20))).toEqual(ok('9'.repeat(20)));
    expect(normalizeServiceId('0' + '9'.repeat(20))).toEqual(ok('9'.repeat(20)));
    expect(normalizeServiceId('9'.repeat(21))).toEqual(no('service_id_invalid'));
    expect(normalizeServiceId('0')).toEqual(no('service_id_invalid'));
    expect(normalizeServiceId('12a')).toEqual(no('service_id_invalid'));
    expect(normalizeServiceId('-12')).toEqual(no('service_id_invalid'));
    expect(normalizeServiceId('1 2')).toEqual(no('service_id_invalid'));
  });
});

describe('normalizePartnerUserId', () => {
  it('is only cleaned: case and inner characters kept', () => {
    expect(normalizePartnerUserId(' CRM-00042/Ab ')).toEqual(ok('CRM-00042/Ab'));
  });
  it('non-empty, at most 256 characters (code points)', () => {
    expect(normalizePartnerUserId('x'.repeat(256))).toEqual(ok('x'.repeat(256)));
    expect(normalizePartnerUserId('x'.repeat(257))).toEqual(no('partner_user_id_invalid'));
    expect(normalizePartnerUserId('😀'.repeat(256))).toEqual(ok('😀'.repeat(256)));
    expect(normalizePartnerUserId('😀'.repeat(257))).toEqual(no('partner_user_id_invalid'));
    expect(normalizePartnerUserId(' ')).toEqual(no('partner_user_id_invalid'));
  });
  it('refuses an e-mail address, which it would send unhashed, unless partner ids may be addresses; keeps other ids with @', () => {
    const emails = ['jane.doe@example.com', 'Jane.Doe@Example.COM', ' <jane@example.org> ', 'mailto:j@x.io'];
    // Typed on a Japanese keyboard: a full-width or small at sign, which the e-mail rule reads as @.
    emails.push('jane\uFF20example.com', 'john\uFE6Bexample.org');
    // An address with more in the cell, two of them, an IDNA dot, an unseen character, encoded at signs.
    emails.push('jane.doe@example.com (Jane)', 'jane.doe@example.com <Jane Doe>', 'a@example.com;b@example.org');
    emails.push('email: jane@example.com', 'jane@example\u3002com', 'jane@exa\tmple.com', 'jane@example.com\x7f');
    emails.push('jane%40example.com', 'jane&#64;example.com', 'jane&commat;example.com', 'jane.doe@@example.com');
    for (const email of emails) {
      expect(normalizePartnerUserId(email)).toEqual(no('partner_user_id_email'));
      expect(normalizePartnerUserId(email, true).ok).toBe(true);
    }
    for (const id of ['crm@42', 'user@tenant', '@handle', 'a@b']) expect(normalizePartnerUserId(id)).toEqual(ok(id));
  });
});

describe('buildUser', () => {
  it('hashes every type, keys in IDENTIFIER_TYPES order, partner_user_id raw', () => {
    const built = buildUser(
      record([
        field('partner_user_id', 'CRM-1'),
        field('service_id', '00143567'),
        field('device_id', 'AF3802A465767E36'),
        field('handle', '@AdsAPI'),
        field('phone_number', '+44 20 7946 0958'),
        field('email', 'A@B.co'),
      ]),
      {},
    );
    expect(Object.keys(built.user)).toEqual([...IDENTIFIER_TYPES]);
    expect(built.user).toEqual({
      email: [sha('a@b.co')],
      phone_number: [sha('442079460958')],
      handle: ['49e0be2aeccfb51a8dee4c945c8a70a9ac500cf6f5cb08112575f74db9b1470d'],
      device_id: [sha('af3802a465767e36')],
      service_id: [sha('143567')],
      partner_user_id: ['CRM-1'],
    });
    expect(built.rejects).toEqual([]);
    expect(built.digests).toBeUndefined();
    expect(built.line).toBe(7);
  });

  it('several columns feed one type; duplicates (after normalization) are removed', () => {
    const built = buildUser(
      record([
        field('email', 'Jo@x.com', 'email'),
        field('email', ' jo@X.COM ', 'work_email'),
        field('email', 'al@x.com', 'work_email'),
      ]),
      {},
    );
    expect(built.user).toEqual({ email: [sha('jo@x.com'), sha('al@x.com')] });
  });

  it('splits cells with the value separator', () => {
    const built = buildUser(record([field('email', 'a@x.com; b@x.com;;bad')]), { valueSeparator: ';' });
    expect(built.user).toEqual({ email: [sha('a@x.com'), sha('b@x.com')] });
    expect(built.rejects).toEqual([{ line: 7, column: 'email', type: 'email', reason: 'email_invalid' }]);
    // Without a separator the cell is one (invalid) value.
    expect(buildUser(record([field('email', 'a@x.com;b@x.com')]), {}).rejects).toHaveLength(1);
  });

  it('splits two addresses in one cell only with the value separator, each one cleaned', () => {
    const cell = 'Ann <ann@x.com>, mailto:bo@x.com,';
    const built = buildUser(record([field('email', cell)]), { valueSeparator: ',' });
    expect(built.user).toEqual({ email: [sha('ann@x.com'), sha('bo@x.com')] });
    expect(built.rejects).toEqual([]);
    const alone = buildUser(record([field('email', cell)]), {});
    expect(alone.user).toEqual({});
    expect(alone.rejects.map((r) => r.reason)).toEqual(['email_invalid']);
    expect(alone.notes?.severalValues).toEqual({ column: 'email', separator: ',' });
  });

  it('rejects carry line, column, type and reason, never the value', () => {
    const built = buildUser(
      {
        line: 42,
        fields: [field('email', 'secret-not-an-email', 'Mail'), field('phone_number', '020 7946 0958', 'Tel')],
      },
      {},
    );
    expect(built.user).toEqual({});
    expect(built.rejects).toEqual([
      { line: 42, column: 'Mail', type: 'email', reason: 'email_invalid' },
      { line: 42, column: 'Tel', type: 'phone_number', reason: 'phone_needs_country' },
    ]);
    expect(JSON.stringify(built)).not.toContain('secret');
    expect(JSON.stringify(built)).not.toContain('7946');
  });

  it('empty cells are neither values nor rejects', () => {
    expect(buildUser(record([field('email', ''), field('handle', ' \u00A0')]), {})).toEqual({
      line: 7,
      user: {},
      rejects: [],
    });
  });

  it('uses the record country, else the default country; an invalid one is country_invalid', () => {
    const phone = [field('phone_number', '06 12 34 56 78')];
    expect(buildUser(record(phone, { country: 'fr' }), { defaultCountry: 'GB' }).user).toEqual({
      phone_number: [sha('33612345678')],
    });
    expect(buildUser(record(phone, { country: '' }), { defaultCountry: 'FR' }).user).toEqual({
      phone_number: [sha('33612345678')],
    });
    expect(buildUser(record(phone), { defaultCountry: 'FR' }).user).toEqual({ phone_number: [sha('33612345678')] });
    expect(buildUser(record(phone, { country: 'Narnia' }), { defaultCountry: 'FR' }).rejects[0]?.reason).toBe(
      'country_invalid',
    );
    expect(buildUser(record(phone), {}).rejects[0]?.reason).toBe('phone_needs_country');
    // The country is resolved per record, not carried over from the previous one.
    expect(buildUser(record(phone, { country: 'FR' }), {}).rejects).toEqual([]);
    expect(buildUser(record(phone), {}).rejects[0]?.reason).toBe('phone_needs_country');
  });

  it('phone format digits (default) and e164', () => {
    const phone = record([field('phone_number', '+1 (212) 555-0123')]);
    expect(buildUser(phone, {}).user).toEqual({ phone_number: [sha('12125550123')] });
    expect(buildUser(phone, { phoneFormat: 'digits' }).user).toEqual({ phone_number: [sha('12125550123')] });
    expect(buildUser(phone, { phoneFormat: 'e164' }).user).toEqual({ phone_number: [sha('+12125550123')] });
  });

  describe('already-hashed input', () => {
    const digest = sha('a@x.com');
    it('auto: a 64-hex value is lowercased and passed through, counted in digests', () => {
      const built = buildUser(
        record([field('email', digest.toUpperCase()), field('email', 'a@x.com'), field('handle', 'jack')]),
        {},
      );
      expect(built.user).toEqual({ email: [digest], handle: [sha('jack')] });
      expect(built.digests).toEqual({ email: 1 });
    });
    it('auto is the default and also applies to phones and device ids', () => {
      const built = buildUser(record([field('phone_number', digest), field('device_id', digest)]), {
        inputHashed: 'auto',
      });
      expect(built.user).toEqual({ phone_number: [digest], device_id: [digest] });
      expect(built.digests).toEqual({ phone_number: 1, device_id: 1 });
    });
    it('always: anything else is hash_invalid', () => {
      const built = buildUser(
        record([field('email', 'a@x.com'), field('email', digest), field('email', digest.slice(1))]),
        {
          inputHashed: 'always',
        },
      );
      expect(built.user).toEqual({ email: [digest] });
      expect(built.rejects.map((r) => r.reason)).toEqual(['hash_invalid', 'hash_invalid']);
    });
    it('never: a 64-hex value is normalized and hashed like any other', () => {
      const built = buildUser(record([field('handle', 'a'.repeat(64))]), { inputHashed: 'never' });
      expect(built.rejects.map((r) => r.reason)).toEqual(['handle_invalid']);
      const sid = '1'.repeat(64);
      expect(buildUser(record([field('service_id', sid)]), { inputHashed: 'never' }).rejects[0]?.reason).toBe(
        'service_id_invalid',
      );
    });
    it('not applied to partner_user_id (sent raw, even when it looks like a digest)', () => {
      const upper = digest.toUpperCase();
      const built = buildUser(record([field('partner_user_id', upper)]), { inputHashed: 'always' });
      expect(built.user).toEqual({ partner_user_id: [upper] });
      expect(built.digests).toBeUndefined();
    });
  });

  it('does not leak values between records', () => {
    buildUser(record([field('email', 'a@x.com'), field('email', sha('z'))]), {});
    const next = buildUser(record([field('handle', 'jack')]), {});
    expect(next.user).toEqual({ handle: [sha('jack')] });
    expect(next.digests).toBeUndefined();
  });
});

describe('serializeUser', () => {
  it('canonical key order whatever the input order, empty types omitted', () => {
    const json = serializeUser({ partner_user_id: ['p"1'], handle: [], email: ['e1', 'e2'] });
    expect(json).toBe('{"email":["e1","e2"],"partner_user_id":["p\\"1"]}');
    expect(JSON.parse(json)).toEqual({ email: ['e1', 'e2'], partner_user_id: ['p"1'] });
    expect(serializeUser({})).toBe('{}');
  });
  it('equals JSON.stringify of a built user', () => {
    const built = buildUser(
      record([field('phone_number', '+33 6 12 34 56 78'), field('email', 'a@x.com'), field('partner_user_id', 'é')]),
      {},
    );
    expect(serializeUser(built.user)).toBe(JSON.stringify(built.user));
  });
  it('serializeRow (the hot path, digests unescaped) writes exactly what serializeUser writes for built users', () => {
    const digest = 'AB'.repeat(32);
    const records = [
      [
        field('email', 'A@x.com'),
        field('email', digest),
        field('email', 'a@x.com'),
        field('phone_number', '+44 20 7946 0958'),
        field('partner_user_id', 'p"1\\ é'),
      ],
      // Fewer values of each type than the row before: only the first ones of the reused lists are this row's.
      [field('email', 'b@x.com'), field('partner_user_id', 'p2')],
      [
        field('handle', '@Someone'),
        field('device_id', '2F5F53913E454D02B6454575A08F86E1'),
        field('service_id', '00042'),
      ],
      [field('email', 'not an email'), field('partner_user_id', '\u0001ctl')],
    ];
    for (const inputHashed of ['auto', 'never'] as const) {
      // One reader for every record: a row's values are its own, not the last row's.
      const reader = rowReader({ inputHashed });
      for (const fields of records) {
        const built = buildUser(record(fields), { inputHashed });
        reader.read(record(fields));
        expect(serializeRow(reader)).toBe(serializeUser(built.user));
        expect(reader.built(built.line)).toEqual(built);
      }
    }
  });
});

describe('normalizeIdentifier (the public one-value form)', () => {
  it('gives what the per-type normalizer gives, for every type', () => {
    const cases: [Parameters<typeof normalizeIdentifier>[0], string, (raw: string) => unknown][] = [
      ['email', ' Jane.Doe+news@Example.COM ', normalizeEmail],
      ['email', 'not an email', normalizeEmail],
      ['handle', '@AdsAPI', normalizeHandle],
      ['device_id', 'AEBE52E7-03EE-455A-B3C4-E57283966239', normalizeDeviceId],
      ['service_id', '00123', normalizeServiceId],
      ['partner_user_id', " '7210448301100", normalizePartnerUserId],
    ];
    for (const [type, raw, own] of cases) expect(normalizeIdentifier(type, raw)).toEqual(own(raw));
    expect(normalizeIdentifier('phone_number', '(650)555-1212', { country: 'US' })).toEqual({
      ok: true,
      value: '16505551212',
    });
    expect(normalizeIdentifier('phone_number', '(650)555-1212', { country: 'US', format: 'e164' })).toEqual(
      normalizePhone('(650)555-1212', { country: 'US', format: 'e164' }),
    );
  });
});
