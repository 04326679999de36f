// Deterministic synthetic CRM exports (seeded PRNG; every value is obviously fake: example.* domains,
// fictional phone ranges where libphonenumber-js accepts them).
//
//   node test/bench/generate.js                       1M rows (email + phone) -> test/bench/data/crm-1000000.csv
//   node test/bench/generate.js --rows 10000000       10M rows -> test/bench/data/crm-10000000.csv
//   node test/bench/generate.js --kind email          email-only rows -> test/bench/data/crm-email-1000000.csv
//   node test/bench/generate.js --fixtures            the committed test fixtures in fixtures/
//   options: --seed N, --out FILE
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
// The sandbox's seeded PRNG (the bench builds dist first).
import { mulberry32 } from '../../dist/sandbox/faults.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}

const FIRST = [
  'alex',
  'maria',
  'john',
  'li',
  'fatima',
  'noah',
  'emma',
  'raj',
  'sofia',
  'lukas',
  'chloe',
  'amit',
  'hannah',
  'omar',
  'lea',
  'priya',
  'james',
  'camille',
  'jonas',
  'ananya',
];
const LAST = [
  'smith',
  'garcia',
  'muller',
  'martin',
  'sharma',
  'brown',
  'dubois',
  'schmidt',
  'patel',
  'jones',
  'bernard',
  'fischer',
  'kumar',
  'taylor',
  'leroy',
  'weber',
  'singh',
  'wilson',
  'moreau',
  'wagner',
];
const DOMAINS = ['example.com', 'example.org', 'example.net', 'mail.example.com', 'example.co.uk'];
const US_AREA = [201, 202, 212, 213, 303, 305, 312, 404, 415, 503, 512, 617, 646, 702, 713, 718, 801, 917, 949, 971];

function makeGen(rand) {
  const int = (n) => Math.floor(rand() * n);
  const pick = (list) => list[int(list.length)];
  const digits = (n) => {
    let s = '';
    for (let i = 0; i < n; i++) s += String(int(10));
    return s;
  };
  return { int, pick, digits };
}

/**
 * A phone number for `country` in a random written form. `fiction`: stay in ranges reserved for
 * drama/fiction where libphonenumber-js still says valid (US 555-01xx, GB 020 7946 0xxx, FR 01 99 00).
 */
function phoneFor(g, country, fiction) {
  const { int, pick, digits } = g;
  switch (country) {
    case 'US': {
      const area = pick(US_AREA);
      const exchange = fiction ? '555' : String(200 + int(800));
      const line = fiction ? `01${digits(2)}` : digits(4);
      return pick([
        `(${area}) ${exchange}-${line}`,
        `${area}-${exchange}-${line}`,
        `${area}.${exchange}.${line}`,
        `+1 ${area} ${exchange} ${line}`,
        `+1${area}${exchange}${line}`,
        `1-${area}-${exchange}-${line}`,
        `(${area}) ${exchange}-${line} x${digits(3)}`,
      ]);
    }
    case 'GB': {
      if (fiction || int(2) === 0) {
        const local = `7946 0${digits(3)}`;
        return pick([`020 ${local}`, `+44 20 ${local}`, `+44 (0)20 ${local}`, `0044 20 ${local}`, `(020) ${local}`]);
      }
      const m = `7${pick(['400', '500', '700', '800', '900', '123', '345'])}${digits(6)}`;
      return pick([`0${m.slice(0, 4)} ${m.slice(4)}`, `+44 ${m.slice(0, 4)} ${m.slice(4)}`, `+44${m}`, `+44 (0)${m}`]);
    }
    case 'DE': {
      if (int(2) === 0) {
        const m = `1${pick(['51', '52', '60', '70', '71', '72', '76'])}${digits(8)}`;
        return pick([
          `0${m.slice(0, 3)} ${m.slice(3)}`,
          `+49 ${m.slice(0, 3)} ${m.slice(3)}`,
          `+49${m}`,
          `0${m}`,
          `+49 (0)${m.slice(0, 3)} ${m.slice(3)}`,
        ]);
      }
      const city = pick(['30', '40', '89', '69', '221']);
      const local = digits(city.length === 2 ? 8 : 7);
      return pick([`0${city} ${local}`, `+49 ${city} ${local}`, `0${city}/${local}`, `+49 (0)${city} ${local}`]);
    }
    case 'FR': {
      const n =
        fiction || int(3) === 0
          ? pick(['199', '639']) + (fiction ? `0${digits(5)}` : digits(6))
          : `${pick(['6', '7', '1', '4'])}${digits(8)}`;
      const pairs = `0${n}`.match(/../g).join(' ');
      return pick([pairs, `+33 ${n[0]} ${n.slice(1).match(/../g).join(' ')}`, `+33${n}`, `0033 ${n}`, `0${n}`]);
    }
    default: {
      const n = `${pick(['98', '97', '91', '88', '70', '63'])}${digits(8)}`;
      return pick([
        `${n.slice(0, 5)} ${n.slice(5)}`,
        `+91 ${n.slice(0, 5)} ${n.slice(5)}`,
        `+91${n}`,
        `0${n}`,
        `091 ${n}`,
      ]);
    }
  }
}

const COUNTRIES = ['US', 'GB', 'DE', 'FR', 'IN'];

/** Rows of the bench corpus: email, phone (national or international), country, names; a few invalid values. */
async function writeBench(rows, kind, seed, out) {
  const g = makeGen(mulberry32(seed));
  const { int, pick } = g;
  mkdirSync(new URL('./data/', import.meta.url), { recursive: true });
  const stream = createWriteStream(out);
  const header = kind === 'email' ? 'id,first_name,last_name,email\n' : 'id,first_name,last_name,email,phone,country\n';
  stream.write(header);
  let batch = '';
  for (let i = 1; i <= rows; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const r = int(1000);
    let email = `${first}.${last}${i}@${pick(DOMAINS)}`;
    if (r < 5) email = 'not-an-email';
    else if (r < 100) email = email.toUpperCase();
    else if (r < 200) email = `${first}.${last}+crm${int(100)}@${pick(DOMAINS)}`;
    let line = `${i},${first},${last},${email}`;
    if (kind !== 'email') {
      const country = pick(COUNTRIES);
      let phone = phoneFor(g, country, false);
      if (r >= 990) phone = `12${g.digits(3)}`;
      line += `,${phone},${r % 7 === 0 && phone.startsWith('+') ? '' : country}`;
    }
    batch += `${line}\n`;
    if (batch.length > 1 << 20) {
      if (!stream.write(batch)) await once(stream, 'drain');
      batch = '';
    }
  }
  stream.end(batch);
  await once(stream, 'close');
}

const isValid = (phone, country) => parsePhoneNumberFromString(phone, country || undefined)?.isValid() === true;

/** The committed ~3000-row CRM export: realistic mess, every value synthetic. */
function crmFixture(seed) {
  const g = makeGen(mulberry32(seed));
  const { int, pick } = g;
  const lines = ['customer_id,first_name,last_name,Email,work_email,Phone,Country,signup_date'];
  const rows = [];
  for (let i = 1; i <= 2950; i++) {
    const first = pick(FIRST);
    const last = pick(LAST);
    const r = int(100);
    let email = `${first}.${last}${i}@${pick(DOMAINS)}`;
    if (r < 10)
      email = `${first[0].toUpperCase()}${first.slice(1)}.${last.toUpperCase()}${i}@${pick(DOMAINS).toUpperCase()}`;
    else if (r < 18) email = `${first}.${last}+promo${int(9)}@${pick(DOMAINS)}`;
    else if (r < 22) email = `\u00a0${email} `;
    else if (r < 25)
      email = pick(['n/a', 'unknown', `${first}.${last}@`, `${first} ${last}@example.com`, `${first}@localhost`]);
    else if (r < 30) email = '';
    else if (r < 32) email = `\ufeff${email}`;
    const work = int(4) === 0 ? `${first[0]}.${last}@corp.example.net` : '';
    const country = pick(COUNTRIES);
    let phone;
    do phone = phoneFor(g, country, true);
    while (!isValid(phone, country));
    let countryCell = pick([country, country, country, country.toLowerCase(), country === 'GB' ? 'UK' : country]);
    const p = int(100);
    if (p < 6) phone = pick(['12345', '555-CALL', '000000000', '+1 000 000 0000']);
    else if (p < 12) phone = '';
    else if (p < 16 && !phone.startsWith('+')) countryCell = '';
    else if (p < 18) countryCell = 'ZZ';
    const id = `C${String(100000 + i)}`;
    const date = `2024-${String(1 + int(12)).padStart(2, '0')}-${String(1 + int(28)).padStart(2, '0')}`;
    const cells = [id, first, last, email, work, phone, countryCell, date].map((c) =>
      /[",\n]/.test(c) ? `"${c.replaceAll('"', '""')}"` : c,
    );
    rows.push(cells.join(','));
  }
  // Some exports hold pre-hashed values and exact duplicate rows.
  rows.push('C199001,hashed,user,973dfe463ec85785f5f95af5ba3906eedb2d931c24e69824a89ea65dba4e813b,,,,2024-01-01');
  for (let d = 0; d < 40; d++) rows.push(rows[int(rows.length)]);
  lines.push(...rows);
  return `\ufeff${lines.join('\r\n')}\r\n`;
}

function writeFixtures(seed) {
  const dir = new URL('../../fixtures/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const put = (name, content) => writeFileSync(new URL(name, dir), content);
  put('crm-export.csv', crmFixture(seed));
  const small =
    'email,phone,country\njane.doe@example.com,+1 202 555 0143,US\nJOHN.ROE+news@Example.ORG,020 7946 0321,GB\n';
  put('semicolon.csv', small.replaceAll(',', ';'));
  put('tab.tsv', small.replaceAll(',', '\t'));
  put('pipe.csv', small.replaceAll(',', '|'));
  put('crlf-bom.csv', `\ufeff${small.replaceAll('\n', '\r\n')}`);
  put('utf16le.csv', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(small, 'utf16le')]));
  const be = Buffer.from(small, 'utf16le');
  be.swap16();
  put('utf16be.csv', Buffer.concat([Buffer.from([0xfe, 0xff]), be]));
  put('small.csv.gz', gzipSync(Buffer.from(small)));
  put(
    'quoted.csv',
    'email,note,phone,country\n' +
      '"a.quote@example.com","multi\nline, with comma",+1 202 555 0111,US\n' +
      'b.quote@example.com,"say ""hi""",+44 20 7946 0111,GB\n' +
      '"c.quote@example.com","two\r\nlines\nthree",+33 1 99 00 12 34,FR\n' +
      'd.quote@example.com,plain,+49 30 12345678,DE\n',
  );
  put(
    'malformed.csv',
    'email,phone,country\n' +
      'ok1@example.com,+1 202 555 0101,US\n' +
      'too,many,fields,here\n' +
      'ok2@example.com,+1 202 555 0102,US\n' +
      'short-row@example.com\n' +
      '\n' +
      '"unterminated@example.com,+1 202 555 0103,US\n' +
      'ok3@example.com,+1 202 555 0104,US\n' +
      '"bad"quote@example.com,+1 202 555 0105,US\n' +
      'ok4@example.com,+1 202 555 0106,US\n',
  );
  put('header-only.csv', 'email,phone,country\n');
  put('empty.csv', '');
  put('no-identifiers.csv', 'first_name,last_name\nJane,Doe\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const seed = Number(arg('seed', '20240501'));
  if (process.argv.includes('--fixtures')) {
    writeFixtures(seed);
    console.log('fixtures written');
  } else {
    const rows = Number(arg('rows', '1000000'));
    const kind = arg('kind', 'full');
    const out = arg('out', `${ROOT}test/bench/data/crm-${kind === 'email' ? 'email-' : ''}${rows}.csv`);
    const started = Date.now();
    await writeBench(rows, kind, seed, out);
    console.log(`${out}: ${rows} rows in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}
