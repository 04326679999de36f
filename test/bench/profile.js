// Where the CPU of `audience-kit hash` goes, per thread and per stage: `npm run bench -- profile`, or
// `node test/bench/profile.js [--kind full|email] [--workers N] [--keep DIR]` after a build.
//
// It runs `hash FILE --format jsonl` once under V8's sampling profiler (`--cpu-prof`, which writes one
// profile per thread: the main thread and each hashing worker; nothing in the package changes, so
// it costs nothing when not profiling) and adds up each thread's self time by stage, from the
// function and module of each sample: read, split, decode, parse, normalize, hash, serialize,
// transfer, write, summary, garbage collection, start-up. Times are sampled CPU time of the
// JavaScript thread (GC helper threads and the kernel's time are not in them); `/usr/bin/time`
// gives the totals. `--top N` lists the N hottest functions of each thread as well.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataFile, hashCommand, measure, opt } from './common.js';

/** Stage of a sampled function: first matching rule of its module (url) and name wins. */
const STAGES = [
  ['gc', (url, name) => name === '(garbage collector)'],
  ['idle', (url, name) => name === '(idle)' || name === '(program)'],
  ['read', (url, name) => /internal\/fs\/|node:fs$/.test(url) || (url === '' && /^(read|fstat|open|close)/.test(name))],
  ['decode', (url, name) => /internal\/encoding$/.test(url) || name === 'decodeChunk' || name === 'isUtf8'],
  [
    'parse',
    (url, name) =>
      /papaparse/.test(url) ||
      (/dist\/ingest\/csv(-text)?\.js$/.test(url) &&
        /visitCsvChunk|visitQuoted|visitUnquoted|splitLine|record|countLf/.test(name)),
  ],
  ['hash', (url) => /internal\/crypto\/(hash|util)$/.test(url) || /dist\/util\/sha256\.js$/.test(url)],
  [
    'serialize',
    (url, name) =>
      /dist\/identifiers\/serialize\.js$/.test(url) ||
      (/dist\/hashing\/chunk\.js$/.test(url) && /bytes|add|flush/.test(name)) ||
      (/node:buffer$/.test(url) && name === 'write'),
  ],
  // Regular expressions and array lengths of the workers are the normalizers' (platform/identifiers/rules.ts,
  // phone*.ts, identifiers/normalize.ts, countries.ts).
  [
    'normalize',
    (url, name) =>
      /dist\/(platform\/)?identifiers\/|libphonenumber-js|i18n-iso-countries/.test(url) ||
      /^RegExp:|^set length$/.test(name),
  ],
  ['rows', (url) => /dist\/hashing\/chunk\.js$/.test(url)],
  [
    'transfer',
    (url, name) =>
      /dist\/hashing\/(worker|pool)\.js$/.test(url) ||
      /postMessage|structuredClone|emitMessage|drainMessagePort/.test(name) ||
      /internal\/worker/.test(url),
  ],
  ['split', (url) => /dist\/ingest\/(records|csv)\.js$/.test(url)],
  ['summary', (url) => /dist\/hashing\/(summary|pipeline)\.js$/.test(url)],
  [
    'write',
    (url, name) =>
      /internal\/streams|node:stream|dist\/cli\/commands\/hash\.js$/.test(url) ||
      /^write(Buffer|Utf8String|v)/.test(name),
  ],
  [
    'start-up',
    (url, name) =>
      /internal\/modules|internal\/bootstrap|yargs|cliui|string-width|wrap-ansi|emoji-regex|zod/.test(url) ||
      /^compile|^internalModuleStat$/.test(name),
  ],
];
const ORDER = [
  'read',
  'split',
  'decode',
  'parse',
  'normalize',
  'hash',
  'serialize',
  'rows',
  'transfer',
  'write',
  'summary',
  'gc',
  'start-up',
  'other',
  'idle',
];

function stageOf(url, name) {
  for (const [stage, test] of STAGES) if (test(url, name)) return stage;
  return 'other';
}

/** Self time (ms) per stage and per function of one .cpuprofile. */
function breakdown(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const perSample = (profile.endTime - profile.startTime) / 1000 / profile.samples.length;
  const stages = new Map();
  const functions = new Map();
  for (const id of profile.samples) {
    const { url, functionName, lineNumber } = byId.get(id);
    const name = functionName || '(anonymous)';
    const stage = stageOf(url.replace(/^file:\/\//, ''), name);
    stages.set(stage, (stages.get(stage) ?? 0) + perSample);
    const key = `${stage.padEnd(9)} ${name} ${url.replace(/.*\/(dist|node_modules)\//, '$1/')}:${lineNumber + 1}`;
    functions.set(key, (functions.get(key) ?? 0) + perSample);
  }
  return { wallMs: (profile.endTime - profile.startTime) / 1000, stages, functions };
}

const kind = opt('kind', 'full');
const workers = opt('workers', '2');
const top = Number(opt('top', '0'));
const file = dataFile(kind);
const dir = opt('keep', undefined) ?? mkdtempSync(join(tmpdir(), 'ak-profile-'));
console.log(
  `machine: ${availableParallelism()} cores, node ${process.version}, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const run = await measure(['--cpu-prof', '--cpu-prof-dir', dir, ...hashCommand(file, workers)]);
console.log(
  `hash ${file.replace(/.*\//, '')} --workers ${workers} under the profiler: ${run.seconds.toFixed(2)} s, ${run.cpuSeconds.toFixed(2)} CPU-s (all threads, kernel included)`,
);
const threads = readdirSync(dir)
  .filter((f) => f.endsWith('.cpuprofile'))
  .sort()
  .map((f, i) => ({
    label: i === 0 ? 'main' : `worker ${i}`,
    ...breakdown(JSON.parse(readFileSync(join(dir, f), 'utf8'))),
  }));
const cell = (ms) => (ms === undefined || ms < 0.5 ? '' : `${Math.round(ms)}`).padStart(9);
console.log(
  `\nself time by stage, ms (sampled CPU of each JavaScript thread)\n${'stage'.padEnd(10)}${threads.map((t) => t.label.padStart(9)).join('')}${'busy %'.padStart(9)}`,
);
const busy = threads.map((t) => t.wallMs - (t.stages.get('idle') ?? 0));
const all = busy.reduce((a, b) => a + b, 0);
for (const stage of ORDER) {
  const row = threads.map((t) => t.stages.get(stage));
  if (row.every((ms) => ms === undefined)) continue;
  const sum = stage === 'idle' ? undefined : row.reduce((a, b) => a + (b ?? 0), 0);
  console.log(
    `${stage.padEnd(10)}${row.map(cell).join('')}${(sum === undefined ? '' : ((100 * sum) / all).toFixed(1)).padStart(9)}`,
  );
}
console.log(`${'busy'.padEnd(10)}${busy.map(cell).join('')}`);
for (const t of top > 0 ? threads : []) {
  console.log(`\n${t.label}: hottest functions (self ms)`);
  for (const [k, ms] of [...t.functions].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${cell(ms)}  ${k}`);
}
if (opt('keep', undefined) === undefined) rmSync(dir, { recursive: true, force: true });
else console.log(`\nprofiles kept in ${dir} (open them in Chrome DevTools' Performance panel)`);
