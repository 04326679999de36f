// Benchmark of hostile inputs (`npm run bench -- hostile`, or `node test/bench/hostile.js` after a
// build): one unbroken line of 100 and 200 MB, and a one-line gzip stream of 10 GB. Inputs are
// generated on the fly as streams (nothing on disk); each case runs in its own process (peak RSS =
// that process's maxRSS, workers included) beside a peer in the same run:
//
// - a line of N MB against a normal email file of the same N MB (rows of `userK@example.com`),
//   both through `audience-kit hash - --workers 2` (the CLI entry in-process, stdin the stream):
//   time, CPU (all threads) and RSS ratios, and how CPU grows from the smallest size to the largest;
// - the 10 GB gzip against only inflating the same stream (hashing 10 GB of rows would take an
//   hour): the reader's cost on top of gunzip, and peak RSS within the documented 256 MB.
//
//   options: --gzip-gb N (default 10; 0 skips it), --line-mb A,B (default 100,200)
import { PassThrough, Readable, Writable } from 'node:stream';
import { constants, createGunzip, gzipSync } from 'node:zlib';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { fmt, measure, opt, ROOT } from './common.js';

const MiB = 1024 * 1024;
const BLOCK = 64 * MiB;
const RSS_BOUND_MB = 256;

/** `size` bytes of rows of distinct valid emails, in pieces of about 1 MiB, after `email\n`. */
function* normalRows(size) {
  yield Buffer.from('email\n');
  let k = 0;
  for (let left = size; left > 0;) {
    const rows = [];
    let bytes = 0;
    while (bytes < Math.min(MiB, left)) {
      const row = `user${k++}@example.com\n`;
      rows.push(row);
      bytes += row.length;
    }
    left -= bytes;
    yield Buffer.from(rows.join(''));
  }
}

/** `email\n`, then `size` bytes of one line, then a normal row; as gzip members with `gzip`. */
function* oneLine(size, gzip) {
  const head = Buffer.from('email\n');
  const tail = Buffer.from('@example.com\nz@example.com\n');
  const unit = gzip ? BLOCK : MiB;
  const piece = gzip
    ? gzipSync(Buffer.alloc(BLOCK, 'x'), { level: constants.Z_BEST_COMPRESSION })
    : Buffer.alloc(MiB, 'x');
  yield gzip ? gzipSync(head) : head;
  for (let left = size; left > 0; left -= unit) yield piece;
  yield gzip ? gzipSync(tail) : tail;
}

/**
 * Child process: one kind of input through `audience-kit hash - --json` (the CLI's entry run
 * in-process with the generated stream as its stdin, digests to /dev/null), or only inflated
 * (`inflate`); prints the summary.
 */
async function child(kind, size) {
  if (kind === 'inflate') {
    const t = timer();
    let n = 0;
    for await (const b of Readable.from(oneLine(size, true)).pipe(createGunzip())) n += b.length;
    process.stdout.write(JSON.stringify({ bytes: n, ...t() }));
    return;
  }
  const { main } = await import(`${ROOT}dist/cli/main.js`);
  const { processContext } = await import(`${ROOT}dist/cli/context.js`);
  let out = '';
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      out += chunk;
      done();
    },
  });
  const stdin = Readable.from(kind === 'normal' ? normalRows(size) : oneLine(size, kind === 'gzip'));
  const ctx = { ...processContext(), stdin, stdout, stderr: new PassThrough().resume() };
  const args = ['hash', '-', '--json', '--format', 'jsonl', '--workers', '2', '-o', '/dev/null'];
  const t = timer();
  const code = await main(args, ctx);
  const took = t();
  if (code !== 0) throw new Error(`exit ${code}: ${out}`);
  const summary = JSON.parse(out);
  process.stdout.write(JSON.stringify({ users: summary.summary.users, malformed: summary.summary.malformed, ...took }));
}

/** Wall and CPU seconds (all threads) from now: the child's own work, without start-up and imports. */
function timer() {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  return () => {
    const c = process.cpuUsage(cpu);
    return { seconds: (performance.now() - wall) / 1000, cpu: (c.user + c.system) / 1e6 };
  };
}

const self = fileURLToPath(import.meta.url);
/** A child's figures: its own wall and CPU seconds, the process's peak RSS, and what it printed. */
async function run(kind, size) {
  const r = await measure([self, '--child', kind, '--size', String(size)], { captureStdout: true });
  const out = JSON.parse(r.stdout);
  return { ...out, rssMb: r.rssMb, stdout: r.stdout };
}
const secs = (r) => `${r.seconds.toFixed(2)} s (CPU ${r.cpu.toFixed(2)} s), ${fmt(r.rssMb)} MB`;

/** The one bad row a hostile case must end with: the over-long record, counted, then the next row. */
function checkBadRow(r) {
  const { users, malformed } = r;
  const ok = users === 1 && malformed.count === 1 && malformed.reasons.record_too_long === 1;
  return ok ? 'record_too_long, next row kept' : `WRONG ${r.stdout}`;
}

async function lines(sizes) {
  const cpu = { line: [], normal: [] };
  for (const mb of sizes) {
    const line = await run('line', mb * MiB);
    const normal = await run('normal', mb * MiB);
    cpu.line.push(line.cpu);
    cpu.normal.push(normal.cpu);
    const verdict = checkBadRow(line);
    console.log(
      `one line of ${mb} MB: ${secs(line)} | normal file of ${mb} MB (${fmt(normal.users)} users): ${secs(normal)}` +
        ` | time ratio ${(line.seconds / normal.seconds).toFixed(3)}, CPU ratio ${(line.cpu / normal.cpu).toFixed(3)}, RSS ratio ${(line.rssMb / normal.rssMb).toFixed(2)} | ${verdict}`,
    );
    if (verdict.startsWith('WRONG') || line.rssMb > RSS_BOUND_MB) process.exitCode = 1;
  }
  if (sizes.length >= 2) {
    // Quadratic reading would show as (size ratio)², linear as at most the size ratio (fixed costs make it less).
    const growth = (xs) => (xs.at(-1) / xs[0]).toFixed(2);
    const k = sizes.at(-1) / sizes[0];
    console.log(
      `CPU seconds, ${sizes.at(-1)} MB / ${sizes[0]} MB (linear: at most ${k.toFixed(2)}, quadratic: ${(k * k).toFixed(2)}): one line ${growth(cpu.line)}, normal file ${growth(cpu.normal)}`,
    );
  }
}

async function gzip(gb) {
  const size = gb * 1024 * MiB;
  const work = await run('gzip', size);
  const peer = await run('inflate', size);
  const verdict = checkBadRow(work);
  console.log(
    `one-line gzip stream of ${gb} GB: ${secs(work)} | inflating it only: ${secs(peer)}` +
      ` | time ratio ${(work.seconds / peer.seconds).toFixed(2)}, CPU ratio ${(work.cpu / peer.cpu).toFixed(2)} | ${fmt((gb * 1024) / work.seconds)} MB/s | ${verdict}` +
      ` | peak RSS ${work.rssMb <= RSS_BOUND_MB ? 'within' : 'OVER'} ${RSS_BOUND_MB} MB`,
  );
  if (verdict.startsWith('WRONG') || work.rssMb > RSS_BOUND_MB) process.exitCode = 1;
}

async function main() {
  console.log(
    `hostile inputs (${availableParallelism()} cores; audience-kit hash - --workers 2; each case in its own process)`,
  );
  await lines(opt('line-mb', '100,200').split(',').map(Number));
  const gb = Number(opt('gzip-gb', '10'));
  if (gb > 0) await gzip(gb);
}

const i = process.argv.indexOf('--child');
if (i === -1) await main();
else await child(process.argv[i + 1], Number(opt('size', '0')));
