/** The hashing summary as plain text for a terminal (`hash` and `upload` print it). */
import {
  type ConsentCounts,
  SUMMARY_LINES,
  type HashReasonCount,
  type HashSummary,
  type HashTypeCounts,
} from '../hashing/summary.js';
import { quoteLabel } from '../identifiers/labels.js';
import { IDENTIFIER_TYPES } from '../platform/users.js';
import { REJECT_REASONS } from '../identifiers/types.js';

// Lines are kept once each, up to SUMMARY_LINES: only a full list can have more behind it.
const withMore = (r: HashReasonCount): string =>
  `line${r.lines.length === 1 ? '' : 's'} ${r.lines.join(', ')}${r.lines.length >= SUMMARY_LINES && r.count > r.lines.length ? ', ...' : ''}`;

/** The summary as plain text for a terminal: counts, reasons and line numbers only. */
export function renderHashSummary(summary: HashSummary): string {
  const out: string[] = [];
  const field = (label: string, value: string | number): void => {
    out.push(`${label.padEnd(34)} ${value}`);
  };
  field('rows read', summary.rows);
  field('users produced', summary.users);
  field('rows without a valid identifier', summary.emptyRows);
  if (summary.malformed.count > 0) {
    const reasons = Object.entries(summary.malformed.reasons)
      .map(([r, n]) => `${r} ${n}`)
      .join(', ');
    field('malformed rows skipped', `${summary.malformed.count} (${reasons}; ${withMore(summary.malformed)})`);
  }
  const types = IDENTIFIER_TYPES.filter((t) => summary.types[t] !== undefined);
  if (types.length > 0) {
    out.push('');
    out.push(`${'type'.padEnd(16)}${'valid'.padStart(10)}${'invalid'.padStart(10)}${'digests'.padStart(10)}`);
    for (const t of types) {
      const c = summary.types[t] as HashTypeCounts;
      out.push(
        `${t.padEnd(16)}${String(c.valid).padStart(10)}${String(c.invalid).padStart(10)}${String(c.digests).padStart(10)}`,
      );
    }
    out.push('(digests: values already SHA-256-hashed in the input, passed through)');
  }
  const reasons = REJECT_REASONS.filter((r) => summary.rejects[r] !== undefined);
  if (reasons.length > 0) {
    out.push('');
    out.push('rejected values by reason:');
    for (const r of reasons) {
      const c = summary.rejects[r] as HashReasonCount;
      out.push(`  ${r.padEnd(24)}${String(c.count).padStart(8)}  ${withMore(c)}`);
    }
  }
  if (summary.consent !== undefined) out.push('', ...renderConsent(summary.consent));
  return out.join('\n');
}

const POLICY_WORDS: Readonly<Record<ConsentCounts['policy'], string>> = {
  exclude: 'rows that say no are not sent',
  'require-consent': 'only rows that say yes are sent',
  include: 'every row is sent, those that say no included',
  refused: 'only rows that say no are sent',
};

/**
 * What the consent columns said, and what the policy left out: counts, lines, and the words read as no.
 * The heading says what the policy did to this target, not a flag: the audience pass of
 * `--consent do-not-reach=LIST` leaves out the rows that say no as `exclude` does.
 */
function renderConsent(c: ConsentCounts): string[] {
  const out = [`consent (${POLICY_WORDS[c.policy]}):`];
  const field = (label: string, value: string | number): void => void out.push(`  ${label.padEnd(32)} ${value}`);
  const counted = (r: HashReasonCount): string => (r.count === 0 ? '0' : `${r.count}  ${withMore(r)}`);
  field('rows that say no', c.no);
  field('rows that say yes', c.yes);
  field('rows with no value', counted(c.none));
  field('rows with an unreadable value', counted(c.unreadable));
  field('rows left out (not sent)', counted(c.leftOut));
  for (const [column, n] of Object.entries(c.columns)) {
    const values = Object.entries(n.values).map(([v, rows]) => `${JSON.stringify(v)} ${rows}`);
    if (n.valuesOther > 0) values.push(`other values ${n.valuesOther}`);
    out.push(`  ${quoteLabel(column)} said no in ${n.no} rows: ${values.join(', ')}`);
  }
  return out;
}
