// Helpers shared by the benchmarks: argument parsing, the generated data files, and running a
// measured process (wall time, peak RSS read by a tiny preload, stdout and stderr).
import { spawn, spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, existsSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = `${ROOT}bin/audience-kit.js`;
/** The node arguments of `audience-kit hash FILE --format jsonl --workers N`, then `extra`. */
export const hashCommand = (file, workers, extra = []) => [
  BIN,
  'hash',
  file,
  '--format',
  'jsonl',
  '--workers',
  String(workers),
  ...extra,
];

const args = process.argv.slice(2);
export const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i === -1 ? fallback : args[i + 1];
};
export const flag = (name) => args.includes(`--${name}`);
export const rows = Number(opt('rows', '1000000'));
export const fmt = (n) => Math.round(n).toLocaleString('en-US');

const RSS_PRELOAD =
  "data:text/javascript,process.on('exit',()=>{const r=process.resourceUsage();process.stderr.write('\\nBENCH_MAX_RSS_KB='+r.maxRSS+' BENCH_CPU_US='+(r.userCPUTime+r.systemCPUTime)+'\\n')})";

/** The generated corpus of `rows` rows (`kind` email: email-only), made on first use. */
export function dataFile(kind = 'full') {
  const file = `${ROOT}test/bench/data/crm-${kind === 'email' ? 'email-' : ''}${rows}.csv`;
  if (!existsSync(file)) {
    console.log(`generating ${file} ...`);
    const r = spawnSync(process.execPath, [`${ROOT}test/bench/generate.js`, '--rows', String(rows), '--kind', kind], {
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error('generation failed');
  }
  return file;
}

/**
 * Write the header and data rows [from, to) of `source` (a generated file: one line a row) to `out`,
 * unless `out` exists; throws, writing nothing, when `source` has fewer rows.
 */
export async function slice(source, out, from, to) {
  if (existsSync(out)) return out;
  const w = createWriteStream(out);
  let i = -1;
  let batch = '';
  for await (const line of createInterface({ input: createReadStream(source), crlfDelay: Infinity })) {
    if (i === -1 || (i >= from && i < to)) batch += `${line}\n`;
    if (batch.length > 1 << 20) {
      if (!w.write(batch)) await once(w, 'drain');
      batch = '';
    }
    if (++i >= to) break;
  }
  w.end(batch);
  await once(w, 'close');
  if (i < to) {
    rmSync(out, { force: true });
    throw new Error(`${source} has ${i} rows, fewer than ${to}`);
  }
  return out;
}

/**
 * AK_BENCH_CPU_PROF=DIR: every process `measure` runs writes V8's CPU profiles (one file a thread,
 * named by process id and thread) into DIR, for where a benchmark's time goes (profile.js does it for
 * `hash`). Not the sandboxes the benches start. The profiler costs CPU, wall time and memory: the
 * figures of a profiled run are not the bench's, and its bounds may fail for it.
 */
const CPU_PROF = process.env.AK_BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.AK_BENCH_CPU_PROF] : [];

/**
 * Run node with `argv`; wall time, CPU seconds and peak RSS (the process's, worker threads included) and
 * stderr, and stdout with `captureStdout` (hash output is discarded: it can exceed a string).
 */
export function measure(argv, { env = {}, captureStdout = false } = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, [...CPU_PROF, '--import', RSS_PRELOAD, ...argv], {
      stdio: ['ignore', captureStdout ? 'pipe' : 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (b) => (stdout += b));
    child.stderr.on('data', (b) => (stderr += b));
    child.on('error', reject);
    child.on('close', (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const rss = /BENCH_MAX_RSS_KB=(\d+) BENCH_CPU_US=(\d+)/.exec(stderr);
      if (code !== 0) return reject(new Error(`exit ${code}: ${stderr.slice(0, 2000)}`));
      const [rssMb, cpuSeconds] = rss ? [Number(rss[1]) / 1024, Number(rss[2]) / 1e6] : [NaN, NaN];
      resolve({ seconds, rssMb, cpuSeconds, stdout, stderr });
    });
  });
}
