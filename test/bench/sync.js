// Benchmark of `audience-kit sync` (`npm run bench -- sync`, or `node test/bench/sync.js` after a build).
//
//   1. A 1M-row export A is synced to a sandbox audience (first sync: every user sent). Export B
//      drops 1% of A's rows and adds 1% new ones. `sync B` must send exactly those users (removals
//      as Delete, additions as Update) and take at most 1.3x as long as `hash B`, measured in the
//      same run. Then `sync B` again: zero requests. The same sequence runs against the PostgreSQL
//      store (`--state`, a fresh database on the server of `--pg-url` or AK_BENCH_PG_URL, default
//      postgres://postgres@127.0.0.1:5432/postgres, dropped at the end), interleaved with the
//      directory's runs (dir A, pg A, hash B, dir B, pg B, dir B again, pg B again; pg first with
//      --pg-first) so load hits both alike: its `sync B` must take at most 1.5x the directory's, send
//      the same users and leave the same audience (sandbox membership digest); the snapshot tables'
//      bytes per user are reported (pg_total_relation_size after the syncs, and after VACUUM FULL).
//      No server: skipped, said so.
//   2. Memory, the matrix of issue 34: at each size of `--big-rows` (e-mail + phone + country rows
//      of generate.js --kind full) and on each store of `--stores`, the first sync of A (CLI, every
//      user sent), `sync B` (B drops 1% of A's rows and adds 1% new ones) and `sync B` again
//      (unchanged); each within 300 MB peak RSS, and each checked against its file: the first sends
//      every distinct user of A and leaves them as the audience, `sync B` sends exactly the changes
//      and leaves B's users, the unchanged one sends nothing, and both stores leave the same
//      audience (sandbox membership digests). Snapshot <= 200 bytes per user on disk. Ends with the
//      matrix of peak RSS and CPU seconds, and the load average. Then `syncAudience()` in a process
//      of its own, fed raw records by an async generator at the largest size (first sync of a new
//      audience, then again: nothing to send), on each store: within 300 MB too.
//   options: --rows N (part 1, default 1M), --big-rows N[,N...] (part 2, default 1000000,3000000,10000000:
//   the whole matrix of issue 34, 16 minutes on 2 idle cores with the library runs; or the
//   environment's AK_BENCH_SYNC_ROWS, e.g. 1000000 for a quick run), --stores dir,pg (part 2's stores,
//   default both; pg is a fresh database per size, as in part 1, dropped at the end), --skip-big,
//   --skip-small, --skip-library, --skip-pg, --pg-first.
//
// The sandbox runs in its own process (a fair peer: it does not share the syncing process's cores'
// event loop). Peak RSS is the measured process's maxRSS (worker threads included).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, flag, fmt, measure, opt, ROOT, rows, slice } from './common.js';
import { freshDatabase } from './pg.js';

const SANDBOX = `${ROOT}dist/sandbox/index.js`; // the sandbox's entry (audience-kit/sandbox)
const LIBRARY = `${ROOT}dist/index.js`;
const DATA = `${ROOT}test/bench/data/`;

/** The generated export with `n` rows (made on first use). */
function generated(n) {
  const file = `${DATA}crm-${n}.csv`;
  if (!existsSync(file)) {
    console.log(`generating ${file} ...`);
    const argv = [`${ROOT}test/bench/generate.js`, '--rows', String(n), '--kind', 'full'];
    const r = spawn(process.execPath, argv, { stdio: 'inherit' });
    return once(r, 'close').then(() => file);
  }
  return Promise.resolve(file);
}

/**
 * The sandbox in its own process; `size <id>` answers the audience size and the POSTs it received,
 * `digest <id>` its membership's digest, `new` a new audience.
 */
function startSandboxProcess() {
  const script = `
    import { startSandbox } from ${JSON.stringify(SANDBOX)};
    import { createInterface } from 'node:readline';
    import { createHash } from 'node:crypto';
    const s = await startSandbox({ seed: 1 });
    const newAudience = () => s.state.createCustomAudience(s.accounts.primary, 'bench').id;
    console.log(JSON.stringify({ adsBaseUrl: s.adsBaseUrl, credentials: s.credentials, account: s.accounts.primary, audience: newAudience() }));
    for await (const line of createInterface({ input: process.stdin })) {
      const [cmd, id] = line.split(' ');
      if (cmd === 'new') { console.log(JSON.stringify({ audience: newAudience() })); continue; }
      if (cmd === 'digest') {
        // The audience's membership: SHA-256 of its sorted user keys (compares two audiences' users;
        // read from the key table's slots, the sandbox has no listing: the platform has none).
        const slots = s.state.audiences.get(id)?.users.slots ?? new Float64Array(0);
        const keys = slots.filter((k) => k >= 0).sort();
        console.log(JSON.stringify({ digest: createHash('sha256').update(keys).digest('hex') }));
        continue;
      }
      const posts = s.state.requests.filter((r) => r.method === 'POST' && r.path.includes('/' + id + '/')).length;
      console.log(JSON.stringify({ size: s.state.audienceSize(id), posts }));
    }
    await s.close();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buffer = '';
  const waiting = [];
  child.stdout.on('data', (b) => {
    buffer += b;
    for (let nl; (nl = buffer.indexOf('\n')) >= 0;) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      waiting.shift()?.(JSON.parse(line));
    }
  });
  const next = () => new Promise((resolve) => waiting.push(resolve));
  return {
    ready: next(),
    ask: (line) => {
      const p = next();
      child.stdin.write(`${line}\n`);
      return p;
    },
    stop: () => child.stdin.end(),
  };
}

console.log(
  `machine: ${availableParallelism()} cores, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
const failures = [];
const sandbox = startSandboxProcess();
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
const stateDir = mkdtempSync(join(tmpdir(), 'ak-bench-sync-'));
process.on('exit', () => rmSync(stateDir, { recursive: true, force: true }));

async function sync(file, { audience = info.audience, state = stateDir, stateFlag = '--state-dir' } = {}) {
  const argv = [BIN, 'sync', file, '--account', info.account, '--audience', audience, '--quiet', '--json'];
  const m = await measure([...argv, stateFlag, state], { env, captureStdout: true });
  return { ...m, report: JSON.parse(m.stdout) };
}

// Part 1: 1M rows, 1% removed and 1% added, through the directory store and the PostgreSQL store
// (a fresh database), interleaved: dir A, pg A, hash B, dir B, pg B, dir B again, pg B again.
async function small() {
  const step = Math.round(rows / 100);
  const source = await generated(rows + step);
  const a = await slice(source, `${DATA}sync-a-${rows}.csv`, 0, rows);
  const b = await slice(source, `${DATA}sync-b-${rows}.csv`, step, rows + step);
  const db = await benchDatabase('sync');
  try {
    const stores = [{ label: 'dir', audience: info.audience, state: stateDir, stateFlag: '--state-dir' }];
    if (db)
      stores.push({ label: 'pg', audience: (await sandbox.ask('new')).audience, state: db.url, stateFlag: '--state' });
    // --pg-first: the database store's runs before the directory's (alternate runs to even out load).
    const order = flag('pg-first') ? [...stores].reverse() : stores;
    for (const s of order) await firstSync(s, a);
    // Warm the page cache so neither measured run pays the first read.
    spawnSync('cat', [b], { stdio: 'ignore' });
    const hash = await measure([BIN, 'hash', b, '--format', 'jsonl']);
    console.log(`hash B : ${hash.seconds.toFixed(2)} s, peak RSS ${hash.rssMb.toFixed(0)} MB`);
    for (const s of order) await changedSync(s, b, step, hash);
    for (const s of order) await unchangedSync(s, b);
    for (const s of stores) s.digest = (await sandbox.ask(`digest ${s.audience}`)).digest;
    const [dir, pgStore] = stores;
    const r = dir.report;
    console.log(
      `dir snapshot: ${fmt(r.snapshot.after.users)} users, ${fmt(r.snapshot.bytes_on_disk)} bytes on disk = ${(r.snapshot.bytes_on_disk / r.snapshot.after.users).toFixed(1)} bytes/user`,
    );
    if (pgStore) await comparePg(dir, pgStore, db);
  } finally {
    await db?.drop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

/** A fresh database for the PostgreSQL store's runs, or null (skipped, with a line saying why). */
async function benchDatabase(label) {
  if (flag('skip-pg')) {
    console.log('PostgreSQL store: skipped (--skip-pg)');
    return null;
  }
  const db = await freshDatabase(label);
  if (!db) console.log('PostgreSQL store: SKIPPED, no server answers at --pg-url / AK_BENCH_PG_URL');
  else console.log(`PostgreSQL store: fresh database ${db.name} (dropped at the end)`);
  return db;
}

async function firstSync(s, a) {
  const first = await sync(a, s);
  console.log(
    `${s.label}: first sync of A (${fmt(rows)} rows): ${first.seconds.toFixed(2)} s, peak RSS ${first.rssMb.toFixed(0)} MB, ${fmt(first.report.update.users_confirmed)} users sent as Update, status ${first.report.status}`,
  );
  if (first.report.status !== 'completed') failures.push(`${s.label}: first sync of A did not complete`);
}

async function changedSync(s, b, step, hash) {
  const before = await sandbox.ask(`size ${s.audience}`);
  const changed = await sync(b, s);
  const after = await sandbox.ask(`size ${s.audience}`);
  const r = changed.report;
  Object.assign(s, { changed, report: r, after });
  console.log(
    `${s.label}: sync B : ${changed.seconds.toFixed(2)} s, peak RSS ${changed.rssMb.toFixed(0)} MB, = ${(changed.seconds / hash.seconds).toFixed(2)}x hash${s.label === 'dir' ? ' (target <= 1.3x)' : ''}`,
  );
  console.log(
    `         plan: +${fmt(r.adds)} -${fmt(r.removes)} ~${fmt(r.refreshes)} =${fmt(r.unchanged)}; sent ${fmt(r.delete.users)} Delete + ${fmt(r.update.users)} Update in ${r.requests} requests; status ${r.status}`,
  );
  console.log(
    `         sandbox audience ${fmt(before.size)} -> ${fmt(after.size)} (B's distinct users: ${fmt(r.users)})`,
  );
  const sentUsers = r.delete.users + r.update.users;
  if (r.status !== 'completed' || after.size !== r.users)
    failures.push(`${s.label}: the audience is not the users of B`);
  if (r.delete.users !== r.removes || r.update.users !== r.adds || r.refreshes !== 0)
    failures.push(`${s.label}: sent other users than the changes`);
  if (sentUsers > 2 * step) failures.push(`${s.label}: sent ${sentUsers} users for ${2 * step} changed rows`);
  if (s.label === 'dir' && changed.seconds / hash.seconds > 1.3) failures.push('sync above 1.3x hash');
}

async function unchangedSync(s, b) {
  const again = await sync(b, s);
  const postsAfter = (await sandbox.ask(`size ${s.audience}`)).posts;
  console.log(
    `${s.label}: sync B again (unchanged): ${again.seconds.toFixed(2)} s, ${again.report.requests} requests (sandbox saw ${postsAfter - s.after.posts})`,
  );
  if (again.report.requests !== 0 || postsAfter !== s.after.posts)
    failures.push(`${s.label}: unchanged input made requests`);
}

/** The PostgreSQL store against the directory: `sync B`'s time (<= 1.5x), the same users, bytes per user. */
async function comparePg(dir, pgStore, db) {
  const ratio = pgStore.changed.seconds / dir.changed.seconds;
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  console.log(
    `sync B on PostgreSQL / on directory: ${pgStore.changed.seconds.toFixed(2)} s / ${dir.changed.seconds.toFixed(2)} s = ${ratio.toFixed(2)}x (target <= 1.5x; ${availableParallelism()} cores, load average now ${load})`,
  );
  if (ratio > 1.5) failures.push(`sync B on PostgreSQL ${ratio.toFixed(2)}x the directory's (above 1.5x)`);
  const counts = (s) => {
    const r = s.report;
    return JSON.stringify([r.users, r.adds, r.removes, r.delete.users, r.update.users, s.after.size]);
  };
  const same = counts(dir) === counts(pgStore) && dir.digest === pgStore.digest;
  console.log(`same users sent and same audience in the sandbox on both stores: ${same ? 'yes' : 'NO'}`);
  if (!same) failures.push('the two stores sent different users or left different audiences');
  const users = pgStore.report.snapshot.after.users;
  const bytes = await db.snapshotBytes();
  console.log(
    `pg snapshot: ${fmt(users)} users, audience_kit_snapshot_* tables ${fmt(bytes.before)} bytes after the syncs = ${(bytes.before / users).toFixed(1)} bytes/user; after VACUUM FULL ${fmt(bytes.afterVacuumFull)} bytes = ${(bytes.afterVacuumFull / users).toFixed(1)} bytes/user (dir: ${(dir.report.snapshot.bytes_on_disk / dir.report.snapshot.after.users).toFixed(1)} bytes/user)`,
  );
  for (const f of bytes.files)
    console.log(`pg file ${f.name}: ${fmt(Number(f.size))} bytes in ${f.rows} rows holding ${fmt(Number(f.stored))}`);
}

if (!flag('skip-small')) await small();

// Part 2: the memory matrix. Per size of `--big-rows` and store of `--stores`: first sync of A,
// `sync B`, `sync B` again; each within 300 MB and each checked against its file.
const bigRows = String(opt('big-rows', process.env.AK_BENCH_SYNC_ROWS ?? '1000000,3000000,10000000'))
  .split(',')
  .map(Number);
const stores = String(opt('stores', 'dir,pg')).split(',');
for (const s of stores) if (s !== 'dir' && s !== 'pg') throw new Error(`--stores: unknown store ${s} (dir, pg)`);
/** Part 2's runs: { run, n, store, rssMb, cpu, seconds }, for the matrix and the ratios. */
const peaks = [];
const loadAtStart = loadText();
if (!flag('skip-big')) for (const n of bigRows) await big(n);
if (!flag('skip-library')) await library(bigRows[bigRows.length - 1]);
printMatrix();
printPeaks();
sandbox.stop();

function loadText() {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
}

/** A (n rows) and B (A without its first 1%, with the next 1% of the generator's rows), synced on each store. */
async function big(n) {
  const step = Math.round(n / 100);
  const source = await generated(n + step);
  const files = {
    a: await slice(source, `${DATA}sync-a-${n}.csv`, 0, n),
    b: await slice(source, `${DATA}sync-b-${n}.csv`, step, n + step),
  };
  const audiences = [];
  for (const store of stores) {
    const dir = mkdtempSync(join(tmpdir(), 'ak-bench-sync-big-'));
    const db = store === 'pg' ? await benchDatabase(`big_${n}`) : null;
    try {
      if (store === 'pg' && !db) continue;
      const state = db ? { stateFlag: '--state', state: db.url } : { stateFlag: '--state-dir', state: dir };
      const { audience } = await sandbox.ask('new');
      await bigSyncs(n, files, { audience, store, ...state }, db);
      audiences.push({ store, audience, digest: (await sandbox.ask(`digest ${audience}`)).digest });
    } finally {
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (audiences.length === 2 && audiences[0].digest !== audiences[1].digest)
    failures.push(`${fmt(n)} rows: the two stores left different audiences`);
  else if (audiences.length === 2) console.log(`${fmt(n)} rows: the same audience in the sandbox on both stores`);
}

/** One measured CLI sync of part 2: printed, recorded, failed above 300 MB. */
async function bigRun(run, n, file, state) {
  spawnSync('cat', [file], { stdio: 'ignore' });
  const m = await sync(file, state);
  peaks.push({ run, n, store: state.store, rssMb: m.rssMb, cpu: m.cpuSeconds, seconds: m.seconds });
  if (m.rssMb > 300) failures.push(`${state.store} ${fmt(n)}-row ${run} peak RSS above 300 MB`);
  return m;
}

async function bigSyncs(n, files, state, db) {
  const tag = `${state.store} ${fmt(n)}`;
  const first = await bigRun('first sync', n, files.a, state);
  const fr = first.report;
  const size = await sandbox.ask(`size ${state.audience}`);
  console.log(
    `\n${tag}: first sync of A: ${first.seconds.toFixed(1)} s (${first.cpuSeconds.toFixed(1)} CPU-s), peak RSS ${first.rssMb.toFixed(0)} MB (target <= 300), ${fmt(fr.update.users_confirmed)} users sent in ${fr.requests} requests, status ${fr.status}, sandbox audience ${fmt(size.size)} (A's distinct users: ${fmt(fr.users)})`,
  );
  if (
    fr.status !== 'completed' ||
    size.size !== fr.users ||
    fr.update.users_confirmed !== fr.users ||
    fr.adds !== fr.users
  )
    failures.push(`${tag} first sync: the users sent are not the users of A`);
  await bigChangedSync(n, files.b, state);
  const m = await bigRun('unchanged sync', n, files.b, state);
  const rep = m.report;
  const users = rep.snapshot.after.users;
  console.log(
    `${tag}: sync B again (unchanged): ${m.seconds.toFixed(1)} s (${m.cpuSeconds.toFixed(1)} CPU-s), peak RSS ${m.rssMb.toFixed(0)} MB (target <= 300), ${rep.requests} requests, status ${rep.status}`,
  );
  if (rep.requests !== 0 || rep.status !== 'completed' || rep.unchanged !== rep.users)
    failures.push(`${tag}: unchanged input made requests`);
  if (db) {
    const bytes = await db.snapshotBytes();
    console.log(
      `${tag}: audience_kit_snapshot_* tables ${(bytes.before / users).toFixed(1)} bytes/user; after VACUUM FULL ${(bytes.afterVacuumFull / users).toFixed(1)} bytes/user`,
    );
    return;
  }
  const perUser = rep.snapshot.bytes_on_disk / users;
  console.log(`${tag}: snapshot on disk ${perUser.toFixed(1)} bytes/user (target <= 200)`);
  if (perUser > 200) failures.push('snapshot above 200 bytes/user');
}

/** `sync B`, 1% removed and 1% added: within 300 MB, exactly the changes sent, the audience B's users. */
async function bigChangedSync(n, b, state) {
  const m = await bigRun('changed sync', n, b, state);
  const r = m.report;
  const size = await sandbox.ask(`size ${state.audience}`);
  console.log(
    `${state.store} ${fmt(n)}: sync B (1% of the rows removed, 1% added): ${m.seconds.toFixed(1)} s (${m.cpuSeconds.toFixed(1)} CPU-s), peak RSS ${m.rssMb.toFixed(0)} MB (target <= 300), sent ${fmt(r.delete.users)} Delete + ${fmt(r.update.users)} Update in ${r.requests} requests, status ${r.status}, sandbox audience ${fmt(size.size)} (B's distinct users: ${fmt(r.users)})`,
  );
  if (r.status !== 'completed' || size.size !== r.users || r.delete.users !== r.removes || r.update.users !== r.adds)
    failures.push(
      `${state.store} ${fmt(n)} changed sync: the users sent are not the changes, or the audience is not B's users`,
    );
  if (r.refreshes !== 0 || r.removes + r.adds > n / 50 + 1)
    failures.push(`${state.store} ${fmt(n)} changed sync: sent more users than the changed rows`);
}

/** Peak RSS (and CPU seconds) of every run of part 2: size by store by run. */
function printMatrix() {
  if (peaks.length === 0) return;
  console.log(
    `\npeak RSS, MB (CPU-s), target <= 300; ${availableParallelism()} cores, load average at the start of part 2 ${loadAtStart}, now ${loadText()}`,
  );
  const runs = ['first sync', 'changed sync', 'unchanged sync'];
  console.log(`  rows        store  ${runs.map((r) => r.padEnd(16)).join(' ')}`);
  for (const n of bigRows)
    for (const store of stores) {
      const cells = runs.map((run) => peaks.find((p) => p.run === run && p.n === n && p.store === store));
      if (cells.every((c) => c === undefined)) continue;
      const text = cells.map((c) => (c ? `${c.rssMb.toFixed(0)} (${c.cpu.toFixed(1)})` : '-').padEnd(16));
      console.log(`  ${fmt(n).padEnd(11)} ${store.padEnd(6)} ${text.join(' ')}`);
    }
}

/** Each run's peak RSS at each size against its peak at the first size of `--big-rows` (same bench run). */
function printPeaks() {
  if (bigRows.length < 2) return;
  console.log(`\npeak RSS against the ${fmt(bigRows[0])}-row run:`);
  for (const p of peaks) {
    const peer = peaks.find((q) => q.run === p.run && q.store === p.store && q.n === bigRows[0]);
    if (peer === undefined || p === peer) continue;
    console.log(
      `  ${p.store} ${p.run}, ${fmt(p.n)}: ${p.rssMb.toFixed(0)} MB / ${peer.rssMb.toFixed(0)} MB = ${(p.rssMb / peer.rssMb).toFixed(2)}x for ${(p.n / peer.n).toFixed(0)}x the rows`,
    );
  }
}

/**
 * `syncAudience()` fed by an async generator of raw records, in a process of its own (its peak
 * RSS): a first sync of a new audience, then the same records again (nothing to send), on each
 * store of `--stores` (the database a fresh one).
 */
async function library(n) {
  for (const store of stores) {
    const dir = mkdtempSync(join(tmpdir(), 'ak-bench-sync-lib-'));
    const db = store === 'pg' ? await benchDatabase(`lib_${n}`) : null;
    try {
      if (store === 'pg' && !db) continue;
      const { audience } = await sandbox.ask('new');
      const script = join(dir, 'library-sync.mjs');
      writeFileSync(script, librarySyncScript(n, db ? { state: db.url } : { stateDir: join(dir, 'state') }, audience));
      for (const run of ['first sync', 'unchanged re-sync']) await libraryRun(n, store, run, script, audience);
    } finally {
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

async function libraryRun(n, store, run, script, audience) {
  const m = await measure([script], { env: { AK_BENCH_SANDBOX: JSON.stringify(info) }, captureStdout: true });
  const r = JSON.parse(m.stdout);
  const size = await sandbox.ask(`size ${audience}`);
  console.log(
    `${store}: syncAudience() fed ${fmt(n)} records by an async generator (${run}): ${m.seconds.toFixed(1)} s, peak RSS ${m.rssMb.toFixed(0)} MB (target <= 300), ${fmt(r.update.users_confirmed)} users sent in ${r.requests} requests, status ${r.status}, sandbox audience ${fmt(size.size)}`,
  );
  if (m.rssMb > 300) failures.push(`${store} library ${run} of ${fmt(n)} records peak RSS above 300 MB`);
  if (r.status !== 'completed' || size.size !== r.users) failures.push(`${store} library ${run}: audience differs`);
  if (run === 'unchanged re-sync' && r.requests !== 0) failures.push('library unchanged re-sync made requests');
}

function librarySyncScript(n, state, audience) {
  return `
    import { createClient, syncAudience } from ${JSON.stringify(LIBRARY)};
    const info = JSON.parse(process.env.AK_BENCH_SANDBOX);
    const client = createClient({ adsBaseUrl: info.adsBaseUrl, credentials: info.credentials });
    // Rows as a database cursor gives them, one at a time.
    async function* rows() {
      for (let i = 0; i < ${n}; i++)
        yield { email: 'Customer.' + i + '@Example.com', phone: '+1 (415) ' + String(2000000 + (i % 7000000)).replace(/(\\d{3})(\\d{4})$/, '$1-$2') };
    }
    const report = await syncAudience({
      client, accountId: info.account, target: { customAudienceId: ${JSON.stringify(audience)} },
      users: rows(), records: { defaultCountry: 'US' }, ...${JSON.stringify(state)},
    });
    await client.close();
    const { status, users, requests, update } = report;
    console.log(JSON.stringify({ status, users, requests, update }));
  `;
}
if (failures.length > 0) {
  console.log(`\nFAILED: ${failures.join('; ')}`);
  process.exitCode = 1;
}
