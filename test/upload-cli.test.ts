import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { verifyAuditLog } from '../src/state/audit.js';
import { CALLING_THREAD, runCli, startCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import {
  confirmedIndices,
  FIXTURE,
  newAudience,
  target,
  uploadArgs,
  userRequests,
  useSlowSandbox,
  waitFor,
} from './helpers/upload-cli.js';

// The upload command in-process; what needs a real process is in upload-signals.test.ts.
useSlowSandbox();

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
    expect(r.stderr).toMatch(/ignored "customer_id": a generic id column/);
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
    const r = await runCli(
      [...uploadArgs(audienceId), ...CALLING_THREAD, '--dry-run', '--preview', 'first.json', '--json'],
      {
        cwd,
        env: target.env,
      },
    );
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
    const noAccount = await runCli(['upload', FIXTURE, '--audience', audienceId], { cwd, env: target.env });
    expect(noAccount.code).toBe(2);
    expect(noAccount.stderr).toMatch(/--account/);
    const dnrId = target.sandbox.state.createDoNotReachList(target.sandbox.accounts.primary, 'x').id;
    const dnr = await runCli(
      [
        'upload',
        FIXTURE,
        '--account',
        target.sandbox.accounts.primary,
        '--do-not-reach-list',
        dnrId,
        '--effective-at',
        '2030-01-01T00:00:00Z',
      ],
      { cwd, env: target.env },
    );
    expect(dnr.code).toBe(2);
    expect(dnr.stderr).toMatch(/effective-at/);
    const far = await runCli(
      [
        'upload',
        FIXTURE,
        '--account',
        target.sandbox.accounts.primary,
        '--do-not-reach-list',
        dnrId,
        '--expires-at',
        '2099-01-01T00:00:00Z',
      ],
      { cwd, env: target.env },
    );
    expect(far.code).toBe(2);
    expect(far.stderr).toMatch(/13 months/);
    const limit = await runCli([...uploadArgs(audienceId), '--max-body-bytes', '6000000'], { cwd, env: target.env });
    expect(limit.code).toBe(2);
    expect(limit.stderr).toMatch(/--max-body-bytes/);
    const missing = await runCli(['upload', join(cwd, 'nope.csv'), '--account', 'a', '--audience', 'b'], {
      cwd,
      env: target.env,
    });
    expect(missing.code).toBe(3);
    expect(userRequests(audienceId)).toBe(0);
    expect(target.sandbox.state.requests.filter((q) => q.path.includes(dnrId)).length).toBe(0);
  });

  it('exits 4 on refused credentials', async () => {
    const cwd = tempDir('ak-cli-');
    const r = await runCli([...uploadArgs(newAudience()), ...CALLING_THREAD, '--quiet'], {
      cwd,
      env: { ...target.env, AUDIENCE_KIT_CONSUMER_SECRET: 'not-the-secret' },
    });
    expect(r.code).toBe(4);
    expect(r.stderr + r.stdout).not.toContain('not-the-secret');
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
    // Interrupted once the run has started (its audit record is written) and waits for input.
    const audit = join(cwd, '.audience-kit', 'audit.jsonl');
    await waitFor(() => existsSync(audit) && readFileSync(audit, 'utf8').includes('"run_start"'));
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
        { cwd, env: target.env },
      );
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(bad[0]);
    }
    expect(existsSync(join(cwd, '.audience-kit'))).toBe(false);
    const ok = await runCli([...uploadArgs(audienceId), ...CALLING_THREAD, '--json'], { cwd, env: target.env });
    expect(ok.code, ok.stderr).toBe(0);
  });

  it('--restart starts over an unfinished run', async () => {
    const cwd = tempDir('ak-cli-');
    const audienceId = newAudience();
    const stateDir = join(cwd, '.audience-kit');
    const first = await startCli(uploadArgs(audienceId), () => true, { cwd, env: target.env });
    await waitFor(() => confirmedIndices(stateDir).length >= 2);
    first.interrupt();
    expect((await first.done).code).toBe(130);
    const r = await runCli([...uploadArgs(audienceId), ...CALLING_THREAD, '--restart', '--json'], {
      cwd,
      env: target.env,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', batches_skipped: 0, resumed: false });
  });

  it('audit verify reports the first broken link after tampering (exit 3)', async () => {
    const cwd = tempDir('ak-cli-');
    const upload = ['upload', FIXTURE, '--sandbox', '--quiet', '--default-country', 'US', ...CALLING_THREAD];
    await runCli(upload, { cwd });
    await runCli(upload, { cwd });
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
