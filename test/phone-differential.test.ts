import { getCountryCallingCode, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';
import { describe, expect, it, vi } from 'vitest';
import { cleanValue } from '../src/platform/identifiers/rules.js';
import { normalizePhone } from '../src/identifiers/normalize.js';
import { phoneToE164, phoneWrittenInternationalPrefixes } from '../src/platform/identifiers/phone.js';
import examplesJson from 'libphonenumber-js/mobile/examples';
import metadataJson from 'libphonenumber-js/min/metadata';
import { mulberry32 } from '../src/sandbox/faults.js';
import { generatePhoneCorpus, type PhoneCase } from './helpers/phone-corpus.js';

// The library's parser, spied on: how many values the fast path hands to it.
vi.mock('libphonenumber-js', async (importOriginal) => {
  const lib = await importOriginal<typeof import('libphonenumber-js')>();
  return { ...lib, parsePhoneNumberFromString: vi.fn(lib.parsePhoneNumberFromString) };
});

// The truth is read with the library's own, unspied parser: the spy then counts only the fast path's calls.
const actual = await vi.importActual<typeof import('libphonenumber-js')>('libphonenumber-js');
const answers = new Map<string, string | undefined>();

/** What the issue defines as the truth: the library with its default metadata, called per value (once). */
function library(value: string, country: string | undefined): string | undefined {
  const key = `${country ?? ''} ${value}`;
  if (answers.has(key)) return answers.get(key);
  const parsed = actual.parsePhoneNumberFromString(value, country as CountryCode | undefined);
  const answer = parsed !== undefined && parsed.isValid() ? parsed.number : undefined;
  answers.set(key, answer);
  return answer;
}

function mismatches(cases: readonly PhoneCase[]): string[] {
  const out: string[] = [];
  for (const { value, country } of cases) {
    const expected = library(value, country);
    const actual = phoneToE164(value, country);
    if (actual !== expected) out.push(`${JSON.stringify(value)} ${country ?? '-'}: fast ${actual} library ${expected}`);
    // `national`: the library's own reading, which the fast path must reproduce exactly.
    const opts = { format: 'digits', countryCode: 'national' } as const;
    const digits = normalizePhone(value, country === undefined ? opts : { country, ...opts });
    // Full-width characters are read as their ASCII forms (NFKC): the library takes `＋` for no `+`.
    const expectedClean = library(cleanValue(value).normalize('NFKC'), country);
    const actualDigits = digits.ok ? digits.value : undefined;
    const clean = cleanValue(value);
    if (
      actualDigits !== expectedClean?.slice(1) &&
      !policyReading(clean, country, expectedClean, actualDigits) &&
      !(secondReading(clean.normalize('NFKC'), country, expectedClean) && (digits.ok || isAmbiguous(digits)))
    ) {
      out.push(`${JSON.stringify(value)} ${country ?? '-'} digits: ${actualDigits} library ${expectedClean}`);
    }
  }
  return out;
}

/**
 * normalizePhone departs from the library's reading by documented rules (docs/normalization.md, phone
 * readings; tested in normalize.test.ts): `00` + the row country's own calling code is international, and a
 * `+` number the library finds invalid may be the valid number of a `(0)` trunk or Mexico's mobile `1`.
 * Either way the result must be a number the library finds valid as written with `+`.
 */
function policyReading(
  value: string,
  country: string | undefined,
  library: string | undefined,
  ours: string | undefined,
) {
  if (ours === undefined || actual.parsePhoneNumberFromString('+' + ours)?.isValid() !== true) return false;
  const own =
    country !== undefined &&
    value.replace(/[^0-9]/g, '').startsWith('00' + getCountryCallingCode(country as CountryCode));
  // After a written international prefix, as after `+` (`0049 (0)30…` is `+49 (0)30…`).
  const abroad = afterPrefixes(value).some((p) => {
    const read = normalizePhone(p);
    return p === '+' + ours || (read.ok && read.value === ours);
  });
  // A spreadsheet's number forms are read as their integer (test/phone-truth.test.ts checks them exactly).
  const spreadsheet = /^[1-9]\d{5,}\.0+$|^\d[.,]\d+[eE]\+?\d+$/.test(value);
  return (value.startsWith('00') && own) || (value.startsWith('+') && library === undefined) || abroad || spreadsheet;
}

/** The numbers `value` may be after an international prefix people write (phone-reading's fourth rule). */
function afterPrefixes(value: string): string[] {
  const digits = value.replace(/^[^0-9+]+/, '').replace(/[^0-9]/g, '');
  if (!/^[^0-9+]*0/.test(value)) return [];
  return phoneWrittenInternationalPrefixes()
    .filter((p) => digits.startsWith(p) && digits.length > p.length)
    .map((p) => '+' + digits.slice(p.length));
}

const isAmbiguous = (r: ReturnType<typeof normalizePhone>): boolean => !r.ok && r.reason === 'phone_ambiguous';
const minCountries = (metadataJson as unknown as { countries: Record<string, readonly unknown[]> }).countries;

/**
 * The third documented rule, checked on its own: a value whose library reading has another valid
 * reading under `min` may be decided by the number ranges or refused as `phone_ambiguous`. The
 * other readings: the national number without the international prefix the library read, without
 * the leading `0` (or national prefix) it kept, and a `+` value without the `(0)` the library kept.
 */
function secondReading(written: string, country: string | undefined, library: string | undefined): boolean {
  if (library === undefined) return false;
  const value = written.replace(/^[ ().\-/]+/, '');
  const digits = value.replace(/[^0-9]/g, '');
  const others: string[] = [];
  if (value.startsWith('+') && value.includes('(0)')) {
    const code = actual.parsePhoneNumberFromString(library)!.countryCallingCode;
    others.push('+' + code + digits.slice(code.length + 1));
  } else if (country !== undefined && /^[0-9]/.test(value)) {
    const own = '+' + getCountryCallingCode(country as CountryCode);
    const prefix = minCountries[country]?.[5];
    if (!library.startsWith(own)) others.push(own + digits);
    else if (library === own + digits) {
      if (typeof prefix === 'string' && digits.startsWith(prefix)) others.push(own + digits.slice(prefix.length));
      if (digits.startsWith('0')) others.push(own + digits.slice(1));
    }
  }
  others.push(...afterPrefixes(written));
  return others.some((o) => {
    const p = actual.parsePhoneNumberFromString(o);
    return p?.isValid() === true && p.number !== library;
  });
}

/**
 * Rows of the first generated corpus: 10,000 here (each of the 245 countries of the examples drawn at least 6
 * times with this seed; the last test below covers each country's forms and lengths on its own).
 * `npm run bench -- phones` runs 300,000 (`PHONE_DIFFERENTIAL_ROWS`) and fails on any mismatch.
 */
const ROWS = Number(process.env['PHONE_DIFFERENTIAL_ROWS'] ?? 10_000);
if (!Number.isSafeInteger(ROWS) || ROWS < 1000) throw new Error('PHONE_DIFFERENTIAL_ROWS: an integer of 1000 or more');

describe('phone fast path against libphonenumber-js', () => {
  it(`0 mismatches on a ${ROWS}-row generated corpus (validity, E.164 and digits)`, () => {
    const corpus = generatePhoneCorpus(ROWS, 20240601);
    expect(mismatches(corpus).slice(0, 20)).toEqual([]);
    // The corpus is deliberately dirty, yet most values must take the compiled path.
    const parse = vi.mocked(parsePhoneNumberFromString);
    parse.mockClear();
    for (const { value, country } of corpus) phoneToE164(value, country);
    expect(parse.mock.calls.length).toBeLessThan(corpus.length / 5);
    // Sanity: the corpus is not trivially all-invalid.
    const valid = corpus.filter((c) => library(c.value, c.country) !== undefined).length;
    expect(valid).toBeGreaterThan(corpus.length * 0.4);
    expect(valid).toBeLessThan(corpus.length * 0.95);
  });

  it('0 mismatches with another seed', () => {
    expect(mismatches(generatePhoneCorpus(10_000, 7)).slice(0, 20)).toEqual([]);
  });

  it('0 mismatches on hand-picked edge cases, for every country', () => {
    const values = [
      '+44 (0)20 7946 0958',
      '0044 20 7946 0958',
      '00 0 44 20 7946 0958',
      '44 20 7946 0958',
      '4420 7946 0958',
      '440 20 7946 0958',
      '(020) 7946-0958',
      '07400 123456',
      '+447400123456',
      '01534 456789',
      '07624 369230',
      '07781 123456',
      '+1 (212) 555-0123',
      '1 212 555 0123',
      '011 44 20 7946 0958',
      '2125550123',
      '4165550123',
      '+1 416 555 0123',
      '49 30 901820',
      '4930901820',
      '0049 30 901820',
      '030 901820',
      '49 151 23456789',
      '+33 (0)6 12 34 56 78',
      '33 6 12 34 56 78',
      '0033612345678',
      '91 98765 43210',
      '098765 43210',
      '+91-98765-43210',
      '+7 912 345-67-89',
      '8 912 345-67-89',
      '+7 701 123 4567',
      '+39 06 698 12345',
      '+39 06 698',
      '+61 2 9876 5432',
      '+358 18 12345',
      '+590 690 00 1234',
      '+262 269 12 34 56',
      '+599 9 123 4567',
      '+54 9 11 1234 5678',
      '011 15 2345 6789',
      '+55 11 91234 5678',
      '0XX11 91234 5678',
      '(0XX) 11 1234 5678',
      '+57 601 234 5678',
      '+52 1 55 1234 5678',
      '123',
      '12 34',
      '+123',
      '+1',
      '+0',
      '000',
      '+44',
      '0044',
      '00',
      '011',
      '0',
      // A 0 right after the IDD prefix means "not an IDD prefix" (stripIddPrefix): national parsing goes on.
      '0080056000057742',
      '000689686',
      '81001846444512',
    ];
    const cases: PhoneCase[] = [];
    const countries = [
      'US',
      'CA',
      'GB',
      'JE',
      'IM',
      'GG',
      'DE',
      'FR',
      'IN',
      'RU',
      'KZ',
      'IT',
      'VA',
      'AU',
      'FI',
      'AX',
      'AR',
      'BR',
      'CO',
      'MX',
      'JP',
      'CN',
      'NG',
      'ZA',
      'SG',
      'NZ',
      'ID',
    ];
    for (const value of values) {
      cases.push({ value, country: undefined });
      for (const country of countries) cases.push({ value, country });
    }
    expect(mismatches(cases)).toEqual([]);
  });

  it('0 mismatches for every country: its example number in every form, and at every length', () => {
    const examples = examplesJson as unknown as Record<string, string>;
    const countries = (metadataJson as unknown as { countries: Record<string, readonly unknown[]> }).countries;
    const rnd = mulberry32(99);
    const digits = (n: number): string => Array.from({ length: n }, () => String(Math.floor(rnd() * 10))).join('');
    const cases: PhoneCase[] = [];
    for (const [country, example] of Object.entries(examples)) {
      const meta = countries[country];
      if (meta === undefined) continue;
      const cc = meta[0] as string;
      const trunk = typeof meta[5] === 'string' ? meta[5] : '';
      const idd = '00';
      for (const value of [
        example,
        trunk + example,
        `+${cc} ${example}`,
        `+${cc} (${trunk || '0'}) ${example}`,
        cc + example,
        cc + trunk + example,
        `${idd} ${cc} ${example}`,
        `${idd}0${cc}${example}`,
      ]) {
        cases.push({ value, country }, { value, country: undefined });
      }
      // Lengths around and between the plan's possible lengths, with and without the trunk prefix.
      for (let len = 3; len <= 18; len++) {
        const body = (example + digits(len)).slice(0, len);
        cases.push(
          { value: body, country },
          { value: trunk + body, country },
          { value: `+${cc}${body}`, country: undefined },
        );
        cases.push({ value: trunk + digits(len), country }, { value: cc + digits(len), country });
      }
    }
    expect(mismatches(cases).slice(0, 20)).toEqual([]);
  });
});
