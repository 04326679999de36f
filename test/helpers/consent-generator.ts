/**
 * Generated exports with consent and opt-out columns, and the ground truth of every row. The
 * generator's knowledge is its own (the tables below, written from the exports of issue 31 and
 * the vendors' documented values), never the tool's vocabulary: what it says a cell means is
 * what the tool must find.
 *
 * Each export has an email column (one distinct address per row), sometimes a phone and a country,
 * and one to three consent columns drawn from every kind: opt-out booleans, "opted out at" dates,
 * opt-in booleans, double opt-in confirmations and status texts, in ten languages, with empty
 * cells and unreadable values. A row says no when any of its consent columns does; otherwise it is
 * unreadable when one of its values is; yes when one says yes; nothing otherwise.
 */
import type { RawRecord } from '../../src/identifiers/rows.js';
import { mulberry32 } from '../../src/sandbox/faults.js';

export type Truth = 'no' | 'yes' | 'none' | 'unreadable';
export type Policy = 'exclude' | 'require-consent' | 'include' | 'refused';

/** Cells of a column kind by what they mean. */
type Cells = Readonly<Record<Truth, readonly string[]>>;

const OPT_OUT_BOOLEAN: Cells = {
  no: ['true', 'TRUE', 'True', 'yes', 'Yes', '1', 'Y', 'ja', 'oui', 'sí', 'sim', 'tak', 'x'],
  yes: [],
  none: ['false', 'FALSE', 'False', 'no', 'No', '0', 'N', 'nein', 'non', 'nie', 'nej', ''],
  unreadable: ['maybe', 'see notes', '?', 'ask sales'],
};
const OPT_OUT_DATE: Cells = {
  no: ['2024-03-01', '2024-03-01T10:22:00Z', '2023-11-30 08:00:00', '03/01/2024', '01.03.2024'],
  yes: [],
  none: [''],
  unreadable: ['yesterday', 'unknown date?'],
};
const OPT_IN_BOOLEAN: Cells = {
  no: ['false', 'no', 'No', '0', 'N', 'nein', 'non', 'nie', 'nej', 'não'],
  yes: ['true', 'yes', 'Yes', '1', 'Y', 'ja', 'oui', 'sí', 'sim', 'tak'],
  none: [''],
  unreadable: ['unclear', 'tbd', 'pending review?'],
};
const CONFIRMATION: Cells = {
  no: [],
  yes: ['Yes', 'true', '1'],
  none: ['No', 'false', '0', ''],
  unreadable: ['soon'],
};
const STATUS: Cells = {
  no: [
    'unsubscribed',
    'Unsubscribed',
    'UNSUBSCRIBED',
    'Opt-Out: Manual',
    'opted out',
    'Non-Marketable',
    'no_consent',
    'blacklisted',
    'Do Not Sell',
    'do not share',
    'ads tracking off',
    'abgemeldet',
    'désabonné',
    'dado de baja',
  ],
  yes: ['subscribed', 'SUBSCRIBED', 'Single Opt-In', 'Double Opt-In', 'opted_in', 'opted in', 'abonniert', 'suscrito'],
  none: ['not subscribed', 'NEVER_SUBSCRIBED', 'pending', 'cleaned', 'bounced', ''],
  unreadable: ['2024-01-05', 'VIP', 'gold member'],
};

/** Column names by kind, in the ten languages. */
const COLUMNS: readonly (readonly [name: string, cells: Cells])[] = [
  ['Email Opt Out', OPT_OUT_BOOLEAN],
  ['Unsubscribed', OPT_OUT_BOOLEAN],
  ['HasOptedOutOfEmails', OPT_OUT_BOOLEAN],
  ['EMAIL_BLACKLISTED', OPT_OUT_BOOLEAN],
  ['SMS_BLACKLISTED', OPT_OUT_BOOLEAN],
  ['Do Not Sell', OPT_OUT_BOOLEAN],
  ['Abgemeldet', OPT_OUT_BOOLEAN],
  ['Désabonné', OPT_OUT_BOOLEAN],
  ['Dado de baja', OPT_OUT_BOOLEAN],
  ['Descadastrado', OPT_OUT_BOOLEAN],
  ['Disiscritto', OPT_OUT_BOOLEAN],
  ['Afgemeld', OPT_OUT_BOOLEAN],
  ['Wypisany', OPT_OUT_BOOLEAN],
  ['Avregistrerad', OPT_OUT_BOOLEAN],
  ['配信停止', OPT_OUT_BOOLEAN],
  ['unsubscribed_from_emails_at', OPT_OUT_DATE],
  ['Opted Out At', OPT_OUT_DATE],
  ['OPT_IN', OPT_IN_BOOLEAN],
  ['Accepts Email Marketing', OPT_IN_BOOLEAN],
  ['Einwilligung Werbung', OPT_IN_BOOLEAN],
  ['Consentement', OPT_IN_BOOLEAN],
  ['Consentimiento', OPT_IN_BOOLEAN],
  ['Consentimento marketing', OPT_IN_BOOLEAN],
  ['Consenso marketing', OPT_IN_BOOLEAN],
  ['Toestemming', OPT_IN_BOOLEAN],
  ['Zgoda marketingowa', OPT_IN_BOOLEAN],
  ['Samtycke', OPT_IN_BOOLEAN],
  ['同意', OPT_IN_BOOLEAN],
  ['DOUBLE_OPT-IN', CONFIRMATION],
  ['Email Subscription Status', STATUS],
  ['Person - Marketing status', STATUS],
  ['Email Status', STATUS],
];

const pick = <T>(random: () => number, list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;

export interface ConsentExport {
  header: string[];
  /** The consent columns, in header order. */
  consentColumns: string[];
  /** One record per row (keys: the header). */
  records: RawRecord[];
  /** What each row says (index = row). */
  truth: Truth[];
  /** Per consent column, the rows where it says no. */
  saysNo: Record<string, number>;
}

/** Whether a row of this truth is sent under `policy` (the rules, not the tool's code). */
export function sentUnder(policy: Policy, truth: Truth): boolean {
  if (policy === 'include') return true;
  if (policy === 'exclude') return truth !== 'no';
  if (policy === 'require-consent') return truth === 'yes';
  return truth === 'no';
}

/** How often a cell is unreadable, and says no (the rest: yes or nothing, evenly among what the kind has). */
const UNREADABLE_SHARE = 0.03;
const NO_SHARE = 0.2;

/** A generated export of `rows` rows (seeded: the same seed gives the same export). */
export function consentExport(seed: number, rows = 300): ConsentExport {
  const random = mulberry32(seed);
  const n = 1 + Math.floor(random() * 3);
  const chosen: (readonly [string, Cells])[] = [];
  while (chosen.length < n) {
    const c = pick(random, COLUMNS);
    if (!chosen.some(([name]) => name === c[0])) chosen.push(c);
  }
  const withPhone = random() < 0.5;
  const header = ['Email', ...(withPhone ? ['Phone', 'Country'] : []), 'First Name', ...chosen.map(([name]) => name)];
  const records: RawRecord[] = [];
  const truth: Truth[] = [];
  const saysNo: Record<string, number> = Object.fromEntries(chosen.map(([name]) => [name, 0]));
  for (let i = 0; i < rows; i++) {
    const record: Record<string, string> = { Email: `person.${seed}.${i}@example.com`, 'First Name': `Name${i}` };
    if (withPhone) {
      record.Phone = `+1 415 555 ${String(i % 10000).padStart(4, '0')}`;
      record.Country = 'US';
    }
    const says: Truth[] = [];
    for (const [name, cells] of chosen) {
      const draw = random();
      const meaning: Truth =
        draw < UNREADABLE_SHARE
          ? 'unreadable'
          : draw < UNREADABLE_SHARE + NO_SHARE && cells.no.length > 0
            ? 'no'
            : pick(
                random,
                (['yes', 'none'] as const).filter((t) => cells[t].length > 0),
              );
      record[name] = pick(random, cells[meaning]);
      says.push(meaning);
      if (meaning === 'no') saysNo[name] = (saysNo[name] ?? 0) + 1;
    }
    records.push(record);
    truth.push(
      says.includes('no') ? 'no' : says.includes('unreadable') ? 'unreadable' : says.includes('yes') ? 'yes' : 'none',
    );
  }
  return { header, consentColumns: chosen.map(([name]) => name), records, truth, saysNo };
}

/** The export as CSV text (every cell quoted). */
export function consentCsv(e: ConsentExport): string {
  const cell = (v: unknown): string => `"${String(v ?? '').replace(/"/g, '""')}"`;
  return (
    [e.header.map(cell).join(','), ...e.records.map((r) => e.header.map((h) => cell(r[h])).join(','))].join('\n') + '\n'
  );
}

/** The seed held apart: never tuned on; the report's figures are measured on it. */
export const HELD_OUT_SEED = 310_031;
/** The seeds the tests may be tuned on. */
export const TUNING_SEEDS: readonly number[] = Array.from({ length: 40 }, (_, i) => i + 1);
