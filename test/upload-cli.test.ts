import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyAuditLog } from '../src/state/audit.js';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { BIN, FIXTURES, runCli, startCli, startCliProcess, type ProcessRun } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

const FIXTURE = join(FIXTURES, 'crm-export.csv');
const USERS_PATH = /\/users$/;

/** Raw identifier values of the fixture (long enough not to match by accident). */
function rawValues(): string[] {
  const text = readFileSync(FIXTURE, 'utf8').replace(/^\uFEFF/, '');
  const parsed = Papa.parse<Record<string, string>>(text, { header: true, skipEmptyLines: true });
  const out = new Set<string>();
  for (const row of parsed.data) {
    for (const col of ['Email', 'work_email', 'Phone', 'customer_id']) {
      const v = (row[col] ?? '').trim();
      if (v.length >= 6 && !/^[0-9a-f]{64}$/i.test(v)) out.add(v);
    }
  }
  return [...out];
}

function scanFor(texts: Record<string, string>, needles: readonly string[]): string[] {
  const hits: string[] = [];
  for (const [name, text] of Object.entries(texts)) {
    for (const n of needles) if (text.includes(n)) hits.push(`${name}: ${n.length > 3 ? `${n.slice(0, 3)}…` : n}`);
  }
  return hits;
}

let sandbox: Sandbox;
let env: NodeJS.ProcessEnv;
let configDir: string;

beforeAll(async () => {
  expect(existsSync(BIN), 'build first: npx tsc -p tsconfig.build.json').toBe(true);
  // Every user batch answers after 120 ms, so a run of ~30 batches lasts long enough to be killed mid-way.
  sandbox = await startSandbox({ seed: 3, faults: 'slow=120%1' });
  configDir = tempDir('ak-config-');
  env = {
    AUDIENCE_KIT_CONFIG_DIR: configDir,
    AUDIENCE_KIT_ADS_BASE_URL: sandbox.adsBaseUrl,
    AUDIENCE_KIT_CONSUMER_KEY: sandbox.credentials.consumerKey,
    AUDIENCE_KIT_CONSUMER_SECRET: sandbox.credentials.consumerSecret,
    AUDIENCE_KIT_ACCESS_TOKEN: sandbox.credentials.accessToken,
    AUDIENCE_KIT_ACCESS_TOKEN_SECRET: sandbox.credentials.accessTokenSecret,
  };
});

afterAll(async () => {
  await sandbox?.close();
});

function newAudience(): string {
  return sandbox.state.createCustomAudience(sandbox.accounts.primary, `t${Date.now()}`).id;
}

function uploadArgs(audienceId: string, extra: string[] = []): string[] {
  return [
    'upload',
    FIXTURE,
    '--account',
    sandbox.accounts.primary,
    '--audience',
    audienceId,
    '--default-country',
    'US',
    '--max-body-bytes',
    '20000',
    '--concurrency',
    '2',
    ...extra,
  ];
}

function userRequests(audienceId: string): number {
  return sandbox.state.requests.filter(
    (r) => r.method === 'POST' && USERS_PATH.test(r.path) && r.path.includes(`/${audienceId}/`),
  ).length;
}

interface JournalLine {
  type: string;
  index?: number;
}

function journalLines(stateDir: string): JournalLine[] {
  const runs = join(stateDir, 'runs');
  if (!existsSync(runs)) return [];
  const [dir] = readdirSync(runs);
  if (dir === undefined) return [];
  const path = join(runs, dir, 'journal.jsonl');
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{') && l.endsWith('}'))
    .map((l) => JSON.parse(l) as JournalLine);
}

const confirmedIndices = (stateDir: string): number[] =>
  journalLines(stateDir)
    .filter((l) => l.type === 'confirmed')
    .map((l) => l.index as number);

/** The upload as a real process, for what needs one: SIGKILL, a real SIGINT. */
function spawnCli(args: string[], cwd: string): ProcessRun {
  return startCliProcess(args, { cwd, env, input: '' });
}

async function waitFor(cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('audience-kit upload', { timeout: 90_000 }, () => {
  it('quickstart: uploads the fixture to the embedded sandbox and prints the audience size', async () => {
    const cwd = tempDir('ak-cli-');
    const r = await runCli(['upload', FIXTURE, '--sandbox', '--default-country', 'US', '--json'], { cwd });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as {
      status: string;
      users: number;
      users_confirmed: number;
      sandbox: { audience_size: number };
      rows: number;
    };
    expect(report.status).toBe('completed');
    expect(report.rows).toBe(2991);
    expect(report.users_confirmed).toBe(report.users);
    expect(report.sandbox.audience_size).toBe(report.users);
    const audit = join(cwd, '.audience-kit', 'audit.jsonl');
    expect(verifyAuditLog(audit)).toMatchObject({ ok: true, records: 2 });
    expect(statSync(join(cwd, '.audience-kit')).mode & 0o777).toBe(0o700);
    const list = await runCli(['audit', 'list', '--json'], { cwd });
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject({ data: [{ end: { outcome: 'completed' } }] });
  });

  it('quickstart variation: fills a do-not-reach list, leaving out the columns it does not take', async () => {
    const cwd = tempDir('ak-cli-');
    const r = await runCli(['upload', FIXTURE, '--sandbox', '--do-not-reach-list', 'x', '--json', '--debug'], { cwd });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/ignored: "customer_id"/);
    // --debug shows the sandbox's requests too: method, path, status, time only.
    expect(r.stderr).toMatch(
      /^debug: POST \/12\/batch\/accounts\/\w+\/do_not_reach_lists\/\w+\/users 200 \d+ms \(attempt 1\)$/m,
    );
    const report = JSON.parse(r.stdout) as {
      status: string;
      users: number;
      target: { kind: string };
      sandbox: { audience_size: number };
    };
    expect(report).toMatchObject({ status: 'completed', target: { kind: 'do_not_reach_list' } });
    expect(report.sandbox.audience_size).toBe(report.users);
  });

  it('dry run sends nothing and --preview writes the first request body', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    const r = await runCli([...uploadArgs(audienceId), '--dry-run', '--preview', 'first.json', '--json'], { cwd, env });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { dry_run: boolean; requests: number; batches: number; bytes: number };
    expect(report).toMatchObject({ dry_run: true, requests: 0 });
    expect(report.batches).toBeGreaterThan(10);
    expect(userRequests(audienceId)).toBe(0);
    const preview = readFileSync(join(cwd, 'first.json'), 'utf8');
    expect(Buffer.byteLength(preview)).toBeLessThanOrEqual(20_000);
    expect((JSON.parse(preview) as unknown[]).length).toBeGreaterThan(0);
    expect(existsSync(join(cwd, '.audience-kit', 'audit.jsonl'))).toBe(false);
  });

  it('refuses bad usage with exit 2 and an unreadable input with exit 3, before sending', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    const noAccount = await runCli(['upload', FIXTURE, '--audience', audienceId], { cwd, env });
    expect(noAccount.code).toBe(2);
    expect(noAccount.stderr).toMatch(/--account/);
    const dnrId = sandbox.state.createDoNotReachList(sandbox.accounts.primary, 'x').id;
    const dnr = await runCli(
      [
        'upload',
        FIXTURE,
        '--account',
        sandbox.accounts.primary,
        '--do-not-reach-list',
        dnrId,
        '--effective-at',
        '2030-01-01T00:00:00Z',
      ],
      { cwd, env },
    );
    expect(dnr.code).toBe(2);
    expect(dnr.stderr).toMatch(/effective-at/);
    const far = await runCli(
      [
        'upload',
        FIXTURE,
        '--account',
        sandbox.accounts.primary,
        '--do-not-reach-list',
        dnrId,
        '--expires-at',
        '2099-01-01T00:00:00Z',
      ],
      { cwd, env },
    );
    expect(far.code).toBe(2);
    expect(far.stderr).toMatch(/13 months/);
    const limit = await runCli([...uploadArgs(audienceId), '--max-body-bytes', '6000000'], { cwd, env });
    expect(limit.code).toBe(2);
    expect(limit.stderr).toMatch(/--max-body-bytes/);
    const missing = await runCli(['upload', join(cwd, 'nope.csv'), '--account', 'a', '--audience', 'b'], { cwd, env });
    expect(missing.code).toBe(3);
    expect(userRequests(audienceId)).toBe(0);
    expect(sandbox.state.requests.filter((q) => q.path.includes(dnrId)).length).toBe(0);
  });

  it('exits 4 on refused credentials', async () => {
    const cwd = tempDir('ak-cli-');
    const r = await runCli([...uploadArgs(newAudience()), '--quiet'], {
      cwd,
      env: { ...env, AUDIENCE_KIT_CONSUMER_SECRET: 'not-the-secret' },
    });
    expect(r.code).toBe(4);
    expect(r.stderr + r.stdout).not.toContain('not-the-secret');
  });

  it('survives SIGKILL at several points: resumed runs confirm every user and never re-send a confirmed batch', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    const outputs: string[] = [];
    const confirmedAtKill: number[][] = [];
    for (const killAfter of [2, 9, 16]) {
      const resume = confirmedAtKill.length > 0 ? ['--resume'] : [];
      const { child, done } = spawnCli([...uploadArgs(audienceId), ...resume], cwd);
      await waitFor(() => confirmedIndices(join(cwd, '.audience-kit')).length >= killAfter);
      child.kill('SIGKILL');
      const r = await done;
      expect(r.signal).toBe('SIGKILL');
      outputs.push(r.stdout, r.stderr);
      confirmedAtKill.push(confirmedIndices(join(cwd, '.audience-kit')));
    }
    // Without --resume a re-run refuses to start over (stdin is not a terminal).
    const refused = await runCli(uploadArgs(audienceId), { cwd, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--resume/);

    const before = userRequests(audienceId);
    const last = await runCli([...uploadArgs(audienceId), '--resume', '--json'], { cwd, env });
    expect(last.code, last.stderr).toBe(0);
    outputs.push(last.stdout, last.stderr);
    const report = JSON.parse(last.stdout) as {
      status: string;
      batches: number;
      batches_skipped: number;
      batches_confirmed: number;
      users: number;
      retries: number;
    };
    const confirmedBefore = confirmedAtKill.at(-1) as number[];
    expect(report.status).toBe('completed');
    expect(report.batches_skipped).toBe(confirmedBefore.length);
    expect(report.retries).toBe(0);
    // The final run sent exactly the batches not confirmed before: none twice.
    expect(userRequests(audienceId) - before).toBe(report.batches - confirmedBefore.length);
    const all = confirmedIndices(join(cwd, '.audience-kit'));
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(report.batches);
    expect(sandbox.state.audienceSize(audienceId)).toBe(report.users);
    expect(journalLines(join(cwd, '.audience-kit')).at(-1)?.type).toBe('complete');

    // Nothing raw and no secret in anything the runs wrote.
    const stateDir = join(cwd, '.audience-kit');
    const [keyDir] = readdirSync(join(stateDir, 'runs'));
    const texts: Record<string, string> = {
      audit: readFileSync(join(stateDir, 'audit.jsonl'), 'utf8'),
      journal: readFileSync(join(stateDir, 'runs', keyDir as string, 'journal.jsonl'), 'utf8'),
      output: outputs.join('\n'),
    };
    expect(scanFor(texts, rawValues())).toEqual([]);
    expect(scanFor(texts, [sandbox.credentials.consumerSecret, sandbox.credentials.accessTokenSecret])).toEqual([]);
    // The killed runs left start records without end records; the chain is intact.
    expect(verifyAuditLog(join(stateDir, 'audit.jsonl'))).toMatchObject({ ok: true, records: 5 });
  }, 120_000);

  it('SIGINT finishes in-flight requests, saves the journal, exits 130; --resume completes', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    const stateDir = join(cwd, '.audience-kit');
    const { child, done } = spawnCli([...uploadArgs(audienceId), '--debug'], cwd);
    await waitFor(() => confirmedIndices(stateDir).length >= 3);
    child.kill('SIGINT');
    const r = await done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/interrupted/);
    const confirmed = confirmedIndices(stateDir);
    // Requests in flight at the interrupt were let finish and recorded.
    expect(userRequests(audienceId)).toBe(confirmed.length);
    expect(journalLines(stateDir).some((l) => l.type === 'complete')).toBe(false);
    const audit = readFileSync(join(stateDir, 'audit.jsonl'), 'utf8');
    expect(audit).toContain('"outcome":"interrupted"');

    const resumed = await runCli([...uploadArgs(audienceId), '--resume', '--json', '--debug'], { cwd, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const report = JSON.parse(resumed.stdout) as { users: number; batches_skipped: number };
    expect(report.batches_skipped).toBe(confirmed.length);
    expect(sandbox.state.audienceSize(audienceId)).toBe(report.users);
    const texts = { stderr: r.stderr + resumed.stderr, stdout: r.stdout + resumed.stdout, audit };
    expect(scanFor(texts, rawValues())).toEqual([]);
    expect(scanFor(texts, [sandbox.credentials.consumerSecret, sandbox.credentials.accessTokenSecret])).toEqual([]);
  });

  it('interrupted while waiting for input (a paused pipe) ends interrupted, exit 130, and is not marked complete', async () => {
    const cwd = tempDir('ak-cli-');
    const stdin = new PassThrough();
    // More than the 64 KiB sample the header detection reads, then the pipe stays open and silent.
    stdin.write(readFileSync(FIXTURE, 'utf8').split('\n').slice(0, 1200).join('\n') + '\n');
    const run = await startCli(
      ['upload', '-', '--sandbox', '--json', '--default-country', 'US'],
      (_stdout, stderr) => stderr.includes('column mapping'),
      { cwd, stdin },
    );
    await new Promise((r) => setTimeout(r, 300));
    run.interrupt();
    const r = await run.done;
    stdin.destroy();
    expect(r.code, r.stderr).toBe(130);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'interrupted', exit_code: 130 });
    expect(readFileSync(join(cwd, '.audience-kit', 'audit.jsonl'), 'utf8')).toContain('"outcome":"interrupted"');
  });

  it('refuses out-of-range --concurrency / --max-retries before opening the journal or the audit log', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    for (const bad of [
      ['--concurrency', '0'],
      ['--max-retries', '101'],
    ]) {
      const r = await runCli(
        [
          ...uploadArgs(audienceId).filter((a, i, all) => a !== '--concurrency' && all[i - 1] !== '--concurrency'),
          ...bad,
        ],
        { cwd, env },
      );
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(bad[0]);
    }
    expect(existsSync(join(cwd, '.audience-kit'))).toBe(false);
    const ok = await runCli([...uploadArgs(audienceId), '--json'], { cwd, env });
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('--restart starts over an unfinished run', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    const stateDir = join(cwd, '.audience-kit');
    const first = await startCli(uploadArgs(audienceId), () => true, { cwd, env });
    await waitFor(() => confirmedIndices(stateDir).length >= 2);
    first.interrupt();
    expect((await first.done).code).toBe(130);
    const r = await runCli([...uploadArgs(audienceId), '--restart', '--json'], { cwd, env });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', batches_skipped: 0, resumed: false });
  });

  it('audit verify reports the first broken link after tampering (exit 3)', async () => {
    const cwd = tempDir('ak-cli-');
    await runCli(['upload', FIXTURE, '--sandbox', '--quiet', '--default-country', 'US'], { cwd });
    await runCli(['upload', FIXTURE, '--sandbox', '--quiet', '--default-country', 'US'], { cwd });
    const ok = await runCli(['audit', 'verify'], { cwd });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/ok: 4 records/);
    const path = join(cwd, '.audience-kit', 'audit.jsonl');
    writeFileSync(path, readFileSync(path, 'utf8').replace('"outcome":"completed"', '"outcome":"partial"'));
    const bad = await runCli(['audit', 'verify', '--audit-log', path], { cwd });
    expect(bad.code).toBe(3);
    expect(bad.stdout).toMatch(/line 3/);
    const runs = (
      JSON.parse((await runCli(['audit', 'list', '--json'], { cwd })).stdout) as { data: { run_id: string }[] }
    ).data;
    const show = await runCli(['audit', 'show', runs[0]?.run_id ?? ''], { cwd });
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/outcome\s+partial/);
  });
});
