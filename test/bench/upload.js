// Benchmark of `audience-kit upload` (run through `npm run bench`, or `node test/bench/upload.js` after a build).
//
//   node test/bench/upload.js                  1M generated rows: `hash` rows/s vs `upload` rows/s to a sandbox
//                                         running in its own process on this machine (target >= 90%),
//                                         upload peak RSS (target <= 300 MB), request count vs the bound, CPU seconds
//                                         of hash, upload and the sandbox process (answering the upload);
//                                         then a scaled-down rate policy run (limiter holds the cap, 0 x 429)
//   options: --rows N, --concurrency N (upload), --sweep 1,2,4,8 (concurrency sweep on the same file),
//            --latency MS (the sandbox answers each user batch MS later, like a distant platform),
//            --skip-hash, --skip-rate
//
// Peak RSS is the upload process's maxRSS (worker threads included), read by a tiny preload.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, dataFile, flag, fmt, measure, opt, ROOT, rows } from './common.js';

const SANDBOX = `${ROOT}dist/sandbox/index.js`; // the sandbox's entry (audience-kit/sandbox)
const LIBRARY = `${ROOT}dist/index.js`;

/**
 * The sandbox in its own process (a fair peer: it does not share the uploader's event loop).
 * Protocol on stdin/stdout: it prints one JSON line with its URL, credentials and a fresh
 * audience; each `size <id>` line on stdin is answered with the audience size; closing stdin stops it.
 */
function startSandboxProcess(options = {}) {
  const script = `
    import { startSandbox } from ${JSON.stringify(SANDBOX)};
    import { createInterface } from 'node:readline';
    const s = await startSandbox(${JSON.stringify({ seed: 1, ...options })});
    const newAudience = () => s.state.createCustomAudience(s.accounts.primary, 'bench').id;
    console.log(JSON.stringify({ adsBaseUrl: s.adsBaseUrl, credentials: s.credentials, account: s.accounts.primary, audience: newAudience() }));
    for await (const line of createInterface({ input: process.stdin })) {
      const [cmd, id] = line.split(' ');
      if (cmd === 'size') {
        const log = s.state.requests.filter((r) => r.method === 'POST' && r.path.includes('/' + id + '/'));
        const cpu = process.cpuUsage();
        console.log(JSON.stringify({ size: s.state.audienceSize(id), requests: log.length, tooMany: log.filter((r) => r.status === 429).length, cpuSeconds: (cpu.user + cpu.system) / 1e6 }));
      } else if (cmd === 'new') console.log(JSON.stringify({ audience: newAudience() }));
      else if (cmd === 'cpu') {
        const cpu = process.cpuUsage();
        console.log(JSON.stringify({ cpuSeconds: (cpu.user + cpu.system) / 1e6 }));
      }
    }
    await s.close();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buffer = '';
  const waiting = [];
  child.stdout.on('data', (b) => {
    buffer += b;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      waiting.shift()?.(JSON.parse(line));
    }
  });
  const next = () => new Promise((resolve) => waiting.push(resolve));
  const ask = (line) => {
    const p = next();
    child.stdin.write(`${line}\n`);
    return p;
  };
  return { ready: next(), ask, stop: () => child.stdin.end() };
}

console.log(
  `machine: ${availableParallelism()} cores, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
const file = dataFile();
const sizeMb = statSync(file).size / 1e6;
console.log(`input: ${fmt(rows)} rows (email, phone, country, names), ${sizeMb.toFixed(0)} MB`);

const latency = opt('latency', undefined);
const sandbox = startSandboxProcess(latency === undefined ? {} : { faults: `slow=${latency}%1` });
if (latency !== undefined) console.log(`sandbox latency: ${latency} ms per user batch`);
const info = await sandbox.ready;
// Removed however the bench ends.
const configDir = mkdtempSync(join(tmpdir(), 'ak-bench-config-'));
process.on('exit', () => rmSync(configDir, { recursive: true, force: true }));
const env = {
  AUDIENCE_KIT_CONFIG_DIR: configDir,
  AUDIENCE_KIT_ADS_BASE_URL: info.adsBaseUrl,
  AUDIENCE_KIT_CONSUMER_KEY: info.credentials.consumerKey,
  AUDIENCE_KIT_CONSUMER_SECRET: info.credentials.consumerSecret,
  AUDIENCE_KIT_ACCESS_TOKEN: info.credentials.accessToken,
  AUDIENCE_KIT_ACCESS_TOKEN_SECRET: info.credentials.accessTokenSecret,
};

async function upload(concurrency) {
  const { audience } = concurrency === undefined ? { audience: info.audience } : await sandbox.ask('new');
  const stateDir = mkdtempSync(join(tmpdir(), 'ak-bench-state-'));
  const argv = [
    BIN,
    'upload',
    file,
    '--account',
    info.account,
    '--audience',
    audience,
    '--quiet',
    '--json',
    '--state-dir',
    stateDir,
  ];
  const c = concurrency ?? opt('concurrency', undefined);
  if (c !== undefined) argv.push('--concurrency', String(c));
  const before = await sandbox.ask('cpu');
  const m = await measure(argv, { env, captureStdout: true });
  rmSync(stateDir, { recursive: true, force: true });
  const report = JSON.parse(m.stdout);
  const server = await sandbox.ask(`size ${audience}`);
  return { ...m, report, server, sandboxCpu: server.cpuSeconds - before.cpuSeconds };
}

// Warm the page cache so neither measured run pays the first read.
spawnSync('cat', [file], { stdio: ['ignore', 'ignore', 'ignore'] });

const failures = [];
if (!flag('skip-hash')) {
  const hash = await measure([BIN, 'hash', file, '--format', 'jsonl']);
  const hashRate = rows / hash.seconds;
  console.log(
    `hash   : ${hash.seconds.toFixed(2)} s, ${fmt(hashRate)} rows/s, ${hash.cpuSeconds.toFixed(2)} CPU-s, peak RSS ${hash.rssMb.toFixed(0)} MB`,
  );

  const up = await upload();
  const upRate = rows / up.seconds;
  const r = up.report;
  const bound = 1 + r.bytes / 5_000_000;
  console.log(
    `upload : ${up.seconds.toFixed(2)} s, ${fmt(upRate)} rows/s, ${up.cpuSeconds.toFixed(2)} CPU-s, peak RSS ${up.rssMb.toFixed(0)} MB (target <= 300)`,
  );
  // Both share the machine's cores: on a busy machine the ratio is bounded by hash's CPU-s over theirs.
  console.log(
    `sandbox: ${up.sandboxCpu.toFixed(2)} CPU-s answering the upload (its own process); upload + sandbox ${(up.cpuSeconds + up.sandboxCpu).toFixed(2)} CPU-s = ${((up.cpuSeconds + up.sandboxCpu) / hash.cpuSeconds).toFixed(2)}x hash's`,
  );
  console.log(
    `         status ${r.status}, users ${fmt(r.users)} (duplicates ${fmt(r.duplicates)}), confirmed ${fmt(r.users_confirmed)}, sandbox audience size ${fmt(up.server.size)}`,
  );
  console.log(
    `         requests ${r.requests} (bound 1 + bytes/limit = ${bound.toFixed(2)}), ${(r.bytes / 1e6).toFixed(1)} MB sent, retries ${r.retries}, 429s ${up.server.tooMany}`,
  );
  console.log(`ratio  : upload / hash = ${((upRate / hashRate) * 100).toFixed(0)}% (target >= 90%)`);
  if (r.status !== 'completed' || up.server.size !== r.users) failures.push('not every user confirmed');
  if (up.rssMb > 300) failures.push('peak RSS above 300 MB');
  if (r.requests > bound) failures.push('request count above the bound');
  if (upRate / hashRate < 0.9) failures.push('upload below 90% of hash rows/s');
}

const sweep = opt('sweep', undefined);
if (sweep !== undefined) {
  console.log('\nconcurrency sweep:');
  for (const c of sweep.split(',').map(Number)) {
    const s = await upload(c);
    console.log(
      `  --concurrency ${c}: ${s.seconds.toFixed(2)} s, ${fmt(rows / s.seconds)} rows/s, peak RSS ${s.rssMb.toFixed(0)} MB`,
    );
  }
}
sandbox.stop();

if (!flag('skip-rate')) {
  // Scaled-down policy: 30 requests per 2 s on both sides; the client must never draw a 429.
  const { startSandbox } = await import(SANDBOX);
  const { createClient } = await import(LIBRARY);
  const { uploadAudience } = await import(`${ROOT}dist/index.js`);
  const { DEFAULT_RATE_LIMIT_POLICY } = await import(`${ROOT}dist/api/rate-limit.js`);
  const policy = {
    ...DEFAULT_RATE_LIMIT_POLICY,
    safetyMarginMs: 100,
    rules: DEFAULT_RATE_LIMIT_POLICY.rules.map((rule) => ({ ...rule, limit: 30, windowMs: 2000 })),
  };
  const s = await startSandbox({ seed: 2, rateLimit: { limit: 30, windowMs: 2000 } });
  const audience = s.state.createCustomAudience(s.accounts.primary, 'rate').id;
  const sends = [];
  const client = createClient({
    adsBaseUrl: s.adsBaseUrl,
    credentials: s.credentials,
    rateLimitPolicy: policy,
    onRequest: (e) => sends.push(performance.now() - e.ms),
  });
  const users = Array.from({ length: 12_000 }, (_, i) => ({ email: [i.toString(16).padStart(64, '0')] }));
  const report = await uploadAudience({
    client,
    accountId: s.accounts.primary,
    target: { customAudienceId: audience },
    users,
    limits: { maxBodyBytes: 8_000 },
    concurrency: 8,
  });
  await client.close();
  const tooMany = s.state.requests.filter((q) => q.status === 429).length;
  sends.sort((a, b) => a - b);
  let maxInWindow = 0;
  for (let i = 0, j = 0; i < sends.length; i++) {
    while (sends[i] - sends[j] >= 2000) j++;
    maxInWindow = Math.max(maxInWindow, i - j + 1);
  }
  await s.close();
  console.log(
    `\nrate policy 30 per 2 s: ${report.requests} requests in ${(report.duration_ms / 1000).toFixed(1)} s, ` +
      `max ${maxInWindow} in any 2 s window, ${tooMany} x 429, ${report.rate_limit_waits} limiter waits, status ${report.status}`,
  );
  if (tooMany > 0 || maxInWindow > 30 || report.status !== 'completed') failures.push('rate limit not held');
}

if (failures.length > 0) {
  console.log(`\nFAILED: ${failures.join('; ')}`);
  process.exitCode = 1;
}
