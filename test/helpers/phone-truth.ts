/**
 * Phone numbers with their ground truth, written the ways CRM exports hold them: for each country,
 * mobile numbers (libphonenumber-js's example mobile number with its last digits varied),
 * fixed-line numbers (random digits of about the example's length) and mobile or fixed-line
 * numbers whose digits start with the country's calling code (the values with two readings), each
 * kept only when the `max` metadata says it is a valid number of that type; then each number in every written form, with
 * the country as alpha-2 code, alpha-3 code or English name.
 */
import examplesJson from 'libphonenumber-js/examples.mobile.json';
import { parsePhoneNumberFromString as parseMax, type CountryCode } from 'libphonenumber-js/max';
import { mulberry32 } from '../../src/sandbox/faults.js';

/** alpha-2, alpha-3, English name (as CRMs write them; all accepted by normalizeCountryCode). */
export const TRUTH_COUNTRIES: readonly (readonly [string, string, string])[] = [
  ['US', 'USA', 'United States'],
  ['CA', 'CAN', 'Canada'],
  ['MX', 'MEX', 'Mexico'],
  ['BR', 'BRA', 'Brazil'],
  ['AR', 'ARG', 'Argentina'],
  ['CO', 'COL', 'Colombia'],
  ['CL', 'CHL', 'Chile'],
  ['PE', 'PER', 'Peru'],
  ['CU', 'CUB', 'Cuba'],
  ['GB', 'GBR', 'United Kingdom'],
  ['IE', 'IRL', 'Ireland'],
  ['FR', 'FRA', 'France'],
  ['DE', 'DEU', 'Germany'],
  ['AT', 'AUT', 'Austria'],
  ['CH', 'CHE', 'Switzerland'],
  ['IT', 'ITA', 'Italy'],
  ['ES', 'ESP', 'Spain'],
  ['PT', 'PRT', 'Portugal'],
  ['NL', 'NLD', 'Netherlands'],
  ['BE', 'BEL', 'Belgium'],
  ['SE', 'SWE', 'Sweden'],
  ['NO', 'NOR', 'Norway'],
  ['DK', 'DNK', 'Denmark'],
  ['FI', 'FIN', 'Finland'],
  ['PL', 'POL', 'Poland'],
  ['CZ', 'CZE', 'Czechia'],
  ['SK', 'SVK', 'Slovakia'],
  ['GR', 'GRC', 'Greece'],
  ['XK', 'XK', 'Kosovo'],
  ['TR', 'TUR', 'Turkey'],
  ['RU', 'RUS', 'Russia'],
  ['KZ', 'KAZ', 'Kazakhstan'],
  ['UA', 'UKR', 'Ukraine'],
  ['IL', 'ISR', 'Israel'],
  ['AE', 'ARE', 'United Arab Emirates'],
  ['SA', 'SAU', 'Saudi Arabia'],
  ['EG', 'EGY', 'Egypt'],
  ['MA', 'MAR', 'Morocco'],
  ['NG', 'NGA', 'Nigeria'],
  ['KE', 'KEN', 'Kenya'],
  ['ZA', 'ZAF', 'South Africa'],
  ['IN', 'IND', 'India'],
  ['PK', 'PAK', 'Pakistan'],
  ['BD', 'BGD', 'Bangladesh'],
  ['CN', 'CHN', 'China'],
  ['JP', 'JPN', 'Japan'],
  ['KR', 'KOR', 'South Korea'],
  ['ID', 'IDN', 'Indonesia'],
  ['VN', 'VNM', 'Vietnam'],
  ['TH', 'THA', 'Thailand'],
  ['PH', 'PHL', 'Philippines'],
  ['MY', 'MYS', 'Malaysia'],
  ['SG', 'SGP', 'Singapore'],
  ['AU', 'AUS', 'Australia'],
  ['NZ', 'NZL', 'New Zealand'],
];

export interface TruthRow {
  /** The phone cell as written. */
  value: string;
  /** The country cell (alpha-2, alpha-3 or name). */
  country: string;
  /** The country, alpha-2. */
  alpha2: string;
  /** The number it is, E.164. */
  e164: string;
  /** One of the forms issue 30 found (issueForms); `lossy`: a spreadsheet rounded it. */
  issue30?: 'read' | 'lossy';
}

type Random = () => number;
const digits = (rnd: Random, n: number): string =>
  Array.from({ length: n }, () => String(Math.floor(rnd() * 10))).join('');

/** `count` distinct national numbers of `country` of type `type` (undefined: mobile or fixed line) under `max`, made by `candidate`. */
function numbersOfType(
  country: string,
  type: 'MOBILE' | 'FIXED_LINE' | undefined,
  count: number,
  candidate: () => string,
): string[] {
  const found = new Set<string>();
  for (let tries = 0; tries < 4000 && found.size < count; tries++) {
    const p = parseMax(candidate(), country as CountryCode);
    if (p === undefined || !p.isValid() || p.country !== country) continue;
    const t = p.getType();
    if (type === undefined ? t === 'MOBILE' || t === 'FIXED_LINE' : t === type || t === 'FIXED_LINE_OR_MOBILE') {
      found.add(p.nationalNumber);
    }
  }
  return [...found];
}

/** Extensions as people and tools write them after a number (dropped: the number is the main one). */
export const EXTENSIONS: readonly string[] = [
  ' x12',
  ' X 7',
  ' ext. 881',
  ' ext 881',
  ' Ext.881',
  ' extension 5',
  ' #47',
  '#47',
  ';ext=12',
  ',12',
  ',,12',
  ' - 503#',
  ' poste 12',
  ' Durchwahl 12',
  ' DW 12',
  ' (mobile)',
  ' 内線 12',
];

/** The international prefixes a person abroad writes before a calling code (docs/normalization.md, phone-idd). */
const PREFIXES = ['00', '011', '0011', '010', '000'];

/** How a spreadsheet that stored the digits `d` as a number writes it: a float, or scientific (with `.` or `,`). */
function spreadsheetForms(d: string, rnd: Random): string[] {
  if (!/^[1-9]\d{5,}$/.test(d)) return [];
  const comma = rnd() < 0.5 ? ',' : '.';
  return [`${d}.0`, `${d[0]}${comma}${d.slice(1)}E+${d.length - 1}`];
}

/** The forms a number takes in CRM exports, each an exact rendering of the same number. */
function writtenForms(country: string, nationalNumber: string): string[] {
  const p = parseMax(nationalNumber, country as CountryCode)!;
  const cc = p.countryCallingCode;
  const national = p.formatNational();
  const intl = p.formatInternational();
  const trunk = /^0/.test(national.replace(/[^0-9]/g, '')) ? '0' : '';
  const forms = [
    national,
    national.replace(/[^0-9]/g, ''),
    nationalNumber,
    intl.replace(/^\+/, '').replace(/ /g, ''),
    cc + ' ' + nationalNumber,
    intl,
    intl.replace(/ /g, '-'),
    intl.replace(/ /g, '.'),
    `+${cc}${nationalNumber}`,
    `00${cc} ${nationalNumber}`,
    `00 ${intl.slice(1)}`,
  ];
  if (trunk !== '')
    forms.push(`+${cc} (0) ${nationalNumber}`, national.replace(/ /g, '-'), national.replace(/ /g, '.'));
  return [...new Set(forms)];
}

/**
 * The forms issue 30 found in exports, each an exact rendering of the number or one whose digits
 * were lost: spreadsheet numbers (the calling code without `+`, and the national digits without
 * their trunk `0`, as floats and in scientific form), an international prefix people write
 * (`0044…`, `011 44…`) with the row's own country or another one, an extension after a form
 * above, `00cc (0) …`. `other`: a country of the corpus whose row holds the prefixed form.
 */
function issueForms(country: string, nationalNumber: string, other: string, rnd: Random): [string, string][] {
  const p = parseMax(nationalNumber, country as CountryCode)!;
  const cc = p.countryCallingCode;
  const nationalDigits = p.formatNational().replace(/[^0-9]/g, '');
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
  const out: [string, string][] = [];
  for (const v of spreadsheetForms(cc + nationalNumber, rnd)) out.push([v, country]);
  const d = cc + nationalNumber;
  // Rounded to 6 significant digits, as a spreadsheet's General format shows a long number.
  if (d.length > 7) out.push([`${d[0]}${pick([',', '.'])}${d.slice(1, 6)}E+${d.length - 1}`, country]);
  for (const v of spreadsheetForms(nationalDigits.replace(/^0/, ''), rnd)) out.push([v, country]);
  const prefix = pick(PREFIXES);
  out.push([`${prefix} ${cc} ${nationalNumber}`, other], [`${prefix}${cc}${nationalNumber}`, country]);
  const base = pick(writtenForms(country, nationalNumber));
  out.push([base + pick(EXTENSIONS), country]);
  if (/^0/.test(nationalDigits)) out.push([`00${cc} (0)${nationalNumber}`, other]);
  return out;
}

/**
 * The corpus: `perType` mobile and fixed-line numbers of each country, every form, the country
 * written three ways; with `issue30`, also the forms of issueForms.
 */
export function phoneTruthCorpus(perType: number, seed: number, issue30 = false): TruthRow[] {
  const rnd = mulberry32(seed);
  const examples = examplesJson as unknown as Record<string, string>;
  const rows: TruthRow[] = [];
  for (const names of TRUTH_COUNTRIES) {
    const country = names[0];
    const example = examples[country]!;
    const keep = Math.max(2, Math.floor(example.length / 2));
    const mobiles = numbersOfType(
      country,
      'MOBILE',
      perType,
      () => example.slice(0, keep) + digits(rnd, example.length - keep),
    );
    const length = (): number => example.length - 1 + Math.floor(rnd() * 3);
    const fixed = numbersOfType(country, 'FIXED_LINE', perType, () => digits(rnd, length()));
    // National numbers whose digits start with the calling code: the values with two readings.
    const cc = parseMax(example, country as CountryCode)!.countryCallingCode;
    const twoReadings = numbersOfType(country, undefined, perType, () => cc + digits(rnd, length() - cc.length));
    let i = 0;
    for (const nationalNumber of [...mobiles, ...fixed, ...twoReadings]) {
      const e164 = parseMax(nationalNumber, country as CountryCode)!.number;
      for (const value of writtenForms(country, nationalNumber))
        rows.push({ value, country: names[i++ % 3]!, alpha2: country, e164 });
      if (!issue30) continue;
      const other = TRUTH_COUNTRIES[Math.floor(rnd() * TRUTH_COUNTRIES.length)]!;
      for (const [value, rowCountry] of issueForms(country, nationalNumber, other[0], rnd)) {
        const written = rowCountry === country ? names : other;
        const scientific = /^\d[.,](\d+)E\+(\d+)$/.exec(value);
        const issue30 = scientific !== null && scientific[1]!.length < Number(scientific[2]) ? 'lossy' : 'read';
        rows.push({ value, country: written[i++ % 3]!, alpha2: rowCountry, e164, issue30 });
      }
    }
  }
  return rows;
}

/**
 * Whether the digits of `value` (no `+`) have two readings that are both real numbers under `max`:
 * national of `country`, and starting with its calling code. No rule can tell which one was meant.
 */
export function ambiguousUnderMax(row: TruthRow): boolean {
  if (row.value.startsWith('+') || row.value.startsWith('0')) return false;
  const d = writtenDigits(row.value);
  const cc = parseMax(row.e164)!.countryCallingCode;
  if (!d.startsWith(cc)) return false;
  const national = parseMax(d, row.alpha2 as CountryCode);
  const included = parseMax('+' + d);
  return national?.isValid() === true && included?.isValid() === true && national.number !== included.number;
}

/** The digits of the number a value holds: an extension after it dropped, a spreadsheet's form read back. */
export function writtenDigits(value: string): string {
  const scientific = /^(\d)[.,](\d+)E\+\d+$/.exec(value);
  if (scientific !== null) return scientific[1]! + scientific[2]!;
  return value
    .replace(/[- ]+\d{1,6}#$/, '')
    .replace(/\.0+$/, '')
    .replace(/^([+\d ().\-/]*\d).*$/, '$1')
    .replace(/[^0-9]/g, '');
}
