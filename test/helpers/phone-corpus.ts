/**
 * Seeded generator of phone values as CRM exports contain them, for the differential test (and, by the same
 * logic, the 1M-row benchmark): mostly US, GB, DE, FR and IN numbers in national and international formats,
 * plus every other country's example number, and the dirty cases (trunk prefixes, extensions, vanity letters,
 * wrong lengths, wrong or missing country, garbage).
 */
import examplesJson from 'libphonenumber-js/mobile/examples';
import metadataJson from 'libphonenumber-js/min/metadata';
import { mulberry32 } from '../../src/sandbox/faults.js';

export interface PhoneCase {
  value: string;
  /** Upper-case ISO country or undefined (no country column / default country). */
  country: string | undefined;
}

const examples = examplesJson as unknown as Record<string, string>;
const countries = (metadataJson as unknown as { countries: Record<string, readonly unknown[]> }).countries;
const ALL = Object.keys(examples).filter((c) => countries[c] !== undefined);
const MAIN = ['US', 'GB', 'DE', 'FR', 'IN'];

/** Templates of national significant numbers: `d` any digit, `n` 2-9, literal digits kept. */
const TEMPLATES: Record<string, string[]> = {
  US: [
    '212nddnddd',
    '415nddnddd',
    '650nddnddd',
    '305nddnddd',
    '617nddnddd',
    '202nddnddd',
    '312nddnddd',
    '800nddnddd',
    'nddnddnddd',
  ],
  GB: ['20dddddddd', '161ddddddd', '131ddddddd', '7ddddddddd', '1dddddddd', '800dddddd', '3ddddddddd'],
  DE: [
    '30ddddddd',
    '30dddddddd',
    '89ddddddd',
    '151dddddddd',
    '160ddddddd',
    '176dddddddd',
    '221ddddddd',
    '40dddddddd',
    'ddddddddddd',
  ],
  FR: ['1dddddddd', '4dddddddd', '6dddddddd', '7dddddddd', '9dddddddd', '8dddddddd'],
  IN: ['9ddddddddd', '8ddddddddd', '7ddddddddd', '6ddddddddd', '11dddddddd', '22dddddddd', '80dddddddd', '1800dddddd'],
};

export function generatePhoneCorpus(n: number, seed = 1): PhoneCase[] {
  const rnd = mulberry32(seed);
  const int = (max: number): number => Math.floor(rnd() * max);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  const digit = (): string => String(int(10));

  const fill = (template: string): string =>
    template.replace(/[dn]/g, (c) => (c === 'd' ? digit() : String(2 + int(8))));

  /** A national significant number for `country`, sometimes damaged. */
  const nsn = (country: string): string => {
    const templates = TEMPLATES[country];
    let s = templates !== undefined ? fill(pick(templates)) : examples[country]!;
    if (templates === undefined) {
      // Keep the example's prefix (usually valid), randomize the tail.
      const k = 1 + int(3);
      s = s.slice(0, Math.max(1, s.length - k)) + Array.from({ length: Math.min(k, s.length - 1) }, digit).join('');
    }
    const damage = rnd();
    if (damage < 0.05) s = s.slice(0, -1 - int(3));
    else if (damage < 0.1) s += Array.from({ length: 1 + int(3) }, digit).join('');
    else if (damage < 0.13) s = digit() + s.slice(1);
    return s;
  };

  /** Groups digits the way people write them. */
  const group = (digits: string, parenFirst: boolean): string => {
    const sep = pick([' ', ' ', '-', '.', '', '/']);
    const parts: string[] = [];
    let i = 0;
    while (i < digits.length) {
      const size = 2 + int(3);
      parts.push(digits.slice(i, i + size));
      i += size;
    }
    if (parenFirst && parts.length > 1) parts[0] = '(' + parts[0]! + ')';
    return parts.join(parenFirst && sep === '' ? ' ' : sep);
  };

  const garbage = (): string =>
    pick([
      '',
      'N/A',
      'none',
      '-',
      '+',
      '00',
      '12',
      '+1',
      'john@example.com',
      '555-CALL-NOW',
      '0000000000',
      '+0044 20 7946 0958',
      '++44 20 7946 0958',
      '1+2125550123',
      'tel:+1-212-555-0123',
      '+1 212 555 0123;ext=7',
      '\uFF0B\uFF14\uFF14 \uFF12\uFF10 \uFF17\uFF19\uFF14\uFF16 \uFF10\uFF19\uFF15\uFF18',
      '+44\u00A020\u00A07946\u00A00958',
      '020\t7946 0958',
      '+800 1234 5678',
      '+882 1234 5678',
      '+979 123456789',
      '4915134117294.0',
      '9.18142423991e+11',
      '4,91512E+12',
      Array.from({ length: 3 + int(18) }, digit).join(''),
      '+' + Array.from({ length: 3 + int(18) }, digit).join(''),
      String.fromCharCode(33 + int(90)) + Array.from({ length: 8 + int(5) }, digit).join(''),
    ]);

  const out: PhoneCase[] = [];
  for (let i = 0; i < n; i++) {
    const country = rnd() < 0.7 ? pick(MAIN) : pick(ALL);
    const meta = countries[country]!;
    const cc = meta[0] as string;
    const trunk = typeof meta[5] === 'string' ? meta[5] : '';
    const number = nsn(country);
    let value: string;
    const form = rnd();
    if (form < 0.3) value = (rnd() < 0.8 ? trunk : '') + group(number, false);
    else if (form < 0.4) value = group(trunk + number, true);
    else if (form < 0.55) value = '+' + cc + ' ' + group(number, rnd() < 0.2);
    else if (form < 0.65) value = '+' + cc + number;
    else if (form < 0.72) value = '+' + cc + ' (' + (trunk || '0') + ')' + group(number, false);
    else if (form < 0.78) value = '00' + cc + ' ' + group(number, false);
    else if (form < 0.81) value = '011 ' + cc + ' ' + group(number, false);
    else if (form < 0.86) value = cc + ' ' + group(number, false);
    else if (form < 0.89) value = cc + trunk + number;
    else if (form < 0.92) {
      value =
        '+' +
        cc +
        ' ' +
        group(number, false) +
        pick([
          ' ext. 12',
          ' x123',
          ' #45',
          ' ext 9',
          ', ext: 77',
          ' - 503#',
          ' extension 5',
          ' poste 12',
          ';ext=3',
          ',12',
        ]);
    } else if (form < 0.94) {
      value = (trunk + number).replace(/\d{4}$/, () => pick(['CALL', 'SHOP', 'HELP', 'CARS']));
    } else if (form < 0.97) value = garbage();
    else value = ' ' + group(trunk + number, false) + ' ';

    const c = rnd();
    const given = c < 0.72 ? country : c < 0.84 ? pick(ALL) : undefined;
    out.push({ value, country: given });
  }
  return out;
}
