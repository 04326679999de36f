/**
 * Issue #30's measurement: generated exports (test/helpers/export-generator.ts) through the whole
 * `hash` pipeline with no flag that says how to read them, against their ground truth.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateExport, type GeneratedExport } from './helpers/export-generator.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

/**
 * The held-apart seed: its figures are the ones reported, and its failures are never looked at
 * to tune the vocabulary, the rules or the generator (tune with AK_EXPORTS_SEED=<another seed>).
 */
const HELD_APART_SEED = 730_211;
const SEED = Number(process.env.AK_EXPORTS_SEED ?? HELD_APART_SEED);
/** Files per run: a few dozen in npm test; AK_EXPORTS_FILES=500 for a bigger run. */
const FILES = Number(process.env.AK_EXPORTS_FILES ?? 24);
/** AK_EXPORTS_DEBUG=1: what went wrong where, file by file; never on the held-apart seed. */
const DEBUG = process.env.AK_EXPORTS_DEBUG !== undefined && SEED !== HELD_APART_SEED;
/**
 * Every phone form exports hold, spreadsheet ones included (`….0`, scientific, a national number
 * without its leading 0, rounded ones that must never be hashed).
 */
const OPTIONS = {
  rows: [80, 240] as [number, number],
  preambles: true,
  internationalPrefixes: true,
  spreadsheetForms: true,
};

const tmp = tempDir('ak-generated-');

interface Figures {
  files: number;
  read: number;
  /**
   * Legacy single-byte files refused as ambiguous, with the right `--encoding` among the ones the
   * fix names: loud, never misread, but not read with no flags (what is left of issue #30).
   */
  ambiguous: number;
  emails: { right: number; total: number };
  phones: { right: number; total: number };
  wrong: number;
  others: number;
  losses: number;
  lossesNamed: number;
  failures: string[];
}

/** A refusal as input_encoding_ambiguous whose fix names the encoding the file was written in. */
function ambiguityNamingTheRightOne(stdout: string, encoding: string): boolean {
  const doc = JSON.parse(stdout === '' ? '{}' : stdout) as { error?: { code?: string; fix?: string } };
  return doc.error?.code === 'input_encoding_ambiguous' && (doc.error.fix ?? '').includes(`--encoding ${encoding}`);
}

/** One file through `hash`, scored against its truth. */
async function score(g: GeneratedExport, f: Figures): Promise<void> {
  const path = join(tmp, g.name);
  const out = `${path}.jsonl`;
  writeFileSync(path, g.bytes);
  const r = await runCli(['hash', path, '--workers', '0', '--json', '--format', 'jsonl', '-o', out]);
  f.files++;
  if (r.code !== 0 && ambiguityNamingTheRightOne(r.stdout, g.encoding)) {
    f.ambiguous++;
    if (DEBUG)
      console.log(`${g.name}: refused as of an ambiguous encoding (${g.encoding}): ${r.stderr.split('\n')[0]}`);
    return;
  }
  if (r.code !== 0) {
    f.failures.push(`${g.name}: exit ${r.code}: ${r.stderr.split('\n')[0]} ${JSON.stringify(g.header)}`);
    return;
  }
  f.read++;
  const doc = JSON.parse(r.stdout) as { hints: string[] };
  const users = readFileSync(out, 'utf8').trimEnd().split('\n');
  const lost = new Map<string, { lost: number; total: number }>();
  g.rows.forEach((truth, i) => {
    const user = JSON.parse(users[i] ?? '{}') as Record<string, string[]>;
    const sent = new Set(Object.values(user).flat());
    for (const d of sent) {
      const bad = truth.never.has(d) ? 'other' : truth.allowed.has(d) ? undefined : 'wrong';
      if (bad === 'other') f.others++;
      if (bad === 'wrong') f.wrong++;
      if (bad !== undefined && DEBUG)
        console.log(
          `${g.name}: ${bad} digest on data row ${i + 1}: ${JSON.stringify(g.header)} ${JSON.stringify(g.cells[i])}`,
        );
    }
    for (const e of truth.expected) {
      const counts = e.type === 'email' ? f.emails : f.phones;
      const ok = sent.has(e.digest);
      counts.total++;
      if (ok) counts.right++;
      else if (e.type === 'email' && DEBUG)
        console.log(
          `${g.name}: e-mail of ${JSON.stringify(e.column)} lost on data row ${i + 1}: ${JSON.stringify(g.cells[i])}`,
        );
      const c = lost.get(e.column) ?? { lost: 0, total: 0 };
      c.total++;
      if (!ok) c.lost++;
      lost.set(e.column, c);
    }
  });
  // Every column losing more than 5% of its values is named in a hint with a fix.
  for (const [column, c] of lost) {
    if (c.lost <= 0.05 * c.total) continue;
    f.losses++;
    const hint = doc.hints.find((h) => h.includes(JSON.stringify(column)) && /fix:|--map|--default-country/.test(h));
    if (DEBUG) console.log(`${g.name}: ${column} lost ${c.lost}/${c.total}: ${hint ?? doc.hints.join(' / ')}`);
    if (hint !== undefined) f.lossesNamed++;
    else f.failures.push(`${g.name}: ${column} lost ${c.lost} of ${c.total} with no hint naming it`);
  }
}

describe('generated exports in ten languages, read with no flags (issue #30)', () => {
  it(`seed ${SEED}: every e-mail, >= 98% of knowable phones, no wrong digest, nobody else's value`, async () => {
    const f: Figures = {
      files: 0,
      read: 0,
      ambiguous: 0,
      emails: { right: 0, total: 0 },
      phones: { right: 0, total: 0 },
      wrong: 0,
      others: 0,
      losses: 0,
      lossesNamed: 0,
      failures: [],
    };
    for (let i = 0; i < FILES; i++) await score(generateExport(SEED, i, OPTIONS), f);
    const share = f.phones.right / f.phones.total;
    console.log(
      `seed ${SEED}: files ${f.read}/${f.files} read, ${f.ambiguous} refused as of an ambiguous encoding (the right one named); e-mails ${f.emails.right}/${f.emails.total}; knowable phones ${f.phones.right}/${f.phones.total} (${(100 * share).toFixed(2)}%); wrong digests ${f.wrong}; other people's values ${f.others}; losses > 5% named ${f.lossesNamed}/${f.losses}`,
    );
    if (SEED !== HELD_APART_SEED) for (const failure of f.failures) console.log(failure);
    expect(f.failures).toEqual([]);
    expect(f.read + f.ambiguous).toBe(f.files);
    expect(f.ambiguous, 'files refused as of an ambiguous encoding').toBe(0);
    expect(f.emails.right).toBe(f.emails.total);
    expect(share).toBeGreaterThanOrEqual(0.98);
    expect(f.wrong).toBe(0);
    expect(f.others).toBe(0);
    expect(f.lossesNamed).toBe(f.losses);
  });
});
