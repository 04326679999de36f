import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHashSummary } from '../src/hashing/summary.js';
import { hashRecords } from '../src/hashing/pipeline.js';
import { hashValue } from '../src/platform/identifiers/rules.js';
import type { BuiltUser } from '../src/identifiers/types.js';
import { resolveMapping } from '../src/identifiers/mapping.js';
import { describeMapping, summaryHints } from '../src/cli/hints.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

const tmp = tempDir('ak-content-');

/** resolveMapping over a header and its rows (the sample), as [column, type, how] triples. */
function mapped(rows: string[][]): [string, string, string][] {
  const [header, ...sample] = rows as [string[], ...string[][]];
  return resolveMapping(header, {}, sample).columns.map((c) => [
    c.column,
    c.type,
    c.content === true ? 'content' : (c.separator ?? 'name'),
  ]);
}

describe('columns judged by their values as well as their names', () => {
  it('a column of unknown name is used when its values are clearly emails or phone numbers', () => {
    const rows = [
      ['Contact', 'Reach me at', 'Notes', 'Ref', 'Land'],
      ['ava@example.com', '+1 202-555-0101', 'met at fair', '12345678', 'US'],
      ['ben@example.co.uk', '020 7946 0102', 'call back', '12345679', 'GB'],
      ['cleo@example.de', '+49 30 901820', '', '12345680', 'DE'],
      ['', '(415) 555-0104', 'vip', '12345681', 'US'],
    ];
    // "Land" (German, Dutch, Swedish) is a country column by its name and values: with it all 4
    // numbers are valid; with no country only the 2 written with + are, too few to be clearly phones.
    expect(mapped(rows)).toEqual([
      ['Contact', 'email', 'content'],
      ['Reach me at', 'phone_number', 'content'],
    ]);
    expect(mapped(rows.map((r) => r.slice(0, 4)))).toEqual([['Contact', 'email', 'content']]);
    const withCountry = resolveMapping(rows[0] as string[], { countryColumn: 'Land' }, rows.slice(1));
    expect(withCountry.columns.map((c) => [c.column, c.type, c.content])).toEqual([
      ['Contact', 'email', true],
      ['Reach me at', 'phone_number', true],
    ]);
    expect(describeMapping(withCountry)).toContain('email           <- "Contact" (detected by content)');
    // Bare digits are as likely ids as phone numbers: "Ref" is not taken for phones.
    expect(withCountry.ignored).toContain('Ref');
  });

  it('values with an extension in any spelling the normalization drops are clearly phone numbers', () => {
    const rows = [
      ['Contact', 'Reach me at'],
      ['ava@example.com', '+1 202-555-0101 extension 5'],
      ['ben@example.co.uk', '+33 1 42 68 53 00 poste 12'],
      ['cleo@example.de', '+49 30 901820 Durchwahl 3'],
      ['dan@example.com', '+1 (415) 555-0104;ext=7'],
      ['eve@example.com', '+44 20 7946 0958,12'],
      ['fay@example.com', '+81 3-1232-1715 内線 536'],
      ['gus@example.com', '+31 20 123 4567 toestel 8'],
      ['hal@example.com', '+1 202-555-0108 - 503#'],
    ];
    expect(mapped(rows)).toEqual([
      ['Contact', 'email', 'content'],
      ['Reach me at', 'phone_number', 'content'],
    ]);
  });

  it('a file without a header row is still refused, not read by content with its first row lost', async () => {
    const path = join(tmp, 'no-header.csv');
    const rows = [
      'ava@example.com,+1 202-555-0101',
      'ben@example.com,+1 202-555-0102',
      'cleo@example.com,+1 202-555-0103',
    ];
    writeFileSync(path, `${rows.join('\n')}\n`);
    const r = await runCli(['hash', path, '--workers', '0', '-o', join(tmp, 'no-header.out')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('error: the first row looks like data; a header row is required');
    expect(r.stderr).not.toContain('ava@example.com');
  });

  it('a column whose name matches but whose values do not fit is left out, with the reason', () => {
    const m = resolveMapping(['Email', 'Mobile', 'Phone', 'IDFA', 'E-mail address'], {}, [
      ['Ava Lee', 'yes', '(202) 555-0101', 'not-a-device', 'ava@example.com'],
      ['Ben Okoro', 'no', '(202) 555-0102', 'n/a', 'ben@example.com'],
      ['Cleo Brandt', 'yes', '', 'unknown', 'not an address'],
      ['Dev Shah', 'no', '(415) 555-0104', '', 'dev@example.com'],
    ]);
    expect(m.columns.map((c) => c.column)).toEqual(['Phone', 'E-mail address']);
    expect(m.notUsed?.map((c) => [c.column, c.misfit, c.reason])).toEqual([
      ['Email', 'email', 'its values are not email addresses (0 of 4 sampled)'],
      ['Mobile', 'phone_number', 'its values are not phone numbers (0 of 4 sampled)'],
      ['IDFA', 'device_id', 'its values are not advertising ids (UUID or 16 hex digits) (0 of 3 sampled)'],
    ]);
    // Left out, and said so with the way to read it anyway.
    expect(summaryHints(createHashSummary(), m)[0]).toBe(
      '"Email" was not read as email: its values are not email addresses (0 of 4 sampled); if it does hold them, --map email="Email"',
    );
    expect(describeMapping(m)).toContain('(ignored "Email": its values are not email addresses (0 of 4 sampled))');
  });

  it("someone else's columns are never used, whatever they hold; a map entry still takes them", () => {
    const header = ['Email', 'Lead Owner Email Address', 'Asst Phone', 'Sales Rep Mobile', 'Referrer', 'Fax'];
    const sample = [
      [
        'ava@example.com',
        'sam@example.org',
        '+1 202-555-0181',
        '+1 202-555-0191',
        'kim@example.net',
        '+1 202-555-0199',
      ],
      [
        'ben@example.com',
        'sam@example.org',
        '+1 202-555-0182',
        '+1 202-555-0191',
        'kim@example.net',
        '+1 202-555-0198',
      ],
      ['cleo@example.com', 'jo@example.org', '+1 202-555-0183', '+1 202-555-0192', 'lu@example.net', '+1 202-555-0197'],
    ];
    const m = resolveMapping(header, {}, sample);
    expect(m.columns.map((c) => c.column)).toEqual(['Email']);
    expect(m.notUsed?.map((c) => [c.column, c.reason])).toEqual([
      ['Lead Owner Email Address', 'not the person\'s own (the name says "owner")'],
      ['Asst Phone', 'not the person\'s own (the name says "asst")'],
      ['Sales Rep Mobile', 'not the person\'s own (the name says "rep")'],
      ['Referrer', 'not the person\'s own (the name says "referrer")'],
      ['Fax', 'not the person\'s own (the name says "fax")'],
    ]);
    const forced = resolveMapping(header, { map: ['phone_number=Asst Phone'] }, sample);
    expect(forced.columns.map((c) => [c.column, c.type])).toEqual([
      ['Email', 'email'],
      ['Asst Phone', 'phone_number'],
    ]);
  });

  it("a name of identifier words and words of the person's own is a known name; its values must fit", () => {
    const header = ['Mail', 'Tel', 'Mobile No', 'Work Contact Email 2', 'Personal Tel', 'Land'];
    const row = (i: number): string[] => [
      `a${i}@example.com`,
      `+1 202-555-01${10 + i}`,
      `(415) 555-01${10 + i}`,
      `w${i}@example.org`,
      `+44 20 7946 01${10 + i}`,
      'US',
    ];
    const m = resolveMapping(header, { countryColumn: 'Land' }, [row(1), row(2), row(3)]);
    expect(m.columns.map((c) => [c.column, c.type, c.content])).toEqual([
      ['Mail', 'email', undefined],
      ['Tel', 'phone_number', undefined],
      ['Mobile No', 'phone_number', undefined],
      ['Work Contact Email 2', 'email', undefined],
      ['Personal Tel', 'phone_number', undefined],
    ]);
    expect(m.notUsed).toBeUndefined();
  });

  it("hash: columns whose name may say they are someone else's are not read by content, each with a hint", async () => {
    const others = [
      'Account Executive Email',
      'Partner Email',
      'Friend Email',
      'Mother Email',
      'Recipient Email',
      'Gift Recipient Phone',
      'Guardian Phone',
      'Emergency Phone',
      'Emergency Contact Phone',
      'Next of Kin Phone',
      'Doctor Phone',
      'Reference Phone',
      'Father Phone',
      'Parent Email',
      'Spouse Email',
    ];
    const cell = (column: string, i: number): string =>
      column.endsWith('Email') ? `o${i}@example.net` : `+1 202-555-${String(1000 + i)}`;
    // A word the vocabulary knows as someone else's (employer) says so; unknown words only may.
    const lines = [[...others, 'Employer Phone', 'Email', 'Country'].join(',')];
    for (let i = 0; i < 40; i++)
      lines.push([...others.map((c) => cell(c, i)), cell('Phone', i), `user${i}@example.com`, 'US'].join(','));
    const path = join(tmp, 'others.csv');
    writeFileSync(path, `${lines.join('\n')}\n`);
    const r = await runCli(['hash', path, '--workers', '0', '--json', '-o', join(tmp, 'others.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('detected by content');
    const doc = JSON.parse(r.stdout) as {
      summary: { types: Record<string, { valid: number } | undefined> };
      mapping: { columns: { column: string }[]; not_used: { column: string; reason: string }[] };
      hints: string[];
    };
    expect(doc.mapping.columns.map((c) => c.column)).toEqual(['Email']);
    expect(doc.summary.types.email?.valid).toBe(40);
    expect(doc.summary.types.phone_number?.valid ?? 0).toBe(0);
    expect(doc.mapping.not_used.map((c) => c.column)).toEqual([...others, 'Employer Phone']);
    expect(doc.mapping.not_used.at(-1)?.reason).toBe('not the person\'s own (the name says "employer")');
    expect(doc.mapping.not_used.find((c) => c.column === 'Next of Kin Phone')?.reason).toBe(
      'not read by content: the word "next" in its name may say it is someone else\'s',
    );
    expect(doc.hints).toContain(
      '"Mother Email" was not read as email: not read by content: the word "mother" in its name may say it is someone else\'s; if it holds the person\'s own, --map email="Mother Email"',
    );
    expect(doc.hints.filter((h) => h.includes('was not read as'))).toHaveLength(others.length);
  });

  it('hash: a column named for emails with too few sampled values to read by content says why, with the --map', async () => {
    const path = join(tmp, 'two-rows.csv');
    writeFileSync(
      path,
      'Email,Guest Email,Country\nava@example.com,ann@example.org,US\nben@example.com,bo@example.org,US\n',
    );
    const r = await runCli(['hash', path, '--workers', '0', '-o', join(tmp, 'two-rows.out')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      '(ignored "Guest Email": not read by content: the word "guest" in its name may say it is someone else\'s)',
    );
    expect(r.stderr).toContain(
      '"Guest Email" was not read as email: not read by content: the word "guest" in its name may say it is someone else\'s; if it holds the person\'s own, --map email="Guest Email"',
    );
    expect(r.stderr).not.toContain('ann@example.org');
    // A name of two identifier words is read only by content: two values are too few to tell.
    writeFileSync(
      path,
      'Email,Email or Phone,Country\nava@example.com,ann@example.org,US\nben@example.com,bo@example.org,US\n',
    );
    const few = await runCli(['hash', path, '--workers', '0', '-o', join(tmp, 'two-rows.out')]);
    expect(few.stderr).toContain(
      '(ignored "Email or Phone": not read by content: 2 values in the first rows, too few to tell)',
    );
  });

  it('platform account types come only from names naming the platform; generic ids are never sent', () => {
    const header = ['id', 'user_id', 'userId', 'User ID', 'username', 'external_id', 'customer_id', 'Email'];
    const m = resolveMapping(header, {}, [['1', '42', '43', '44', 'jdoe', 'e-1', 'C-1', 'a@example.com']]);
    expect(m.columns.map((c) => c.column)).toEqual(['Email']);
    expect(m.notUsed?.map((c) => c.column)).toEqual(header.slice(0, -1));
    expect(m.notUsed?.every((c) => c.idLike === true)).toBe(true);
    const hints = summaryHints(createHashSummary(), m);
    expect(hints.at(-1)).toMatch(/^"id", "user_id", .* look like your own ids and are not sent/);
    const platform = resolveMapping(
      ['twitter_id', 'x_user_id', 'Twitter Handle', 'x handle', 'partner_user_id', 'p_user_id'],
      {},
      [['12', '13', '@ava', 'ben_x', 'P-1', 'P-2']],
    );
    expect(platform.columns.map((c) => c.type)).toEqual([
      'service_id',
      'service_id',
      'handle',
      'handle',
      'partner_user_id',
      'partner_user_id',
    ]);
  });

  it('cells are split when the whole column clearly holds lists, and only then', () => {
    const rows = [
      ['Person - Email - Work', 'Additional email addresses', 'google_ad_ids', 'Phones'],
      [
        'a@example.com, b@example.com',
        'c@example.org;d@example.net',
        'cdda802e-fb9c-47ad-9866-0794d394c912',
        '+12025550101',
      ],
      ['e@example.com', 'f@example.org,g@example.net', '', '+12025550102 | +12025550103'],
      [
        'h@example.com,i@example.com',
        'j@example.org',
        '6d92078a-8246-4ba4-ae5b-76104861e7dc,38400000-8cf0-11bd-b23e-10b96e40000d',
        '',
      ],
    ];
    // The second column mixes ";" and ",": not clearly one kind of list, so it is left as it is
    // (its joined cells are rejected and the hint names --value-separator).
    expect(mapped(rows)).toEqual([
      ['Person - Email - Work', 'email', ','],
      ['Additional email addresses', 'email', 'name'],
      ['google_ad_ids', 'device_id', ','],
      ['Phones', 'phone_number', '|'],
    ]);
    const m = resolveMapping(rows[0] as string[], { map: ['phone_number=Phones'] }, rows.slice(1));
    expect(m.columns.find((c) => c.column === 'Phones')?.separator).toBe('|');
    expect(describeMapping(m)).toContain('"google_ad_ids" (lists split on ",")');
    // A separator given for every cell replaces the guess.
    const given = resolveMapping(rows[0] as string[], { valueSeparator: ';' }, rows.slice(1));
    expect(given.columns.map((c) => c.separator)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('hash reads by content through the worker threads too, splitting lists there', async () => {
    const path = join(tmp, 'unknown-names.csv');
    const lines = ['Kontakt,Weitere,Land,Kundennummer'];
    for (let i = 0; i < 40; i++)
      lines.push(`user${i}@example.com,"alt${i}@example.org, other${i}@example.net",DE,${1000 + i}`);
    writeFileSync(path, `${lines.join('\n')}\n`);
    const r = await runCli(['hash', path, '--workers', '2', '--json', '-o', join(tmp, 'unknown.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      'email           <- "Kontakt" (detected by content), "Weitere" (detected by content, lists split on ",")',
    );
    const doc = JSON.parse(r.stdout) as {
      summary: { types: Record<string, { valid: number; invalid: number }> };
      mapping: { columns: { column: string; from: string; separator: string | null }[] };
    };
    expect(doc.summary.types.email).toMatchObject({ valid: 120, invalid: 0 });
    expect(doc.mapping.columns).toEqual([
      { column: 'Kontakt', type: 'email', from: 'content', separator: null },
      { column: 'Weitere', type: 'email', from: 'content', separator: ',' },
    ]);
  });
});

describe('losses are said and mistyped keys refused', () => {
  it('a type losing more than 5% of its values gets a hint naming the reason and the fix', () => {
    const m = resolveMapping(['Phone']);
    const summary = createHashSummary();
    summary.types.phone_number = { valid: 94, invalid: 6, digests: 0 };
    summary.rejects.phone_needs_country = { count: 6, lines: [2] };
    expect(summaryHints(summary, m)[0]).toBe(
      '6 of 100 phone_number values rejected (6%), mostly phone_needs_country: they are national numbers and no country column was found; fix: --default-country CC, or --country-column naming the column that holds each row\'s country (columns "Phone")',
    );
    summary.types.phone_number = { valid: 95, invalid: 5, digests: 0 };
    expect(summaryHints(summary, m)).toEqual([]);
  });

  it('records: a map entry naming a key none of the first records has is an error naming the keys there are', async () => {
    const rows = [{ email: 'a@example.com', phone: '' }];
    const run = hashRecords(rows, { map: ['email=mail'] });
    const users: BuiltUser[] = [];
    await expect(
      (async () => {
        for await (const u of run) users.push(u);
      })(),
    ).rejects.toMatchObject({
      code: 'mapping_unknown_column',
      message: 'map entry email=mail: none of the first records has the key "mail"',
      fix: 'name one of the keys the records have: "email", "phone"',
    });
    expect(users).toEqual([]);
    const country = hashRecords(rows, { countryColumn: 'Country' });
    await expect(country[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: 'mapping_unknown_column' });
    // Keys are compared as header names are (case and punctuation aside): e_mail names "email".
    const loose = hashRecords(rows, { map: ['email=e_mail'] });
    for await (const u of loose) expect(u.user.email).toEqual([hashValue('a@example.com')]);
  });
});
