import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openCsv, readCsv, type CsvBadRow, type CsvRow } from '../src/ingest/csv.js';
import { CALLING_THREAD, runCli } from './helpers/cli.js';
import { encodeLegacy } from './helpers/legacy-encoding.js';

const tmp = mkdtempSync(join(tmpdir(), 'ak-preamble-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let files = 0;
function write(bytes: Buffer | string, name = `p${files++}.csv`): string {
  const path = join(tmp, name);
  writeFileSync(path, bytes);
  return path;
}

async function all(path: string): Promise<(CsvRow | CsvBadRow)[]> {
  const out: (CsvRow | CsvBadRow)[] = [];
  for await (const row of readCsv(path)) out.push(row);
  return out;
}

/** Notes exports put above their header; the one with an address is personal data. */
const PREAMBLES: readonly (readonly string[])[] = [
  ['Exported from Acme CRM on 2026-11-01'],
  ['Contacts', ''],
  ['Exported by jane.doe@example.com', 'Report: all contacts', '', ''],
  ['', ''],
  ['"Contacts, all of them"', 'Generated 2026-11-01 10:42 (UTC)', ''],
];

const HEADERS: Readonly<Record<string, readonly string[]>> = {
  'utf-8': ['E-mail', 'Nom', 'Téléphone'],
  'windows-1252': ['Email', 'Name', 'Telefon geschäftlich'],
  shift_jis: ['メールアドレス', '氏名', '電話番号'],
};
const NAMES: Readonly<Record<string, readonly string[]>> = {
  'utf-8': ['Hélène', 'Zoë', '山田'],
  'windows-1252': ['Jürgen Müller', 'Hélène Dupré', 'José Muñoz'],
  shift_jis: ['山田 太郎', '佐藤 花子', 'ヤマダ タロウ'],
};

function exportWith(preamble: readonly string[], encoding: string, delimiter: string, rows: number): Buffer {
  const lines = [...preamble, (HEADERS[encoding] as string[]).join(delimiter)];
  const names = NAMES[encoding] as string[];
  for (let i = 0; i < rows; i++)
    lines.push([`u${i}@example.com`, names[i % names.length], `+4915112345${i}`].join(delimiter));
  const text = `${lines.join('\r\n')}\r\n`;
  return encoding === 'utf-8' ? Buffer.from(text) : encodeLegacy(text, encoding);
}

describe('a preamble above the header', () => {
  it('is skipped, in every encoding and with ; , and tab, and rows keep their physical line numbers', async () => {
    for (const encoding of Object.keys(HEADERS)) {
      for (const delimiter of [';', ',', '\t']) {
        for (const preamble of PREAMBLES) {
          const path = write(exportWith(preamble, encoding, delimiter, 12));
          const input = await openCsv(path);
          await input.close();
          const headerLine = preamble.length + 1;
          expect([input.headerLine, input.delimiter, input.header]).toEqual([headerLine, delimiter, HEADERS[encoding]]);
          const rows = await all(path);
          expect(rows.map((r) => r.line)).toEqual(Array.from({ length: 12 }, (_, i) => headerLine + 1 + i));
          expect(
            rows.every((r) => r.error === undefined && r.fields[0] === `u${r.line - headerLine - 1}@example.com`),
          ).toBe(true);
        }
      }
    }
  });

  it('is skipped when a spreadsheet padded its notes with delimiters to the header width (Exported on …;;)', async () => {
    for (const delimiter of [';', ',', '\t']) {
      for (const preamble of PREAMBLES) {
        const padded = preamble.map((line) => `${line}${delimiter.repeat(2)}`);
        const path = write(exportWith(padded, 'windows-1252', delimiter, 12));
        const input = await openCsv(path);
        await input.close();
        expect([input.headerLine, input.delimiter, input.header]).toEqual([
          preamble.length + 1,
          delimiter,
          HEADERS['windows-1252'],
        ]);
      }
    }
  });

  it('is named by line numbers only; rejects and malformed rows keep the file lines (hash CLI)', async () => {
    const text = [
      'Exported by jane.doe@example.com on 2026-11-01',
      'Call +44 20 7946 0958 for help',
      '',
      'Email;Name;Phone',
      'a@example.com;Ann;+4915112345678',
      'not-an-email;Bob;+4915112345679',
      'short;row',
      'c@example.com;Cy;+4915112345670',
    ].join('\n');
    const path = write(`${text}\n`, 'notes.csv');
    const rejects = join(tmp, 'rejects.csv');
    const r = await runCli(['hash', path, ...CALLING_THREAD, '--rejects', rejects]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('header on line 4; lines 1-3 skipped as a preamble');
    expect(r.stderr).toContain('field_count 1; line 7');
    expect(readFileSync(rejects, 'utf8')).toBe(
      'line,column,type,reason\n6,Email,email,email_invalid\n7,,,malformed_field_count\n',
    );
    const json = await runCli(['hash', path, ...CALLING_THREAD, '--json', '-o', join(tmp, 'o.csv')]);
    expect(JSON.parse(json.stdout)).toMatchObject({ reading: { header_line: 4, preamble_lines: 3, delimiter: ';' } });
    for (const out of [r.stdout, r.stderr, json.stdout, json.stderr, readFileSync(rejects, 'utf8')]) {
      expect(out).not.toMatch(/jane|7946|Exported|Call/);
    }
  });

  it('is one line for a single note (line 1)', async () => {
    const r = await runCli(['hash', write('Contacts\nemail,name\na@example.com,Ann\n'), ...CALLING_THREAD]);
    expect(r.stderr).toContain('header on line 2; line 1 skipped as a preamble');
  });

  it('is not looked for when the first line is the header, even a misshapen one', async () => {
    // A header with a trailing delimiter: its rows are malformed, but the first data row is no header.
    const trailing = await openCsv(write('email,name,\na@example.com,Ann\nb@example.com,Bob\n'));
    await trailing.close();
    expect([trailing.headerLine, trailing.header]).toEqual([1, ['email', 'name', '']]);
    // A line above with several cells, one a column name: it may be the header.
    const named = await openCsv(write('Email;Report\nEmail;Name;Phone\na@example.com;Ann;1\nb@example.com;Bob;2\n'));
    await named.close();
    expect(named.headerLine).toBe(1);
    // Unknown names after a line of several cells: no evidence that line is not the header.
    const unknown = await openCsv(write('Report;2026-11-01\nFoo;Bar;Baz\n1;2;3\n4;5;6\n'));
    await unknown.close();
    expect(unknown.headerLine).toBe(1);
  });

  it('skips notes above a header of unknown names when the notes are single cells', async () => {
    const input = await openCsv(write('Liste\n\nFoo;Bar;Baz\nx@example.com;2;3\ny@example.com;5;6\n'));
    await input.close();
    expect([input.headerLine, input.header]).toEqual([3, ['Foo', 'Bar', 'Baz']]);
  });

  it('never takes a data row for the header: a headerless file under a title is refused without its values', async () => {
    const path = write('Contacts\na@example.com;Ann;+4915112345678\nb@example.com;Bob;+4915112345679\n');
    const input = await openCsv(path);
    await input.close();
    expect(input.headerLine).toBe(1);
    const r = await runCli(['hash', path, ...CALLING_THREAD]);
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(/a@example|Ann|12345678/);
  });
});
