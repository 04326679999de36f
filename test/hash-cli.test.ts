import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { hashRecords, hashValue, readCsv, serializeUser } from '../src/index.js';
import { FIXTURES, runCli } from './helpers/cli.js';

// Runs the built CLI (`npm test` builds dist first; alone: npx tsc -p tsconfig.build.json).
const CRM = join(FIXTURES, 'crm-export.csv');
const tmp = mkdtempSync(join(tmpdir(), 'ak-hash-cli-'));

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
    const r = await runCli(['hash', CRM, '--map', 'email=Email', '--map', 'email=work_email', '--map', 'partner_user_id=customer_id']);
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
    const viaStdin = await runCli(['hash', '-', '--format', 'jsonl'], { input: small });
    expect(viaStdin.code).toBe(0);
    expect(viaStdin.stdout.split('\n')[0]).toBe(
      serializeUser({ email: [hashValue('jane.doe@example.com')], phone_number: [hashValue('+12025550143')] }),
    );
    for (const name of ['small.csv.gz', 'utf16le.csv', 'crlf-bom.csv', 'tab.tsv']) {
      const r = await runCli(['hash', join(FIXTURES, name), '--format', 'jsonl']);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(viaStdin.stdout);
    }
    const gz = await runCli(['hash', '-', '--format', 'jsonl'], { input: gzipSync(small) });
    expect(gz.stdout).toBe(viaStdin.stdout);
  });

  it('writes --output and --rejects files; neither holds nor prints a raw value', async () => {
    const out = join(tmp, 'out.jsonl');
    const rej = join(tmp, 'rejects.csv');
    const r = await runCli(['hash', CRM, '--format', 'jsonl', '-o', out, '--rejects', rej]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('');
    expect(readFileSync(out, 'utf8')).toBe(await expectedJsonl(CRM));
    const rejects = readFileSync(rej, 'utf8').trimEnd().split('\n');
    expect(rejects[0]).toBe('line,column,type,reason');
    expect(rejects).toContain('2,Email,email,email_invalid');
    expect(rejects.slice(1).every((l) => /^\d+,(Email|work_email|Phone),(email|phone_number),[a-z_]+$/.test(l))).toBe(true);
    const secrets = rawValues(CRM);
    expect(secrets.length).toBeGreaterThan(5000);
    const leaks = secrets.filter((v) => r.stderr.includes(v) || rejects.join('\n').includes(v));
    expect(leaks).toEqual([]);
  });

  it('lists malformed rows in --rejects and the summary', async () => {
    const rej = join(tmp, 'malformed-rejects.csv');
    const r = await runCli(['hash', join(FIXTURES, 'malformed.csv'), '--format', 'jsonl', '--rejects', rej]);
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
    expect(noIds.stderr).toContain('no identifier column');
    for (const args of [['--default-country', 'XX'], ['--delimiter', 'x'], ['--format', 'xml'], ['--workers', '-1']]) {
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
    const gz = gzipSync(Buffer.from(`email\n${'someone@example.com\n'.repeat(200_000)}`));
    const cut = join(tmp, 'cut.csv.gz');
    writeFileSync(cut, gz.subarray(0, gz.length - 50));
    const out = join(tmp, 'never.jsonl');
    const r = await runCli(['hash', cut, '-o', out, '--format', 'jsonl']);
    expect(r.code).toBe(3);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(tmp).filter((f) => f.includes('partial'))).toEqual([]);
  });

  it('documents every option and the exit codes in --help', async () => {
    const r = await runCli(['hash', '--help']);
    expect(r.code).toBe(0);
    for (const option of ['--map', '--default-country', '--country-column', '--phone-format', '--input-hashed', '--value-separator', '--delimiter', '--format', '--output', '--rejects', '--workers', 'Exit codes']) {
      expect(r.stdout).toContain(option);
    }
  });
});
