/**
 * Valid numbers of EVERY country libphonenumber-js knows, with their ground truth: sampled from
 * the number-type patterns of its `max` metadata (fixed line, mobile, toll free, ...) and its
 * example mobile numbers, each kept only when `max` parses its E.164 form back to itself, valid
 * and of that country; then written in the forms CRM exports hold, with the row's country and
 * (for the forms that carry a calling code) without any country.
 */
import examplesJson from 'libphonenumber-js/examples.mobile.json';
import { getCountries, parsePhoneNumberFromString as parseMax } from 'libphonenumber-js/max';
import maxMetadataJson from 'libphonenumber-js/max/metadata';
import { mulberry32 } from '../../src/sandbox/faults.js';

type Random = () => number;
type Tuple = readonly unknown[];
const maxMetadata = maxMetadataJson as unknown as { countries: Record<string, Tuple> };

/** A regex of the metadata's small grammar: digits, `\d`, `[...]`, `(?:...)`, `|`, `?`, `{n}`, `{n,m}`. */
interface Item {
  node: { chars: string } | { alt: Seq[] };
  min: number;
  max: number;
}
type Seq = Item[];

function charClass(src: string): string {
  let out = '';
  for (let i = 0; i < src.length; i++) {
    if (src[i] === '\\' && src[i + 1] === 'd') {
      out += '0123456789';
      i++;
    } else if (src[i + 1] === '-' && i + 2 < src.length) {
      for (let c = src.charCodeAt(i); c <= src.charCodeAt(i + 2); c++) out += String.fromCharCode(c);
      i += 2;
    } else out += src[i];
  }
  return out;
}

/** Parses `re` from `pos`; returns the alternatives and where it stopped (a `)` or the end). */
function parseAlt(re: string, pos: number): [Seq[], number] {
  const alts: Seq[] = [[]];
  let i = pos;
  while (i < re.length && re[i] !== ')') {
    if (re[i] === '|') {
      alts.push([]);
      i++;
      continue;
    }
    let node: Item['node'];
    if (re[i] === '(') {
      i += re.startsWith('(?:', i) ? 3 : 1;
      const [inner, end] = parseAlt(re, i);
      node = { alt: inner };
      i = end + 1;
    } else if (re[i] === '[') {
      const end = re.indexOf(']', i);
      node = { chars: charClass(re.slice(i + 1, end)) };
      i = end + 1;
    } else if (re[i] === '\\') {
      node = { chars: charClass(re.slice(i, i + 2)) };
      i += 2;
    } else node = { chars: re[i++]! };
    let min = 1;
    let max = 1;
    if (re[i] === '?') {
      min = 0;
      i++;
    } else if (re[i] === '{') {
      const end = re.indexOf('}', i);
      const [a, b] = re.slice(i + 1, end).split(',');
      min = Number(a);
      max = b === undefined ? min : Number(b);
      i = end + 1;
    }
    alts[alts.length - 1]!.push({ node, min, max });
  }
  return [alts, i];
}

function sample(alts: Seq[], rnd: Random): string {
  const seq = alts[Math.floor(rnd() * alts.length)]!;
  let out = '';
  for (const item of seq) {
    const n = item.min + Math.floor(rnd() * (item.max - item.min + 1));
    for (let k = 0; k < n; k++) {
      const node = item.node;
      out += 'chars' in node ? node.chars[Math.floor(rnd() * node.chars.length)]! : sample(node.alt, rnd);
    }
  }
  return out;
}

export interface FuzzNumber {
  country: string;
  e164: string;
  /** The number type's index in the metadata (0 fixed line, 1 mobile, ...); -1: the example mobile number. */
  type: number;
}

/** The number `e164` when `max` reads it back as itself, valid and of `country`. */
function truth(country: string, e164: string): boolean {
  const p = parseMax(e164);
  return p !== undefined && p.number === e164 && p.country === country && p.isValid();
}

/** Up to `perCountry` distinct valid numbers of every country (fixed line and mobile first, then the other types). */
export function fuzzNumbers(perCountry: number, seed: number): FuzzNumber[] {
  const rnd = mulberry32(seed);
  const examples = examplesJson as unknown as Record<string, string>;
  const out: FuzzNumber[] = [];
  for (const country of getCountries()) {
    const tuple = maxMetadata.countries[country]!;
    const cc = tuple[0] as string;
    const types = ((tuple[11] as unknown[] | undefined) ?? [])
      .map((t, index) => ({ t, index }))
      .filter((x): x is { t: [string, number[]?]; index: number } => Array.isArray(x.t) && Boolean(x.t[0]))
      .map(({ t, index }) => ({ index, alts: parseAlt(t[0], 0)[0] }));
    const seen = new Set<string>();
    const example = examples[country];
    if (example !== undefined && truth(country, `+${cc}${example}`)) {
      seen.add(`+${cc}${example}`);
      out.push({ country, e164: `+${cc}${example}`, type: -1 });
    }
    for (let tries = 0; tries < perCountry * 40 && seen.size < perCountry && types.length > 0; tries++) {
      // Half fixed line or mobile (what CRM exports hold), half any type.
      const pick = rnd() < 0.5 ? types.filter((t) => t.index <= 1) : types;
      const type = (pick.length > 0 ? pick : types)[Math.floor(rnd() * (pick.length || types.length))]!;
      const e164 = `+${cc}${sample(type.alts, rnd)}`;
      if (seen.has(e164) || !truth(country, e164)) continue;
      seen.add(e164);
      out.push({ country, e164, type: type.index });
    }
  }
  return out;
}

export interface FuzzRow {
  value: string;
  /** The row's country (alpha-2), or undefined: no country column. */
  country: string | undefined;
  e164: string;
}

/** Every form of `n` as CRM exports write it: with its country, and the forms with a calling code also without. */
export function fuzzForms(n: FuzzNumber): FuzzRow[] {
  const p = parseMax(n.e164)!;
  const cc = p.countryCallingCode;
  const nsn = p.nationalNumber;
  const national = p.formatNational();
  const nationalDigits = national.replace(/[^0-9]/g, '');
  const intl = p.formatInternational();
  const prefix = maxMetadata.countries[n.country]![5];
  const national_ = [national, nationalDigits, nsn, national.replace(/ /g, '-'), national.replace(/ /g, '.')];
  if (typeof prefix === 'string' && prefix !== '') national_.push(prefix + nsn);
  const withCode = [
    cc + nsn,
    `${cc} ${nsn}`,
    intl,
    intl.replace(/^\+/, ''),
    intl.replace(/ /g, '-'),
    `+${cc}${nsn}`,
    `00${cc} ${nsn}`,
    `00 ${intl.slice(1)}`,
  ];
  if (nationalDigits !== nsn && nationalDigits.startsWith('0')) withCode.push(`+${cc} (0) ${nsn}`);
  // Issue 30: an extension after a form, a spreadsheet's float, an international prefix written abroad.
  withCode.push(`${intl} ext. 12`, `00${cc} ${nsn} x5`, `00${cc} ${nsn};ext=7`, `0011 ${cc} ${nsn}`);
  national_.push(`${national} #47`, `${national} poste 12`, `${cc}${nsn}.0`, `011 ${cc} ${nsn}`);
  const rows: FuzzRow[] = [];
  for (const value of new Set([...national_, ...withCode])) rows.push({ value, country: n.country, e164: n.e164 });
  for (const value of new Set(withCode)) rows.push({ value, country: undefined, e164: n.e164 });
  return rows;
}

/** Dashes that word processors write for `-` (U+2010-U+2015, minus sign, U+30FC), all libphonenumber-js punctuation. */
const DASHES = ['\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212', '\u30fc'];
/** Invisible format characters a copy from a web page or a spreadsheet leaves in a cell. */
const FORMAT_CHARS = ['\u00ad', '\u200b', '\u2060', '\u200e', '\u200f', '\u202a', '\ufeff'];

/**
 * `n`'s national and international forms with `-` between their groups, each also written with
 * one of DASHES for every `-`, or with a format character before each group: `ascii` is the
 * form with `-`, which the rule must read alike.
 */
export function punctuationForms(
  n: FuzzNumber,
  rnd: () => number,
): { value: string; ascii: string; country: string }[] {
  const p = parseMax(n.e164)!;
  const out: { value: string; ascii: string; country: string }[] = [];
  for (const form of [p.formatNational(), p.formatInternational()]) {
    const ascii = form.replace(/ /g, '-');
    if (!ascii.includes('-')) continue;
    for (const dash of DASHES) out.push({ value: ascii.replaceAll('-', dash), ascii, country: n.country });
    const mark = FORMAT_CHARS[Math.floor(rnd() * FORMAT_CHARS.length)]!;
    out.push({ value: ascii.replaceAll('-', `-${mark}`), ascii, country: n.country });
    out.push({ value: ascii.replaceAll('-', mark), ascii: ascii.replaceAll('-', ''), country: n.country });
  }
  return out;
}

/** The corpus: `perCountry` numbers of every country, every form. */
export function phoneFuzzCorpus(perCountry: number, seed: number): FuzzRow[] {
  return fuzzNumbers(perCountry, seed).flatMap(fuzzForms);
}

/** The number types a person's own line can be (phone-reading ranks them over the service types). */
const PERSONAL_TYPES = new Set(['MOBILE', 'FIXED_LINE', 'FIXED_LINE_OR_MOBILE', 'VOIP', 'PERSONAL_NUMBER']);

/**
 * A service number (toll free, premium rate, shared cost, UAN, pager, voicemail) whose written form
 * was read as another reading of the same digits that is a person's line: the documented policy
 * (nobody's own number is a service), not a misreading of a person's number.
 */
export function serviceReadAsLine(truth: string, read: string): boolean {
  const t = parseMax(truth)?.getType();
  const r = parseMax(read);
  return t !== undefined && !PERSONAL_TYPES.has(t) && r?.isValid() === true && PERSONAL_TYPES.has(r.getType() ?? '');
}
