import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeMapping, summaryHints } from '../src/cli/hints.js';
import {
  nameParts,
  splitWords,
  WORD_CLASSES,
  LANGUAGES,
  typeSaysSomeoneElse,
} from '../src/identifiers/vocabulary/index.js';
import { hashValue } from '../src/platform/identifiers/rules.js';
import { isKnownColumnName, resolveMapping, type ColumnMapping } from '../src/identifiers/mapping.js';
import { headerColumn, headerLabel } from '../src/identifiers/labels.js';
import { normalizeCountryCode } from '../src/identifiers/countries.js';
import { createHashSummary } from '../src/hashing/summary.js';
import { runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

const tmp = tempDir('ak-columns-');

/** The type each header name is read as by its name alone (one sampled row that fits every type). */
function typesOf(header: string[], cell: (name: string) => string): (string | undefined)[] {
  const sample = [1, 2, 3].map(() => header.map(cell));
  const m = resolveMapping(
    [...header, 'Email'],
    {},
    sample.map((r) => [...r, 'x@example.com']),
  );
  return header.map((_, i) => m.columns.find((c) => c.index === i)?.type);
}

describe('header vocabulary of ten languages', () => {
  it('each word is in one class only (the data holds no conflict between classes)', () => {
    const seen = new Map<string, string>();
    for (const [language, words] of Object.entries(LANGUAGES))
      for (const cls of WORD_CLASSES)
        for (const word of words[cls])
          for (const folded of splitWords(word)) {
            const before = seen.get(folded);
            if (before !== undefined) expect(`${folded}: ${before}`).toBe(`${folded}: ${before.split(':')[0]}:${cls}`);
            seen.set(folded, `${language}:${cls}`);
          }
  });

  it('e-mail and phone columns are known by name in English, German, French, Spanish, Portuguese, Italian, Dutch, Polish, Swedish and Japanese', () => {
    const emails = [
      'E-Mail-Adresse',
      'Courriel',
      'Adresse e-mail',
      'Correo electrónico',
      'Endereço de e-mail',
      'Indirizzo email',
      'E-mailadres',
      'Adres e-mail',
      'E-postadress',
      'メールアドレス',
      'Eメール',
      'Email 3',
    ];
    const phones = [
      ...[
        'Telefon geschäftlich',
        'Mobiltelefon',
        'Telefon privat',
        'Handynummer',
        'Telefonnummer',
        'Téléphone portable',
      ],
      ...[
        'Numéro de téléphone',
        'Teléfono móvil',
        'Celular',
        'Telefone',
        'Telemóvel',
        'Cellulare',
        'Telefoonnummer',
        'Mobiel',
      ],
      ...[
        'Telefon komórkowy',
        'Numer telefonu',
        'Mobilnummer',
        'Telefon arbete',
        '電話番号',
        '携帯電話',
        '携帯電話番号',
        '自宅電話',
      ],
      ...['Business Phone', 'Phone 1', 'Phone 2', 'Home Phone 2', 'Primary Phone', 'MobilePhone'],
    ];
    const cell = (name: string): string => (emails.includes(name) ? 'ann@example.com' : '+49 30 901820');
    expect(typesOf(emails, cell)).toEqual(emails.map(() => 'email'));
    expect(typesOf(phones, cell)).toEqual(phones.map(() => 'phone_number'));
  });

  it("someone else's columns are never read, in every language, compounds included", () => {
    const header = [
      ...[
        'Company Main Phone',
        "Assistant's Phone",
        'Business Fax',
        'Pager',
        'Callback',
        'Telefon Firma',
        'Fax geschäftlich',
      ],
      ...[
        'Faxnummer',
        'Telefon Assistent',
        'Télécopie',
        'Téléphone de l’assistant',
        'Teléfono de la empresa',
        'Fax del trabajo',
      ],
      ...[
        'Telefone da empresa',
        'Telefono azienda',
        'Bedrijfstelefoon',
        'Telefon firmy',
        'Faks',
        'Företagets telefon',
        '会社代表電話',
      ],
      ...['アシスタント電話', 'ファックス', 'Lead Owner Email', 'Notfalltelefon'],
    ];
    const m = resolveMapping(
      [...header, 'Email'],
      {},
      [1, 2, 3].map((i) => [...header.map(() => `+1 202-555-01${10 + i}`), 'a@b.co']),
    );
    expect(m.columns.map((c) => c.column)).toEqual(['Email']);
    const notUsed = new Map((m.notUsed ?? []).map((c) => [c.column, c.reason]));
    expect(notUsed.get('Telefon Firma')).toBe('not the person\'s own (the name says "firma")');
    expect(notUsed.get('会社代表電話')).toBe('not the person\'s own (the name says "代表")');
    // An unknown first part of a compound may name someone else (Notfall: emergency): not read by content.
    expect(notUsed.get('Notfalltelefon')).toBe(
      'not read by content: the word "notfall" in its name may say it is someone else\'s',
    );
  });

  it('compound words are split on vocabulary words; Japanese names (no spaces) too', () => {
    const parts = (name: string) => nameParts(name).map((p) => `${p.word}:${p.cls ?? '?'}`);
    expect(parts('Handynummer')).toEqual(['handy:phone', 'nummer:own']);
    expect(parts('E-Mail-Adresse')).toEqual(['email:email', 'adresse:own']);
    expect(parts('E-postadress')).toEqual(['epostadress:email']);
    expect(parts('Geschäftsfax')).toEqual(['geschafts:own', 'fax:line']);
    expect(parts('携帯電話番号')).toEqual(['携帯:phone', '電話番号:phone']);
    expect(parts('国/地域')).toEqual(['国:country', '地域:own']);
    // A known word of three letters is no head of an unknown word (Hotel is not a phone word).
    expect(parts('Hotel')).toEqual(['hotel:?']);
    expect(isKnownColumnName('E-Mail-Adresse')).toBe(true);
    expect(isKnownColumnName('電話番号')).toBe(true);
    expect(isKnownColumnName('Exported on 2024-05-01 by Ann')).toBe(false);
  });
});

describe('the country column: more names, and by content', () => {
  const phones = ['+1 202-555-0101', '+44 20 7946 0102', '+49 30 901820', '+33 1 42 68 53 00'];
  const rows = (header: string[], countries: string[]): ColumnMapping =>
    resolveMapping(
      ['Phone', ...header],
      {},
      countries.map((c, i) => [phones[i % 4] as string, c, 'x']),
    );

  it('by its name in the ten languages, when its values are countries', () => {
    for (const name of [
      'Address 1: Country/Region',
      'Business Country/Region',
      'Home Country',
      'PAYS',
      'Land',
      'País',
      'Paese',
      'Paese/Regione',
      'Kraj',
      '国',
      '国/地域',
    ])
      expect(rows([name, 'Notes'], ['US', 'Deutschland', 'États-Unis', 'Vereinigtes Königreich']).country?.column).toBe(
        name,
      );
    // A state column is no country column, whatever its codes look like.
    expect(rows(['State', 'Notes'], ['CA', 'GA', 'PA', 'IN']).country).toBeUndefined();
  });

  it('by its values: ISO codes, names in any language, locales; a language alone gives no country', () => {
    const m = rows(['Kundenherkunft', 'Notes'], ['DE', 'FR', 'US', 'GB']);
    expect(m.country).toEqual({ index: 1, column: 'Kundenherkunft', label: 'Kundenherkunft', content: true });
    expect(describeMapping(m)).toContain('country         <- "Kundenherkunft" (detected by content)');
    expect(rows(['Herkunft', 'Notes'], ['Allemagne', 'États-Unis', 'アメリカ合衆国', 'Włochy']).country?.column).toBe(
      'Herkunft',
    );
    // Lower-case two-letter values are as likely languages; one code alone (NO) as likely a word.
    expect(rows(['Sprachcode', 'Notes'], ['de', 'fr', 'es', 'it']).country).toBeUndefined();
    expect(rows(['Blocked', 'Notes'], ['NO', 'NO', 'NO', 'NO']).country).toBeUndefined();
    const locale = rows(['Locale', 'Notes'], ['en_GB', 'de-DE', 'fr', 'US']);
    expect(locale.country).toEqual({ index: 1, column: 'Locale', label: 'Locale', locale: true });
    expect(rows(['Settings', 'Notes'], ['en_GB', 'de_DE', 'fr_FR', 'pt_BR']).country).toMatchObject({
      content: true,
      locale: true,
    });
    expect(
      ['en_GB', 'de-DE', 'pt_BR.UTF-8', 'US-CA', 'Włochy', 'Großbritannien', 'イギリス'].map((c) =>
        normalizeCountryCode(c),
      ),
    ).toEqual(['GB', 'DE', 'BR', undefined, 'IT', 'GB', 'GB']);
  });

  it('hash: national numbers are read under a country found by content or a locale; a language alone is no country', async () => {
    const path = join(tmp, 'locale.csv');
    writeFileSync(
      path,
      'Nom,Téléphone,Locale\nAnn,030 901820,de_DE\nBo,020 7946 0102,en-GB\nCy,01 42 68 53 00,fr\nDi,+33 1 42 68 53 01,fr\n',
    );
    const r = await runCli(['hash', path, '--workers', '0', '--json', '-o', join(tmp, 'locale.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      summary: {
        types: { phone_number: { valid: number; invalid: number } };
        rejects: Record<string, { lines: number[] }>;
      };
    };
    expect(doc.summary.types.phone_number).toEqual({ valid: 3, invalid: 1, digests: 0 });
    expect(doc.summary.rejects.phone_needs_country?.lines).toEqual([4]);
  });
});

describe('paired type/value layouts', () => {
  const header = [
    'Name',
    'E-mail 1 - Type',
    'E-mail 1 - Value',
    'Phone 1 - Type',
    'Phone 1 - Value',
    'Phone 2 - Type',
    'Phone 2 - Value',
  ];
  const lines = [
    ['Ann', '* Home', 'ann@example.com', 'Mobile', '+1 202-555-0101', 'Work Fax', '+1 202-555-0199'],
    ['Bo', 'Work', 'bo@example.com ::: bo@work.example', 'Assistant', '+1 202-555-0102', 'Home', '+1 202-555-0112'],
    [
      'Cy',
      'Other',
      'cy@example.com',
      'Work ::: Pager',
      '+1 202-555-0103 ::: +1 202-555-0113',
      'Main',
      '+1 202-555-0123',
    ],
    ['Di', 'Company', 'sales@company.example', 'Custom label', '+1 202-555-0104', '', ''],
  ];

  it('each value column carries its type column; "type" and "value" are no someone-else words', () => {
    const m = resolveMapping(header, {}, lines);
    expect(m.columns.map((c) => [c.column, c.type, c.typeColumn, c.separator])).toEqual([
      ['E-mail 1 - Value', 'email', 'E-mail 1 - Type', ':::'],
      ['Phone 1 - Value', 'phone_number', 'Phone 1 - Type', ':::'],
      // No list in its sampled cells, but the file's lists are joined by ` ::: `, which no phone holds.
      ['Phone 2 - Value', 'phone_number', 'Phone 2 - Type', ':::'],
    ]);
    expect(m.ignored).toEqual(['Name']);
    expect(describeMapping(m)).toContain('"Phone 1 - Value" (lists split on ":::", typed by "Phone 1 - Type")');
  });

  it('hash: per row, values whose type cell says someone else are counted as not_own_by_type and never sent', async () => {
    const path = join(tmp, 'google.csv');
    const csv = [header, ...lines].map((r) => r.map((c) => (c.includes(',') ? `"${c}"` : c)).join(',')).join('\n');
    writeFileSync(path, `${csv}\n`);
    const out = join(tmp, 'google.jsonl');
    const r = await runCli(['hash', path, '--workers', '0', '--json', '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      summary: { rejects: Record<string, { count: number; lines: number[] }> };
      hints: string[];
    };
    expect(doc.summary.rejects.not_own_by_type).toEqual({ count: 4, lines: [2, 3, 4, 5] });
    const sent = (await import('node:fs')).readFileSync(out, 'utf8');
    for (const own of ['ann@example.com', 'bo@work.example', 'cy@example.com'].map(hashValue))
      expect(sent).toContain(own);
    for (const own of ['12025550101', '12025550112', '12025550103', '12025550123', '12025550104'].map(hashValue))
      expect(sent).toContain(own);
    for (const other of ['sales@company.example'].map(hashValue)) expect(sent).not.toContain(other);
    for (const other of ['12025550199', '12025550102', '12025550113'].map(hashValue)) expect(sent).not.toContain(other);
    expect(doc.hints.join('\n')).toContain(
      '4 values were not sent because their type cell ("E-mail 1 - Type", "Phone 1 - Type", "Phone 2 - Type") says fax, pager, assistant, company or someone else\'s (not_own_by_type)',
    );
  });

  it('type cells are read in every language', () => {
    const own = [
      '* Mobile',
      'Work',
      'Home',
      'Main',
      'Other',
      'Privat',
      'Geschäftlich',
      'Domicile',
      'Móvil',
      'Celular',
      'Cellulare',
      'Mobiel',
      'Komórkowy',
      'Mobil',
      '携帯',
      'My gym',
    ];
    const other = [
      'Work Fax',
      'Fax',
      'Pager',
      'Assistant',
      'Company',
      'Callback',
      'Assistent',
      'Firma',
      'Télécopie',
      'Asistente',
      'Empresa',
      'Azienda',
      'Bedrijf',
      'Faks',
      'Företag',
      'ファックス',
      'Manager',
    ];
    expect(own.filter(typeSaysSomeoneElse)).toEqual([]);
    expect(other.filter((c) => !typeSaysSomeoneElse(c))).toEqual([]);
  });
});

describe('spreadsheet numbers are phone-shaped', () => {
  it('a column of lists holding spreadsheet numbers is split, and read as phones', () => {
    const cells = ['4915134117294.0; +49 30 901820', '4,91512E+12; 030 901821', '9.18142423991e+11', '+49 30 901822'];
    const m = resolveMapping(
      ['Telefon', 'Land'],
      {},
      cells.map((c) => [c, 'DE']),
    );
    expect(m.columns.map((c) => [c.column, c.separator])).toEqual([['Telefon', ';']]);
  });
});

describe('hints name every loss with its column and fix', () => {
  it('a column of phones not clearly valid, whatever its name, is said with the --map that reads it', () => {
    const m = resolveMapping(
      ['Email', 'Work'],
      {},
      [1, 2, 3, 4].map((i) => [`a${i}@example.com`, `555-01${i}0 x12`]),
    );
    expect(summaryHints(createHashSummary(), m)).toContain(
      '"Work" was not read as phone_number: not read by content: its values are not clearly phone numbers (valid for their row\'s country or written with +); if it holds the person\'s own, --map phone_number="Work"',
    );
  });
});

describe("a phone column's evidence of national numbers (digits without + in rows without a country)", () => {
  const evidence = (header: string[], rows: string[][]): (string | undefined)[] =>
    resolveMapping(header, {}, rows).columns.map((c) => c.national);

  it('a leading 0, a spreadsheet number, or bare digits that read as national numbers: the column holds national numbers', () => {
    expect(evidence(['Mobile'], [['0151 48369370'], ['15148369370'], ['+49 30 901820']])).toEqual(['trunk']);
    expect(evidence(['Mobile'], [['(030) 901820'], ['15148369370']])).toEqual(['trunk']);
    expect(evidence(['Phone'], [['4915134117294.0'], ['15148369370'], ['+4930901820']])).toEqual(['spreadsheet']);
    // No valid number read with a calling code (+30 12345678, +1 761…), or read otherwise in the row's country.
    expect(evidence(['Telefon'], [['3012345678'], ['17612345678'], ['15148369370']])).toEqual(['digits']);
    const de = [
      ['15148369370', 'DE'],
      ['17612345678', 'DE'],
      ['15712345678', 'Germany'],
    ];
    expect(evidence(['Phone', 'Country'], de)).toEqual(['digits']);
  });

  it('numbers written with their calling code (SMS tools, ad-platform templates), + or 00 forms: no evidence', () => {
    expect(evidence(['SMS'], [['33612345678'], ['+48 512 345 602'], ['4915134117294']])).toEqual([undefined]);
    const match = [
      ['12025550171', 'US'],
      ['447400123172', 'GB'],
      ['33612345673', 'FR'],
    ];
    expect(evidence(['Phone', 'Country'], match)).toEqual([undefined]);
    expect(evidence(['Phone'], [['+49 (0)30 901820'], ['0049 151 48369370'], ['4915148369370']])).toEqual([undefined]);
  });
});

describe('hints never print a header cell that looks like an identifier value', () => {
  it('a column named by data (a headerless file) is referred to by its number, also in the --map it suggests', () => {
    const phone = 'Mobile 0151 48369370';
    const email = 'ann.lee@example.com';
    // As resolveMapping labels them (labels.ts): the cells that look like data by their number.
    const header = ['Email', phone, email, '4711'];
    const mapping: ColumnMapping = {
      columns: [{ ...headerColumn(header, 0), type: 'email' }],
      auto: true,
      ignored: header.slice(1).map((h, i) => headerLabel(h, i + 1)),
      notUsed: [
        {
          ...headerColumn(header, 1),
          reason: 'its values are not phone numbers (0 of 3 sampled)',
          misfit: 'phone_number',
        },
        {
          ...headerColumn(header, 2),
          reason: 'not read by content: 2 values in the first rows, too few to tell',
          unread: 'email',
        },
        { ...headerColumn(header, 3), reason: 'a generic id column', idLike: true },
      ],
    };
    const hints = summaryHints(createHashSummary(), mapping).join('\n');
    expect(hints).toContain('--map phone_number="<header of column 2>" (that header cell looks like data');
    expect(hints).toContain('--map email="<header of column 3>"');
    expect(hints).not.toMatch(/48369370|ann\.lee/);
    // A name that is no value is quoted as it is.
    expect(hints).toContain('--map service_id="4711"');
  });
});
