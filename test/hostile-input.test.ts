/**
 * Hostile input: huge records, cells and headers, quotes that never close, bytes that are not
 * UTF-8 far into the file. Big inputs are generated on the fly as streams (nothing large on
 * disk) and every case is bounded in time: the reader is linear and its memory bounded.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/cli/exit-codes.js';
import { startSandbox } from '../src/sandbox/index.js';
import { CALLING_THREAD, runCli } from './helpers/cli.js';
import { hashCsv, type HashCsvOptions } from '../src/hashing/pipeline.js';
import { InputError } from '../src/errors.js';
import { MAX_HEADER_COLUMNS, openCsv, readCsv, type CsvBadRow, type CsvRow } from '../src/ingest/csv.js';
import { MAX_RECORD_BYTES } from '../src/ingest/records.js';
import { MAX_VALUE_LENGTH, MAX_VALUES_PER_RECORD } from '../src/identifiers/types.js';
import type { HashSummary } from '../src/hashing/summary.js';

const tmp = mkdtempSync(join(tmpdir(), 'ak-hostile-in-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A stream of `prefix`, then `size` bytes of `fill` (in 1 MiB pieces), then `suffix`. */
function generated(prefix: string, size: number, suffix: string, fill = 'x'): Readable {
  const piece = Buffer.alloc(1024 * 1024, fill);
  async function* gen(): AsyncGenerator<Buffer> {
    yield Buffer.from(prefix);
    for (let left = size; left > 0; left -= piece.length) yield left >= piece.length ? piece : piece.subarray(0, left);
    yield Buffer.from(suffix);
  }
  return Readable.from(gen(), { objectMode: false });
}

async function rows(source: Parameters<typeof readCsv>[0]): Promise<(CsvRow | CsvBadRow)[]> {
  const out: (CsvRow | CsvBadRow)[] = [];
  for await (const r of readCsv(source)) out.push(r);
  return out;
}

const simple = (list: (CsvRow | CsvBadRow)[]): unknown[] =>
  list.map((r) => (r.error === undefined ? [r.line, ...r.fields] : [r.line, r.error]));

/** CPU milliseconds of this process since `from`: a bound on it holds on a loaded machine too, unlike one on the wall clock. */
function cpuMsSince(from: NodeJS.CpuUsage): number {
  const spent = process.cpuUsage(from);
  return (spent.user + spent.system) / 1000;
}

async function summarize(source: Parameters<typeof hashCsv>[0], opts: HashCsvOptions = {}): Promise<HashSummary> {
  const run = await hashCsv(source, { defaultCountry: 'US', ...opts });
  for await (const chunk of run) void chunk;
  return run.summary;
}

describe('long records, cells and headers', () => {
  it('reads a 64 MiB unbroken cell as one counted bad row, in linear time, and goes on', async () => {
    const started = process.cpuUsage();
    const got = await rows(
      generated('email,phone\na@example.com,1\nb@example.com,', 64 * 1024 * 1024, '\nc@example.com,3\n'),
    );
    expect(simple(got)).toEqual([
      [2, 'a@example.com', '1'],
      [3, 'record_too_long'],
      [4, 'c@example.com', '3'],
    ]);
    expect(cpuMsSince(started)).toBeLessThan(20_000);
  });

  it('skips an over-long record with quoted line breaks and keeps the line numbers', async () => {
    // A quoted cell of 2 MiB holding 3 line breaks: the record spans lines 3-6.
    const half = MAX_RECORD_BYTES;
    const got = await rows(
      generated('email,note\na@example.com,x\nb@example.com,"', half, `\n\n\n${'y'.repeat(half)}"\nc@example.com,z\n`),
    );
    expect(simple(got)).toEqual([
      [2, 'a@example.com', 'x'],
      [3, 'record_too_long'],
      [7, 'c@example.com', 'z'],
    ]);
  });

  it('an over-long cell is a bad row in hashCsv too (workers and calling thread), never a crash', async () => {
    for (const workers of [0, 1]) {
      const summary = await summarize(
        generated('email\na@example.com\n', 16 * 1024 * 1024, '@example.com\nb@example.com\n'),
        {
          workers,
        },
      );
      expect(summary.users).toBe(2);
      expect(summary.malformed).toEqual({ count: 1, lines: [3], reasons: { record_too_long: 1 } });
    }
  });

  it('reads a one-line gzip stream of 64 MiB without holding it', async () => {
    const gz = generated('email\n', 64 * 1024 * 1024, '\nz@example.com\n').pipe(createGzip({ level: 1 }));
    expect(simple(await rows(gz))).toEqual([
      [2, 'record_too_long'],
      [3, 'z@example.com'],
    ]);
  });

  it('stays linear on quotes that never balance (re-scanning is capped)', async () => {
    // Every line opens a quote that the next line's quote "closes" into more quoted text.
    const started = process.cpuUsage();
    const body = '"a\n'.repeat(3 * 1024 * 1024);
    const got = await rows(Readable.from([Buffer.from(`email\n${body}`)]));
    expect(got.length).toBeGreaterThan(0);
    expect(got.every((r) => r.error !== undefined)).toBe(true);
    expect(cpuMsSince(started)).toBeLessThan(20_000);
  });

  it(`refuses a header longer than ${MAX_RECORD_BYTES} bytes or wider than ${MAX_HEADER_COLUMNS} columns`, async () => {
    const long = generated('email,', 4 * MAX_RECORD_BYTES, '\na,b\n');
    await expect(openCsv(long)).rejects.toMatchObject({ code: 'input_header_too_large' });
    // The reported attack: a header of 1M columns (2 MB), refused without splitting it.
    const million = Readable.from([Buffer.from(`email${',c'.repeat(1_000_000)}\na@example.com\n`)]);
    await expect(openCsv(million)).rejects.toMatchObject({ code: 'input_header_too_large' });
    const wide = `${Array.from({ length: MAX_HEADER_COLUMNS + 1 }, (_, i) => `c${i}`).join(',')}\n`;
    const err = await openCsv(Readable.from([Buffer.from(wide)])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect(err).toMatchObject({ code: 'input_header_too_large' });
    expect((err as Error).message).toContain(`${MAX_HEADER_COLUMNS + 1} columns`);
  });

  it(`rejects a value longer than ${MAX_VALUE_LENGTH} characters as value_too_long, with its line`, async () => {
    const long = `${'a'.repeat(MAX_VALUE_LENGTH)}@example.com`;
    const path = join(tmp, 'long-value.csv');
    writeFileSync(path, `email,phone\nok@example.com,\n${long},+1 202 555 0100\n  ${'b'.repeat(500)}@x.io  ,\n`);
    const summary = await summarize(path, { workers: 0 });
    expect(summary.rejects.value_too_long).toEqual({ count: 1, lines: [3] });
    expect(summary.users).toBe(3);
    expect(summary.types.email).toMatchObject({ valid: 2, invalid: 1 });
  });
});

describe('a cell that splits into more values than a person has', () => {
  it(`a record of more than ${MAX_VALUES_PER_RECORD} values is one too_many_values reject, in a worker too`, async () => {
    const many = Array.from({ length: MAX_VALUES_PER_RECORD }, (_, i) => `v${i}@example.com`).join(';');
    const path = join(tmp, 'many-values.csv');
    // 400,000 parts in an 800 KB cell (under the record bound): this exhausted a worker's heap.
    writeFileSync(
      path,
      `email\na@example.com\n${';a'.repeat(400_000)}\n${many}\n${many};x@example.com\nb@example.com\n`,
    );
    for (const workers of [0, 1]) {
      const summary = await summarize(path, { workers, valueSeparator: ';' });
      expect(summary.rejects).toEqual({ too_many_values: { count: 2, lines: [3, 5] } });
      expect(summary.users).toBe(3);
      expect(summary.types.email).toMatchObject({ valid: 2 + MAX_VALUES_PER_RECORD, invalid: 2 });
    }
  });
});

describe('bytes that are not UTF-8', () => {
  it('rejects records whose bytes are not UTF-8 anywhere in the file, with their lines', async () => {
    const filler = Array.from({ length: 20_000 }, (_, i) => `user${i}@example.com,1`).join('\n');
    const latin1 = Buffer.from('caf\xe9@example.com,2\n', 'latin1');
    const path = join(tmp, 'late-latin1.csv');
    writeFileSync(
      path,
      Buffer.concat([Buffer.from(`email,n\n${filler}\n`), latin1, Buffer.from('ok@example.com,3\n')]),
    );
    const got = await rows(path);
    expect(got.at(-2)).toEqual({ line: 20_002, error: 'invalid_utf8' });
    expect(got.at(-1)).toMatchObject({ line: 20_003, fields: ['ok@example.com', '3'] });
    for (const workers of [0, 1]) {
      const summary = await summarize(path, { workers });
      expect(summary.malformed).toEqual({ count: 1, lines: [20_002], reasons: { invalid_utf8: 1 } });
      expect(summary.users).toBe(20_001);
    }
  });

  it('rejects records of a UTF-16 file holding an unpaired surrogate, keeps pairs split across reads', async () => {
    const text = `email,n\n${'u@example.com,1\n'.repeat(5000)}a\ud83d\ude00@example.com,2\nb\ud800x@example.com,3\nc\udc00@example.com,4\nd@example.com,\ud83d`;
    for (const encoding of ['utf-16le', 'utf-16be'] as const) {
      const le = Buffer.alloc(text.length * 2);
      for (let i = 0; i < text.length; i++) le.writeUInt16LE(text.charCodeAt(i), i * 2);
      const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), le]);
      if (encoding === 'utf-16be') bytes.swap16();
      // Reads of 7 bytes: code units and surrogate pairs split between reads everywhere.
      const pieces = Array.from({ length: Math.ceil(bytes.length / 7) }, (_, i) => bytes.subarray(i * 7, i * 7 + 7));
      const got = await rows(Readable.from(pieces));
      expect(got.slice(-4)).toEqual([
        { line: 5002, header: ['email', 'n'], fields: ['a\ud83d\ude00@example.com', '2'] },
        { line: 5003, error: 'invalid_utf8' },
        { line: 5004, error: 'invalid_utf8' },
        { line: 5005, error: 'invalid_utf8' },
      ]);
    }
  });

  it('keeps a genuine U+FFFD in valid UTF-8 (decoding did not change it)', async () => {
    const path = join(tmp, 'fffd.csv');
    writeFileSync(path, `email,note\n${'a@example.com,x\n'.repeat(5000)}b@example.com,\ufffd\n`);
    const got = await rows(path);
    expect(got.at(-1)).toMatchObject({ fields: ['b@example.com', '\ufffd'] });
  });

  it('reads a Latin-1 export whose first 64 KiB are not UTF-8 as Windows-1252, unless told it is UTF-8', async () => {
    const path = join(tmp, 'latin1.csv');
    writeFileSync(path, Buffer.from('email\ncaf\xe9@example.com\n', 'latin1'));
    const input = await openCsv(path);
    await input.close();
    expect(input).toMatchObject({
      encoding: 'windows-1252',
      encodingSource: 'detected',
      sample: [['caf\u00e9@example.com']],
    });
    await expect(openCsv(path, { encoding: 'utf-8' })).rejects.toMatchObject({ code: 'input_not_utf8' });
  });
});

describe('an over-long record in an upload', () => {
  it('is a counted bad row on the first run and on --resume alike: the upload completes', async () => {
    const sandbox = await startSandbox({ seed: 21, faults: 'mismatch@2' });
    try {
      const env = {
        AUDIENCE_KIT_CONFIG_DIR: tmp,
        AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
        AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
        AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
        AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
        AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
      };
      const cwd = mkdtempSync(join(tmp, 'upload-'));
      const rowsBefore = Array.from({ length: 600 }, (_, i) => `user${i}@example.com`).join('\n');
      const rowsAfter = Array.from({ length: 600 }, (_, i) => `later${i}@example.com`).join('\n');
      writeFileSync(
        join(cwd, 'crm.csv'),
        `email\n${rowsBefore}\n${'x'.repeat(2 * MAX_RECORD_BYTES)}@example.com\n${rowsAfter}\n`,
      );
      const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'long').id;
      const args = ['upload', 'crm.csv', '--account', sandbox.accounts.primary, '--audience', audienceId];
      const opts = [
        '--max-body-bytes',
        '20000',
        '--max-retries',
        '0',
        '--concurrency',
        '1',
        '--json',
        ...CALLING_THREAD,
      ];
      const first = await runCli([...args, ...opts], { cwd, env });
      expect(first.code).toBe(EXIT_CODES.partial);
      expect(JSON.parse(first.stdout)).toMatchObject({ malformed_rows: 1, rows: 1201 });
      const resumed = await runCli([...args, ...opts, '--resume'], { cwd, env });
      expect(resumed.code).toBe(EXIT_CODES.ok);
      expect(JSON.parse(resumed.stdout)).toMatchObject({
        status: 'completed',
        malformed_rows: 1,
        users_confirmed: 1200,
      });
      expect(sandbox.state.audienceSize(audienceId)).toBe(1200);
    } finally {
      await sandbox.close();
    }
  });
});

describe('an upload read from a pipe', () => {
  it.runIf(process.platform !== 'win32')(
    'a FIFO (or <(…)) is not fingerprinted, which would consume its rows: every user is sent',
    async () => {
      const sandbox = await startSandbox({ seed: 22 });
      try {
        const env = {
          AUDIENCE_KIT_CONFIG_DIR: tmp,
          AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
          AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
          AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
          AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
          AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
        };
        const cwd = mkdtempSync(join(tmp, 'pipe-'));
        writeFileSync(
          join(cwd, 'crm.csv'),
          `email\n${Array.from({ length: 50_000 }, (_, i) => `u${i}@example.com`).join('\n')}\n`,
        );
        expect(spawnSync('mkfifo', [join(cwd, 'fifo')]).status).toBe(0);
        const written = once(spawn('sh', ['-c', 'cat crm.csv > fifo'], { cwd }), 'close');
        const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'pipe').id;
        const r = await runCli(
          [
            'upload',
            'fifo',
            '--account',
            sandbox.accounts.primary,
            '--audience',
            audienceId,
            '--json',
            ...CALLING_THREAD,
          ],
          {
            cwd,
            env,
          },
        );
        await written;
        expect(r.code).toBe(EXIT_CODES.ok);
        expect(JSON.parse(r.stdout)).toMatchObject({ rows: 50_000, users_confirmed: 50_000 });
        expect(sandbox.state.audienceSize(audienceId)).toBe(50_000);
      } finally {
        await sandbox.close();
      }
    },
  );
});
