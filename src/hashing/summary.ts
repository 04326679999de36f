/**
 * The hashing summary: what was read, produced and rejected, with reasons and the first line
 * numbers of each (never values). Workers count a partial summary per chunk; the pipeline merges
 * them in input order.
 */
import type { CsvRowError } from '../ingest/records.js';
import { looksLikeData } from '../identifiers/labels.js';
import type { ConsentColumn, ConsentPolicy, ConsentRead } from '../identifiers/consent.js';
import { IDENTIFIER_TYPES, type IdentifierType } from '../platform/users.js';
import {
  REJECT_REASONS,
  type BuildNotes,
  type BuiltUser,
  type Reject,
  type RejectReason,
  type RowValues,
} from '../identifiers/types.js';

/** How many line numbers a summary keeps per reason (enough to find the problem, bounded memory). */
export const SUMMARY_LINES = 5;

export interface HashTypeCounts {
  /** Values normalized and hashed here (after de-duplication within each user). */
  valid: number;
  /** Values rejected. */
  invalid: number;
  /** Values passed through as already-hashed digests. */
  digests: number;
}

export interface HashReasonCount {
  count: number;
  /** The first SUMMARY_LINES line numbers, ascending. */
  lines: number[];
}

export interface HashSummary {
  /** Data rows read (malformed rows included, blank lines not). */
  rows: number;
  /** Rows that produced a user (at least one valid identifier). */
  users: number;
  /** Well-formed rows without any valid identifier (no user produced). */
  emptyRows: number;
  /** Rows skipped because the CSV record was malformed. */
  malformed: HashReasonCount & { reasons: Partial<Record<CsvRowError, number>> };
  types: Partial<Record<IdentifierType, HashTypeCounts>>;
  rejects: Partial<Record<RejectReason, HashReasonCount>>;
  /** What explains rejects or readings (see BuildNotes); the summary's hints are made from them. */
  notes: HashNotes;
  /** Set when the input has consent or opt-out columns (identifiers/consent.ts). */
  consent?: ConsentCounts;
}

/** How many distinct values read as no a summary lists per consent column (the rest are counted together). */
export const CONSENT_VALUES_KEPT = 10;

/** What the rows' consent columns said and what the policy made of it (counts, lines, words: never identifiers). */
export interface ConsentCounts {
  policy: ConsentPolicy;
  /** Rows that said yes (and nothing said no or was unreadable). */
  yes: number;
  /** Rows that said no in at least one consent column. */
  no: number;
  /** Rows whose consent columns said nothing (empty, false in an opt-out column, "not subscribed"…). */
  none: HashReasonCount;
  /** Rows with a consent value that could not be read as yes or no (and no column saying no). */
  unreadable: HashReasonCount;
  /** Rows left out by the policy: no user produced, nothing hashed. */
  leftOut: HashReasonCount;
  /** Per consent column (by name): rows where it said no, the values read as no, and unreadable values. */
  columns: Record<string, ConsentColumnCounts>;
}

export interface ConsentColumnCounts {
  no: number;
  /** Values read as no (as written, dates as `<date>`) and their rows, at most CONSENT_VALUES_KEPT. */
  values: Record<string, number>;
  /** Rows whose value read as no is not among those kept. */
  valuesOther: number;
}

/** How many distinct unrecognized country values a summary lists (the rest are counted together). */
export const UNKNOWN_COUNTRIES_KEPT = 20;

export interface HashNotes {
  /** See BuildNotes.phoneCodeWithoutPlus. */
  phoneCodeWithoutPlus: number;
  /** See BuildNotes.phoneTwoReadings. */
  phoneTwoReadings: number;
  /** See BuildNotes.phoneCodeWithoutCountry. */
  phoneCodeWithoutCountry: number;
  /**
   * Rows per unrecognized country value (a country is not personal data; a value that looks like an
   * identifier is counted under `<looks like data>`), at most UNKNOWN_COUNTRIES_KEPT values.
   */
  unknownCountries: Record<string, number>;
  /** Rows whose unrecognized country value is not among those kept. */
  unknownCountriesOther: number;
  /** Rejected cells that look like several values joined by a separator: the first column and separator seen. */
  severalValues?: { count: number; column: string; separator: string };
}

export function createHashSummary(): HashSummary {
  return {
    rows: 0,
    users: 0,
    emptyRows: 0,
    malformed: { count: 0, lines: [], reasons: {} },
    types: {},
    rejects: {},
    notes: {
      phoneCodeWithoutPlus: 0,
      phoneTwoReadings: 0,
      phoneCodeWithoutCountry: 0,
      unknownCountries: {},
      unknownCountriesOther: 0,
    },
  };
}

/** An unknown country value as the hint shows it: a value that looks like an identifier (a phone, an e-mail, an id) never. */
function addUnknownCountry(notes: HashNotes, value: string, rows: number): void {
  const key = looksLikeData(value) ? '<looks like data>' : value.length > 40 ? `${value.slice(0, 40)}…` : value;
  if (notes.unknownCountries[key] !== undefined) notes.unknownCountries[key] += rows;
  else if (Object.keys(notes.unknownCountries).length < UNKNOWN_COUNTRIES_KEPT) notes.unknownCountries[key] = rows;
  else notes.unknownCountriesOther += rows;
}

function addSeveralValues(notes: HashNotes, from: { column: string; separator: string }, count: number): void {
  notes.severalValues ??= { count: 0, column: from.column, separator: from.separator };
  notes.severalValues.count += count;
}

function addNotes(notes: HashNotes, from: BuildNotes): void {
  notes.phoneCodeWithoutPlus += from.phoneCodeWithoutPlus ?? 0;
  notes.phoneTwoReadings += from.phoneTwoReadings ?? 0;
  notes.phoneCodeWithoutCountry += from.phoneCodeWithoutCountry ?? 0;
  if (from.unknownCountry !== undefined) addUnknownCountry(notes, from.unknownCountry, 1);
  if (from.severalValues !== undefined) addSeveralValues(notes, from.severalValues, 1);
}

function mergeNotes(into: HashNotes, from: HashNotes): void {
  into.phoneCodeWithoutPlus += from.phoneCodeWithoutPlus;
  into.phoneTwoReadings += from.phoneTwoReadings;
  into.phoneCodeWithoutCountry += from.phoneCodeWithoutCountry;
  for (const [value, rows] of Object.entries(from.unknownCountries)) addUnknownCountry(into, value, rows);
  into.unknownCountriesOther += from.unknownCountriesOther;
  if (from.severalValues !== undefined) addSeveralValues(into, from.severalValues, from.severalValues.count);
}

function noteLine(into: HashReasonCount, line: number): void {
  into.count++;
  // Lines come in order; a row rejecting several values of one reason is listed once.
  if (into.lines.length < SUMMARY_LINES && into.lines[into.lines.length - 1] !== line) into.lines.push(line);
}

function typeCounts(summary: HashSummary, type: IdentifierType): HashTypeCounts {
  return (summary.types[type] ??= { valid: 0, invalid: 0, digests: 0 });
}

/** Count one built user (one well-formed data row). */
export function addUserToSummary(summary: HashSummary, built: BuiltUser): void {
  summary.rows++;
  const user = built.user;
  let any = false;
  // Only the types present (user keys), not all six: this runs once per row.
  for (const key in user) {
    const type = key as IdentifierType;
    const values = user[type];
    if (values === undefined || values.length === 0) continue;
    any = true;
    countValues(summary, type, values.length, built.digests === undefined ? 0 : (built.digests[type] ?? 0));
  }
  endRow(summary, any, built.notes, built.rejects);
}

/** addUserToSummary of a row that UserBuilder read, from its RowValues (no user object). */
export function addRowToSummary(summary: HashSummary, row: RowValues): void {
  summary.rows++;
  let any = false;
  for (let t = 0; t < IDENTIFIER_TYPES.length; t++) {
    const n = row.sizes[t] as number;
    if (n === 0) continue;
    any = true;
    countValues(summary, IDENTIFIER_TYPES[t] as IdentifierType, n, row.digestCounts[t] as number);
  }
  endRow(summary, any, row.notes, row.rejects ?? NO_REJECTS);
}

const NO_REJECTS: readonly Reject[] = [];

/** A row's `n` values of a type, `digests` of them passed through as digests. */
function countValues(summary: HashSummary, type: IdentifierType, n: number, digests: number): void {
  const counts = summary.types[type] ?? typeCounts(summary, type);
  counts.valid += n - digests;
  counts.digests += digests;
}

/** The end of a row's counting: user or empty row, its notes and rejects. */
function endRow(summary: HashSummary, any: boolean, notes: BuildNotes | undefined, rejects: readonly Reject[]): void {
  if (any) summary.users++;
  else summary.emptyRows++;
  if (notes !== undefined) addNotes(summary.notes, notes);
  for (let i = 0; i < rejects.length; i++) {
    const r = rejects[i] as Reject;
    // A value its type cell says is someone else's is not sent by design: counted by its reason, not as invalid.
    if (r.reason !== 'not_own_by_type') typeCounts(summary, r.type).invalid++;
    noteLine((summary.rejects[r.reason] ??= { count: 0, lines: [] }), r.line);
  }
}

function consentCounts(summary: HashSummary, policy: ConsentPolicy): ConsentCounts {
  return (summary.consent ??= {
    policy,
    yes: 0,
    no: 0,
    none: { count: 0, lines: [] },
    unreadable: { count: 0, lines: [] },
    leftOut: { count: 0, lines: [] },
    columns: {},
  });
}

function columnCounts(c: ConsentCounts, column: string): ConsentColumnCounts {
  return (c.columns[column] ??= { no: 0, values: {}, valuesOther: 0 });
}

function addNoValue(into: ConsentColumnCounts, value: string, rows: number): void {
  into.no += rows;
  if (into.values[value] !== undefined) into.values[value] += rows;
  else if (Object.keys(into.values).length < CONSENT_VALUES_KEPT) into.values[value] = rows;
  else into.valuesOther += rows;
}

/**
 * Count one row's consent (`sent`: whether the policy lets its user through). A row left out
 * is counted as read here (no user, no rejects): its identifiers are never read.
 */
export function addConsentToSummary(
  summary: HashSummary,
  policy: ConsentPolicy,
  columns: readonly ConsentColumn[],
  read: ConsentRead,
  line: number,
  sent: boolean,
): void {
  const c = consentCounts(summary, policy);
  if (read.verdict === 'yes') c.yes++;
  else if (read.verdict === 'no') c.no++;
  else noteLine(read.verdict === 'none' ? c.none : c.unreadable, line);
  for (const { at, value } of read.saidNo) addNoValue(columnCounts(c, (columns[at] as ConsentColumn).label), value, 1);
  if (!sent) {
    summary.rows++;
    noteLine(c.leftOut, line);
  }
}

function mergeConsent(into: HashSummary, from: ConsentCounts, lineOffset: number): void {
  const c = consentCounts(into, from.policy);
  c.yes += from.yes;
  c.no += from.no;
  mergeLines(c.none, from.none, lineOffset);
  mergeLines(c.unreadable, from.unreadable, lineOffset);
  mergeLines(c.leftOut, from.leftOut, lineOffset);
  for (const [column, counts] of Object.entries(from.columns)) {
    const to = columnCounts(c, column);
    for (const [value, rows] of Object.entries(counts.values)) addNoValue(to, value, rows);
    to.no += counts.valuesOther;
    to.valuesOther += counts.valuesOther;
  }
}

/** Count one malformed CSV record. */
export function addBadRowToSummary(summary: HashSummary, line: number, error: CsvRowError): void {
  summary.rows++;
  noteLine(summary.malformed, line);
  summary.malformed.reasons[error] = (summary.malformed.reasons[error] ?? 0) + 1;
}

function mergeLines(into: HashReasonCount, from: HashReasonCount, lineOffset: number): void {
  into.count += from.count;
  for (const l of from.lines) {
    if (into.lines.length >= SUMMARY_LINES) break;
    if (into.lines[into.lines.length - 1] !== l + lineOffset) into.lines.push(l + lineOffset);
  }
}

/**
 * Add `from` into `into`. Merge summaries in input order (as hashCsv does) so the kept line
 * numbers are the first ones; `lineOffset` is added to `from`'s line numbers.
 */
export function mergeHashSummary(into: HashSummary, from: HashSummary, lineOffset = 0): HashSummary {
  into.rows += from.rows;
  into.users += from.users;
  into.emptyRows += from.emptyRows;
  mergeLines(into.malformed, from.malformed, lineOffset);
  for (const [reason, n] of Object.entries(from.malformed.reasons) as [CsvRowError, number][]) {
    into.malformed.reasons[reason] = (into.malformed.reasons[reason] ?? 0) + n;
  }
  for (const type of IDENTIFIER_TYPES) {
    const t = from.types[type];
    if (t === undefined) continue;
    const counts = typeCounts(into, type);
    counts.valid += t.valid;
    counts.invalid += t.invalid;
    counts.digests += t.digests;
  }
  for (const reason of REJECT_REASONS) {
    const r = from.rejects[reason];
    if (r !== undefined) mergeLines((into.rejects[reason] ??= { count: 0, lines: [] }), r, lineOffset);
  }
  mergeNotes(into.notes, from.notes);
  if (from.consent !== undefined) mergeConsent(into, from.consent, lineOffset);
  return into;
}

/** Consent counts as `--json`, the upload and sync reports and the audit record give them (snake_case). */
export interface ConsentJson {
  policy: ConsentPolicy;
  rows_said_no: number;
  rows_said_yes: number;
  rows_no_value: HashReasonCount;
  rows_unreadable: HashReasonCount;
  rows_left_out: HashReasonCount;
  columns: { column: string; said_no: number; values_read_as_no: Record<string, number>; other_values: number }[];
}

export function consentJson(c: ConsentCounts): ConsentJson {
  return {
    policy: c.policy,
    rows_said_no: c.no,
    rows_said_yes: c.yes,
    rows_no_value: c.none,
    rows_unreadable: c.unreadable,
    rows_left_out: c.leftOut,
    columns: Object.entries(c.columns).map(([column, n]) => ({
      column,
      said_no: n.no,
      values_read_as_no: n.values,
      other_values: n.valuesOther,
    })),
  };
}
