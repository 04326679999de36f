import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { ambiguousUnderMax, phoneTruthCorpus, TRUTH_COUNTRIES, type TruthRow } from './helpers/phone-truth.js';
import { tempDir } from './helpers/temp.js';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
const csvCell = (s: string): string => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

interface Outcome {
  rows: number;
  wrong: string[];
  rejected: number;
  ambiguous: number;
  reasons: Record<string, number>;
}

/** `hash` over the corpus (in-process CLI), each row's digest against its ground truth. */
async function hashCorpus(rows: readonly TruthRow[], format: 'digits' | 'e164'): Promise<Outcome> {
  const dir = tempDir('ak-phone-truth-');
  const rejectsFile = join(dir, 'rejects.csv');
  const input = ['phone,country', ...rows.map((r) => `${csvCell(r.value)},${csvCell(r.country)}`)].join('\n');
  const args = ['hash', '-', '--format', 'jsonl', '--rejects', rejectsFile, '--phone-format', format];
  const r = await runCli(args, { input });
  expect(r.code, r.stderr).toBe(0);
  const users = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { phone_number?: string[] });
  expect(users).toHaveLength(rows.length);
  const reasons: Record<string, number> = {};
  for (const line of readFileSync(rejectsFile, 'utf8').trim().split('\n').slice(1)) {
    const reason = line.split(',').at(-1)!;
    reasons[reason] = (reasons[reason] ?? 0) + 1;
  }
  const out: Outcome = { rows: rows.length, wrong: [], rejected: 0, ambiguous: 0, reasons };
  rows.forEach((row, i) => {
    const got = users[i]!.phone_number?.[0];
    const truth = sha(format === 'e164' ? row.e164 : row.e164.slice(1));
    if (got === undefined) {
      if (ambiguousUnderMax(row)) out.ambiguous++;
      else out.rejected++;
    } else if (got !== truth) out.wrong.push(`${row.value} (${row.country}) is ${row.e164}`);
  });
  return out;
}

// The suite's seed; the held-apart seed of issue 30 (never tuned on) is run with PHONE_TRUTH_SEED=30.
const SEED = Number(process.env['PHONE_TRUTH_SEED'] ?? 20261126);

describe('phones of many countries in the forms CRM exports hold, against their ground truth', () => {
  const all = phoneTruthCorpus(6, SEED, true);
  const rows = all.filter((r) => r.issue30 === undefined);

  it('the corpus covers 30+ countries, mobile and fixed line, in every form', () => {
    expect(TRUTH_COUNTRIES.length).toBeGreaterThanOrEqual(30);
    expect(new Set(rows.map((r) => r.alpha2)).size).toBe(TRUTH_COUNTRIES.length);
    expect(rows.length).toBeGreaterThan(6000);
  });

  for (const format of ['digits', 'e164'] as const) {
    it(`hash --phone-format ${format}: 0 wrong digests, at most 1% of valid numbers rejected`, async () => {
      const o = await hashCorpus(rows, format);
      expect(o.wrong.slice(0, 10)).toEqual([]);
      expect(o.rejected / o.rows, JSON.stringify(o)).toBeLessThanOrEqual(0.01);
      // Every number rejected as ambiguous has two readings that are both real numbers.
      expect(o.reasons.phone_ambiguous ?? 0).toBe(o.ambiguous);
    });
  }
});

describe('the forms issue 30 found: spreadsheet numbers, international prefixes, extensions, 00cc (0)', () => {
  const rows = phoneTruthCorpus(6, SEED, true).filter((r) => r.issue30 !== undefined);

  it('0 wrong digests; rounded spreadsheet numbers are phone_lossy_number; at most 2% of the others rejected', async () => {
    const read = rows.filter((r) => r.issue30 === 'read');
    const lossy = rows.length - read.length;
    expect(read.length).toBeGreaterThan(4000);
    expect(lossy).toBeGreaterThan(500);
    const o = await hashCorpus(rows, 'digits');
    expect(o.wrong.slice(0, 10)).toEqual([]);
    expect(o.reasons.phone_lossy_number).toBe(lossy);
    // Ambiguous values have two readings both real numbers (a spreadsheet dropped a `+` or a `0`).
    expect(o.reasons.phone_ambiguous ?? 0).toBeLessThanOrEqual(o.ambiguous + 0.02 * read.length);
    expect((o.rejected - lossy) / read.length, JSON.stringify(o.reasons)).toBeLessThanOrEqual(0.02);
    console.log(
      `issue 30 forms, seed ${SEED}: ${JSON.stringify({ ...o, read: read.length, lossy, wrong: o.wrong.length })}`,
    );
  });
});
