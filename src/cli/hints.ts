/**
 * What the CLI tells about a hashing run in its own words (flags): the column mapping it chose,
 * and hints for the end of the summary: why a large share of a type was rejected and the flag
 * that likely fixes it, plus what the normalization noticed on the way (phones carrying their
 * calling code without `+`, cells holding several values, country values it did not recognize).
 * Column names, counts and country values only: never identifiers.
 */
import { isCountryLikeName, UNDECIDED_CONSENT, type ColumnMapping } from '../identifiers/mapping.js';
import { isPlaceholder, quoteLabel, type HeaderColumn } from '../identifiers/labels.js';
import { consentKindWords } from '../identifiers/consent.js';
import { IDENTIFIER_TYPES, type IdentifierType } from '../platform/users.js';
import type { NormalizeOptions, RejectReason } from '../identifiers/types.js';
import { reasonType } from '../platform/identifiers/types.js';
import type { HashSummary, HashTypeCounts } from '../hashing/summary.js';
import type { NationalEvidence } from '../identifiers/content.js';

/** A type whose rejected share is above this gets a line saying why. */
export const REJECT_SHARE_HINT = 0.05;

const quote = (s: string): string => JSON.stringify(s);

/** Ignored columns whose name says country or region: what --country-column should likely name. */
function countryLikeColumns(mapping: ColumnMapping): string[] {
  return mapping.ignored.filter(isCountryLikeName);
}

function columnsOf(mapping: ColumnMapping, type: IdentifierType): string {
  return mapping.columns
    .filter((c) => c.type === type)
    .map((c) => quoteLabel(c.label))
    .join(', ');
}

/**
 * A `--map` entry naming a column by its label; a cell that looks like an identifier value (a
 * headerless file's first row) is never printed: the entry says which column instead.
 */
function mapEntry(type: string, c: HeaderColumn): string {
  if (!isPlaceholder(c.label)) return `--map ${type}=${quote(c.label)}`;
  return `--map ${type}="<header of column ${c.index + 1}>" (that header cell looks like data: check that the first line is the header)`;
}

/** The most frequent reject reason of `type` (from the summary's per-reason counts). */
function mainReason(summary: HashSummary, type: IdentifierType): RejectReason | undefined {
  let best: RejectReason | undefined;
  let most = 0;
  for (const [reason, count] of Object.entries(summary.rejects) as [RejectReason, { count: number }][]) {
    if (reason === 'not_own_by_type') continue; // not counted as invalid (see notOwnHint)
    if ((reasonType(reason) ?? type) === type && count.count > most) {
      best = reason;
      most = count.count;
    }
  }
  return best;
}

function phoneCountryFix(mapping: ColumnMapping): string {
  const candidates = countryLikeColumns(mapping);
  if (candidates.length > 0) return `--country-column ${quote(candidates[0] as string)} (or --default-country CC)`;
  return "--default-country CC, or --country-column naming the column that holds each row's country";
}

/** Why most rejects of `type` happened, and the fix: one line. */
function whyRejected(
  summary: HashSummary,
  mapping: ColumnMapping,
  opts: NormalizeOptions,
  type: IdentifierType,
  reason: RejectReason,
): string {
  const notes = summary.notes;
  switch (reason) {
    case 'phone_needs_country':
      return mapping.country === undefined
        ? `they are national numbers and no country column was found; fix: ${phoneCountryFix(mapping)}`
        : `they are national numbers and their ${quoteLabel(mapping.country.label)} cell is empty; fix: --default-country CC for those rows`;
    case 'phone_ambiguous':
      return `they are ${AMBIGUOUS_FIX}`;
    case 'phone_lossy_number':
      return LOSSY_FIX;
    case 'phone_maybe_national':
      return maybeNationalWhy(mapping);
    case 'country_invalid':
      return `their country value is not recognized (listed below); fix: correct those values, or --default-country CC`;
    case 'phone_invalid':
      if (opts.phoneCountryCode === 'national' && notes.phoneCodeWithoutPlus > 0)
        return `${notes.phoneCodeWithoutPlus} of them carry the country code without +; fix: --phone-country-code auto`;
      return `they are not valid numbers for their row's country; check the columns ${columnsOf(mapping, type)} and the country (${mapping.country === undefined ? 'none' : quoteLabel(mapping.country.label)})`;
    case 'email_invalid':
      if (notes.severalValues !== undefined)
        return `cells of ${quoteLabel(notes.severalValues.column)} hold several addresses; fix: --value-separator ${quote(notes.severalValues.separator)}`;
      return `they are not email addresses; check the columns ${columnsOf(mapping, type)} (--map email="Column")`;
    case 'value_too_long':
      return `they are longer than any identifier; check the columns ${columnsOf(mapping, type)}`;
    case 'too_many_values':
      return `those rows hold more values than any person has identifiers; check the columns ${columnsOf(mapping, type)} and --value-separator`;
    case 'hash_invalid':
      return 'they are not SHA-256 digests; fix: --input-hashed auto';
    case 'device_id_opt_out':
      return 'they are the all-zero id of devices with ad tracking disabled: nothing to fix, they cannot match';
    case 'partner_user_id_email':
      return PARTNER_EMAIL_WHY;
    default:
      return `check the columns ${columnsOf(mapping, type)} (--map ${type}="Column")`;
  }
}

function rejectShareHints(summary: HashSummary, mapping: ColumnMapping, opts: NormalizeOptions): string[] {
  const out: string[] = [];
  for (const [type, counts] of Object.entries(summary.types) as [IdentifierType, HashTypeCounts][]) {
    const total = counts.valid + counts.invalid + counts.digests;
    if (counts.invalid === 0 || counts.invalid / total <= REJECT_SHARE_HINT) continue;
    const reason = mainReason(summary, type);
    if (reason === undefined) continue;
    const share = Math.round((100 * counts.invalid) / total);
    const why = whyRejected(summary, mapping, opts, type, reason);
    const columns = columnsOf(mapping, type);
    const where = why.includes(columns) ? '' : ` (columns ${columns})`;
    out.push(`${counts.invalid} of ${total} ${type} values rejected (${share}%), mostly ${reason}: ${why}${where}`);
  }
  return out;
}

/** How the numbers without `+` were read (`auto`/`included`): information, nothing to fix. */
function readingsHint(notes: HashSummary['notes']): string {
  const parts: string[] = [];
  const n = notes.phoneCodeWithoutPlus;
  if (n > 0)
    parts.push(
      `${n} phone ${n === 1 ? 'number was' : 'numbers were'} read as starting with their country code without +`,
    );
  const two = notes.phoneTwoReadings;
  if (two > 0)
    parts.push(
      `${two} ${n > 0 ? '' : 'phone '}${two === 1 ? 'number was' : 'numbers were'} valid read two ways (with or without the country code, or a leading 0 that may be a trunk prefix), decided by the country's number ranges`,
    );
  return parts.join('; ');
}

const AMBIGUOUS_FIX =
  'valid read two ways (as national numbers or as starting with their country code without +, or with or without a leading 0 or (0) that may be a trunk prefix), so they were not hashed; fix: write them with + and the country code, without (0) (--phone-country-code national or included only if every number of the file is written that way)';

const LOSSY_FIX =
  'a spreadsheet stored them as numbers and wrote them rounded in scientific form (4,91512E+12), so their last digits are lost and they were not hashed; fix: export again from the source, or format the phone column as Text in the spreadsheet before typing or pasting the numbers, then save as CSV';

const NATIONAL_EVIDENCE: Readonly<Record<NationalEvidence, string>> = {
  trunk: 'some are written with a leading 0',
  spreadsheet: 'a spreadsheet wrote some as numbers (….0 or 1.5E+10), which drops a leading 0',
  digits: 'most of its numbers without + are no valid number read with a country code',
};

/** The phone_maybe_national rejects, unless a share hint said why already. */
function maybeNationalHint(summary: HashSummary, mapping: ColumnMapping, already: string): string[] {
  const count = summary.rejects.phone_maybe_national?.count ?? 0;
  if (count === 0 || already.includes('phone_maybe_national')) return [];
  return [
    `${count} phone ${count === 1 ? 'number was' : 'numbers were'} rejected as phone_maybe_national: ${maybeNationalWhy(mapping)}`,
  ];
}

/** Why phone_maybe_national values were not read (their columns' evidence) and the fix. */
function maybeNationalWhy(mapping: ColumnMapping): string {
  const evidence = mapping.columns
    .flatMap((c) => (c.national === undefined ? [] : [`${quoteLabel(c.label)}: ${NATIONAL_EVIDENCE[c.national]}`]))
    .join('; ');
  const fix =
    mapping.country === undefined
      ? phoneCountryFix(mapping)
      : `--default-country CC for the rows whose ${quoteLabel(mapping.country.label)} cell is empty`;
  return `in rows without a country they read only as starting with a country code without +, but their column holds national numbers (${evidence}), so each may be a national number whose leading 0 was dropped (a German 0151… as 151…, which reads as +1 51…); fix: ${fix}; if they do start with their country code, --phone-country-code included`;
}

function ambiguousHint(count: number): string {
  return `${count} phone ${count === 1 ? 'number is' : 'numbers are'} ${AMBIGUOUS_FIX} (phone_ambiguous)`;
}

function noteHints(summary: HashSummary, opts: NormalizeOptions, already: string): string[] {
  const notes = summary.notes;
  const out: string[] = [];
  if (notes.severalValues !== undefined && !already.includes('--value-separator')) {
    const s = notes.severalValues;
    out.push(
      `${s.count} rejected cells of ${quoteLabel(s.column)} look like several values joined by ${quote(s.separator)}; fix: --value-separator ${quote(s.separator)}`,
    );
  }
  if (notes.phoneCodeWithoutPlus > 0 && opts.phoneCountryCode === 'national') {
    if (!already.includes('--phone-country-code'))
      out.push(
        `${notes.phoneCodeWithoutPlus} phone numbers look like they carry the country code without +; fix: --phone-country-code auto`,
      );
  } else if (notes.phoneCodeWithoutPlus > 0 || notes.phoneTwoReadings > 0) out.push(readingsHint(notes));
  const ambiguous = summary.rejects.phone_ambiguous?.count ?? 0;
  if (ambiguous > 0 && !already.includes('phone_ambiguous')) out.push(ambiguousHint(ambiguous));
  const noCountry = notes.phoneCodeWithoutCountry;
  if (noCountry > 0 && !already.includes('--country-column'))
    out.push(
      `${noCountry} of them ${noCountry === 1 ? 'was' : 'were'} in rows without a country, read so because their digits are a valid number that way (as SMS tools and ad-platform templates write them); a national number whose leading 0 a spreadsheet dropped reads the same way (a German 0151… as +1 51…): if the file holds such numbers, fix: --country-column or --default-country CC`,
    );
  const lossy = summary.rejects.phone_lossy_number?.count ?? 0;
  if (lossy > 0 && !already.includes('phone_lossy_number'))
    out.push(
      `${lossy} phone ${lossy === 1 ? 'number was' : 'numbers were'} rejected as phone_lossy_number: ${LOSSY_FIX}`,
    );
  const unknown = Object.entries(notes.unknownCountries).sort((a, b) => b[1] - a[1]);
  if (unknown.length > 0) {
    const other = notes.unknownCountriesOther > 0 ? `, other values ${notes.unknownCountriesOther}` : '';
    out.push(`country values not recognized (rows): ${unknown.map(([v, n]) => `${quote(v)} ${n}`).join(', ')}${other}`);
  }
  return out;
}

/**
 * The hint lines for a finished summary (empty when there is nothing to say), each one sentence
 * naming the cause and, where there is one, the fix.
 */
export function summaryHints(
  summary: HashSummary,
  mapping: ColumnMapping,
  opts: NormalizeOptions = {},
  /** The target's rows are filtered by consent (a custom audience; not a do-not-reach list): say what consent did. */
  consentFiltered = true,
): string[] {
  const share = rejectShareHints(summary, mapping, opts);
  return [
    ...share,
    ...noteHints(summary, opts, share.join('\n')),
    ...maybeNationalHint(summary, mapping, share.join('\n')),
    ...notOwnHint(summary, mapping),
    ...(share.some((h) => h.includes(PARTNER_EMAIL_WHY)) ? [] : partnerEmailHint(summary, mapping)),
    ...notUsedHints(mapping),
    ...(consentFiltered ? consentHints(summary) : []),
  ];
}

const PARTNER_EMAIL_WHY =
  "they are e-mail addresses, which partner_user_id would send unhashed: not sent; fix: if they are the customers' addresses, they do not belong among partner ids (correct the export, or map that column as email, hashed, with a --map for each other column); if they are partner ids written as addresses, --partner-ids-may-be-emails";

/** partner_user_id values that are addresses, however few: not sent, and why (PARTNER_EMAIL_WHY). */
function partnerEmailHint(summary: HashSummary, mapping: ColumnMapping): string[] {
  const count = summary.rejects.partner_user_id_email?.count ?? 0;
  if (count === 0) return [];
  return [
    `${count} partner_user_id value${count === 1 ? '' : 's'} (columns ${columnsOf(mapping, 'partner_user_id')}): ${PARTNER_EMAIL_WHY}`,
  ];
}

/** Values of paired columns that their type cell says are someone else's: not sent, and how to send them anyway. */
function notOwnHint(summary: HashSummary, mapping: ColumnMapping): string[] {
  const count = summary.rejects.not_own_by_type?.count ?? 0;
  if (count === 0) return [];
  const pairs = mapping.columns.filter((c) => c.typeLabel !== undefined);
  const first = pairs[0];
  const map =
    first === undefined
      ? ''
      : `; if they are the person's own, ${mapEntry(first.type, first)} reads every value of a column`;
  return [
    `${count} ${count === 1 ? 'value was' : 'values were'} not sent because ${count === 1 ? 'its' : 'their'} type cell (${pairs.map((c) => quoteLabel(c.typeLabel as string)).join(', ')}) says fax, pager, assistant, company or someone else's (not_own_by_type)${map}`,
  ];
}

/**
 * What the consent policy let through that a reader must not miss: every run with `include` says
 * it. None for a do-not-reach list (never filtered: the people who said no belong there).
 */
function consentHints(summary: HashSummary): string[] {
  const c = summary.consent;
  if (c === undefined) return [];
  const out: string[] = [];
  if (c.policy === 'include')
    out.push(
      `--consent include: ${c.no} row${c.no === 1 ? '' : 's'} whose consent columns say no (opted out, unsubscribed, no consent) were sent too; whether that is lawful is your decision (docs/privacy.md)`,
    );
  if (c.unreadable.count > 0)
    out.push(
      `${c.unreadable.count} row${c.unreadable.count === 1 ? ' has a consent value' : 's have consent values'} read neither as yes nor as no (first lines ${c.unreadable.lines.join(', ')}): ${c.policy === 'require-consent' ? 'left out, as rows with no value' : 'treated as no value'}; --consent require-consent leaves them out`,
    );
  return out;
}

/** Columns whose name says a type but whose first values do not fit it: left out, and how to read them anyway. */
function misfitHints(mapping: ColumnMapping): string[] {
  return (mapping.notUsed ?? []).flatMap((c) =>
    c.misfit === undefined
      ? []
      : [
          `${quoteLabel(c.label)} was not read as ${c.misfit}: ${c.reason}; if it does hold them, ${mapEntry(c.misfit, c)}`,
        ],
  );
}

/** Columns of unknown name that may hold emails or phones, not read by content: how to read them. */
function unreadHints(mapping: ColumnMapping): string[] {
  return (mapping.notUsed ?? []).flatMap((c) =>
    c.unread === undefined
      ? []
      : [
          `${quoteLabel(c.label)} was not read as ${c.unread}: ${c.reason}; if it holds the person's own, ${mapEntry(c.unread, c)}`,
        ],
  );
}

/** Columns of unknown name whose values may be a consent choice (accepted, rejected): not read, and how to read them. */
function maybeConsentHints(mapping: ColumnMapping): string[] {
  return (mapping.notUsed ?? []).flatMap((c) =>
    c.maybeConsent === true
      ? [
          `${quoteLabel(c.label)} is not read as consent (${UNDECIDED_CONSENT}), so a row that says rejected there is sent; if it is consent, ${mapEntry('consent_status', c)} (rejected, declined: no; accepted: yes)`,
        ]
      : [],
  );
}

/** How a printed consent column was found, when not simply by its name. */
function consentNote(c: NonNullable<ColumnMapping['consent']>[number]): string {
  if (c.nameKind !== undefined) return ` (--map; its name reads as ${c.nameKind})`;
  return c.mapped === true ? ' (--map)' : c.content === true ? ' (by its values)' : '';
}

/** Consent columns mapped against what their name says: read as mapped, and said so. */
function opposedConsentHints(mapping: ColumnMapping): string[] {
  return (mapping.consent ?? []).flatMap((c) =>
    c.nameKind === undefined
      ? []
      : [
          `${quoteLabel(c.label)} is read as ${c.kind}, as --map says, though its name reads as ${c.nameKind}: check that "true" there means ${c.kind === 'opt-out' ? 'no' : 'yes'}`,
        ],
  );
}

function notUsedHints(mapping: ColumnMapping): string[] {
  return [
    ...opposedConsentHints(mapping),
    ...misfitHints(mapping),
    ...unreadHints(mapping),
    ...maybeConsentHints(mapping),
    ...idColumnHints(mapping),
  ];
}

type NotUsed = NonNullable<ColumnMapping['notUsed']>[number];

/** Generic id columns whose values look like ids: not sent, and how to send them if they should be. */
function idColumnHints(mapping: ColumnMapping): string[] {
  const ids = (mapping.notUsed ?? []).filter((c) => c.idLike === true);
  if (ids.length === 0) return [];
  const first = ids[0] as NotUsed;
  const names = ids.map((c) => quoteLabel(c.label)).join(', ');
  return [
    `${names} look${ids.length === 1 ? 's' : ''} like your own ids and ${ids.length === 1 ? 'is' : 'are'} not sent: on the platform they would match whichever accounts have those numbers; map one only if it holds the platform's own user ids (${mapEntry('service_id', first)}) or ids exchanged through ID Sync with a partner (${mapEntry('partner_user_id', first)}, sent unhashed)`,
  ];
}

/** How a printed column was found, when not simply by its name. */
function columnNote(c: ColumnMapping['columns'][number], mixed: boolean): string {
  const notes: string[] = [];
  if (mixed && c.mapped === true) notes.push('--map');
  if (c.content === true) notes.push('detected by content');
  if (c.separator !== undefined) notes.push(`lists split on ${quote(c.separator)}`);
  if (c.typeLabel !== undefined) notes.push(`typed by ${quoteLabel(c.typeLabel)}`);
  return notes.length === 0 ? '' : ` (${notes.join(', ')})`;
}

/** The ignored columns: names without a reason on one line, the left-out ones each with its reason. */
function ignoredLines(mapping: ColumnMapping): string[] {
  const reasoned = mapping.notUsed ?? [];
  const plain = mapping.ignored.filter((c) => !reasoned.some((n) => n.label === c));
  // The placeholders of data-looking cells are counted, not listed.
  const named = plain.filter((c) => !isPlaceholder(c)).map((c) => JSON.stringify(c));
  const dataLike = plain.length - named.length;
  if (dataLike > 0)
    named.push(`${dataLike} column${dataLike === 1 ? '' : 's'} that look${dataLike === 1 ? 's' : ''} like data`);
  const lines = named.length > 0 ? [`  (ignored: ${named.join(', ')})`] : [];
  for (const c of reasoned) lines.push(`  (ignored ${quoteLabel(c.label)}: ${c.reason})`);
  return lines;
}

/** One line per type, for printing the chosen mapping (column names only, never values). */
export function describeMapping(mapping: ColumnMapping): string {
  const lines: string[] = [];
  const mixed = mapping.auto && (mapping.columns.some((c) => c.mapped === true) || mapping.country?.mapped === true);
  for (const type of IDENTIFIER_TYPES) {
    const cols = mapping.columns.filter((c) => c.type === type).map((c) => quoteLabel(c.label) + columnNote(c, mixed));
    // partner_user_id is the one type sent as it is: say so where the user checks the mapping.
    const note = type === 'partner_user_id' ? '  (sent unhashed)' : '';
    if (cols.length > 0) lines.push(`  ${type.padEnd(15)} <- ${cols.join(', ')}${note}`);
  }
  if (mapping.country !== undefined) {
    const how = [
      ...(mapping.auto && mapping.country.mapped === true ? ['--map'] : []),
      ...(mapping.country.content === true ? ['detected by content'] : []),
      ...(mapping.country.locale === true ? ['locales: their region'] : []),
    ];
    const named = how.length === 0 ? '' : ` (${how.join(', ')})`;
    lines.push(`  ${'country'.padEnd(15)} <- ${quoteLabel(mapping.country.label)}${named}`);
  }
  for (const c of mapping.consent ?? [])
    lines.push(`  ${'consent'.padEnd(15)} <- ${quoteLabel(c.label)}${consentNote(c)}: ${consentKindWords(c.kind)}`);
  lines.push(...ignoredLines(mapping));
  const source = !mapping.auto
    ? 'from --map'
    : mixed
      ? 'detected by column name, with --map'
      : 'detected by column name; override with --map type=Column';
  return `column mapping (${source}):\n${lines.join('\n')}`;
}
