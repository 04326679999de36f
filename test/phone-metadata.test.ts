import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import metadataJson from 'libphonenumber-js/min/metadata';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  isSupportedCountry,
  PHONE_FAST_PATH_LIBRARY_VERSION,
  phoneFastPathEnabled,
  phoneFastPathSupports,
} from '../src/platform/identifiers/phone.js';

/** A deep copy of the real metadata, changed by `edit`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function changed(edit: (m: Record<string, any>) => void): unknown {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const copy = structuredClone(metadataJson) as Record<string, any>;
  edit(copy);
  return copy;
}

describe('isSupportedCountry', () => {
  it("answers as libphonenumber-js's for every two-letter code and for keys that are not codes", () => {
    const library = createRequire(import.meta.url)('libphonenumber-js') as { isSupportedCountry(c: string): boolean };
    const letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
    const codes = [...letters].flatMap((a) => [...letters].map((b) => a + b));
    const odd = ['001', '800', '__proto__', 'constructor', 'toString', '', 'us', 'Us', 'USA'];
    const differ = [...codes, ...odd].filter((c) => isSupportedCountry(c) !== library.isSupportedCountry(c));
    expect(differ).toEqual([]);
    expect(codes.filter(isSupportedCountry).length).toBeGreaterThan(200);
  });
});

describe('phone fast path: metadata check', () => {
  it('package.json pins libphonenumber-js to exactly the version the fast path was proved against', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(pkg.dependencies['libphonenumber-js']).toBe(PHONE_FAST_PATH_LIBRARY_VERSION);
    expect(phoneFastPathSupports(metadataJson, PHONE_FAST_PATH_LIBRARY_VERSION)).toBe(true);
    expect(phoneFastPathEnabled()).toBe(true);
  });

  it('refuses another library version, another metadata schema, or tuples of another shape', () => {
    const v = PHONE_FAST_PATH_LIBRARY_VERSION;
    expect(phoneFastPathSupports(metadataJson, '1.99.0')).toBe(false);
    expect(
      phoneFastPathSupports(
        changed((m) => (m.version = 5)),
        v,
      ),
    ).toBe(false);
    expect(
      phoneFastPathSupports(
        changed((m) => (m.countries.GB[3] = '10')),
        v,
      ),
    ).toBe(false);
    expect(
      phoneFastPathSupports(
        changed((m) => (m.countries.US[2] = 42)),
        v,
      ),
    ).toBe(false);
    expect(
      phoneFastPathSupports(
        changed((m) => (m.countries.DE[11] = 'types')),
        v,
      ),
    ).toBe(false);
    expect(
      phoneFastPathSupports(
        changed((m) => delete m.countries.FR),
        v,
      ),
    ).toBe(false);
    expect(
      phoneFastPathSupports(
        changed((m) => (m.country_calling_codes['44'] = 'GB')),
        v,
      ),
    ).toBe(false);
  });
});

describe('phone fast path: fallback', () => {
  afterEach(() => {
    vi.doUnmock('libphonenumber-js/min/metadata');
    vi.restoreAllMocks();
    vi.resetModules();
  });

  /**
   * phone.ts loaded afresh, with the library's parser spied on (and `metadata` when given). phone.ts
   * requires the library's CommonJS build on first use (phoneLibrary): the spy is on that module's exports.
   */
  async function loadPhone(metadata?: unknown) {
    vi.resetModules();
    vi.restoreAllMocks();
    const lib = createRequire(import.meta.url)('libphonenumber-js') as typeof import('libphonenumber-js');
    const parse = vi.spyOn(lib, 'parsePhoneNumberFromString');
    if (metadata !== undefined) vi.doMock('libphonenumber-js/min/metadata', () => ({ default: metadata }));
    return { phone: await import('../src/platform/identifiers/phone.js'), parse };
  }

  it('with metadata it does not know, every number goes to the library, with the same answers', async () => {
    const inputs: [string, string | undefined][] = [
      ['+44 20 7946 0958', undefined],
      ['(650) 555-1212', 'US'],
      ['020 7946 0958', 'GB'],
      ['12345', 'US'],
    ];
    const known = await loadPhone();
    const expected = inputs.map(([v, c]) => known.phone.phoneToE164(v, c));
    expect(known.parse).not.toHaveBeenCalled();

    const unknown = await loadPhone({ ...metadataJson, version: 5 });
    expect(unknown.phone.phoneFastPathEnabled()).toBe(false);
    expect(inputs.map(([v, c]) => unknown.phone.phoneToE164(v, c))).toEqual(expected);
    expect(unknown.parse).toHaveBeenCalledTimes(inputs.length);
    expect(expected.slice(0, 3)).toEqual(['+442079460958', '+16505551212', '+442079460958']);
  });
});
