import { getCountries } from 'libphonenumber-js';
import { describe, expect, it } from 'vitest';
import { normalizeIdentifier } from '../src/identifiers/normalize.js';
import { mulberry32 } from '../src/sandbox/faults.js';
import { fuzzNumbers, phoneFuzzCorpus, punctuationForms, serviceReadAsLine } from './helpers/phone-fuzz.js';

// The suite runs a small seeded corpus; the big run of docs/normalization.md ("Measured") is
// PHONE_FUZZ_PER_COUNTRY=100 PHONE_FUZZ_SEED=1 (then 2, 3) npx vitest run test/phone-fuzz.test.ts
const PER_COUNTRY = Number(process.env['PHONE_FUZZ_PER_COUNTRY'] ?? 2);
const SEED = Number(process.env['PHONE_FUZZ_SEED'] ?? 20261126);

describe('phones of every country libphonenumber-js knows, against their ground truth', () => {
  it('0 wrong digests, at most 1% of the numbers with a country rejected', () => {
    const rows = phoneFuzzCorpus(PER_COUNTRY, SEED);
    expect(new Set(rows.map((r) => r.e164.slice(0, 4))).size).toBeGreaterThan(200);
    const countries = new Set(rows.map((r) => r.country));
    // Western Sahara's numbers are all Morocco's to the metadata (a shared calling code): no number of its own.
    expect(getCountries().filter((c) => !countries.has(c))).toEqual(['EH']);
    const wrong: string[] = [];
    const reasons: Record<string, number> = {};
    let withCountry = 0;
    let services = 0;
    for (const row of rows) {
      const country = row.country === undefined ? {} : { country: row.country };
      const r = normalizeIdentifier('phone_number', row.value, { ...country, format: 'e164' });
      if (r.ok && r.value !== row.e164) {
        // A service number (premium rate…) whose digits are also a person's line: read as the line, by policy.
        if (serviceReadAsLine(row.e164, r.value)) services++;
        else wrong.push(`${row.value} (${row.country ?? '-'}) is ${row.e164}, read ${r.value}`);
      }
      if (row.country === undefined) continue;
      withCountry++;
      if (!r.ok) reasons[r.reason] = (reasons[r.reason] ?? 0) + 1;
    }
    expect(wrong.slice(0, 20)).toEqual([]);
    expect(services).toBeLessThanOrEqual(rows.length / 1000);
    expect(rows.length).toBeGreaterThan(5000);
    const rejected = Object.values(reasons).reduce((a, b) => a + b, 0);
    expect(rejected / withCountry, JSON.stringify(reasons)).toBeLessThanOrEqual(0.01);
  });
});

describe('dashes and invisible characters inside a number (Word, Outlook, web pages)', () => {
  it('read as the same number written with `-`: never cut there, to a shorter valid number or a reject', () => {
    const rnd = mulberry32(SEED);
    const rows = fuzzNumbers(1, SEED).flatMap((n) => punctuationForms(n, rnd));
    expect(rows.length).toBeGreaterThan(3000);
    const differ: string[] = [];
    let valid = 0;
    for (const row of rows) {
      const opts = { country: row.country, format: 'e164' as const };
      const ascii = normalizeIdentifier('phone_number', row.ascii, opts);
      const read = normalizeIdentifier('phone_number', row.value, opts);
      if (ascii.ok) valid++;
      if (JSON.stringify(read) !== JSON.stringify(ascii))
        differ.push(
          `${JSON.stringify(row.value)} (${row.country}): ${JSON.stringify(read)}, as ${row.ascii}: ${JSON.stringify(ascii)}`,
        );
    }
    expect(differ.slice(0, 10)).toEqual([]);
    // The forms with `-` are read right (the fuzz above holds them to their truth): most are valid.
    expect(valid / rows.length).toBeGreaterThan(0.95);
  });
});
