// Benchmark of `audience-kit hash` (run through `npm run bench`, or `node test/bench/hash.js` after a build).
//
//   node test/bench/hash.js                      1M rows: email+phone and email-only throughput and peak RSS,
//                                           the straightforward pipeline on the same file, the ratio,
//                                           and the differential phone check (0 mismatches required)
//   node test/bench/hash.js --rows 10000000      the same sizes check on 10M rows (RSS must stay flat)
//   options: --workers N, --skip-baseline, --skip-diff
//
// Each measured pipeline runs in its own process; peak RSS is that process's maxRSS (worker threads
// included), reported by a tiny preload, so no external tool is needed.
import { existsSync, statSync, createReadStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import Papa from 'papaparse';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { BIN, dataFile, flag, fmt, measure, opt, ROOT, rows } from './common.js';

/** Papaparse streaming over `file`: `onRow(fields, header)` for every data row. */
function eachRow(file, onRow) {
  let header;
  return new Promise((resolve, reject) => {
    Papa.parse(createReadStream(file), {
      step: ({ data }) => {
        if (header === undefined) header = data;
        else onRow(data, header);
      },
      complete: resolve,
      error: reject,
    });
  });
}

/** The straightforward pipeline, run in a child: papaparse streaming, libphonenumber-js per phone, createHash. */
async function baseline(file) {
  let n = 0;
  const sha = (s) => createHash('sha256').update(s).digest('hex');
  await eachRow(file, (data, header) => {
    const email = data[header.indexOf('email')];
    const phone = data[header.indexOf('phone')];
    const country = data[header.indexOf('country')];
    const user = {};
    const e = email?.trim().toLowerCase();
    if (e && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e)) user.email = [sha(e)];
    if (phone) {
      const p = parsePhoneNumberFromString(phone, country || undefined);
      // Digits only, the default phone form (DEFAULT_PHONE_FORMAT): E.164 without the `+`.
      if (p?.isValid()) user.phone_number = [sha(p.number.slice(1))];
    }
    JSON.stringify(user);
    n++;
  });
  return n;
}

/** Our normalizePhone against libphonenumber-js on every phone of the file. */
async function differential(file) {
  const { normalizePhone } = await import('../../dist/internal.js'); // internal: not in the package root
  let checked = 0;
  let mismatches = 0;
  const examples = [];
  await eachRow(file, (data, header) => {
    const phone = data[header.indexOf('phone')];
    const country = data[header.indexOf('country')] || undefined;
    if (phone === undefined || phone === '') return;
    checked++;
    const lib = parsePhoneNumberFromString(phone, country);
    const libValid = lib?.isValid() === true;
    const ours = normalizePhone(phone, country === undefined ? {} : { country });
    // The default form is digits only: E.164 without the `+`.
    if (ours.ok !== libValid || (ours.ok && ours.value !== lib.number.slice(1))) {
      mismatches++;
      if (examples.length < 5) examples.push({ phone, country, ours, lib: libValid ? lib.number.slice(1) : 'invalid' });
    }
  });
  return { checked, mismatches, examples };
}

const baselineChild = opt('baseline-child', undefined);
if (baselineChild !== undefined) {
  const n = await baseline(baselineChild);
  process.stderr.write(`BASELINE_ROWS=${n}\n`);
  process.exit(0);
}

if (!existsSync(`${ROOT}dist/index.js`)) {
  console.error('build first: npm run build');
  process.exit(1);
}
const workers = opt('workers', undefined);
console.log(
  `machine: ${availableParallelism()} cores, node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const full = dataFile('full');
const sizeMb = statSync(full).size / 1e6;
console.log(`input: ${fmt(rows)} rows (email, phone, country, names), ${sizeMb.toFixed(0)} MB`);
const failures = [];

const hashArgs = (file) => [
  BIN,
  'hash',
  file,
  '--format',
  'jsonl',
  ...(workers === undefined ? [] : ['--workers', workers]),
];
const ours = await measure(hashArgs(full));
const oursRate = rows / ours.seconds;
console.log(
  `audience-kit hash, email+phone: ${ours.seconds.toFixed(2)} s, ${fmt(oursRate)} rows/s, peak RSS ${ours.rssMb.toFixed(0)} MB`,
);
if (rows <= 1_000_000 || flag('email-only')) {
  const emailFile = dataFile('email');
  const emailOnly = await measure(hashArgs(emailFile));
  console.log(
    `audience-kit hash, email only:  ${emailOnly.seconds.toFixed(2)} s, ${fmt(rows / emailOnly.seconds)} rows/s, peak RSS ${emailOnly.rssMb.toFixed(0)} MB`,
  );
}
if (!flag('skip-baseline') && rows <= 1_000_000) {
  const base = await measure([fileURLToPath(import.meta.url), '--baseline-child', full]);
  const baseRate = rows / base.seconds;
  console.log(
    `straightforward pipeline (papaparse + libphonenumber-js isValid() + createHash, 1 thread): ${base.seconds.toFixed(2)} s, ${fmt(baseRate)} rows/s, peak RSS ${base.rssMb.toFixed(0)} MB`,
  );
  console.log(`ratio: ${(oursRate / baseRate).toFixed(1)}x`);
}
if (!flag('skip-diff') && rows <= 1_000_000) {
  const diff = await differential(full);
  console.log(`differential phone check: ${fmt(diff.checked)} phones, ${diff.mismatches} mismatches`);
  for (const e of diff.examples) console.log(`  mismatch: ${JSON.stringify(e)}`);
  if (diff.mismatches > 0) failures.push(`differential phone check: ${diff.mismatches} mismatches`);
}
if (ours.rssMb > 256) failures.push('peak RSS above the 256 MB target');
if (failures.length > 0) {
  console.log(`\nFAILED: ${failures.join('; ')}`);
  process.exitCode = 1;
}
