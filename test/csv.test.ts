import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import Papa from 'papaparse';
import { describe, expect, it } from 'vitest';
import { ConfigError, InputError } from '../src/errors.js';
import { hashCsv } from '../src/hashing/pipeline.js';
import { openCsv, readCsv, type CsvBadRow, type CsvRow, type ReadCsvOptions } from '../src/ingest/csv.js';
import { scanRecords } from '../src/ingest/records.js';
import { resolveMapping } from '../src/identifiers/mapping.js';
import { describeMapping } from '../src/cli/hints.js';
import { parseCsvChunk, visitCsvChunk } from '../src/ingest/csv-text.js';
import { mulberry32 } from '../src/sandbox/faults.js';
import { FIXTURES } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

const tmp = tempDir('ak-csv-');
let n = 0;
function file(content: string | Buffer, name = `f${n++}.csv`): string {
  const path = join(tmp, name);
  writeFileSync(path, content);
  return path;
}

async function all(source: Parameters<typeof readCsv>[0], opts: ReadCsvOptions = {}): Promise<(CsvRow | CsvBadRow)[]> {
  const rows: (CsvRow | CsvBadRow)[] = [];
  for await (const r of readCsv(source, opts)) rows.push(r);
  return rows;
}

const simple = (rows: (CsvRow | CsvBadRow)[]): unknown[] =>
  rows.map((r) => (r.error === undefined ? [r.line, ...r.fields] : [r.line, r.error]));

const SMALL = [
  [2, 'jane.doe@example.com', '+1 202 555 0143', 'US'],
  [3, 'JOHN.ROE+news@Example.ORG', '020 7946 0321', 'GB'],
];

describe('readCsv: formats', () => {
  it.each(['semicolon.csv', 'tab.tsv', 'pipe.csv', 'crlf-bom.csv', 'utf16le.csv', 'utf16be.csv', 'small.csv.gz'])(
    'reads %s to the same rows and header',
    async (name) => {
      const input = await openCsv(join(FIXTURES, name));
      expect(input.header).toEqual(['email', 'phone', 'country']);
      const rows: unknown[] = [];
      for await (const r of input.rows()) rows.push(r);
      expect(simple(rows as CsvRow[])).toEqual(SMALL);
    },
  );

  it('reports the detected traits', async () => {
    const gz = await openCsv(join(FIXTURES, 'small.csv.gz'));
    expect([gz.compressed, gz.encoding, gz.delimiter]).toEqual([true, 'utf-8', ',']);
    await gz.close();
    const le = await openCsv(join(FIXTURES, 'utf16le.csv'));
    expect(le.encoding).toBe('utf-16le');
    await le.close();
    const tab = await openCsv(join(FIXTURES, 'tab.tsv'));
    expect(tab.delimiter).toBe('\t');
    await tab.close();
    const crlf = await openCsv(join(FIXTURES, 'crlf-bom.csv'));
    expect([crlf.newline, crlf.header[0]]).toEqual(['\r\n', 'email']);
    await crlf.close();
  });

  it('decompresses gzip by magic bytes whatever the file name', async () => {
    const path = file(gzipSync(Buffer.from('email\na@example.com\n')), 'noext.csv');
    expect(simple(await all(path))).toEqual([[2, 'a@example.com']]);
  });

  it('decodes UTF-16 LE without a BOM instead of reading NUL garbage', async () => {
    const path = file(Buffer.from('email,x\nb@example.com,1\n', 'utf16le'));
    expect(simple(await all(path))).toEqual([[2, 'b@example.com', '1']]);
  });

  it('honours an explicit delimiter over detection', async () => {
    const path = file('a;b,c\n1;2,3\n');
    expect(simple(await all(path))).toEqual([[2, '1;2', '3']]);
    expect(simple(await all(path, { delimiter: ';' }))).toEqual([[2, '1', '2,3']]);
  });

  it('reads a Readable, an async iterable of bytes and stdin (-)', async () => {
    const text = 'email\nx@example.com\ny@example.com\n';
    expect(simple(await all(Readable.from([Buffer.from(text)])))).toEqual([
      [2, 'x@example.com'],
      [3, 'y@example.com'],
    ]);
    async function* pieces(): AsyncGenerator<Uint8Array> {
      for (const ch of text) yield Buffer.from(ch);
    }
    expect(simple(await all(pieces()))).toEqual([
      [2, 'x@example.com'],
      [3, 'y@example.com'],
    ]);
    expect(simple(await all('-', { stdin: Readable.from([Buffer.from(text)]) }))).toHaveLength(2);
  });

  it('handles a last line without a newline and a UTF-8 BOM before a quoted header', async () => {
    const path = file('\ufeff"email","phone"\r\n"a@example.com","1"');
    const input = await openCsv(path);
    expect(input.header).toEqual(['email', 'phone']);
    const rows: unknown[] = [];
    for await (const r of input.rows()) rows.push(r);
    expect(simple(rows as CsvRow[])).toEqual([[2, 'a@example.com', '1']]);
  });
});

describe('readCsv: quoting and malformed rows', () => {
  it('keeps embedded delimiters, quotes and newlines, with the line where each record starts', async () => {
    const rows = await all(join(FIXTURES, 'quoted.csv'));
    expect(simple(rows)).toEqual([
      [2, 'a.quote@example.com', 'multi\nline, with comma', '+1 202 555 0111', 'US'],
      [4, 'b.quote@example.com', 'say "hi"', '+44 20 7946 0111', 'GB'],
      [5, 'c.quote@example.com', 'two\r\nlines\nthree', '+33 1 99 00 12 34', 'FR'],
      [8, 'd.quote@example.com', 'plain', '+49 30 12345678', 'DE'],
    ]);
  });

  it('skips malformed rows with their line and reason, and goes on', async () => {
    const rows = await all(join(FIXTURES, 'malformed.csv'));
    expect(simple(rows)).toEqual([
      [2, 'ok1@example.com', '+1 202 555 0101', 'US'],
      [3, 'field_count'],
      [4, 'ok2@example.com', '+1 202 555 0102', 'US'],
      [5, 'field_count'],
      [7, 'unterminated_quote'],
      [8, 'ok3@example.com', '+1 202 555 0104', 'US'],
      [9, 'unterminated_quote'], // "bad"quote... never closes (papaparse semantics)
      [10, 'ok4@example.com', '+1 202 555 0106', 'US'],
    ]);
  });

  it('gives up on a quote still open after maxRecordBytes and resumes on the next line', async () => {
    const body = ['a,b', '"open,1', ...Array.from({ length: 50 }, (_, i) => `v${i},${i}`)].join('\n');
    const rows = await all(file(`${body}\n`), { maxRecordBytes: 64, chunkBytes: 32 });
    expect(rows[0]).toEqual({ line: 2, error: 'unterminated_quote' });
    expect(simple(rows.slice(1, 3))).toEqual([
      [3, 'v0', '0'],
      [4, 'v1', '1'],
    ]);
    expect(rows).toHaveLength(51);
  });

  it('produces identical rows whatever the chunk size', async () => {
    const text =
      readFileSync(join(FIXTURES, 'quoted.csv'), 'utf8') +
      readFileSync(join(FIXTURES, 'malformed.csv'), 'utf8').replace(/^.*\n/, '');
    const path = file(text);
    const reference = simple(await all(path, { chunkBytes: 1 << 20 }));
    for (const chunkBytes of [1, 7, 33, 100]) expect(simple(await all(path, { chunkBytes }))).toEqual(reference);
  });

  it('reads mixed line endings (a CRLF header over LF rows, CRLF lines among LF ones) with the right lines', async () => {
    const crlfHeader = file('email,phone\r\na@example.com,1\nb@example.com,2\n\nc@example.com,3\n');
    expect(simple(await all(crlfHeader))).toEqual([
      [2, 'a@example.com', '1'],
      [3, 'b@example.com', '2'],
      [5, 'c@example.com', '3'],
    ]);
    // A CRLF inside a quoted field is data and stays CRLF; a blank CRLF line is a blank line.
    const mixed =
      'email,note\n"a@example.com","x\r\ny"\r\nb@example.com,"z"\r\n\r\nc@example.com,w\nd@example.com,"v"\n';
    const expected = [
      [2, 'a@example.com', 'x\r\ny'],
      [4, 'b@example.com', 'z'],
      [6, 'c@example.com', 'w'],
      [7, 'd@example.com', 'v'],
    ];
    for (const chunkBytes of [1, 16, 1 << 16]) expect(simple(await all(file(mixed), { chunkBytes }))).toEqual(expected);
    expect(simple(await all(file(mixed.replace('email,note\n', 'email,note\r\n'))))).toEqual(expected);
  });

  it('hashCsv reads mixed line endings like readCsv (the workers parse the chunks)', async () => {
    const path = file('email\r\na@example.com\nnot-an-email\nb@example.com\r\n');
    for (const workers of [0, 1]) {
      const run = await hashCsv(path, { workers });
      const users: unknown[] = [];
      for await (const chunk of run) for (const u of chunk.users) users.push([u.line, Object.keys(u.user)]);
      expect(users).toEqual([
        [2, ['email']],
        [3, []],
        [4, ['email']],
      ]);
      expect(run.summary.rejects.email_invalid).toEqual({ count: 1, lines: [3] });
    }
  });

  it('counts a line break at the edge of a header cell (Excel Alt+Enter) in every line number after it', async () => {
    for (const head of ['"Email\n",Name', '"\r\nEmail",Name', '"\nEmail\n",Name']) {
      const breaks = head.split('\n').length - 1;
      const path = file(`${head}\r\nbad-email,Ann\r\nb@example.com,Bo\r\n`);
      const rows = simple(await all(path));
      expect(rows.map((r) => (r as unknown[])[0])).toEqual([2 + breaks, 3 + breaks]);
      for (const workers of [0, 1]) {
        const run = await hashCsv(path, { workers });
        const lines: number[] = [];
        for await (const chunk of run) for (const u of chunk.users) lines.push(u.line);
        expect(lines).toEqual([2 + breaks, 3 + breaks]);
        expect(run.summary.rejects.email_invalid).toEqual({ count: 1, lines: [2 + breaks] });
      }
    }
  });

  it('a stray quote that a later quoted field closes costs its own row, not the rows up to that field', async () => {
    // papaparse reads lines 2-5 as one record (the quote of "Bobby" closes at "Smith, John").
    const text =
      'pid,name,email\nA1,"Bobby" Smith,a1@x.com\nA2,Ann,a2@x.com\nA3,Cy,a3@x.com\nA4,"Smith, John",a4@x.com\nA5,Eve,a5@x.com\n';
    const path = file(text);
    const expected = [
      [2, 'invalid_quotes'],
      [3, 'A2', 'Ann', 'a2@x.com'],
      [4, 'A3', 'Cy', 'a3@x.com'],
      [5, 'A4', 'Smith, John', 'a4@x.com'],
      [6, 'A5', 'Eve', 'a5@x.com'],
    ];
    for (const chunkBytes of [1, 16, 1 << 16]) expect(simple(await all(path, { chunkBytes }))).toEqual(expected);
    for (const workers of [0, 1]) {
      const run = await hashCsv(path, { workers, map: ['partner_user_id=pid'] });
      const lines: number[] = [];
      for await (const chunk of run) for (const u of chunk.users) lines.push(u.line);
      expect(lines).toEqual([3, 4, 5, 6]);
      expect(run.summary).toMatchObject({ rows: 5, users: 4, malformed: { count: 1, lines: [2] } });
    }
  });

  it('lines that each hold a stray quote: every line is a bad row of its own, none swallowed by the record before', () => {
    const range5000 = Array.from({ length: 5000 }, (_, i) => i);
    const parsed = parseCsvChunk('A1,"x" y,z\n'.repeat(5000), ',', 3);
    expect(parsed.rows.map((r) => [r.offset, r.error])).toEqual(range5000.map((i) => [i, 'invalid_quotes']));
  });

  it('the header repeated inside the file (exports joined) is a repeated_header bad row, never a user', async () => {
    const text =
      'Customer ID,Email,Notes\nc1,a@x.com,hi\nCustomer ID, Email ,Notes\nc2,b@x.com,"yo"\nCustomer ID,Email,other\n';
    const path = file(text);
    expect(simple(await all(path))).toEqual([
      [2, 'c1', 'a@x.com', 'hi'],
      [3, 'repeated_header'],
      [4, 'c2', 'b@x.com', 'yo'],
      [5, 'Customer ID', 'Email', 'other'],
    ]);
    for (const workers of [0, 1]) {
      const run = await hashCsv(path, { workers, map: ['partner_user_id=Customer ID'] });
      const users: unknown[] = [];
      for await (const chunk of run) for (const u of chunk.users) users.push([u.line, u.user.partner_user_id]);
      // Only the cells read decide (Notes is not): line 5 repeats them too.
      expect(users).toEqual([
        [2, ['c1']],
        [4, ['c2']],
      ]);
      expect(run.summary.malformed).toEqual({ count: 2, lines: [3, 5], reasons: { repeated_header: 2 } });
    }
  });

  it('scanRecords follows papaparse quote rules', () => {
    const scan = (s: string, final = false): ReturnType<typeof scanRecords> => scanRecords(Buffer.from(s), 0x2c, final);
    expect(scan('a,"x\ny",b\nc').boundary).toBe(10);
    expect(scan('a,"x\ny').openQuote).toBe(true);
    expect(scan('a,b"c\nd').boundary).toBe(6); // a quote inside an unquoted field is a literal
    expect(scan('a,"x""\ny",b\n').boundary).toBe(12); // "" is an escaped quote
    expect(scan('a,"x"y\nz\n').openQuote).toBe(true); // "x"y does not close the field (papaparse: InvalidQuotes)
    expect(scan('a,"x"', true).openQuote).toBe(false);
    // papaparse closes a quote followed by any whitespace String.prototype.trim removes, then the delimiter or LF.
    for (const ws of [' ', '\t', '\v', '\f', '\r', ' \r\t', '\u00a0', '\u3000', '\ufeff', '\u2009 ']) {
      const bytes = Buffer.byteLength(ws);
      expect(scan(`a,"x"${ws},b\nc`).boundary).toBe(8 + bytes);
      expect(scan(`a,"x"${ws}\nc`).boundary).toBe(6 + bytes);
    }
    expect(scan('a,"x"\ry\nz\n').openQuote).toBe(true); // "x"\ry does not close the field
    expect(scan('a,"x"\u00e9\nz\n').openQuote).toBe(true); // é (0xC3 0xA9) starts no space
    expect(scan('a,"x"\u2028y\nz\n').openQuote).toBe(true); // a space, then y: not closed
  });

  it('cuts random quoted text into chunks exactly where papaparse reads records (300 files, chunk sizes 1 to 7)', async () => {
    const random = mulberry32(340_003);
    const alphabet = ['"', '"', ',', '\n', '\r\n', ' ', '\t', '\u00a0', '\u3000', 'a', 'é', '\u2028'];
    for (let f = 0; f < 300; f++) {
      let text = 'a,b\n';
      for (let n = 10 + Math.floor(random() * 60); n > 0; n--) text += alphabet[Math.floor(random() * alphabet.length)];
      const path = file(`${text}\n`);
      // The rows, or the refusal (a random first line may be no header): the same at every chunk size.
      const read = (chunkBytes: number) =>
        all(path, { chunkBytes }).then(simple, (e: unknown) => (e as { code?: string }).code);
      const whole = await read(1 << 16);
      for (const chunkBytes of [1, 2, 3, 7]) expect(await read(chunkBytes), JSON.stringify(text)).toEqual(whole);
    }
  });

  it('a closing quote followed by a tab or a CR before the delimiter reads as papaparse reads it, at every chunk size', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => `A${i},Name${i},a${i}@x.com`);
    const text = [
      'pid,name,email',
      'A,"Ann"\t,a@x.com',
      'B,"Bo"\r,b@x.com',
      ...rows,
      'C,"\nmulti",c@x.com',
      'D,Di,bad',
    ].join('\n');
    const path = file(`${text}\n`);
    const reference = Papa.parse<string[]>(text, { delimiter: ',', newline: '\n' }).data.slice(1);
    const expected = simple(await all(path, { chunkBytes: 1 << 16 }));
    expect(expected.map((r) => (r as unknown[]).slice(1))).toEqual(
      reference.map((f) => f.map((c) => (c.endsWith('\r') ? c.slice(0, -1) : c))),
    );
    expect(expected.at(-1)).toEqual([46, 'D', 'Di', 'bad']);
    for (const chunkBytes of [1, 7, 33, 100]) expect(simple(await all(path, { chunkBytes }))).toEqual(expected);
  });
});

describe('readCsv: unreadable input', () => {
  const expectInputError = async (p: Promise<unknown>, code: string): Promise<void> => {
    const error = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).code).toBe(code);
    expect((error as InputError).fix).toBeTruthy();
  };

  it('refuses a missing file, an empty file, a directory, a binary file and a fake .gz', async () => {
    await expectInputError(openCsv(join(tmp, 'missing.csv')), 'input_not_found');
    await expectInputError(openCsv(join(FIXTURES, 'empty.csv')), 'input_no_header');
    await expectInputError(openCsv(file('\nemail\n')), 'input_no_header');
    await expectInputError(openCsv(tmp), 'input_is_directory');
    await expectInputError(openCsv(file(Buffer.from([0x50, 0x4b, 0x03, 0x04, 1, 2]))), 'input_not_csv');
    await expectInputError(
      openCsv(file(Buffer.from([0x41, 0, 0, 0, 0x42, 0x43, 0, 0x44, 0, 0, 0x45]))),
      'input_binary',
    );
    await expectInputError(openCsv(file('email\n', 'plain.csv.gz')), 'input_not_gzip');
    await expectInputError(openCsv(file('email\ra@example.com\r')), 'input_cr_line_endings');
  });

  it('reads Latin-1 text as Windows-1252 when the other reading breaks a spelling rule (Zoë, not Zoė)', async () => {
    const input = await openCsv(join(FIXTURES, 'latin1.csv'));
    await input.close();
    expect([input.encoding, input.encodingSource]).toEqual(['windows-1252', 'detected']);
    const gzipped = await openCsv(file(gzipSync(readFileSync(join(FIXTURES, 'latin1.csv')))));
    await gzipped.close();
    expect(gzipped.encoding).toBe('windows-1252');
    await expectInputError(openCsv(join(FIXTURES, 'latin1.csv'), { encoding: 'utf-8' }), 'input_not_utf8');
  });

  it('accepts UTF-8 whose sample ends inside a character', async () => {
    const head = Buffer.from(`email,name\n${'x@example.com,a\n'.repeat(5000)}x@example.com,Ren`);
    const rest = Buffer.from('\u00e9\n', 'utf8');
    const source = Readable.from([Buffer.concat([head, rest.subarray(0, 1)]), rest.subarray(1)]);
    const rows = await all(source);
    expect(rows).toHaveLength(5001);
    expect(simple(rows.slice(-1))).toEqual([[5002, 'x@example.com', 'Ren\u00e9']]);
  });

  it('fails reading a truncated gzip with an InputError', async () => {
    const gz = gzipSync(Buffer.from(`email\n${'a@example.com\n'.repeat(5000)}`));
    await expectInputError(all(file(gz.subarray(0, gz.length - 20), 'cut.csv.gz')), 'input_gzip_corrupt');
  });

  it('accepts a header-only file with no rows', async () => {
    const input = await openCsv(join(FIXTURES, 'header-only.csv'));
    expect(input.header).toEqual(['email', 'phone', 'country']);
    const rows: unknown[] = [];
    for await (const r of input.rows()) rows.push(r);
    expect(rows).toEqual([]);
  });
});

describe('resolveMapping', () => {
  const header = ['Customer ID', 'E-Mail', 'work_email', 'Mobile Phone', 'Country Code', 'IDFA', 'Name'];

  it('detects columns by common names, case/space/underscore/hyphen-insensitively', () => {
    const m = resolveMapping(header);
    expect(m.columns.map((c) => [c.column, c.type])).toEqual([
      ['E-Mail', 'email'],
      ['work_email', 'email'],
      ['Mobile Phone', 'phone_number'],
      ['IDFA', 'device_id'],
    ]);
    expect(m.country).toEqual({ index: 4, column: 'Country Code', label: 'Country Code' });
    // A generic id is never sent without a map entry: listed as ignored, with the reason.
    expect(m.ignored).toEqual(['Customer ID', 'Name']);
    expect(m.notUsed?.map((c) => c.column)).toEqual(['Customer ID']);
    expect(m.auto).toBe(true);
    expect(describeMapping(m)).toContain('email           <- "E-Mail", "work_email"');
  });

  it("maps the platform's own names for its user id (twitter_id, x_id, x_user_id, any case) to service_id", () => {
    const m = resolveMapping(['Twitter_ID', 'X ID', 'X_USER_ID', 'x-id-note']);
    expect(m.columns.map((c) => [c.column, c.type])).toEqual([
      ['Twitter_ID', 'service_id'],
      ['X ID', 'service_id'],
      ['X_USER_ID', 'service_id'],
    ]);
    expect(m.ignored).toEqual(['x-id-note']);
  });

  it('--map overrides detection for the types it names; several columns may feed one type', () => {
    const m = resolveMapping(header, { map: ['email=Name', 'email=work_email', 'country=country code'] });
    expect(m.columns.map((c) => [c.column, c.type, c.mapped === true])).toEqual([
      ['work_email', 'email', true],
      ['Mobile Phone', 'phone_number', false],
      ['IDFA', 'device_id', false],
      ['Name', 'email', true],
    ]);
    expect(describeMapping(m)).toContain('email           <- "work_email" (--map), "Name" (--map)');
    expect(describeMapping(m)).toContain('detected by column name, with --map');
    // A column --map takes is not detected for another type.
    const moved = resolveMapping(header, { map: ['email=Mobile Phone'] });
    expect(moved.columns.filter((c) => c.type === 'phone_number')).toEqual([]);
    const only = resolveMapping(header, { map: ['email=Name', 'email=work_email'], onlyMapped: true });
    expect(only.columns.map((c) => c.column)).toEqual(['work_email', 'Name']);
    expect(only.country).toBeUndefined();
    expect(only.auto).toBe(false);
    expect(describeMapping(only)).toContain('column mapping (from --map)');
    expect(() => resolveMapping(header, { onlyMapped: true })).toThrow(
      expect.objectContaining({ code: 'mapping_invalid' }),
    );
    expect(m.country?.column).toBe('Country Code');
    expect(resolveMapping(header, { countryColumn: 'Name' }).country).toEqual({
      index: 6,
      column: 'Name',
      label: 'Name',
      mapped: true,
    });
  });

  it('maps only the types a target takes (do-not-reach lists): others are ignored, or refused when named', () => {
    const m = resolveMapping(header, { types: ['email', 'phone_number'] });
    expect(m.columns.map((c) => c.type)).toEqual(['email', 'email', 'phone_number']);
    expect(m.ignored).toEqual(['Customer ID', 'IDFA', 'Name']);
    expect(() =>
      resolveMapping(header, {
        types: ['email', 'phone_number'],
        map: ['email=E-Mail', 'partner_user_id=Customer ID'],
      }),
    ).toThrow(expect.objectContaining({ code: 'mapping_type_not_taken' }));
  });

  it('--map still detects the country column by name unless one is named', () => {
    const m = resolveMapping(header, { map: ['phone_number=Mobile Phone'] });
    expect(m.country).toEqual({ index: 4, column: 'Country Code', label: 'Country Code' });
    expect(m.ignored).toEqual(['Customer ID', 'Name']);
    expect(describeMapping(m)).toContain('country         <- "Country Code"');
    expect(resolveMapping(header, { map: ['phone_number=Mobile Phone', 'country=Name'] }).country).toEqual({
      index: 6,
      column: 'Name',
      label: 'Name',
      mapped: true,
    });
    expect(resolveMapping(header, { map: ['phone_number=Mobile Phone'], countryColumn: 'Name' }).country).toEqual({
      index: 6,
      column: 'Name',
      label: 'Name',
      mapped: true,
    });
    expect(resolveMapping(['Mobile', 'Land'], { map: ['phone_number=Mobile'] }).country).toBeUndefined();
  });

  it('names the available columns for an unknown column, and the types for an unknown type', () => {
    expect(() => resolveMapping(header, { map: ['email=Emial'] })).toThrow(ConfigError);
    try {
      resolveMapping(header, { map: ['email=Emial'] });
    } catch (e) {
      expect((e as ConfigError).code).toBe('mapping_unknown_column');
      expect((e as ConfigError).fix).toContain('"work_email"');
    }
    try {
      resolveMapping(header, { map: ['mail=Name'] });
    } catch (e) {
      expect((e as ConfigError).code).toBe('mapping_unknown_type');
      expect((e as ConfigError).fix).toContain('phone_number');
    }
    expect(() => resolveMapping(header, { map: ['email'] })).toThrow(/type=Column/);
    expect(() => resolveMapping(header, { countryColumn: 'Land' })).toThrow(/countryColumn: no column "Land"/);
  });

  it('refuses a partner_user_id column (sent unhashed) with an e-mail address among its first values, unless partnerIdsMayBeEmails', async () => {
    const sample = [
      ['P0001', 'a@example.com'],
      ['jane@example.com', 'b@example.com'],
      ['crm@42', 'c@example.com'],
    ];
    const h = ['partner_id', 'Email'];
    const refused = (): unknown => resolveMapping(h, { map: ['partner_user_id=partner_id'] }, sample);
    expect(refused).toThrow(
      expect.objectContaining({
        code: 'mapping_partner_ids_emails',
        message:
          'the column "partner_id" is read as partner_user_id, which is sent unhashed, and 1 of its first 3 values are e-mail addresses',
      }),
    );
    expect(refused).toThrow(
      expect.objectContaining({ fix: expect.stringContaining('map entry email="partner_id"') as unknown }),
    );
    const allowed = resolveMapping(h, { map: ['partner_user_id=partner_id'], partnerIdsMayBeEmails: true }, sample);
    expect(allowed.columns.map((c) => c.type)).toEqual(['partner_user_id', 'email']);
    // Ids with an @ that are no address pass.
    expect(
      resolveMapping(h, { map: ['partner_user_id=partner_id'] }, [['crm@42', 'a@example.com']]).columns,
    ).toHaveLength(2);
    // The same refusal from the pipeline, before a row is hashed.
    const dir = tempDir('ak-partner-');
    const file = join(dir, 'p.csv');
    writeFileSync(file, `partner_id,Email\n${sample.map((r) => r.join(',')).join('\n')}\n`);
    const run = async (opts: object): Promise<number> => {
      let users = 0;
      const hashed = await hashCsv(file, { workers: 0, map: ['partner_user_id=partner_id'], ...opts });
      for await (const chunk of hashed) users += chunk.users.length;
      return users;
    };
    await expect(run({})).rejects.toMatchObject({ code: 'mapping_partner_ids_emails' });
    expect(await run({ partnerIdsMayBeEmails: true })).toBe(3);
  });

  it('refuses a header without any identifier column', () => {
    expect(() => resolveMapping(['first_name', 'last_name'])).toThrow(
      expect.objectContaining({ code: 'mapping_no_identifier_column' }),
    );
  });

  describe('a first row that is data (no header row)', () => {
    const data = ['jane.doe@example.com', '+1 202 555 0143', 'US', '2f5f5391-3e45-4d02-b645-4575a08f86e1', 'C1001'];
    const thrown = (fn: () => unknown): unknown => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      return undefined;
    };

    it('says a header row is required, with or without --map, and never echoes a cell', () => {
      for (const opts of [{}, { map: ['email=Email'] }, { countryColumn: 'Country' }]) {
        const error = thrown(() => resolveMapping(data, opts));
        expect(error).toBeInstanceOf(InputError);
        expect(error).toMatchObject({
          code: 'input_no_header',
          message: 'the first row looks like data; a header row is required',
        });
        const text = JSON.stringify({ message: (error as InputError).message, fix: (error as InputError).fix });
        for (const cell of data.slice(0, 4)) expect(text).not.toContain(cell);
      }
    });

    it('replaces data-looking cells of a real header with placeholders in messages and the mapping', () => {
      const header = ['email', 'jane.doe@example.com', 'Notes', '12025550143', 'a'.repeat(64)];
      const error = thrown(() => resolveMapping(header, { map: ['email=Emial'] })) as ConfigError;
      expect(error.code).toBe('mapping_unknown_column');
      expect(error.fix).toBe(
        'use one of the columns: "email", <column 2, looks like data>, "Notes", <column 4, looks like data>, <column 5, looks like data>',
      );
      // Without any known column name the row may be data: no cell is shown at all.
      const noIds = thrown(() => resolveMapping(['jdoe_1984', 'Jane Doe', 'CUST-4412'])) as ConfigError;
      expect(noIds.code).toBe('mapping_no_identifier_column');
      expect(noIds.message).toBe(
        'none of the 3 header columns has a known identifier name or values that are clearly emails or phone numbers',
      );
      for (const cell of ['jdoe_1984', 'Jane Doe', 'CUST-4412'])
        expect(`${noIds.message} ${noIds.fix ?? ''}`).not.toContain(cell);
      const described = describeMapping(resolveMapping(header));
      expect(described).toContain('(ignored: "Notes", 3 columns that look like data)');
      expect(describeMapping(resolveMapping(header, { map: ['email=jane.doe@example.com'] }))).toContain(
        'email           <- <column 2, looks like data>',
      );
      for (const cell of header.slice(1)) {
        if (cell !== 'Notes') expect(described).not.toContain(cell);
      }
    });
  });
});

describe('parseCsvChunk: chunks without a quote', () => {
  /** The records papaparse makes of a chunk, with the rules visitCsvChunk applies to them (its path for quoted chunks). */
  function throughPapaparse(text: string, delimiter: ',' | ';', columns: number): unknown[] {
    const data = Papa.parse<string[]>(text, { delimiter, newline: '\n', quoteChar: '"', header: false }).data;
    if (data.length > 0 && text.endsWith('\n') && data.at(-1)?.length === 1 && data.at(-1)?.[0] === '') data.pop();
    const rows: unknown[] = [];
    data.forEach((fields, offset) => {
      const last = fields.length - 1;
      if ((fields[last] as string).endsWith('\r')) fields[last] = (fields[last] as string).slice(0, -1);
      if (fields.length === 1 && fields[0] === '' && columns !== 1) return;
      const damaged = fields.some((f) => f.includes('\ufffd'));
      rows.push({
        offset,
        fields,
        ...(damaged ? { error: 'invalid_utf8' } : fields.length === columns ? {} : { error: 'field_count' }),
      });
    });
    return [rows, data.length];
  }

  it('reads every record as papaparse does (1,000 random chunks of delimiters, CR, LF, BOM and U+FFFD)', () => {
    const random = mulberry32(340_001);
    const alphabet = ['a', 'b', ' ', ',', ';', '\n', '\n', '\r', '\r\n', '\ufeff', '\ufffd', 'é'];
    for (let i = 0; i < 1000; i++) {
      let text = '';
      for (let n = Math.floor(random() * 40); n > 0; n--) text += alphabet[Math.floor(random() * alphabet.length)];
      const delimiter = random() < 0.5 ? ',' : ';';
      const columns = 1 + Math.floor(random() * 3);
      const ours = parseCsvChunk(text, delimiter, columns, true);
      expect([ours.rows, ours.lines], JSON.stringify(text)).toEqual(throughPapaparse(text, delimiter, columns));
    }
  });

  /** visitCsvChunk's records as parseCsvChunk's rows. */
  function visited(text: string, delimiter: ',' | ';', columns: number, damaged: boolean, read?: boolean[]) {
    const rows: unknown[] = [];
    const lines = visitCsvChunk(
      text,
      delimiter,
      columns,
      {
        row: (fields, offset) => rows.push({ offset, fields }),
        bad: (offset, error, fields) => rows.push({ offset, fields, error }),
      },
      damaged,
      read,
    );
    return [rows, lines];
  }

  it('with the fields to read, cuts only those: the same records, errors and lines, the others empty (1,000 random chunks)', () => {
    const random = mulberry32(340_002);
    const alphabet = ['a', 'b', ' ', ',', ';', '\n', '\n', '\r', '\r\n', '\ufeff', 'é'];
    for (let i = 0; i < 1000; i++) {
      let text = '';
      for (let n = Math.floor(random() * 40); n > 0; n--) text += alphabet[Math.floor(random() * alphabet.length)];
      const delimiter = random() < 0.5 ? ',' : ';';
      const columns = 1 + Math.floor(random() * 4);
      const read = Array.from({ length: columns }, () => random() < 0.5);
      const [rows, lines] = visited(text, delimiter, columns, false);
      // A field left out is '', except the one field of a line without a delimiter (it may be a one-field record).
      const expected = (rows as { fields: string[] }[]).map((r) => ({
        ...r,
        fields: r.fields.length === 1 ? r.fields : r.fields.map((f, k) => (read[k] === true ? f : '')),
      }));
      expect(visited(text, delimiter, columns, false, read), JSON.stringify(text)).toEqual([expected, lines]);
    }
  });

  it('with the fields to read, still finds a one-field record and U+FFFD in a field it does not read', () => {
    const read = [false, true, false];
    // `stray` alone on its line is a record of one field (field_count), not a blank line.
    expect(visited('a,b,c\nstray\n\nd,e,f\n', ',', 3, false, read)).toEqual([
      [
        { offset: 0, fields: ['', 'b', ''] },
        { offset: 1, fields: ['stray'], error: 'field_count' },
        { offset: 3, fields: ['', 'e', ''] },
      ],
      4,
    ]);
    // A damaged chunk is cut whole: the record whose unread field holds U+FFFD is rejected.
    expect(visited('a,b,c\n\ufffd,e,f\n', ',', 3, true, read)).toEqual([
      [
        { offset: 0, fields: ['a', 'b', 'c'] },
        { offset: 1, fields: ['\ufffd', 'e', 'f'], error: 'invalid_utf8' },
      ],
      2,
    ]);
  });
});
