/**
 * Country values (record column or `defaultCountry`) to ISO 3166-1 alpha-2 codes. The names come from
 * i18n-iso-countries (ISO names in the Latin-script locales below; the version is pinned by the lockfile),
 * plus KEPT_NAMES: the names it lacks that this module accepted before it was used (ISO official names,
 * common short names and abbreviations). The lookup is built once per thread, on the first value that is
 * not an alpha-2 code, and each distinct cell is then cached.
 */
import { createRequire } from 'node:module';
import { isSupportedCountry } from '../platform/identifiers/phone.js';
import type { PhoneCountry } from '../platform/identifiers/types.js';

type IsoCountries = typeof import('i18n-iso-countries');

/**
 * The locales of i18n-iso-countries written in Latin script: names in other scripts do not survive
 * foldCountryName, so loading them would only cost time.
 */
const LOCALES = (
  'af az br bs ca cs cy da de en es et eu fi fr ga gl ha hr hu id is it ' +
  'ku lt lv ms mt nb nl nn no pl pt ro sk sl so sq sv sw tk tr uz vi'
).split(' ');
/** Locales in Japanese script, looked up by their exact text (NFKC, without spaces or dots). */
const SCRIPT_LOCALES = ['ja'];

/** Names i18n-iso-countries lacks, by alpha-2, `|`-separated. Looked up folded. */
const KEPT_NAMES: Readonly<Record<string, string>> = {
  AC: 'Ascension Island',
  AD: 'Principality of Andorra',
  AE: 'U.A.E.|Emirates',
  AF: 'Islamic Republic of Afghanistan',
  AL: 'Republic of Albania',
  AM: 'Republic of Armenia',
  AO: 'Republic of Angola',
  AR: 'Argentine Republic',
  AT: 'Republic of Austria',
  AZ: 'Republic of Azerbaijan',
  BA: 'Republic of Bosnia and Herzegovina|Bosnia',
  BD: "People's Republic of Bangladesh",
  BE: 'Kingdom of Belgium',
  BG: 'Republic of Bulgaria',
  BH: 'Kingdom of Bahrain',
  BI: 'Republic of Burundi',
  BJ: 'Republic of Benin',
  BL: 'St. Barthélemy',
  BO: 'Bolivia, Plurinational State of|Plurinational State of Bolivia',
  BQ: 'Caribbean Netherlands',
  BR: 'Federative Republic of Brazil',
  BS: 'Commonwealth of the Bahamas|The Bahamas',
  BT: 'Kingdom of Bhutan',
  BW: 'Republic of Botswana',
  BY: 'Republic of Belarus',
  CD: 'Congo, The Democratic Republic of the|DRC|DR Congo',
  CG: 'Congo',
  CH: 'Swiss Confederation',
  CI: "Republic of Côte d'Ivoire",
  CL: 'Republic of Chile',
  CM: 'Republic of Cameroon',
  CN: 'Mainland China|PRC',
  CO: 'Republic of Colombia',
  CR: 'Republic of Costa Rica',
  CU: 'Republic of Cuba',
  CV: 'Republic of Cabo Verde',
  CY: 'Republic of Cyprus',
  CZ: 'Czech',
  DE: 'Federal Republic of Germany',
  DJ: 'Republic of Djibouti',
  DK: 'Kingdom of Denmark',
  DM: 'Commonwealth of Dominica',
  DZ: "People's Democratic Republic of Algeria",
  EC: 'Republic of Ecuador',
  EE: 'Republic of Estonia',
  EG: 'Arab Republic of Egypt',
  ER: 'the State of Eritrea',
  ES: 'Kingdom of Spain',
  ET: 'Federal Democratic Republic of Ethiopia',
  FI: 'Republic of Finland',
  FJ: 'Republic of Fiji',
  FK: 'Falkland Islands',
  FM: 'Federated States of Micronesia',
  FR: 'French Republic',
  GA: 'Gabonese Republic',
  GB: 'United Kingdom of Great Britain and Northern Ireland|Britain|U.K.|England|Scotland|Wales|Northern Ireland',
  GH: 'Republic of Ghana',
  GN: 'Republic of Guinea',
  GQ: 'Republic of Equatorial Guinea',
  GR: 'Hellenic Republic',
  GT: 'Republic of Guatemala',
  GW: 'Republic of Guinea-Bissau',
  GY: 'Republic of Guyana',
  HK: 'Hong Kong Special Administrative Region of China',
  HN: 'Republic of Honduras',
  HR: 'Republic of Croatia',
  HT: 'Republic of Haiti',
  ID: 'Republic of Indonesia',
  IE: 'Republic of Ireland',
  IL: 'State of Israel',
  IN: 'Republic of India',
  IQ: 'Republic of Iraq',
  IR: 'Iran, Islamic Republic of',
  IS: 'Republic of Iceland',
  IT: 'Italian Republic',
  JO: 'Hashemite Kingdom of Jordan',
  JP: 'Nippon',
  KE: 'Republic of Kenya',
  KG: 'Kyrgyz Republic',
  KH: 'Kingdom of Cambodia',
  KI: 'Republic of Kiribati',
  KM: 'Union of the Comoros',
  KN: 'St. Kitts & Nevis|St Kitts and Nevis',
  KP: "Korea, Democratic People's Republic of|Democratic People's Republic of Korea",
  KR: 'Korea|Korea, South|Korea (South)',
  KW: 'State of Kuwait',
  KZ: 'Republic of Kazakhstan',
  LB: 'Lebanese Republic',
  LI: 'Principality of Liechtenstein',
  LK: 'Democratic Socialist Republic of Sri Lanka',
  LR: 'Republic of Liberia',
  LS: 'Kingdom of Lesotho',
  LT: 'Republic of Lithuania',
  LU: 'Grand Duchy of Luxembourg',
  LV: 'Republic of Latvia',
  MA: 'Kingdom of Morocco',
  MC: 'Principality of Monaco',
  MD: 'Republic of Moldova',
  MF: 'St. Martin',
  MG: 'Republic of Madagascar',
  MH: 'Republic of the Marshall Islands',
  MK: 'Republic of North Macedonia',
  ML: 'Republic of Mali',
  MM: 'Republic of Myanmar',
  MO: 'Macao Special Administrative Region of China|Macao SAR China',
  MP: 'Commonwealth of the Northern Mariana Islands',
  MR: 'Islamic Republic of Mauritania',
  MT: 'Republic of Malta',
  MU: 'Republic of Mauritius',
  MV: 'Republic of Maldives',
  MW: 'Republic of Malawi',
  MX: 'United Mexican States',
  MZ: 'Republic of Mozambique',
  NA: 'Republic of Namibia',
  NE: 'Republic of the Niger',
  NG: 'Federal Republic of Nigeria',
  NI: 'Republic of Nicaragua',
  NL: 'Kingdom of the Netherlands',
  NO: 'Kingdom of Norway',
  NP: 'Federal Democratic Republic of Nepal',
  NR: 'Republic of Nauru',
  OM: 'Sultanate of Oman',
  PA: 'Republic of Panama',
  PE: 'Republic of Peru',
  PG: 'Independent State of Papua New Guinea',
  PH: 'Republic of the Philippines',
  PK: 'Islamic Republic of Pakistan',
  PL: 'Republic of Poland',
  PM: 'St. Pierre & Miquelon',
  PS: 'Palestine, State of|the State of Palestine|Palestinian Territories',
  PT: 'Portuguese Republic',
  PW: 'Republic of Palau',
  PY: 'Republic of Paraguay',
  QA: 'State of Qatar',
  RS: 'Republic of Serbia',
  RW: 'Rwandese Republic',
  SA: 'Kingdom of Saudi Arabia|KSA',
  SC: 'Republic of Seychelles',
  SD: 'Republic of the Sudan',
  SE: 'Kingdom of Sweden',
  SG: 'Republic of Singapore',
  SH: 'Saint Helena, Ascension and Tristan da Cunha',
  SI: 'Republic of Slovenia',
  SJ: 'Svalbard & Jan Mayen',
  SK: 'Slovak Republic',
  SL: 'Republic of Sierra Leone',
  SM: 'Republic of San Marino',
  SN: 'Republic of Senegal',
  SO: 'Federal Republic of Somalia',
  SR: 'Republic of Suriname',
  SS: 'Republic of South Sudan',
  ST: 'Democratic Republic of Sao Tome and Principe|São Tomé & Príncipe',
  SV: 'Republic of El Salvador',
  SZ: 'Kingdom of Eswatini',
  TA: 'Tristan da Cunha',
  TC: 'Turks & Caicos Islands',
  TD: 'Republic of Chad',
  TG: 'Togolese Republic',
  TH: 'Kingdom of Thailand',
  TJ: 'Republic of Tajikistan',
  TL: 'Democratic Republic of Timor-Leste|East Timor',
  TN: 'Republic of Tunisia',
  TO: 'Kingdom of Tonga',
  TR: 'Republic of Türkiye',
  TT: 'Republic of Trinidad and Tobago|Trinidad',
  TZ: 'Tanzania, United Republic of',
  UG: 'Republic of Uganda',
  US: 'America|United States of America (USA)',
  UY: 'Eastern Republic of Uruguay',
  UZ: 'Republic of Uzbekistan',
  VA: 'Vatican City|Vatican',
  VC: 'St. Vincent & Grenadines|St Vincent and the Grenadines',
  VE: 'Venezuela, Bolivarian Republic of|Bolivarian Republic of Venezuela',
  VI: 'Virgin Islands of the United States',
  VN: 'Socialist Republic of Viet Nam',
  VU: 'Republic of Vanuatu',
  WF: 'Wallis & Futuna',
  WS: 'Independent State of Samoa',
  YE: 'Republic of Yemen',
  ZA: 'Republic of South Africa',
  ZM: 'Republic of Zambia',
  ZW: 'Republic of Zimbabwe',
};

/**
 * Short names in the column-name languages (vocabulary/) that i18n-iso-countries gives only in
 * their long form (`États-Unis d'Amérique`, `Stati Uniti d'America`, `アメリカ合衆国`).
 */
const SHORT_NAMES: Readonly<Record<string, string>> = {
  US: 'États-Unis|Etats Unis|EE. UU.|EEUU|EUA|Stati Uniti|Stany Zjednoczone Ameryki|アメリカ|米国|アメリカ合衆国 (米国)',
  GB: 'Grande-Bretagne|Gran Bretaña|Gran Bretagna|Grã-Bretanha|Groot-Brittannië|英国|イギリス (英国)',
  KR: 'Corée|Corea del Sur|韓国',
  CN: '中国',
  RU: 'ロシア',
  TW: '台湾',
  KP: '北朝鮮',
  CZ: 'République tchèque|Tschechei',
  NL: 'Hollande|Holanda|Olanda',
};

/** A country name as looked up: accents dropped, lowercase, punctuation and spaces reduced to single spaces. */
export function foldCountryName(name: string): string {
  return transliterate(name)
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
}

/** Letters that foldCountryName drops (`ø`, `đ`, `ł`, `ß`, other scripts): the fold of such a name loses part of it. */
const NON_ASCII_LETTER_RE = /[^a-zA-Z\P{L}]/u;
function foldIsLossy(name: string): boolean {
  return NON_ASCII_LETTER_RE.test(
    transliterate(name)
      .normalize('NFD')
      .replace(/[\u0300-\u036f]/g, ''),
  );
}

/** Latin letters that NFD does not split into a base letter and a mark (`Großbritannien`, `Włochy`). */
const LETTERS: Readonly<Record<string, string>> = {
  ß: 'ss',
  ł: 'l',
  Ł: 'L',
  ø: 'o',
  Ø: 'O',
  æ: 'ae',
  Æ: 'AE',
  œ: 'oe',
  Œ: 'OE',
};
const transliterate = (name: string): string => name.replace(/[ßłŁøØæÆœŒ]/g, (c) => LETTERS[c] ?? c);

/** A name in Japanese script as looked up: NFKC, without spaces, dots and middle dots. */
const foldScriptName = (name: string): string => name.normalize('NFKC').replace(/[\s.・･]+/g, '');
const SCRIPT_RE = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/u;

function loadIsoCountries(): IsoCountries {
  // Required here, not imported: the package and its locale files load with the index, not with the module.
  const require = createRequire(import.meta.url);
  const iso = require('i18n-iso-countries/index.js') as IsoCountries;
  for (const locale of [...LOCALES, ...SCRIPT_LOCALES])
    iso.registerLocale(require(`i18n-iso-countries/langs/${locale}.json`) as never);
  return iso;
}

/**
 * Folded name → alpha-2 over every locale; null where locales disagree (`Kongo`: CG in Polish, CD in
 * German) or where a lossy fold makes a name look like another (Vietnamese `Đức`, Germany, folds as `uc`,
 * Vietnamese `Úc`, Australia): such names are not recognized rather than read as the wrong country.
 */
function localeNames(iso: IsoCountries): Map<string, string | null> {
  const names = new Map<string, string | null>();
  // Most names are written alike in several locales: each (name, country) is folded once.
  const folded = new Set<string>();
  for (const locale of LOCALES) {
    for (const [code, list] of Object.entries(iso.getNames(locale, { select: 'all' }))) {
      for (const name of list) {
        if (folded.has(code + name)) continue;
        folded.add(code + name);
        const key = foldCountryName(name);
        if (key === '') continue;
        const seen = names.get(key);
        names.set(key, foldIsLossy(name) || (seen !== undefined && seen !== code) ? null : code);
      }
    }
  }
  return names;
}

/** Alpha-3 codes (upper case) and folded names to the alpha-2 codes libphonenumber-js supports. */
function buildCountryIndex(): Map<string, string> {
  const iso = loadIsoCountries();
  const index = new Map<string, string>();
  for (const [alpha2, alpha3] of Object.entries(iso.getAlpha2Codes())) {
    if (isSupportedCountry(alpha2)) index.set(alpha3, alpha2);
  }
  for (const [key, code] of localeNames(iso)) {
    if (code !== null && isSupportedCountry(code)) index.set(key, code);
  }
  for (const [code, names] of [...Object.entries(KEPT_NAMES), ...Object.entries(SHORT_NAMES)]) {
    for (const name of names.split('|'))
      index.set(SCRIPT_RE.test(name) ? foldScriptName(name) : foldCountryName(name), code);
  }
  for (const locale of SCRIPT_LOCALES) {
    for (const [code, list] of Object.entries(iso.getNames(locale, { select: 'all' })))
      for (const name of list) if (isSupportedCountry(code)) index.set(foldScriptName(name), code);
  }
  return index;
}

let countryIndex: Map<string, string> | undefined;

/**
 * The ISO 3166-1 alpha-2 code libphonenumber-js knows for `raw`, or `undefined`. Accepted, case-insensitively:
 * alpha-2 codes (`UK` is taken as `GB`, as CRM exports often write it), alpha-3 codes (`USA`, `GBR`), the
 * names of i18n-iso-countries' Latin-script locales (`Germany`, `Deutschland`, `Allemagne`, `Cote d'Ivoire`)
 * and KEPT_NAMES (`Republic of Austria`, `U.K.`, `UAE`). Use it to validate `defaultCountry` up front.
 */
export function normalizeCountryCode(raw: string): string | undefined {
  const s = raw.trim().toUpperCase();
  if (/^[A-Z]{2}$/.test(s)) {
    const code = s === 'UK' ? 'GB' : s;
    return isSupportedCountry(code) ? code : undefined;
  }
  const locale = LOCALE_RE.exec(raw.trim());
  if (locale !== null) return normalizeCountryCode(locale[1] as string);
  const index = (countryIndex ??= buildCountryIndex());
  if (SCRIPT_RE.test(s)) return index.get(foldScriptName(s));
  return index.get(s) ?? index.get(foldCountryName(s));
}

/**
 * A locale with a region (`en_GB`, `de-DE`, `pt_BR.UTF-8`): the region is the country. With `-`
 * the language must be lower case: `US-CA` is a subdivision (ISO 3166-2), not a locale.
 */
const LOCALE_RE = /^(?:[A-Za-z]{2,3}_|[a-z]{2,3}-)([A-Za-z]{2})(?:[.@][\w.@-]*)?$/;
/** A value read as a country by content: two letters only in capitals (ISO 3166 writes them so), or longer. */
const CONTENT_CODE_RE = /^(?:[A-Z]{2}|.{3,})$/su;
/** A language alone (`fr`, `de`, lower case as ISO 639 writes it): no country. */
const LANGUAGE_RE = /^\s*[a-z]{2,3}\s*$/;

/**
 * A locale column's cell as a country cell: its region (`en_GB`), nothing for a language alone
 * (`fr` is French, said in France, Belgium, Canada…: not a country), the cell itself otherwise
 * (`US`, `Germany`: a country written in a locale column).
 */
export function localeCountry(cell: string): string {
  return LANGUAGE_RE.test(cell) ? '' : cell;
}

/**
 * How well a column's sampled cells fit a country column: the share of its non-empty cells that
 * are countries. `name`: any country value (`normalizeCountryCode`); `locale`: those and languages
 * alone (see localeCountry); `content` (a column of unknown name): countries, but a lower-case
 * two-letter value is as likely a language and does not count. `locales`: most cells are
 * locales with a region.
 */
export function countryColumnShare(
  cells: readonly string[],
  how: 'name' | 'locale' | 'content',
): { share: number; filled: number; locales: boolean } {
  let filled = 0;
  let fit = 0;
  let locales = 0;
  const codes = new Set<string>();
  for (const raw of cells) {
    const cell = raw.trim();
    if (cell === '') continue;
    filled++;
    if (LOCALE_RE.test(cell)) locales++;
    const code = how === 'content' && !CONTENT_CODE_RE.test(cell) ? undefined : normalizeCountryCode(cell);
    if (how === 'locale' && LANGUAGE_RE.test(cell)) fit++;
    else if (code !== undefined) {
      fit++;
      codes.add(cell.length === 2 ? code : '');
    }
  }
  // By content, two-letter codes alone must name two countries or more: a column of `NO` is as likely a no.
  const single = how === 'content' && codes.size === 1 && !codes.has('');
  return { share: filled === 0 || single ? 0 : fit / filled, filled, locales: locales > filled / 2 };
}

/**
 * Country cells as written → code (null: not a country). A country column holds few distinct
 * values, and a name or alpha-3 code costs a fold and lookups per row; bounded all the same.
 * A memo of a pure function, shared by every build in the thread.
 */
const countryCache = new Map<string, string | null>();
const COUNTRY_CACHE_MAX = 4096;

/** The last cell resolveCountry looked up and its code: a country column repeats its cells row after row. */
let lastGiven = '';
let lastCode: string | null = null;

/** A country as given (record column or default) resolved for the phone rule, into `into`. */
export function resolveCountry(given: string | undefined, into: PhoneCountry): void {
  let code: string | null | undefined;
  if (given === lastGiven && given !== '') code = lastCode;
  else if (given === undefined || given.trim() === '') {
    into.code = undefined;
    into.invalid = false;
    return;
  } else {
    code = countryCache.get(given);
    if (code === undefined) {
      code = normalizeCountryCode(given) ?? null;
      if (countryCache.size < COUNTRY_CACHE_MAX) countryCache.set(given, code);
    }
    lastGiven = given;
    lastCode = code;
  }
  into.code = code ?? undefined;
  into.invalid = code === null;
}
