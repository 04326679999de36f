import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { normalizeCountryCode } from '../src/identifiers/countries.js';

/**
 * Every alpha-3 code and name the hand-written table accepted before the lookup was built from
 * i18n-iso-countries (frozen from that table, version 1), with the code it gave.
 */
const BEFORE = JSON.parse(readFileSync(new URL('golden/country-names-v1.json', import.meta.url), 'utf8')) as Record<
  string,
  string
>;

describe('country names', () => {
  it('still accepts every name and alpha-3 code the hand-written table accepted, as the same country', () => {
    const changed = Object.entries(BEFORE).filter(([name, code]) => normalizeCountryCode(name) !== code);
    expect(Object.keys(BEFORE).length).toBeGreaterThan(700);
    expect(changed).toEqual([]);
  });

  it('accepts local names from i18n-iso-countries', () => {
    expect(normalizeCountryCode('Deutschland')).toBe('DE');
    expect(normalizeCountryCode('Allemagne')).toBe('DE');
    expect(normalizeCountryCode('Alemania')).toBe('DE');
    expect(normalizeCountryCode('Österreich')).toBe('AT');
    expect(normalizeCountryCode('oesterreich')).toBeUndefined();
    expect(normalizeCountryCode('Suisse')).toBe('CH');
    expect(normalizeCountryCode('Nederland')).toBe('NL');
    expect(normalizeCountryCode('Grèce')).toBe('GR');
  });

  it('keeps the names i18n-iso-countries lacks (official names, abbreviations, parts of the UK)', () => {
    expect(normalizeCountryCode('Republic of Austria')).toBe('AT');
    expect(normalizeCountryCode('U.K.')).toBe('GB');
    expect(normalizeCountryCode('Scotland')).toBe('GB');
    expect(normalizeCountryCode('KSA')).toBe('SA');
    expect(normalizeCountryCode('Kosovo')).toBe('XK');
    expect(normalizeCountryCode('Tristan da Cunha')).toBe('TA');
  });

  it('refuses a name that locales give to two countries, or that folds like another country', () => {
    // Kongo: Congo-Brazzaville in Polish, Congo-Kinshasa in German.
    expect(normalizeCountryCode('Kongo')).toBeUndefined();
    // Vietnamese Đức (Germany) folds as `uc`, like Vietnamese Úc (Australia).
    expect(normalizeCountryCode('Đức')).toBeUndefined();
    expect(normalizeCountryCode('Úc')).toBeUndefined();
  });

  it('accepts only countries libphonenumber-js supports', () => {
    expect(normalizeCountryCode('Antarctica')).toBeUndefined();
    expect(normalizeCountryCode('ATA')).toBeUndefined();
  });
});
