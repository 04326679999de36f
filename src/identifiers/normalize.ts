/**
 * Normalization and hashing of CRM identifiers, exactly as the platform expects them (the rules table in the
 * README is the contract). Everything here is pure and synchronous; `buildUser` is the per-row hot path of the
 * `hash` and `upload` pipelines, so it avoids per-call regex construction, closures and needless allocation.
 *
 * Raw values never leave this module except as normalized/hashed output: rejects carry a reason code, the line
 * and the column, never the value.
 */
import { hash as cryptoHash } from 'node:crypto';
import { isSupportedCountry } from 'libphonenumber-js';
import { sha256Hex } from '../util/sha256.js';
import { AMBIGUOUS, phoneNotes, phoneReading, type PhoneCountryCode } from './phone-reading.js';

export const IDENTIFIER_TYPES = [
  'email',
  'phone_number',
  'handle',
  'device_id',
  'service_id',
  'partner_user_id',
] as const;
export type IdentifierType = (typeof IDENTIFIER_TYPES)[number];
/** What is sent to the platform: lowercase hex SHA-256 digests, except `partner_user_id` (raw). */
export type AudienceUser = Partial<Record<IdentifierType, string[]>>;
export type RejectReason =
  | 'email_invalid'
  | 'phone_invalid'
  | 'phone_needs_country'
  | 'phone_ambiguous'
  | 'country_invalid'
  | 'handle_invalid'
  | 'device_id_invalid'
  | 'device_id_opt_out'
  | 'service_id_invalid'
  | 'partner_user_id_invalid'
  | 'hash_invalid'
  | 'value_too_long'
  | 'too_many_values';
export const REJECT_REASONS: readonly RejectReason[] = [
  'email_invalid',
  'phone_invalid',
  'phone_needs_country',
  'phone_ambiguous',
  'country_invalid',
  'handle_invalid',
  'device_id_invalid',
  'device_id_opt_out',
  'service_id_invalid',
  'partner_user_id_invalid',
  'hash_invalid',
  'value_too_long',
  'too_many_values',
];
/**
 * The longest value (after trimming) normalized: no identifier comes near it, and a longer one is
 * rejected before it is lowercased or parsed, so a hostile cell costs nothing.
 */
export const MAX_VALUE_LENGTH = 512;
/**
 * The most values one record may hold (its mapped cells, each part counted with
 * `valueSeparator`). No person has a thousand identifiers; a record with more (`a;a;a;…` over a
 * megabyte) is one `too_many_values` reject instead of half a million rejects and a quadratic
 * dedupe that would exhaust a worker's heap.
 */
export const MAX_VALUES_PER_RECORD = 1000;
export type Normalized = { ok: true; value: string } | { ok: false; reason: RejectReason };
/** `digits`: `447946095800` (country code and national number); `e164`: the same with the `+`. */
export type PhoneFormat = 'e164' | 'digits';
/**
 * The platform's own hashing tool (ads-platform-tools, hash_tailored_audience_file.py, linked from its user-data
 * normalization page) hashes phones as digits only, and so does the largest other ad platform's documentation:
 * a `+` in the hashed value matches nobody. See docs/normalization.md.
 */
export const DEFAULT_PHONE_FORMAT: PhoneFormat = 'digits';
export type { PhoneCountryCode };
/** `auto`: a 64-hex value is an already-hashed digest; `always`: every value must be one; `never`: hash everything. */
export type InputHashed = 'auto' | 'always' | 'never';

export interface NormalizeOptions {
  /** ISO 3166-1 alpha-2 country for national-format phone numbers of records without their own country. */
  defaultCountry?: string;
  phoneFormat?: PhoneFormat;
  /** Default `auto`; see PhoneCountryCode. */
  phoneCountryCode?: PhoneCountryCode;
  inputHashed?: InputHashed;
  /** Splits each cell into several values (default: none, a cell is one value). */
  valueSeparator?: string;
}
export interface FieldValue {
  column: string;
  type: IdentifierType;
  raw: string;
  /** This column's cells are lists split on this (the mapping saw it in the sample); else valueSeparator. */
  separator?: string;
}
export interface MappedRecord {
  /** 1-based line number in the input file, carried into rejects. */
  line: number;
  fields: FieldValue[];
  /** The row's country (a mapped country column); empty or absent means `defaultCountry`. */
  country?: string;
}
export interface Reject {
  line: number;
  column: string;
  type: IdentifierType;
  reason: RejectReason;
}
export interface BuiltUser {
  line: number;
  /** Keys in IDENTIFIER_TYPES order, only types with at least one valid value, values deduplicated; `{}` when none. */
  user: AudienceUser;
  rejects: Reject[];
  /** Per type, how many of the values in `user` were passed through as already-hashed digests (set only when > 0). */
  digests?: Partial<Record<IdentifierType, number>>;
  /** What the summary's hints are made of (set only when something was noted). */
  notes?: BuildNotes;
}

/** Observations about one row that explain rejects or choices (never identifier values). */
export interface BuildNotes {
  /**
   * Phones without `+` read as carrying their country calling code (`auto`/`included`), or, with
   * `national`, rejected although they would be valid read that way.
   */
  phoneCodeWithoutPlus?: number;
  /**
   * Phones valid (under `min`) both as national numbers and as carrying the calling code, decided by
   * the number ranges (`max`); those that stay ambiguous are `phone_ambiguous` rejects.
   */
  phoneTwoReadings?: number;
  /** The row's country value when it is not a recognized country (a phone needed it). */
  unknownCountry?: string;
  /** Rejected cells that look like several values joined by this separator (no valueSeparator given). */
  severalValues?: { column: string; separator: string };
}

const OK = true as const;
const fail = (reason: RejectReason): Normalized => ({ ok: false, reason });
// Rejections are frequent in dirty files: share one frozen object per reason instead of allocating.
const REJECTED = Object.fromEntries(REJECT_REASONS.map((r) => [r, Object.freeze(fail(r))])) as Record<
  RejectReason,
  Normalized
>;

/**
 * Trims whitespace (String.prototype.trim covers U+FEFF and U+00A0 along with every Unicode space), drops one
 * leading apostrophe and applies NFC. Strings made only of code points below U+0300 are already NFC (no combining marks), so the costly
 * `normalize` call is skipped for them: that is almost every CRM value.
 */
export function cleanValue(raw: string): string {
  let s = raw.trim();
  // A leading apostrophe is the spreadsheet "keep as text" marker (Shopify writes ids as '7210448301100).
  if (s.charCodeAt(0) === 0x27) s = s.slice(1).trim();
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) >= 0x300) return s.normalize('NFC');
  }
  return s;
}

const EMAIL_RE = /^[^\s@]+@[^\s@.][^\s@]*\.[^\s@]*[^\s@.]$/;
const HANDLE_RE = /^[a-z0-9_]{1,15}$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ANDROID_ID_RE = /^[0-9a-f]{16}$/;
const UNDASHED_UUID_RE = /^[0-9a-f]{32}$/;
const ANDROID_ID_SEPARATORS_RE = /[-\s]/g;
const ALL_ZERO_RE = /^[0-]+$/;
const DIGITS_RE = /^[0-9]+$/;
const HEX64_RE = /^[0-9a-fA-F]{64}$/;
const MAX_PARTNER_USER_ID = 256;

// The exported normalizers clean their input; buildUser cleans once and calls these `*Clean` variants.

export function normalizeEmail(raw: string): Normalized {
  return emailClean(cleanValue(raw));
}
function emailClean(s: string): Normalized {
  const address = needsUnwrap(s) ? unwrapEmail(s) : s;
  if (address === undefined) return REJECTED.email_invalid;
  const value = address.toLowerCase();
  return EMAIL_RE.test(value) ? { ok: OK, value } : REJECTED.email_invalid;
}

/** Unicode format characters (Cf): zero-width space and joiners, soft hyphen, BOM, direction marks. */
const FORMAT_CHARS_RE = /\p{Cf}/gu;
const TRAILING_SEPARATORS_RE = /[\s;,]+$/;
const MAILTO_RE = /^mailto:/i;

/**
 * A format character is removed, except a zero-width (non-)joiner between two non-ASCII characters:
 * IDNA2008 (RFC 5892, CONTEXTJ) allows those two in labels of scripts that need them (after a
 * virama, between joining letters), never next to ASCII, where they are only copy-paste residue.
 */
function formatCharKept(c: string, at: number, s: string): string {
  const joiner = c === '\u200c' || c === '\u200d';
  return joiner && s.charCodeAt(at - 1) >= 0x80 && s.charCodeAt(at + 1) >= 0x80 ? c : '';
}

/** Whether an email cell holds more than a plain address: non-ASCII, `<…>`, `mailto:` or a trailing `;`/`,`. */
function needsUnwrap(s: string): boolean {
  const last = s.charCodeAt(s.length - 1);
  if (last === 0x3b || last === 0x2c || last === 0x3e) return true;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return true;
  return s.length > 7 && MAILTO_RE.test(s);
}

/**
 * The address in an email cell as mail clients and spreadsheets copy it (docs/normalization.md,
 * email clean-up): invisible format characters removed; trailing `;` and `,` removed; `<…>` and
 * `Name <…>` unwrapped (a name holding another address is refused); `mailto:` and its `?query` removed.
 */
function unwrapEmail(s: string): string | undefined {
  let v = s.replace(FORMAT_CHARS_RE, formatCharKept).replace(TRAILING_SEPARATORS_RE, '').trim();
  if (v.endsWith('>')) {
    const open = v.lastIndexOf('<');
    if (open === -1) return undefined;
    const inner = v.slice(open + 1, -1).trim();
    const name = v.slice(0, open).replace(/["']/g, '').trim();
    if (name.includes('@') && name.toLowerCase() !== inner.replace(MAILTO_RE, '').toLowerCase()) return undefined;
    v = inner;
  }
  if (MAILTO_RE.test(v)) {
    v = v.slice(7);
    const query = v.indexOf('?');
    if (query !== -1) v = v.slice(0, query);
  }
  return v;
}

export function normalizeHandle(raw: string): Normalized {
  return handleClean(cleanValue(raw));
}
function handleClean(s: string): Normalized {
  const value = (s.charCodeAt(0) === 0x40 ? s.slice(1) : s).toLowerCase();
  return HANDLE_RE.test(value) ? { ok: OK, value } : REJECTED.handle_invalid;
}

/**
 * IDFA/AdID (a UUID, dashed or as 32 bare hex digits, always output dashed) or Android ID (16 hex digits), both
 * also accepted with dashes/spaces in other places.
 */
export function normalizeDeviceId(raw: string): Normalized {
  return deviceIdClean(cleanValue(raw));
}
function deviceIdClean(s: string): Normalized {
  let value = s.toLowerCase();
  if (!UUID_RE.test(value)) {
    value = value.replace(ANDROID_ID_SEPARATORS_RE, '');
    if (UNDASHED_UUID_RE.test(value)) {
      // Exported without dashes by some systems; the platform matches UUIDs in the 8-4-4-4-12 form only.
      value = `${value.slice(0, 8)}-${value.slice(8, 12)}-${value.slice(12, 16)}-${value.slice(16, 20)}-${value.slice(20)}`;
    } else if (!ANDROID_ID_RE.test(value)) return REJECTED.device_id_invalid;
  }
  // The all-zero id is what devices report when the user disabled ad tracking: it identifies nobody.
  return ALL_ZERO_RE.test(value) ? REJECTED.device_id_opt_out : { ok: OK, value };
}

export function normalizeServiceId(raw: string): Normalized {
  return serviceIdClean(cleanValue(raw));
}
function serviceIdClean(s: string): Normalized {
  if (!DIGITS_RE.test(s)) return REJECTED.service_id_invalid;
  let i = 0;
  while (i < s.length && s.charCodeAt(i) === 0x30) i++;
  const value = i === 0 ? s : s.slice(i);
  return value.length >= 1 && value.length <= 20 ? { ok: OK, value } : REJECTED.service_id_invalid;
}

/** Sent as is (never hashed), so only cleaned; the limit counts Unicode code points. */
export function normalizePartnerUserId(raw: string): Normalized {
  return partnerUserIdClean(cleanValue(raw));
}
function partnerUserIdClean(value: string): Normalized {
  if (value === '') return REJECTED.partner_user_id_invalid;
  if (value.length > MAX_PARTNER_USER_ID && codePointLength(value) > MAX_PARTNER_USER_ID) {
    return REJECTED.partner_user_id_invalid;
  }
  return { ok: OK, value };
}

function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/**
 * ISO 3166-1 alpha-3 code and English names of every country libphonenumber-js supports, by alpha-2, as
 * `ALPHA3|name|name...`. Generated once from Debian's iso-codes 4.15 (iso_3166-1.json: alpha_3, name,
 * common_name, official_name) plus the CLDR English name (Node 20 Intl.DisplayNames), and frozen here so that
 * which values are accepted does not change with the Node version. AC (Ascension), TA (Tristan da Cunha) and
 * XK (Kosovo) have no ISO alpha-3 code.
 */
const COUNTRIES: Readonly<Record<string, string>> = {
  AC: '|Ascension Island',
  AD: 'AND|Andorra|Principality of Andorra',
  AE: 'ARE|United Arab Emirates',
  AF: 'AFG|Afghanistan|Islamic Republic of Afghanistan',
  AG: 'ATG|Antigua and Barbuda|Antigua & Barbuda',
  AI: 'AIA|Anguilla',
  AL: 'ALB|Albania|Republic of Albania',
  AM: 'ARM|Armenia|Republic of Armenia',
  AO: 'AGO|Angola|Republic of Angola',
  AR: 'ARG|Argentina|Argentine Republic',
  AS: 'ASM|American Samoa',
  AT: 'AUT|Austria|Republic of Austria',
  AU: 'AUS|Australia',
  AW: 'ABW|Aruba',
  AX: 'ALA|Åland Islands',
  AZ: 'AZE|Azerbaijan|Republic of Azerbaijan',
  BA: 'BIH|Bosnia and Herzegovina|Republic of Bosnia and Herzegovina|Bosnia & Herzegovina',
  BB: 'BRB|Barbados',
  BD: "BGD|Bangladesh|People's Republic of Bangladesh",
  BE: 'BEL|Belgium|Kingdom of Belgium',
  BF: 'BFA|Burkina Faso',
  BG: 'BGR|Bulgaria|Republic of Bulgaria',
  BH: 'BHR|Bahrain|Kingdom of Bahrain',
  BI: 'BDI|Burundi|Republic of Burundi',
  BJ: 'BEN|Benin|Republic of Benin',
  BL: 'BLM|Saint Barthélemy|St. Barthélemy',
  BM: 'BMU|Bermuda',
  BN: 'BRN|Brunei Darussalam|Brunei',
  BO: 'BOL|Bolivia, Plurinational State of|Bolivia|Plurinational State of Bolivia',
  BQ: 'BES|Bonaire, Sint Eustatius and Saba|Caribbean Netherlands',
  BR: 'BRA|Brazil|Federative Republic of Brazil',
  BS: 'BHS|Bahamas|Commonwealth of the Bahamas',
  BT: 'BTN|Bhutan|Kingdom of Bhutan',
  BW: 'BWA|Botswana|Republic of Botswana',
  BY: 'BLR|Belarus|Republic of Belarus',
  BZ: 'BLZ|Belize',
  CA: 'CAN|Canada',
  CC: 'CCK|Cocos (Keeling) Islands',
  CD: 'COD|Congo, The Democratic Republic of the|Congo - Kinshasa',
  CF: 'CAF|Central African Republic',
  CG: 'COG|Congo|Republic of the Congo|Congo - Brazzaville',
  CH: 'CHE|Switzerland|Swiss Confederation',
  CI: "CIV|Côte d'Ivoire|Republic of Côte d'Ivoire",
  CK: 'COK|Cook Islands',
  CL: 'CHL|Chile|Republic of Chile',
  CM: 'CMR|Cameroon|Republic of Cameroon',
  CN: "CHN|China|People's Republic of China",
  CO: 'COL|Colombia|Republic of Colombia',
  CR: 'CRI|Costa Rica|Republic of Costa Rica',
  CU: 'CUB|Cuba|Republic of Cuba',
  CV: 'CPV|Cabo Verde|Republic of Cabo Verde|Cape Verde',
  CW: 'CUW|Curaçao',
  CX: 'CXR|Christmas Island',
  CY: 'CYP|Cyprus|Republic of Cyprus',
  CZ: 'CZE|Czechia|Czech Republic',
  DE: 'DEU|Germany|Federal Republic of Germany',
  DJ: 'DJI|Djibouti|Republic of Djibouti',
  DK: 'DNK|Denmark|Kingdom of Denmark',
  DM: 'DMA|Dominica|Commonwealth of Dominica',
  DO: 'DOM|Dominican Republic',
  DZ: "DZA|Algeria|People's Democratic Republic of Algeria",
  EC: 'ECU|Ecuador|Republic of Ecuador',
  EE: 'EST|Estonia|Republic of Estonia',
  EG: 'EGY|Egypt|Arab Republic of Egypt',
  EH: 'ESH|Western Sahara',
  ER: 'ERI|Eritrea|the State of Eritrea',
  ES: 'ESP|Spain|Kingdom of Spain',
  ET: 'ETH|Ethiopia|Federal Democratic Republic of Ethiopia',
  FI: 'FIN|Finland|Republic of Finland',
  FJ: 'FJI|Fiji|Republic of Fiji',
  FK: 'FLK|Falkland Islands (Malvinas)|Falkland Islands',
  FM: 'FSM|Micronesia, Federated States of|Federated States of Micronesia|Micronesia',
  FO: 'FRO|Faroe Islands',
  FR: 'FRA|France|French Republic',
  GA: 'GAB|Gabon|Gabonese Republic',
  GB: 'GBR|United Kingdom|United Kingdom of Great Britain and Northern Ireland',
  GD: 'GRD|Grenada',
  GE: 'GEO|Georgia',
  GF: 'GUF|French Guiana',
  GG: 'GGY|Guernsey',
  GH: 'GHA|Ghana|Republic of Ghana',
  GI: 'GIB|Gibraltar',
  GL: 'GRL|Greenland',
  GM: 'GMB|Gambia|Republic of the Gambia',
  GN: 'GIN|Guinea|Republic of Guinea',
  GP: 'GLP|Guadeloupe',
  GQ: 'GNQ|Equatorial Guinea|Republic of Equatorial Guinea',
  GR: 'GRC|Greece|Hellenic Republic',
  GT: 'GTM|Guatemala|Republic of Guatemala',
  GU: 'GUM|Guam',
  GW: 'GNB|Guinea-Bissau|Republic of Guinea-Bissau',
  GY: 'GUY|Guyana|Republic of Guyana',
  HK: 'HKG|Hong Kong|Hong Kong Special Administrative Region of China|Hong Kong SAR China',
  HN: 'HND|Honduras|Republic of Honduras',
  HR: 'HRV|Croatia|Republic of Croatia',
  HT: 'HTI|Haiti|Republic of Haiti',
  HU: 'HUN|Hungary',
  ID: 'IDN|Indonesia|Republic of Indonesia',
  IE: 'IRL|Ireland',
  IL: 'ISR|Israel|State of Israel',
  IM: 'IMN|Isle of Man',
  IN: 'IND|India|Republic of India',
  IO: 'IOT|British Indian Ocean Territory',
  IQ: 'IRQ|Iraq|Republic of Iraq',
  IR: 'IRN|Iran, Islamic Republic of|Iran|Islamic Republic of Iran',
  IS: 'ISL|Iceland|Republic of Iceland',
  IT: 'ITA|Italy|Italian Republic',
  JE: 'JEY|Jersey',
  JM: 'JAM|Jamaica',
  JO: 'JOR|Jordan|Hashemite Kingdom of Jordan',
  JP: 'JPN|Japan',
  KE: 'KEN|Kenya|Republic of Kenya',
  KG: 'KGZ|Kyrgyzstan|Kyrgyz Republic',
  KH: 'KHM|Cambodia|Kingdom of Cambodia',
  KI: 'KIR|Kiribati|Republic of Kiribati',
  KM: 'COM|Comoros|Union of the Comoros',
  KN: 'KNA|Saint Kitts and Nevis|St. Kitts & Nevis',
  KP: "PRK|Korea, Democratic People's Republic of|North Korea|Democratic People's Republic of Korea",
  KR: 'KOR|Korea, Republic of|South Korea',
  KW: 'KWT|Kuwait|State of Kuwait',
  KY: 'CYM|Cayman Islands',
  KZ: 'KAZ|Kazakhstan|Republic of Kazakhstan',
  LA: "LAO|Lao People's Democratic Republic|Laos",
  LB: 'LBN|Lebanon|Lebanese Republic',
  LC: 'LCA|Saint Lucia|St. Lucia',
  LI: 'LIE|Liechtenstein|Principality of Liechtenstein',
  LK: 'LKA|Sri Lanka|Democratic Socialist Republic of Sri Lanka',
  LR: 'LBR|Liberia|Republic of Liberia',
  LS: 'LSO|Lesotho|Kingdom of Lesotho',
  LT: 'LTU|Lithuania|Republic of Lithuania',
  LU: 'LUX|Luxembourg|Grand Duchy of Luxembourg',
  LV: 'LVA|Latvia|Republic of Latvia',
  LY: 'LBY|Libya',
  MA: 'MAR|Morocco|Kingdom of Morocco',
  MC: 'MCO|Monaco|Principality of Monaco',
  MD: 'MDA|Moldova, Republic of|Moldova|Republic of Moldova',
  ME: 'MNE|Montenegro',
  MF: 'MAF|Saint Martin (French part)|St. Martin',
  MG: 'MDG|Madagascar|Republic of Madagascar',
  MH: 'MHL|Marshall Islands|Republic of the Marshall Islands',
  MK: 'MKD|North Macedonia|Republic of North Macedonia',
  ML: 'MLI|Mali|Republic of Mali',
  MM: 'MMR|Myanmar|Republic of Myanmar|Myanmar (Burma)',
  MN: 'MNG|Mongolia',
  MO: 'MAC|Macao|Macao Special Administrative Region of China|Macao SAR China',
  MP: 'MNP|Northern Mariana Islands|Commonwealth of the Northern Mariana Islands',
  MQ: 'MTQ|Martinique',
  MR: 'MRT|Mauritania|Islamic Republic of Mauritania',
  MS: 'MSR|Montserrat',
  MT: 'MLT|Malta|Republic of Malta',
  MU: 'MUS|Mauritius|Republic of Mauritius',
  MV: 'MDV|Maldives|Republic of Maldives',
  MW: 'MWI|Malawi|Republic of Malawi',
  MX: 'MEX|Mexico|United Mexican States',
  MY: 'MYS|Malaysia',
  MZ: 'MOZ|Mozambique|Republic of Mozambique',
  NA: 'NAM|Namibia|Republic of Namibia',
  NC: 'NCL|New Caledonia',
  NE: 'NER|Niger|Republic of the Niger',
  NF: 'NFK|Norfolk Island',
  NG: 'NGA|Nigeria|Federal Republic of Nigeria',
  NI: 'NIC|Nicaragua|Republic of Nicaragua',
  NL: 'NLD|Netherlands|Kingdom of the Netherlands',
  NO: 'NOR|Norway|Kingdom of Norway',
  NP: 'NPL|Nepal|Federal Democratic Republic of Nepal',
  NR: 'NRU|Nauru|Republic of Nauru',
  NU: 'NIU|Niue',
  NZ: 'NZL|New Zealand',
  OM: 'OMN|Oman|Sultanate of Oman',
  PA: 'PAN|Panama|Republic of Panama',
  PE: 'PER|Peru|Republic of Peru',
  PF: 'PYF|French Polynesia',
  PG: 'PNG|Papua New Guinea|Independent State of Papua New Guinea',
  PH: 'PHL|Philippines|Republic of the Philippines',
  PK: 'PAK|Pakistan|Islamic Republic of Pakistan',
  PL: 'POL|Poland|Republic of Poland',
  PM: 'SPM|Saint Pierre and Miquelon|St. Pierre & Miquelon',
  PR: 'PRI|Puerto Rico',
  PS: 'PSE|Palestine, State of|the State of Palestine|Palestinian Territories',
  PT: 'PRT|Portugal|Portuguese Republic',
  PW: 'PLW|Palau|Republic of Palau',
  PY: 'PRY|Paraguay|Republic of Paraguay',
  QA: 'QAT|Qatar|State of Qatar',
  RE: 'REU|Réunion',
  RO: 'ROU|Romania',
  RS: 'SRB|Serbia|Republic of Serbia',
  RU: 'RUS|Russian Federation|Russia',
  RW: 'RWA|Rwanda|Rwandese Republic',
  SA: 'SAU|Saudi Arabia|Kingdom of Saudi Arabia',
  SB: 'SLB|Solomon Islands',
  SC: 'SYC|Seychelles|Republic of Seychelles',
  SD: 'SDN|Sudan|Republic of the Sudan',
  SE: 'SWE|Sweden|Kingdom of Sweden',
  SG: 'SGP|Singapore|Republic of Singapore',
  SH: 'SHN|Saint Helena, Ascension and Tristan da Cunha|St. Helena',
  SI: 'SVN|Slovenia|Republic of Slovenia',
  SJ: 'SJM|Svalbard and Jan Mayen|Svalbard & Jan Mayen',
  SK: 'SVK|Slovakia|Slovak Republic',
  SL: 'SLE|Sierra Leone|Republic of Sierra Leone',
  SM: 'SMR|San Marino|Republic of San Marino',
  SN: 'SEN|Senegal|Republic of Senegal',
  SO: 'SOM|Somalia|Federal Republic of Somalia',
  SR: 'SUR|Suriname|Republic of Suriname',
  SS: 'SSD|South Sudan|Republic of South Sudan',
  ST: 'STP|Sao Tome and Principe|Democratic Republic of Sao Tome and Principe|São Tomé & Príncipe',
  SV: 'SLV|El Salvador|Republic of El Salvador',
  SX: 'SXM|Sint Maarten (Dutch part)|Sint Maarten',
  SY: 'SYR|Syrian Arab Republic|Syria',
  SZ: 'SWZ|Eswatini|Kingdom of Eswatini',
  TA: '|Tristan da Cunha',
  TC: 'TCA|Turks and Caicos Islands|Turks & Caicos Islands',
  TD: 'TCD|Chad|Republic of Chad',
  TG: 'TGO|Togo|Togolese Republic',
  TH: 'THA|Thailand|Kingdom of Thailand',
  TJ: 'TJK|Tajikistan|Republic of Tajikistan',
  TK: 'TKL|Tokelau',
  TL: 'TLS|Timor-Leste|Democratic Republic of Timor-Leste',
  TM: 'TKM|Turkmenistan',
  TN: 'TUN|Tunisia|Republic of Tunisia',
  TO: 'TON|Tonga|Kingdom of Tonga',
  TR: 'TUR|Türkiye|Republic of Türkiye',
  TT: 'TTO|Trinidad and Tobago|Republic of Trinidad and Tobago|Trinidad & Tobago',
  TV: 'TUV|Tuvalu',
  TW: 'TWN|Taiwan, Province of China|Taiwan',
  TZ: 'TZA|Tanzania, United Republic of|Tanzania|United Republic of Tanzania',
  UA: 'UKR|Ukraine',
  UG: 'UGA|Uganda|Republic of Uganda',
  US: 'USA|United States|United States of America',
  UY: 'URY|Uruguay|Eastern Republic of Uruguay',
  UZ: 'UZB|Uzbekistan|Republic of Uzbekistan',
  VA: 'VAT|Holy See (Vatican City State)|Vatican City',
  VC: 'VCT|Saint Vincent and the Grenadines|St. Vincent & Grenadines',
  VE: 'VEN|Venezuela, Bolivarian Republic of|Venezuela|Bolivarian Republic of Venezuela',
  VG: 'VGB|Virgin Islands, British|British Virgin Islands',
  VI: 'VIR|Virgin Islands, U.S.|Virgin Islands of the United States|U.S. Virgin Islands',
  VN: 'VNM|Viet Nam|Vietnam|Socialist Republic of Viet Nam',
  VU: 'VUT|Vanuatu|Republic of Vanuatu',
  WF: 'WLF|Wallis and Futuna|Wallis & Futuna',
  WS: 'WSM|Samoa|Independent State of Samoa',
  XK: '|Kosovo',
  YE: 'YEM|Yemen|Republic of Yemen',
  YT: 'MYT|Mayotte',
  ZA: 'ZAF|South Africa|Republic of South Africa',
  ZM: 'ZMB|Zambia|Republic of Zambia',
  ZW: 'ZWE|Zimbabwe|Republic of Zimbabwe',
};

/**
 * Other names CRM exports and people write for countries (local names, former and short names,
 * parts of the UK, abbreviations with dots), by alpha-2. Looked up folded, like COUNTRIES' names.
 */
const COUNTRY_ALIASES: Readonly<Record<string, string>> = {
  Turkey: 'TR',
  Turkiye: 'TR',
  Deutschland: 'DE',
  'The Netherlands': 'NL',
  Holland: 'NL',
  Nederland: 'NL',
  'Great Britain': 'GB',
  Britain: 'GB',
  'U.K.': 'GB',
  England: 'GB',
  Scotland: 'GB',
  Wales: 'GB',
  'Northern Ireland': 'GB',
  UAE: 'AE',
  'U.A.E.': 'AE',
  Emirates: 'AE',
  'Republic of Ireland': 'IE',
  Eire: 'IE',
  'U.S.': 'US',
  'U.S.A.': 'US',
  America: 'US',
  'United States of America (USA)': 'US',
  Espana: 'ES',
  Italia: 'IT',
  Schweiz: 'CH',
  Suisse: 'CH',
  Svizzera: 'CH',
  Osterreich: 'AT',
  Belgique: 'BE',
  Belgie: 'BE',
  Sverige: 'SE',
  Norge: 'NO',
  Danmark: 'DK',
  Suomi: 'FI',
  Polska: 'PL',
  Brasil: 'BR',
  Mexique: 'MX',
  Czech: 'CZ',
  Cesko: 'CZ',
  Hrvatska: 'HR',
  Magyarorszag: 'HU',
  Slovensko: 'SK',
  Korea: 'KR',
  'Korea, South': 'KR',
  'Korea (South)': 'KR',
  'Republic of Korea': 'KR',
  'Mainland China': 'CN',
  PRC: 'CN',
  Macau: 'MO',
  'Ivory Coast': 'CI',
  Burma: 'MM',
  Swaziland: 'SZ',
  Macedonia: 'MK',
  Vatican: 'VA',
  Palestine: 'PS',
  KSA: 'SA',
  Hellas: 'GR',
  Nippon: 'JP',
  'The Bahamas': 'BS',
  'The Gambia': 'GM',
  DRC: 'CD',
  'DR Congo': 'CD',
  'Democratic Republic of the Congo': 'CD',
  'Congo-Brazzaville': 'CG',
  'East Timor': 'TL',
  'Cape Verde Islands': 'CV',
  'St Lucia': 'LC',
  'St Kitts and Nevis': 'KN',
  'St Vincent and the Grenadines': 'VC',
  Trinidad: 'TT',
  Bosnia: 'BA',
  Russland: 'RU',
  'Viet Nam': 'VN',
};

/** A country name as looked up: accents dropped, lowercase, punctuation and spaces reduced to single spaces. */
function foldCountryName(name: string): string {
  return name
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();
}

/** Alpha-3 codes (upper case) and folded names to alpha-2; built on first use, as most files use alpha-2 only. */
let countryIndex: Map<string, string> | undefined;
function buildCountryIndex(): Map<string, string> {
  const index = new Map<string, string>();
  for (const [code, entry] of Object.entries(COUNTRIES)) {
    const [alpha3, ...names] = entry.split('|');
    if (alpha3 !== undefined && alpha3 !== '') index.set(alpha3, code);
    for (const name of names) index.set(foldCountryName(name), code);
  }
  for (const [alias, code] of Object.entries(COUNTRY_ALIASES)) index.set(foldCountryName(alias), code);
  return index;
}

/**
 * The ISO 3166-1 alpha-2 code libphonenumber-js knows for `raw`, or `undefined`. Accepted, case-insensitively:
 * alpha-2 codes (`UK` is taken as `GB`, as CRM exports often write it), alpha-3 codes (`USA`, `GBR`) and the
 * English names in COUNTRIES (`United States`, `Germany`, `Cote d'Ivoire`) and the other names in COUNTRY_ALIASES
 * (`Deutschland`, `U.K.`, `UAE`). Use it to validate
 * `defaultCountry` up front.
 */
export function normalizeCountryCode(raw: string): string | undefined {
  const s = raw.trim().toUpperCase();
  if (s.length === 2) {
    const code = s === 'UK' ? 'GB' : s;
    return isSupportedCountry(code) ? code : undefined;
  }
  const index = (countryIndex ??= buildCountryIndex());
  return index.get(s) ?? index.get(foldCountryName(s));
}

/** A country as given (record column or default) resolved for phone parsing. */
interface PhoneCountry {
  code: string | undefined;
  /** A country was given but is not a known ISO code. */
  invalid: boolean;
}

/**
 * Country cells as written → code (null: not a country). A country column holds few distinct
 * values, and a name or alpha-3 code costs a fold and lookups per row; bounded all the same.
 */
const countryCache = new Map<string, string | null>();
const COUNTRY_CACHE_MAX = 4096;

function resolveCountry(given: string | undefined, into: PhoneCountry): void {
  if (given === undefined || given.trim() === '') {
    into.code = undefined;
    into.invalid = false;
    return;
  }
  let code = countryCache.get(given);
  if (code === undefined) {
    code = normalizeCountryCode(given) ?? null;
    if (countryCache.size < COUNTRY_CACHE_MAX) countryCache.set(given, code);
  }
  into.code = code ?? undefined;
  into.invalid = code === null;
}

/**
 * libphonenumber-js semantics (valid, not merely possible), E.164 digits (`format`, default DEFAULT_PHONE_FORMAT), extensions dropped. A national-format
 * number needs a country: without one it is `phone_needs_country`, with an unknown one `country_invalid`
 * (a number written with `+` ignores the country, so a bad country column does not lose it).
 */
export function normalizePhone(
  raw: string,
  opts: { country?: string; format?: PhoneFormat; countryCode?: PhoneCountryCode } = {},
): Normalized {
  const country: PhoneCountry = { code: undefined, invalid: false };
  resolveCountry(opts.country, country);
  return phoneClean(
    cleanValue(raw),
    country,
    (opts.format ?? DEFAULT_PHONE_FORMAT) === 'digits',
    opts.countryCode ?? 'auto',
  );
}

/** The normalizers by type, for one value at a time (buildUser cleans once and uses the `*Clean` ones). */
const NORMALIZERS: Record<Exclude<IdentifierType, 'phone_number'>, (raw: string) => Normalized> = {
  email: normalizeEmail,
  handle: normalizeHandle,
  device_id: normalizeDeviceId,
  service_id: normalizeServiceId,
  partner_user_id: normalizePartnerUserId,
};

/**
 * One value of any identifier type, normalized by the rules the uploader applies: the form that is
 * hashed (`hashValue`), or sent as is for `partner_user_id`. `opts` matter to phone numbers only.
 */
export function normalizeIdentifier(
  type: IdentifierType,
  raw: string,
  opts: { country?: string; format?: PhoneFormat; countryCode?: PhoneCountryCode } = {},
): Normalized {
  return type === 'phone_number' ? normalizePhone(raw, opts) : NORMALIZERS[type](raw);
}

function phoneClean(value: string, country: PhoneCountry, digits: boolean, mode: PhoneCountryCode): Normalized {
  const e164 = phoneReading(value, country.code, mode);
  if (e164 === AMBIGUOUS) return REJECTED.phone_ambiguous;
  if (e164 !== undefined) return { ok: OK, value: digits ? e164.slice(1) : e164 };
  if (country.code === undefined && isNationalFormat(value)) {
    return country.invalid ? REJECTED.country_invalid : REJECTED.phone_needs_country;
  }
  return REJECTED.phone_invalid;
}

/** True when the first phone character is a digit (not a plus): only a country can make sense of it. */
function isNationalFormat(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x2b || c === 0xff0b) return false;
    if (
      (c >= 0x30 && c <= 0x39) ||
      (c >= 0xff10 && c <= 0xff19) ||
      (c >= 0x660 && c <= 0x669) ||
      (c >= 0x6f0 && c <= 0x6f9)
    ) {
      return true;
    }
  }
  return false;
}

/** SHA-256 of the UTF-8 bytes of `normalized`, lowercase hex. */
export function hashValue(normalized: string): string {
  return sha256Hex(normalized);
}

const TYPE_INDEX: Record<IdentifierType, number> = {
  email: 0,
  phone_number: 1,
  handle: 2,
  device_id: 3,
  service_id: 4,
  partner_user_id: 5,
};

/**
 * Per-record scratch state, reused across calls instead of allocated per row: buildUser is synchronous and
 * calls no user code, so one instance is enough.
 */
const scratch = {
  values: IDENTIFIER_TYPES.map(() => [] as string[]),
  digestCounts: IDENTIFIER_TYPES.map(() => 0),
  country: { code: undefined, invalid: false } as PhoneCountry,
  countryResolved: false,
  record: undefined as MappedRecord | undefined,
  defaultCountry: undefined as string | undefined,
  inputHashed: 'auto' as InputHashed,
  digitsFormat: false,
  phoneCountryCode: 'auto' as PhoneCountryCode,
  /** The value separator given, if any (a rejected cell holding another one gets a note). */
  separator: undefined as string | undefined,
  severalValues: undefined as BuildNotes['severalValues'],
};

/**
 * Turns one mapped record into the user object to send plus the rejects. Several columns may feed one type,
 * a cell may hold several values (`valueSeparator`), duplicates within the user are removed (after
 * normalization, so `A@x.com` and `a@x.com` are one value). Empty cells are neither values nor rejects.
 */
export function buildUser(record: MappedRecord, opts: NormalizeOptions): BuiltUser {
  const valueSeparator = opts.valueSeparator;
  scratch.record = record;
  scratch.defaultCountry = opts.defaultCountry;
  scratch.inputHashed = opts.inputHashed ?? 'auto';
  scratch.digitsFormat = (opts.phoneFormat ?? DEFAULT_PHONE_FORMAT) === 'digits';
  scratch.phoneCountryCode = opts.phoneCountryCode ?? 'auto';
  scratch.separator = valueSeparator;
  scratch.severalValues = undefined;
  scratch.countryResolved = false;
  phoneNotes.codeWithoutPlus = 0;
  phoneNotes.twoReadings = 0;
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    scratch.values[t]!.length = 0;
    scratch.digestCounts[t] = 0;
  }

  let rejects: Reject[] | undefined;
  const fields = record.fields;
  let values = 0;
  for (let f = 0; f < fields.length; f++) {
    const field = fields[f]!;
    const raw = field.raw;
    const sep = field.separator ?? valueSeparator;
    const split = sep !== undefined && sep !== '' && raw.includes(sep);
    values += split ? countParts(raw, sep) : raw === '' ? 0 : 1;
    if (values > MAX_VALUES_PER_RECORD) return tooManyValues(record, field);
    if (split) {
      const parts = raw.split(sep);
      for (let p = 0; p < parts.length; p++) {
        const reason = addValue(parts[p]!, field.type);
        if (reason !== undefined)
          (rejects ??= []).push({ line: record.line, column: field.column, type: field.type, reason });
      }
    } else {
      const reason = addValue(raw, field.type);
      if (reason !== undefined) {
        (rejects ??= []).push({ line: record.line, column: field.column, type: field.type, reason });
        if (scratch.severalValues === undefined) noteSeveralValues(raw, field.column);
      }
    }
  }

  const user: AudienceUser = {};
  let digests: Partial<Record<IdentifierType, number>> | undefined;
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const list = scratch.values[t]!;
    if (list.length === 0) continue;
    const type = IDENTIFIER_TYPES[t]!;
    user[type] = list.slice();
    const d = scratch.digestCounts[t]!;
    if (d > 0) (digests ??= {})[type] = d;
  }
  const built: BuiltUser = { line: record.line, user, rejects: rejects ?? [] };
  if (digests !== undefined) built.digests = digests;
  const notes = collectNotes();
  if (notes !== undefined) built.notes = notes;
  scratch.record = undefined;
  return built;
}

function countParts(raw: string, sep: string): number {
  let n = 1;
  for (let i = raw.indexOf(sep); i !== -1 && n <= MAX_VALUES_PER_RECORD; i = raw.indexOf(sep, i + sep.length)) n++;
  return n;
}

/** The record's one reject when it holds more than MAX_VALUES_PER_RECORD values: none of them is used. */
function tooManyValues(record: MappedRecord, field: MappedRecord['fields'][number]): BuiltUser {
  scratch.record = undefined;
  return {
    line: record.line,
    user: {},
    rejects: [{ line: record.line, column: field.column, type: field.type, reason: 'too_many_values' }],
  };
}

/** The notes of the row just built, or undefined (the common case: nothing to note). */
function collectNotes(): BuildNotes | undefined {
  const unknownCountry = scratch.countryResolved && scratch.country.invalid;
  const phones = phoneNotes.codeWithoutPlus + phoneNotes.twoReadings;
  if (phones === 0 && scratch.severalValues === undefined && !unknownCountry) return undefined;
  const notes: BuildNotes = {};
  if (phoneNotes.codeWithoutPlus > 0) notes.phoneCodeWithoutPlus = phoneNotes.codeWithoutPlus;
  if (phoneNotes.twoReadings > 0) notes.phoneTwoReadings = phoneNotes.twoReadings;
  if (scratch.severalValues !== undefined) notes.severalValues = scratch.severalValues;
  if (unknownCountry) {
    const own = scratch.record?.country;
    notes.unknownCountry = cleanValue(own !== undefined && own.trim() !== '' ? own : (scratch.defaultCountry ?? ''));
  }
  return notes;
}

const SEPARATORS = [';', ',', '|'];

/** A rejected cell holding a separator (other than the one given) looks like a list of values. */
function noteSeveralValues(raw: string, column: string): void {
  for (const separator of SEPARATORS) {
    if (separator !== scratch.separator && raw.includes(separator)) {
      scratch.severalValues = { column, separator };
      return;
    }
  }
}

/** Adds one cell value to the scratch user; returns the reject reason, or undefined (added, duplicate or empty). */
function addValue(raw: string, type: IdentifierType): RejectReason | undefined {
  if (raw.length > MAX_VALUE_LENGTH && raw.trim().length > MAX_VALUE_LENGTH) return 'value_too_long';
  const value = cleanValue(raw);
  if (value === '') return undefined;
  const t = TYPE_INDEX[type];
  const list = scratch.values[t]!;
  let n: Normalized;
  if (type === 'partner_user_id') {
    n = partnerUserIdClean(value);
    if (!n.ok) return n.reason;
    if (!list.includes(n.value)) list.push(n.value);
    return undefined;
  }
  if (scratch.inputHashed !== 'never' && value.length === 64 && HEX64_RE.test(value)) {
    const digest = value.toLowerCase();
    if (!list.includes(digest)) {
      list.push(digest);
      scratch.digestCounts[t]!++;
    }
    return undefined;
  }
  if (scratch.inputHashed === 'always') return 'hash_invalid';
  switch (type) {
    case 'email':
      n = emailClean(value);
      break;
    case 'phone_number':
      if (!scratch.countryResolved) {
        // Resolved once per record, and only for records that have a phone.
        scratch.countryResolved = true;
        const own = scratch.record?.country;
        resolveCountry(own !== undefined && own.trim() !== '' ? own : scratch.defaultCountry, scratch.country);
      }
      n = phoneClean(value, scratch.country, scratch.digitsFormat, scratch.phoneCountryCode);
      break;
    case 'handle':
      n = handleClean(value);
      break;
    case 'device_id':
      n = deviceIdClean(value);
      break;
    case 'service_id':
      n = serviceIdClean(value);
      break;
  }
  if (!n.ok) return n.reason;
  const digest = hashValue(n.value);
  if (!list.includes(digest)) list.push(digest);
  return undefined;
}

/**
 * Write the 64-bit dedupe fingerprint of a serialized user (the first 8 bytes of the SHA-256 of
 * its canonical JSON, never 0/0) into `into[2 * index]` (high word) and `into[2 * index + 1]`.
 */
export function writeUserFingerprint(json: string, into: Uint32Array, index: number): void {
  const d = cryptoHash('sha256', json, 'binary');
  const hi = ((d.charCodeAt(0) << 24) | (d.charCodeAt(1) << 16) | (d.charCodeAt(2) << 8) | d.charCodeAt(3)) >>> 0;
  const lo = ((d.charCodeAt(4) << 24) | (d.charCodeAt(5) << 16) | (d.charCodeAt(6) << 8) | d.charCodeAt(7)) >>> 0;
  // 0/0 marks an empty slot of UserDedupe's table.
  into[2 * index] = hi === 0 && lo === 0 ? 1 : hi;
  into[2 * index + 1] = lo;
}

/**
 * Canonical JSON of a user object: keys in IDENTIFIER_TYPES order, empty types omitted. It is the dedupe key
 * of the uploader and its UTF-8 length is the exact number of bytes the user adds to a request body.
 */
export function serializeUser(user: AudienceUser): string {
  return serialize(user, false);
}

/**
 * serializeUser for a user that buildUser made, whose values other than partner_user_id are
 * digests it produced or validated: the same text, with the digests written without escaping
 * (they need none). This runs once per row on the hot path, where JSON.stringify of the lists
 * cost several times more than the rest of the serialization.
 */
export function serializeBuiltUser(user: AudienceUser): string {
  return serialize(user, true);
}

function serialize(user: AudienceUser, digestsChecked: boolean): string {
  let out = '{';
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const type = IDENTIFIER_TYPES[t]!;
    const list = user[type];
    if (list === undefined || list.length === 0) continue;
    if (out.length > 1) out += ',';
    out +=
      '"' +
      type +
      '":' +
      (digestsChecked && type !== 'partner_user_id' ? '["' + list.join('","') + '"]' : JSON.stringify(list));
  }
  return out + '}';
}
