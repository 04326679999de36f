import { createHash } from 'node:crypto';
import { spawn, execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createHashSummary, mergeHashSummary } from '../src/hashing/summary.js';
import { hashRecords } from '../src/hashing/pipeline.js';
import { hashValue } from '../src/platform/identifiers/rules.js';
import { serializeUser } from '../src/identifiers/serialize.js';
import { readCsv } from '../src/ingest/csv.js';
import { summaryHints } from '../src/cli/hints.js';
import { BIN, CALLING_THREAD, FIXTURES, runCli, startCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

const CRM = join(FIXTURES, 'crm-export.csv');
const tmp = tempDir('ak-hash-cli-');

async function expectedJsonl(path: string): Promise<string> {
  let out = '';
  for await (const u of hashRecords(readCsv(path))) out += `${serializeUser(u.user)}\n`;
  return out;
}

/** Every identifier-looking cell of the fixture (emails, phones), for the leak scan. */
function rawValues(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  const values = new Set<string>();
  for (const line of text.split(/\r?\n/).slice(1)) {
    for (const cell of line.split(',')) {
      const v = cell.replace(/^\ufeff/, '').trim();
      if (v.length >= 6 && /[@\d]/.test(v) && !/^\d{4}-\d\d-\d\d$/.test(v) && !/^C\d+$/.test(v)) values.add(v);
    }
  }
  return [...values];
}

describe('audience-kit hash (process)', () => {
  it('writes jsonl identical to the library, in input order, with the mapping and summary on stderr', async () => {
    const r = await runCli(['hash', CRM, '--format', 'jsonl', '--workers', '2']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(await expectedJsonl(CRM));
    expect(r.stderr).toContain('email           <- "Email", "work_email"');
    expect(r.stderr).toContain('country         <- "Country"');
    expect(r.stderr).toMatch(/rows read\s+2991/);
    expect(r.stderr).toMatch(/phone_needs_country\s+\d+\s+lines \d+/);
  });

  it('writes csv: one column per mapped type, values joined by |, partner_user_id raw', async () => {
    const r = await runCli([
      'hash',
      CRM,
      '--map',
      'email=Email',
      '--map',
      'email=work_email',
      '--map',
      'partner_user_id=customer_id',
      '--only-mapped',
      ...CALLING_THREAD,
    ]);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('email,partner_user_id');
    expect(lines).toHaveLength(2992);
    expect(lines[1]).toMatch(/^([0-9a-f]{64}(\|[0-9a-f]{64})*)?,C\d+$/);
    expect(lines.some((l) => /^[0-9a-f]{64}\|[0-9a-f]{64},/.test(l))).toBe(true);
    expect(r.stderr).toContain('from --map');
  });

  it('reads stdin with -, gzip, UTF-16 and semicolons', async () => {
    const small = readFileSync(join(FIXTURES, 'semicolon.csv'));
    const viaStdin = await runCli(['hash', '-', '--format', 'jsonl', ...CALLING_THREAD], { input: small });
    expect(viaStdin.code).toBe(0);
    expect(viaStdin.stdout.split('\n')[0]).toBe(
      serializeUser({ email: [hashValue('jane.doe@example.com')], phone_number: [hashValue('12025550143')] }),
    );
    const e164 = await runCli(['hash', '-', '--format', 'jsonl', '--phone-format', 'e164', '--workers', '0'], {
      input: small,
    });
    expect(e164.stdout.split('\n')[0]).toBe(
      serializeUser({ email: [hashValue('jane.doe@example.com')], phone_number: [hashValue('+12025550143')] }),
    );
    // Decoding is the main thread's: the other inputs are hashed inline (no worker threads to start).
    for (const name of ['small.csv.gz', 'utf16le.csv', 'crlf-bom.csv', 'tab.tsv']) {
      const r = await runCli(['hash', join(FIXTURES, name), '--format', 'jsonl', '--workers', '0']);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(viaStdin.stdout);
    }
    const gz = await runCli(['hash', '-', '--format', 'jsonl', '--workers', '0'], { input: gzipSync(small) });
    expect(gz.stdout).toBe(viaStdin.stdout);
  });

  it('writes --output and --rejects files; neither holds nor prints a raw value', async () => {
    const out = join(tmp, 'out.jsonl');
    const rej = join(tmp, 'rejects.csv');
    const r = await runCli(['hash', CRM, '--format', 'jsonl', ...CALLING_THREAD, '-o', out, '--rejects', rej]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(readFileSync(out, 'utf8')).toBe(await expectedJsonl(CRM));
    const rejects = readFileSync(rej, 'utf8').trimEnd().split('\n');
    expect(rejects[0]).toBe('line,column,type,reason');
    expect(rejects).toContain('2,Email,email,email_invalid');
    expect(rejects.slice(1).every((l) => /^\d+,(Email|work_email|Phone),(email|phone_number),[a-z_]+$/.test(l))).toBe(
      true,
    );
    const secrets = rawValues(CRM);
    expect(secrets.length).toBeGreaterThan(5000);
    const leaks = secrets.filter((v) => r.stderr.includes(v) || rejects.join('\n').includes(v));
    expect(leaks).toEqual([]);
  });

  it("creates an output's missing directories (0700) and says so; a file in their way is exit 2", async () => {
    const dir = tempDir('ak-hash-dirs-');
    const r = await runCli(['hash', CRM, ...CALLING_THREAD, '-o', 'a/b/out.csv', '--rejects', 'a/r.csv'], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`created directory ${join('a', 'b')} for --output`);
    expect(r.stderr).not.toContain('for --rejects');
    expect(statSync(join(dir, 'a', 'b')).mode & 0o777).toBe(0o700);
    expect(readFileSync(join(dir, 'a', 'b', 'out.csv'), 'utf8')).toMatch(/^email,phone_number\n/);
    const blocked = await runCli(['hash', CRM, ...CALLING_THREAD, '-o', 'a/r.csv/out.csv'], { cwd: dir });
    expect(blocked.code).toBe(2);
    expect(blocked.stderr).toMatch(/^error: --output: a file is in the way of the directory .*r\.csv$/m);
    // A file system that answers ENOENT with the parent present: Node's recursive mkdir never returned.
    if (existsSync('/proc/self')) {
      const proc = await runCli(['hash', CRM, ...CALLING_THREAD, '-o', '/proc/nope/out.csv'], { cwd: dir });
      expect(proc.code, proc.stderr).toBe(8);
      expect(proc.stderr).toMatch(/^error: .*\/proc\/nope/m);
    }
  });

  it('lists malformed rows in --rejects and the summary', async () => {
    const rej = join(tmp, 'malformed-rejects.csv');
    const r = await runCli([
      'hash',
      join(FIXTURES, 'malformed.csv'),
      '--format',
      'jsonl',
      ...CALLING_THREAD,
      '--rejects',
      rej,
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(4);
    expect(r.stderr).toMatch(/malformed rows skipped\s+4 \(field_count 2, unterminated_quote 2; lines 3, 5, 7, 9\)/);
    expect(readFileSync(rej, 'utf8')).toBe(
      'line,column,type,reason\n3,,,malformed_field_count\n5,,,malformed_field_count\n7,,,malformed_unterminated_quote\n9,,,malformed_unterminated_quote\n',
    );
  });

  it('exits 2 on usage and mapping errors, naming the columns or types', async () => {
    const unknownColumn = await runCli(['hash', CRM, '--map', 'email=Emial']);
    expect(unknownColumn.code).toBe(2);
    expect(unknownColumn.stderr).toContain('no column "Emial"');
    expect(unknownColumn.stderr).toContain('"work_email"');
    const unknownType = await runCli(['hash', CRM, '--map', 'mail=Email']);
    expect(unknownType.code).toBe(2);
    expect(unknownType.stderr).toContain('phone_number');
    const noIds = await runCli(['hash', join(FIXTURES, 'no-identifiers.csv')]);
    expect(noIds.code).toBe(2);
    expect(noIds.stderr).toContain('has a known identifier name');
    for (const args of [
      ['--default-country', 'XX'],
      ['--delimiter', 'x'],
      ['--format', 'xml'],
      ['--workers', '-1'],
    ]) {
      const r = await runCli(['hash', CRM, ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^error: /m);
    }
  });

  it('exits 3 on unreadable input and leaves no half-written output', async () => {
    const missing = await runCli(['hash', join(tmp, 'missing.csv')]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('does not exist');
    const empty = await runCli(['hash', join(FIXTURES, 'empty.csv')]);
    expect(empty.code).toBe(3);
    expect(empty.stderr).toContain('no header row');
    // 1 MB: 16 chunks of output before the cut end fails the run.
    const gz = gzipSync(Buffer.from(`email\n${'someone@example.com\n'.repeat(50_000)}`));
    const cut = join(tmp, 'cut.csv.gz');
    writeFileSync(cut, gz.subarray(0, gz.length - 50));
    const out = join(tmp, 'never.jsonl');
    const r = await runCli(['hash', cut, '-o', out, '--format', 'jsonl']);
    expect(r.code).toBe(3);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(tmp).filter((f) => f.includes('partial'))).toEqual([]);
  });

  it('--workers 0: an input failing midway exits 3 and leaves neither output nor rejects file', async () => {
    const gz = gzipSync(Buffer.from(`email\n${'someone@example.com\nnot-an-email\n'.repeat(25_000)}`));
    const cut = join(tmp, 'cut-inline.csv.gz');
    writeFileSync(cut, gz.subarray(0, gz.length - 50));
    const out = join(tmp, 'inline-never.csv');
    const rej = join(tmp, 'inline-never-rejects.csv');
    const r = await runCli(['hash', cut, '--workers', '0', '-o', out, '--rejects', rej]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('is not valid gzip data');
    expect(r.stderr).not.toMatch(/ERR_STREAM|\n\s+at /);
    expect([existsSync(out), existsSync(rej)]).toEqual([false, false]);
    expect(readdirSync(tmp).filter((f) => f.includes('partial'))).toEqual([]);
  });

  // Deterministic form of the race: the output is a FIFO whose pipe is full, so the first write
  // is still in flight when the input fails and the output is destroyed; it completes (and
  // fails) only once the test drains the pipe.
  it.skipIf(process.platform === 'win32')(
    'does not crash when a write is still in flight as the output is aborted',
    async () => {
      const fifo = join(tmp, 'blocked.fifo');
      execFileSync('mkfifo', [fifo]);
      const gz = gzipSync(
        // `@` keeps the column an email column by its values (each address is still invalid).
        Buffer.from(`email\n${Array.from({ length: 8000 }, (_, i) => `not-an-email-${i}@`).join('\n')}\n`),
      );
      const cut = join(tmp, 'cut-small.csv.gz');
      writeFileSync(cut, gz.subarray(0, gz.length - 30));
      // Linux: O_RDWR opens a FIFO without waiting for a writer; this end reads and pre-fills it.
      const pipe = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
      const ignoreEagain = (fn: () => void): void => {
        try {
          fn();
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        }
      };
      ignoreEagain(() => {
        for (;;) writeSync(pipe, Buffer.alloc(4096));
      });
      const run = await startCli(['hash', cut, '--workers', '0', '-o', fifo], () => true);
      const buffer = Buffer.alloc(65536);
      const started = Date.now();
      const drain = setInterval(() => {
        if (run.stderr().includes('error:') || Date.now() - started > 10_000)
          ignoreEagain(() => {
            while (readSync(pipe, buffer) > 0);
          });
      }, 20);
      const { code, stderr } = await run.done;
      clearInterval(drain);
      closeSync(pipe);
      expect(stderr).toContain('is not valid gzip data');
      expect(stderr).not.toMatch(/ERR_STREAM|\n\s+at /);
      expect(code).toBe(3);
    },
  );

  it('refuses a file without a header row (exit 3) without printing any of its values', async () => {
    const path = join(FIXTURES, 'no-header.csv');
    const values = readFileSync(path, 'utf8')
      .trim()
      .split(/[\n,]/)
      .filter((v) => v.length > 2);
    for (const args of [[], ['--map', 'email=Email'], ['--map', 'email=Email', '--country-column', 'Country']]) {
      const r = await runCli(['hash', path, ...args]);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain('error: the first row looks like data; a header row is required');
      expect(r.stderr).toContain('fix: add a first line naming the columns');
      expect(values.filter((v) => r.stdout.includes(v) || r.stderr.includes(v))).toEqual([]);
    }
  });

  it('reads a Latin-1 file as Windows-1252 with a notice: its Windows-1257 reading breaks Lithuanian spelling', async () => {
    // "Zoë" in Windows-1252 is "Zoė" in Windows-1257, and ė never follows a vowel in Lithuanian.
    const r = await runCli(['hash', join(FIXTURES, 'latin1.csv'), ...CALLING_THREAD]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('reading latin1.csv (Windows-1252 (detected)');
    expect(r.stderr).not.toContain('iconv');
  });

  it('--map still detects the country column, so phones come out as without --map', async () => {
    const args = ['hash', CRM, '--format', 'jsonl', '--workers', '1'];
    const auto = await runCli([...args, '--map', 'partner_user_id=customer_id']);
    const mapped = await runCli([
      ...args,
      '--map',
      'email=Email',
      '--map',
      'email=work_email',
      '--map',
      'phone_number=Phone',
      '--map',
      'partner_user_id=customer_id',
    ]);
    expect(mapped.code).toBe(0);
    expect(mapped.stderr).toContain('from --map');
    expect(mapped.stderr).toContain('country         <- "Country"');
    expect(mapped.stdout).toBe(auto.stdout);
  });

  it('lists each line once per reason in the summary, however many values of the row it rejected', async () => {
    const path = join(tmp, 'repeats.csv');
    writeFileSync(path, 'email,work_email\nbad;worse,bad3\nok@example.com,bad4;bad5\nok2@example.com,\n,nope\n');
    // Named by --map: detected by name, work_email (no address among its values) would not be read.
    const map = ['--map', 'email=email', '--map', 'email=work_email'];
    const r = await runCli([
      'hash',
      path,
      ...map,
      '--value-separator',
      ';',
      '--json',
      '--workers',
      '0',
      '-o',
      '/dev/null',
    ]);
    expect(r.code).toBe(0);
    const { summary } = JSON.parse(r.stdout) as {
      summary: { rejects: Record<string, unknown> };
    };
    expect(summary.rejects.email_invalid).toEqual({ count: 6, lines: [2, 3, 5] });
    const text = await runCli(['hash', path, ...map, '--value-separator', ';', '--workers', '0']);
    expect(text.stderr).toMatch(/email_invalid\s+6\s+lines 2, 3, 5\b/);
    // Merging keeps the lines distinct too.
    const into = createHashSummary();
    into.rejects.email_invalid = { count: 2, lines: [4] };
    const from = createHashSummary();
    from.rejects.email_invalid = { count: 2, lines: [0, 1] };
    expect(mergeHashSummary(into, from, 4).rejects.email_invalid).toEqual({ count: 4, lines: [4, 5] });
  });

  it('unwraps quoted and parenthesized addresses and rejects unmatched wrappers and bad dots and hyphens', async () => {
    const input = ['email', "'John@Example.com'", '"""john@example.com"""', '(john@example.com)', '<john@example.com'];
    input.push('john@example..com', '.john@example.com', 'john@-example.com', '\uFF2A\uFF2F\uFF28\uFF2E@example.com');
    const out = join(tmp, 'quoted.jsonl');
    const args = ['hash', '-', '--map', 'email=email', '--format', 'jsonl', '--workers', '0', '--json', '-o', out];
    const r = await runCli(args, { input: Buffer.from(`${input.join('\n')}\n`) });
    expect(r.code).toBe(0);
    const { summary } = JSON.parse(r.stdout) as { summary: { rejects: Record<string, unknown> } };
    expect(summary.rejects.email_invalid).toEqual({ count: 4, lines: [5, 6, 7, 8] });
    const john = serializeUser({ email: [hashValue('john@example.com')] });
    const users = readFileSync(out, 'utf8').trimEnd().split('\n');
    expect(users).toEqual([john, john, john, '{}', '{}', '{}', '{}', john]);
  });

  it('refuses e-mail addresses mapped as partner_user_id (sent unhashed) with exit 2 and both fixes; --partner-ids-may-be-emails sends them', async () => {
    const input = 'Contact\ncrm-1\njane@example.com\ncrm@42\n';
    const args = ['hash', '-', '--map', 'partner_user_id=Contact', ...CALLING_THREAD];
    const refused = await runCli(args, { input });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('error: the column "Contact" is read as partner_user_id, which is sent unhashed');
    expect(refused.stderr).toContain('--map email="Contact"');
    expect(refused.stderr).toContain('pass --partner-ids-may-be-emails');
    expect(refused.stderr).not.toContain('jane');
    expect(refused.stdout).toBe('');
    const allowed = await runCli([...args, '--partner-ids-may-be-emails'], { input });
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toContain('jane@example.com');
    // Past the sample (its first 100 rows), an address is a rejected value, counted with its line.
    const late = `Contact\n${Array.from({ length: 150 }, (_, i) => `pid-${i}`).join('\n')}\nlate@example.com\n`;
    const json = await runCli([...args, '--json', '-o', join(tmp, 'late.csv')], { input: late });
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { summary: { rejects: Record<string, unknown> }; hints: string[] };
    expect(doc.summary.rejects.partner_user_id_email).toEqual({ count: 1, lines: [152] });
    // Under the reject-share hint's threshold, the hint says so all the same.
    expect(doc.hints.join('\n')).toContain('1 partner_user_id value (columns "Contact"): they are e-mail addresses');
    expect(readFileSync(join(tmp, 'late.csv'), 'utf8')).not.toContain('late@');
  });

  it('counts phones with two real readings as phone_ambiguous, with their line and a hint, and hashes the decided ones', async () => {
    const input = [
      'phone,country',
      '390 187 537,ITA',
      '9119463463,India',
      '0055 64 91428 2813,BRA',
      '+39 390 187 537,IT',
    ].join('\n');
    const r = await runCli(['hash', '-', '--format', 'jsonl', ...CALLING_THREAD], { input });
    expect(r.code).toBe(0);
    const users = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { phone_number?: string[] });
    const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
    expect(users.map((u) => u.phone_number?.[0])).toEqual([
      undefined,
      sha('919119463463'),
      sha('5564914282813'),
      sha('39390187537'),
    ]);
    expect(r.stderr).toMatch(/phone_ambiguous\s+1\s+line 2\b/);
    expect(r.stderr).toContain(
      'mostly phone_ambiguous: they are valid read two ways (as national numbers or as starting with their country code without +, or with or without a leading 0 or (0) that may be a trunk prefix), so they were not hashed; fix: write them with + and the country code, without (0)',
    );
    expect(r.stderr).toContain(
      "hint: 1 phone number was valid read two ways (with or without the country code, or a leading 0 that may be a trunk prefix), decided by the country's number ranges",
    );
    expect(r.stderr).not.toContain('--phone-country-code national reads');
  });

  it('rejects a spreadsheet-rounded phone as phone_lossy_number with a hint', async () => {
    const input = ['phone,country', '"4,91512E+12",DE', '9.18142423991e+11,IN', '+44 20 7946 0958,'];
    const r = await runCli(['hash', '-', '--format', 'jsonl', ...CALLING_THREAD], { input: input.join('\n') });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/phone_lossy_number\s+1\s+line 2\b/);
    expect(r.stderr).toContain(
      'a spreadsheet stored them as numbers and wrote them rounded in scientific form (4,91512E+12), so their last digits are lost and they were not hashed; fix: export again from the source, or format the phone column as Text',
    );
    // Its decimal comma is no list: no --value-separator "," suggested.
    expect(r.stderr).not.toContain('several values');
  });

  it('digits without + in rows without a country: read with their calling code, said in a hint, unless the column shows national numbers', async () => {
    const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
    // SMS tools and ad-platform templates: every number with its calling code, no country column.
    const sms = [
      'email,phone',
      'a@example.com,33612345678',
      'b@example.com,+48 512 345 602',
      'c@example.com,15148369370',
    ];
    const read = await runCli(['hash', '-', '--format', 'jsonl', ...CALLING_THREAD], { input: sms.join('\n') });
    expect(read.code).toBe(0);
    expect(read.stdout).toContain(sha('15148369370'));
    expect(read.stderr).toContain(
      '2 of them were in rows without a country, read so because their digits are a valid number that way',
    );
    expect(read.stderr).toContain(
      'a German 0151… as +1 51…): if the file holds such numbers, fix: --country-column or --default-country CC',
    );
    // The same digits in a column that also holds national numbers (a leading 0, a spreadsheet's
    // number): each may be a national number that lost its 0 (the German 0151 48369370), refused.
    for (const national of ['0151 48369370', '4.915148369371E+12']) {
      const input = [
        'email,Mobile',
        `a@example.com,${national}`,
        'b@example.com,15148369370',
        'c@example.com,+33 6 12 34 56 78',
      ];
      const r = await runCli(['hash', '-', '--format', 'jsonl', ...CALLING_THREAD], { input: input.join('\n') });
      expect(r.code).toBe(0);
      expect(r.stdout).not.toContain(sha('15148369370'));
      expect(r.stdout).toContain(sha('33612345678'));
      expect(r.stderr).toMatch(/phone_maybe_national\s+1\s+line 3\b/);
      const hint = r.stderr.split('\n').find((l) => l.includes('phone_maybe_national:')) ?? '';
      expect(hint).toContain('"Mobile": ');
      expect(hint).toContain('so each may be a national number whose leading 0 was dropped');
      expect(hint).toContain('fix: --default-country CC');
      expect(hint).toContain('if they do start with their country code, --phone-country-code included');
      // With a country the national number is read; told how the file is written, the calling code.
      const de = await runCli(['hash', '-', '--format', 'jsonl', '--default-country', 'DE', ...CALLING_THREAD], {
        input: input.join('\n'),
      });
      expect(de.stdout).toContain(sha('4915148369370'));
      const included = await runCli(
        ['hash', '-', '--format', 'jsonl', '--phone-country-code', 'included', ...CALLING_THREAD],
        { input: input.join('\n') },
      );
      expect(included.stdout).toContain(sha('15148369370'));
    }
  });

  it('counts the phones read with their calling code, decided and ambiguous, in the right grammatical number', () => {
    const mapping = { columns: [], auto: true, ignored: [] };
    const hints = (twoReadings: number, ambiguous = 0): string[] => {
      const summary = createHashSummary();
      summary.notes.phoneCodeWithoutPlus = 3;
      summary.notes.phoneTwoReadings = twoReadings;
      if (ambiguous > 0) summary.rejects.phone_ambiguous = { count: ambiguous, lines: [2] };
      return summaryHints(summary, mapping);
    };
    expect(hints(0)).toEqual(['3 phone numbers were read as starting with their country code without +']);
    expect(hints(1)[0]).toContain(
      "; 1 number was valid read two ways (with or without the country code, or a leading 0 that may be a trunk prefix), decided by the country's number ranges",
    );
    expect(hints(2)[0]).toContain('; 2 numbers were valid read two ways');
    // Never the national mode as the fix of a mixed export: it breaks the numbers written with their code.
    expect(hints(2).join('\n')).not.toContain('--phone-country-code national reads');
    const ambiguous = hints(0, 2)[1];
    expect(ambiguous).toMatch(
      /^2 phone numbers are valid read two ways \(as national numbers or as starting with their country code/,
    );
    expect(ambiguous).toContain('fix: write them with + and the country code');
    expect(hints(0, 1)[1]).toMatch(/^1 phone number is valid read two ways/);
  });

  it('documents every option and the exit codes in --help', async () => {
    const r = await runCli(['hash', '--help']);
    expect(r.code).toBe(0);
    for (const option of [
      '--map',
      '--default-country',
      '--country-column',
      '--phone-format',
      '--input-hashed',
      '--value-separator',
      '--delimiter',
      '--format',
      '--output',
      '--rejects',
      '--workers',
      'Exit codes',
    ]) {
      expect(r.stdout).toContain(option);
    }
  });

  it('stops early with exit 0 and a note, no EPIPE stack, no partial file, when the reader goes away (`| head -1`)', async () => {
    const dir = tempDir('ak-epipe-');
    const r = await new Promise<{ code: number | null; stderr: string; first: string }>((resolve) => {
      const args = [
        BIN,
        'hash',
        join(FIXTURES, 'crm-export.csv'),
        '--format',
        'jsonl',
        '--rejects',
        join(dir, 'rejects.csv'),
      ];
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      // Far more output than a pipe holds: reading one chunk and closing makes the next write fail.
      child.stdout.once('data', (b: Buffer) => {
        child.stdout.destroy();
        child.on('close', (code) => resolve({ code, stderr, first: b.toString().split('\n')[0] ?? '' }));
      });
    });
    expect(r.first).toMatch(/^\{"email":\["[0-9a-f]{64}"/);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('stdout was closed by the reader; stopped early');
    expect(r.stderr).not.toMatch(/EPIPE|\n\s+at /);
    expect(readdirSync(dir)).toEqual([]);
  });
});
