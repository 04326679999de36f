// A header cell can itself be personal data (a contact typed into the header row, a column mapped
// with --map): no output, record or state file may hold it (docs/privacy.md#header-cells).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLING_THREAD, runCli, type CliResult } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

/** The header cells that look like data, by role; none may appear anywhere. */
const CELLS = {
  email: 'jane.doe@example.com',
  phone: '+49 151 48369370',
  consent: 'max.mustermann@example.org',
  country: '0049 30 9876543',
  ignored: 'erika@example.net',
};
/** Pieces of them a formatter might keep (a cell quoted, cut or split). */
const NEEDLES = [...Object.values(CELLS), 'jane.doe', '48369370', 'mustermann', '9876543', 'erika@'];

/** 40 rows: some emails joined by `;` or `,` (rejected, noted as several values), phones without a country. */
function exportCsv(): string {
  const header = ['Email', CELLS.email, CELLS.phone, CELLS.consent, CELLS.country, CELLS.ignored];
  const rows = [header.map((h) => (h.includes(',') ? `"${h}"` : h)).join(',')];
  for (let i = 0; i < 40; i++) {
    const alt =
      i % 5 === 0
        ? `a${i}@mail.test;b${i}@mail.test`
        : i === 7
          ? `"a${i}@mail.test,b${i}@mail.test"`
          : `alt${i}@mail.test`;
    const phone = i % 4 === 1 ? `030 ${2345600 + i}` : `+49 30 ${1234500 + i}`;
    const consent = i % 6 === 2 ? 'unsubscribed' : 'subscribed';
    const country = i % 8 === 1 ? '' : 'DE';
    rows.push([`user${i}@shop.test`, alt, phone, consent, country, `note ${i}`].join(','));
  }
  return `${rows.join('\n')}\n`;
}

const MAP = ['--map', 'email=Email', '--map', `email=${CELLS.email}`, '--map', `phone_number=${CELLS.phone}`];
const MAP_COUNTRY = ['--map', `country=${CELLS.country}`];

/** Every file under `dir`, as text (state directories: journals, snapshots, the audit log). */
function filesUnder(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const path = join(dir, name);
    if (statSync(path).isFile()) out[path] = readFileSync(path).toString('latin1') + readFileSync(path, 'utf8');
  }
  return out;
}

function leaks(texts: Record<string, string>): string[] {
  return Object.entries(texts).flatMap(([name, text]) =>
    NEEDLES.filter((n) => text.includes(n)).map((n) => `${name}: ${n.slice(0, 4)}…`),
  );
}

const outputs = (name: string, r: CliResult): Record<string, string> => ({
  [`${name} stdout`]: r.stdout,
  [`${name} stderr`]: r.stderr,
});

describe('header cells that look like data', { timeout: 60_000 }, () => {
  it('appear in no output, record or state file of hash, upload --sandbox and sync --sandbox', async () => {
    const dir = tempDir('ak-header-privacy-');
    const file = join(dir, 'export.csv');
    writeFileSync(file, exportCsv());
    const run = (args: string[]) =>
      runCli([...args, ...CALLING_THREAD], { cwd: dir, env: { AUDIENCE_KIT_CONFIG_DIR: dir } });
    const texts: Record<string, string> = {};

    const hash = await run([
      'hash',
      file,
      ...MAP,
      ...MAP_COUNTRY,
      '-o',
      join(dir, 'out.jsonl'),
      '--rejects',
      join(dir, 'rejects.csv'),
    ]);
    expect(hash.code, hash.stderr).toBe(0);
    Object.assign(texts, outputs('hash', hash));
    // The mapping and the hints name each such column by its number.
    expect(hash.stderr).toContain('email           <- "Email", <column 2, looks like data>');
    expect(hash.stderr).toContain('phone_number    <- <column 3, looks like data>');
    expect(hash.stderr).toContain('consent         <- <column 4, looks like data>');
    expect(hash.stderr).toContain('country         <- <column 5, looks like data>');
    expect(hash.stderr).toContain('cells of <column 2, looks like data>');
    expect(readFileSync(join(dir, 'rejects.csv'), 'utf8')).toContain(
      '"<column 2, looks like data>",email,email_invalid',
    );

    const json = await run(['hash', file, ...MAP, ...MAP_COUNTRY, '-o', join(dir, 'out2.jsonl'), '--json']);
    expect(json.code, json.stderr).toBe(0);
    Object.assign(texts, outputs('hash --json', json));
    const mapping = (JSON.parse(json.stdout) as { mapping: { country_column: string; ignored: string[] } }).mapping;
    expect(mapping.country_column).toBe('<column 5, looks like data>');
    expect(mapping.ignored).toEqual(['<column 6, looks like data>']);

    const upload = await run(['upload', file, '--sandbox', ...MAP, ...MAP_COUNTRY]);
    expect(upload.code, upload.stderr).toBe(0);
    Object.assign(texts, outputs('upload', upload));
    const uploadJson = await run(['upload', file, '--sandbox', ...MAP, ...MAP_COUNTRY, '--json']);
    expect(uploadJson.code, uploadJson.stderr).toBe(0);
    Object.assign(texts, outputs('upload --json', uploadJson));

    const state = join(dir, 'state');
    for (const format of [[], ['--json']]) {
      const sync = await run(['sync', file, '--sandbox', ...MAP, ...MAP_COUNTRY, '--state-dir', state, ...format]);
      expect(sync.code, sync.stderr).toBe(0);
      Object.assign(texts, outputs(`sync ${format.join('')}`, sync));
    }

    const audit = readFileSync(join(dir, '.audience-kit', 'audit.jsonl'), 'utf8');
    expect(audit).toContain('"country_column":"<column 5, looks like data>"');
    expect(audit).toContain('"email":["Email","<column 2, looks like data>"]');
    Object.assign(texts, filesUnder(join(dir, '.audience-kit')), filesUnder(state));
    expect(Object.keys(texts).some((name) => name.includes('journal') || name.includes('snapshot'))).toBe(true);
    texts.rejects = readFileSync(join(dir, 'rejects.csv'), 'utf8');
    expect(leaks(texts)).toEqual([]);
  });

  it('a --map naming no column lists the header with those cells as placeholders', async () => {
    const dir = tempDir('ak-header-privacy-');
    const file = join(dir, 'export.csv');
    writeFileSync(file, exportCsv());
    const r = await runCli(['hash', file, '--map', 'email=Mail', ...CALLING_THREAD], { cwd: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('"Email", <column 2, looks like data>, <column 3, looks like data>');
    expect(leaks(outputs('hash', r))).toEqual([]);
  });

  it('a --map or --country-column value that looks like data is not echoed when it names no column', async () => {
    const dir = tempDir('ak-header-privacy-');
    const file = join(dir, 'export.csv');
    writeFileSync(file, exportCsv());
    for (const given of [
      ['--map', 'email=jane.roe@example.org'],
      ['--map', 'phone_number=+49 30 5550199'],
      ['--map', 'jane.roe@example.org=Email'],
      ['--country-column', 'jane.roe@example.org'],
    ]) {
      const r = await runCli(['hash', file, ...given, ...CALLING_THREAD], { cwd: dir });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('<the value given, looks like data>');
      expect(r.stderr).not.toMatch(/jane\.roe|5550199/);
    }
  });

  it('country cells that look like data (a phone, an id: columns shifted) are counted in the hint, never shown', async () => {
    const dir = tempDir('ak-header-privacy-');
    const file = join(dir, 'export.csv');
    const countries = ['+44 7400 900 123', 'deadbeef-cafe-abcd-beef-abcdefabcdef', '0049 30 9876543', 'Middle Earth'];
    const rows = countries.map((c, i) => `+1 202 555 01${10 + i},${c}`);
    writeFileSync(file, `Phone,Country\n${rows.join('\n')}\n`);
    for (const format of [[], ['--json']]) {
      const out = ['--output', join(dir, 'hashed.csv')];
      const r = await runCli(['hash', file, ...out, ...format, ...CALLING_THREAD], { cwd: dir });
      expect(r.code, r.stderr).toBe(0);
      const text = r.stdout + r.stderr;
      expect(text).toContain('Middle Earth');
      expect(text).toContain('looks like data');
      expect(text).not.toMatch(/7400|deadbeef|9876543/);
    }
  });

  it('a flag value or an option name that looks like data is not echoed in the refusal', async () => {
    const dir = tempDir('ak-header-privacy-');
    const file = join(dir, 'export.csv');
    writeFileSync(file, exportCsv());
    const canary = 'jane.roe@example.org';
    for (const given of [
      ['--phone-format', canary],
      [`--${canary}`],
      ['--consent', canary],
      ['--delimiter', canary],
      ['--max-reject-rate', canary],
      ['--encoding', canary],
      ['--default-country', '+49 30 5550199'],
    ]) {
      const r = await runCli(['hash', file, ...given, ...CALLING_THREAD], { cwd: dir });
      expect(r.code, given.join(' ')).toBe(2);
      expect(r.stderr).toContain('<the value given, looks like data>');
      expect(r.stderr).not.toMatch(/jane\.roe|5550199/);
    }
  });
});
