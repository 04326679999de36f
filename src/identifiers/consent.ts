/**
 * Consent and opt-out columns: which columns of an export say whether the person agreed to
 * marketing or refused it (by name, and by content for status words), and what each row says.
 * The vocabulary is data (consent-vocabulary.ts); the policy (what a row that says no, or says
 * nothing, becomes) is applied by the hashing paths (hashing/chunk.ts, identifiers/rows.ts).
 *
 * A value is never guessed: one that is neither empty, a boolean, a date (where the column's kind
 * gives dates a meaning) nor a status word is `unreadable`, follows the policy for "no value",
 * and is counted with its line. Several consent columns in a row: any no wins, then an
 * unreadable value (it may be a no), then a yes. Consent columns are never identifier columns.
 */
import {
  CONSENT_NAME_KEYS,
  CONSENT_NAME_NEGATION_PARTS,
  CONSENT_NAME_NEGATIONS,
  CONSENT_NO_NAMES,
  CONSENT_OPT_IN_NAMES,
  CONSENT_NAME_FALSE_STARTS,
  ACCEPT_VALUES,
  FALSE_MARKS,
  TRUE_MARKS,
  CONSENT_NAME_NOT,
  DATE_VALUE,
  FALSE_VALUES,
  STATUS_WORDS,
  TRUE_VALUES,
  type ConsentKind,
  type ConsentReading,
} from './consent-vocabulary.js';
import { headerColumn, type HeaderColumn } from './labels.js';
import { ConfigError } from '../errors.js';

/**
 * What a run does with a row's consent, for a custom audience:
 * - `exclude` (default): a row that says no (opted out, unsubscribed, no consent…) is left out;
 * - `require-consent`: only a row that says yes is sent (no value, or an unreadable one: left out);
 * - `include`: every row is sent (the run says so);
 * - `refused`: only the rows that say no (what goes to the do-not-reach list of `--consent do-not-reach`).
 */
export type ConsentPolicy = 'exclude' | 'require-consent' | 'include' | 'refused';
export const CONSENT_POLICIES: readonly ConsentPolicy[] = ['exclude', 'require-consent', 'include', 'refused'];
export const DEFAULT_CONSENT_POLICY: ConsentPolicy = 'exclude';

/** What a row's consent columns say together. */
export type RowConsent = 'no' | 'yes' | 'none' | 'unreadable';

/** A consent column of the mapping. */
export interface ConsentColumn extends HeaderColumn {
  kind: ConsentKind;
  /** Found by its values (status words) rather than its name. */
  content?: true;
  /** Named by a `map` entry (CONSENT_MAP_TYPES) rather than found. */
  mapped?: true;
  /** Mapped against what its name says (opposedNameKind): the kind the name gives. */
  nameKind?: ConsentKind;
}

/**
 * The `map` entry types that name a consent column whatever its name (`opt_out=No Email`): for a
 * column the names do not find, or find as another kind.
 */
export const CONSENT_MAP_TYPES: ReadonlyMap<string, ConsentKind> = new Map([
  ['opt_out', 'opt-out'],
  ['opt_in', 'opt-in'],
  ['consent_status', 'status'],
]);

/** The key values and names are compared on: lowercase letters and digits, accents dropped. */
export function consentKey(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '');
}

// The vocabulary's words as keys (consentKey): a word written with a voiced kana (`メルマガ`) or an
// accent is compared as the cells' keys are, decomposed, its marks dropped.
const TRUE = new Set(TRUE_VALUES.map(consentKey));
const TRUE_MARK = new Set(TRUE_MARKS);
const FALSE_MARK = new Set(FALSE_MARKS);
const FALSE = new Set(FALSE_VALUES.map(consentKey));
const ACCEPT = new Set(ACCEPT_VALUES.map(consentKey));
const STATUS = new Map<string, ConsentReading>(
  (Object.entries(STATUS_WORDS) as [ConsentReading, readonly string[]][]).flatMap(([reading, words]) =>
    words.map((w) => [consentKey(w), reading] as const),
  ),
);
const NAME_KEYS = CONSENT_NAME_KEYS.map(([kind, keys]) => [kind, keys.map(consentKey)] as const);
const NEGATIONS = new Set(CONSENT_NAME_NEGATIONS.map(consentKey));
const NEGATION_PARTS = CONSENT_NAME_NEGATION_PARTS.map(consentKey);
const OPT_IN_NAMES = new Set(CONSENT_OPT_IN_NAMES.map(consentKey));
const NO_NAMES = CONSENT_NO_NAMES.map(consentKey);
/** Refusals read also as the start of a longer status (`Opt-Out: Manual`). */
const NO_PREFIXES = STATUS_WORDS.no.map(consentKey).filter((w) => w.length >= 5);

/** The kind a column's name gives it, or undefined when the name says nothing of consent. */
export function consentKindOfName(column: string): ConsentKind | undefined {
  const words = column
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '');
  const last = words.at(-1);
  if (last !== undefined && words.length > 1 && CONSENT_NAME_NOT.has(last)) return undefined;
  const keys = words.map(consentKey);
  // `|`, which no key holds, for a false start: the words around it do not join into a key.
  const key = keys.map((k) => k.replace(CONSENT_NAME_FALSE_STARTS, '|')).join('');
  // `No Marketing`, `No consent`: a refusal, when `no` is the first word.
  if (keys[0] === 'no' && keys.length > 1 && NO_NAMES.some((k) => key.slice(2).includes(k))) return 'opt-out';
  const named = NAME_KEYS.find(([, ks]) => ks.some((k) => key.includes(k)))?.[0];
  const kind = named ?? (OPT_IN_NAMES.has(key) ? 'opt-in' : undefined);
  // An agreement taken back or refused is a refusal (`Consent Revoked`: true means no).
  const negated = keys.some((k) => NEGATIONS.has(k)) || NEGATION_PARTS.some((k) => key.includes(k));
  return kind !== undefined && kind !== 'opt-out' && negated ? 'opt-out' : kind;
}

/** A status word's reading (exact, or a refusal starting the value), undefined when it is none. */
function statusReading(key: string): ConsentReading | undefined {
  const exact = STATUS.get(key);
  if (exact !== undefined) return exact;
  return NO_PREFIXES.some((w) => key.startsWith(w)) ? 'no' : undefined;
}

/**
 * Whether `accepted` (ACCEPT_VALUES) says yes in column `c`: one named by a map entry, or found by
 * a name that asks for agreement (opt-in, confirmation). Never in an opt-out column, nor in a
 * status column found by its name or values (`Email Status` of a delivery log: accepted = queued).
 */
export function readsAccepted(c: Pick<ConsentColumn, 'kind' | 'mapped' | 'content'>): boolean {
  if (c.kind === 'opt-out') return false;
  return c.mapped === true || (c.content !== true && c.kind !== 'status');
}

/**
 * One cell of a consent column of `kind`: its reading, or `unreadable`. An empty cell says nothing.
 * `accepts`: the column reads `accepted` as yes (readsAccepted).
 */
export function readConsentValue(kind: ConsentKind, raw: string, accepts = false): ConsentReading | 'unreadable' {
  const value = raw.trim();
  if (value === '') return 'none';
  const key = TRUE_MARK.has(value) ? 'true' : FALSE_MARK.has(value) ? 'false' : consentKey(value);
  const status = statusReading(key);
  if (status !== undefined) return status;
  if (accepts && ACCEPT.has(key)) return 'yes';
  if (kind === 'status') return 'unreadable';
  if (TRUE.has(key)) return kind === 'opt-out' ? 'no' : 'yes';
  if (FALSE.has(key)) return kind === 'opt-in' ? 'no' : 'none';
  if (DATE_VALUE.test(value)) return kind === 'opt-out' ? 'no' : 'yes';
  return 'unreadable';
}

/**
 * How a value read as no is shown (counts, --json, the reports, the audit record): a word of the
 * vocabulary as written, a refusal starting a longer value as its written start (`Opt-Out: jane@…`
 * is `Opt-Out…`: the rest may be anyone's address or name), a date as `<date>`.
 */
export function noValueLabel(raw: string): string {
  const value = raw.trim();
  if (DATE_VALUE.test(value)) return '<date>';
  const key = consentKey(value);
  if (STATUS.has(key) || TRUE.has(key)) return value.slice(0, 40);
  const prefix = NO_PREFIXES.find((w) => key.startsWith(w));
  return prefix === undefined ? '<other>' : `${writtenStart(value, prefix.length)}…`;
}

/** The shortest start of `value` whose key is `length` characters long. */
function writtenStart(value: string, length: number): string {
  for (let i = 1; i < value.length; i++) if (consentKey(value.slice(0, i)).length >= length) return value.slice(0, i);
  return value;
}

/** Share of a named column's sampled values that must be readable (unless one says no) for it to be a consent column. */
const READABLE_SHARE = 0.5;
/** Values a column of unknown name needs, and the share that must be status words, to be read by content. */
const CONTENT_MIN = 3;
const CONTENT_SHARE = 0.9;

/** The consent columns found, and the columns that may be ones (a hint names them, with the map entry). */
export interface ConsentDetection {
  columns: ConsentColumn[];
  /** Of unknown name, their values accepted / rejected and the like: a consent banner's, or an invitation's. */
  undecided: HeaderColumn[];
}

/**
 * The consent columns of `header`: columns whose name has a consent key and whose sampled values
 * are mostly readable (or too few to tell, or say no at least once), and columns of any other
 * name whose sampled values are clearly status words (subscribed, unsubscribed…) with at least
 * one refusal or agreement.
 * `skip`: columns named for something else (`map` entries).
 */
export function detectConsentColumns(
  header: readonly string[],
  sample: readonly (readonly string[])[],
  skip: (index: number) => boolean,
): ConsentDetection {
  const out: ConsentColumn[] = [];
  const undecided: HeaderColumn[] = [];
  header.forEach((column, index) => {
    if (skip(index)) return;
    const cells = sample.map((row) => row[index] ?? '').filter((c) => c.trim() !== '');
    const kind = consentKindOfName(column);
    if (kind !== undefined) {
      if (unreadableShare(cells, kind, readsAccepted({ kind })) === undefined)
        out.push({ ...headerColumn(header, index), kind });
      return;
    }
    if (cells.length < CONTENT_MIN) return;
    const keys = cells.map(consentKey);
    const readings = keys.map(statusReading);
    const clear = readings.filter((r) => r !== undefined).length;
    if (clear >= CONTENT_SHARE * cells.length && readings.some((r) => r === 'no' || r === 'yes'))
      out.push({ ...headerColumn(header, index), kind: 'status', content: true });
    else if (
      clear + keys.filter((k) => ACCEPT.has(k)).length >= CONTENT_SHARE * cells.length &&
      readings.includes('no')
    )
      undecided.push(headerColumn(header, index));
  });
  return { columns: out, undecided };
}

/**
 * Why a column named by a consent map entry cannot be read as `kind`, or undefined when it can:
 * its first values are mostly unreadable as `kind` and none says no (everyone would be sent unread).
 */
export function mappedConsentProblem(kind: ConsentKind, cells: readonly string[]): string | undefined {
  const values = cells.filter((c) => c.trim() !== '');
  const unreadable = unreadableShare(values, kind, readsAccepted({ kind, mapped: true }));
  if (unreadable === undefined) return;
  return `${unreadable} of its first ${values.length} values are read neither as yes nor as no for ${kind}`;
}

/**
 * How many of a consent column's sampled (non-empty) `cells` are unreadable as `kind`, when too many
 * for it to be read; undefined when it can be: too few to tell, mostly readable, or one says no (a
 * column of mostly unreadable values but some refusals was once dropped, and its refusals sent).
 */
function unreadableShare(cells: readonly string[], kind: ConsentKind, accepts: boolean): number | undefined {
  const readings = cells.map((c) => readConsentValue(kind, c, accepts));
  const readable = readings.filter((r) => r !== 'unreadable').length;
  if (cells.length < CONTENT_MIN || readable >= READABLE_SHARE * cells.length || readings.includes('no')) return;
  return cells.length - readable;
}

/**
 * The kind a mapped column's name gives it when that is the opposite of the mapped kind (an opt-out
 * against an opt-in or a confirmation): the map entry decides, and the mapping says so.
 */
export function opposedNameKind(column: string, kind: ConsentKind): ConsentKind | undefined {
  const named = consentKindOfName(column);
  const flip = (a: ConsentKind, b: ConsentKind): boolean => a === 'opt-out' && (b === 'opt-in' || b === 'confirmation');
  return named !== undefined && (flip(named, kind) || flip(kind, named)) ? named : undefined;
}

/** What one row's consent columns said: the verdict, and each column that said no with its value. */
export interface ConsentRead {
  verdict: RowConsent;
  /** Positions (in the columns given to the reader) of the columns that said no, and their values. */
  saidNo: { at: number; value: string }[];
}

const CACHE_MAX = 256;

/**
 * Reads rows' consent columns. Readings are cached per column and value (a column holds few
 * distinct values: true/false, a handful of statuses), so the hot path rarely normalizes text.
 */
export class ConsentReader {
  private readonly caches: Map<string, CellReading>[];

  constructor(readonly columns: readonly ConsentColumn[]) {
    this.caches = columns.map(() => new Map<string, CellReading>());
  }

  /** The row's verdict; `fields` are its cells in header order. */
  read(fields: readonly string[]): ConsentRead {
    let verdict: RowConsent = 'none';
    let saidNo: ConsentRead['saidNo'] | undefined;
    for (let i = 0; i < this.columns.length; i++) {
      const c = this.columns[i] as ConsentColumn;
      const raw = fields[c.index] ?? '';
      if (raw === '') continue;
      const { reading, label } = this.reading(i, c, raw);
      if (reading === 'no') (saidNo ??= []).push({ at: i, value: label });
      else if (reading === 'unreadable') verdict = 'unreadable';
      else if (reading === 'yes' && verdict === 'none') verdict = 'yes';
    }
    return saidNo === undefined ? { verdict, saidNo: [] } : { verdict: 'no', saidNo };
  }

  private reading(i: number, c: ConsentColumn, raw: string): CellReading {
    const cache = this.caches[i] as Map<string, CellReading>;
    let r = cache.get(raw);
    if (r === undefined) {
      const reading = readConsentValue(c.kind, raw, readsAccepted(c));
      r = { reading, label: reading === 'no' ? noValueLabel(raw) : '' };
      // Dates are many and distinct: not kept (the cache stays small).
      if (cache.size < CACHE_MAX && !DATE_VALUE.test(raw.trim())) cache.set(raw, r);
    }
    return r;
  }
}

/** A cell's reading and, when it is no, how the value is shown (noValueLabel). */
interface CellReading {
  reading: ConsentReading | 'unreadable';
  label: string;
}

/** Whether a row with this verdict is sent under `policy`. */
export function consentSends(policy: ConsentPolicy, verdict: RowConsent): boolean {
  switch (policy) {
    case 'include':
      return true;
    case 'exclude':
      return verdict !== 'no';
    case 'require-consent':
      return verdict === 'yes';
    case 'refused':
      return verdict === 'no';
  }
}

/** How the values of a column of `kind` read, for the mapping lines (words only, never a cell). */
export function consentKindWords(kind: ConsentKind): string {
  switch (kind) {
    case 'opt-out':
      return 'opt-out: true/yes/1 or a date = no; false/empty = nothing said';
    case 'opt-in':
      return 'opt-in: true/yes/1, accepted or a date = yes; false/no/0 = no';
    case 'confirmation':
      return 'confirmation: true/yes/1 = yes; false/empty = nothing said';
    case 'status':
      return 'status: unsubscribed, opted out, blacklisted, non-marketable, no consent, do not sell/share, rejected… = no; subscribed, opted in = yes (accepted too when mapped)';
  }
}

/**
 * A policy that sends only the rows saying yes (`require-consent`) or only those saying no
 * (`refused`, the do-not-reach list's rows) needs a consent column: without one no row says
 * either, and sending every row (or none) in silence would be the opposite of what was asked.
 */
export function checkConsentColumns(policy: ConsentPolicy, columns: readonly unknown[] | undefined): void {
  if ((policy !== 'require-consent' && policy !== 'refused') || (columns !== undefined && columns.length > 0)) return;
  const which = policy === 'refused' ? '--consent do-not-reach' : '--consent require-consent';
  const other = policy === 'refused' ? 'drop the do-not-reach policy' : 'choose --consent exclude or include';
  throw new ConfigError(
    'mapping_no_consent_column',
    `${which} needs a consent or opt-out column, and the input has none that is recognized`,
    {
      fix: `name the column that records consent or opt-out with --map opt_out="Column" (true means no), opt_in="Column" (true means yes) or consent_status="Column" (subscribed, unsubscribed…), or ${other}`,
    },
  );
}
