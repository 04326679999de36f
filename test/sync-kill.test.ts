import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { verifyAuditLog } from '../src/state/audit.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import { CALLING_THREAD, runCli, runCliProcess, startCliProcess } from './helpers/cli.js';
import { cliSyncArgs, postgresStateUrl, STORES, usePostgres, type StoreKind } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';
import { gate, newAudience, scanFor, target, userRequests, useHeldSandbox, waitFor } from './helpers/upload-cli.js';

// `sync` as a real process killed (SIGKILL) at several points, then run again: the same end
// state, nothing lost, nothing confirmed sent again. The sandbox holds each user batch until the
// test lets it through, so each kill lands while the process waits for an answer, after the
// batches the test let through. With the PostgreSQL store, the runs alternate between two URLs
// of one database (two host names), as two machines would.
useHeldSandbox();
usePostgres();

const email = (i: number): string => `person.${i}@example.org`;
function writeExport(path: string, ids: number[]): void {
  writeFileSync(path, `Email\n${ids.map(email).join('\n')}\n`);
}
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, k) => from + k);

/** Users of the audience's answered batch requests (every POST, Delete or Update). */
function usersSent(audienceId: string): number {
  return target.sandbox.state.requests
    .filter((r) => r.method === 'POST' && r.path.includes(`/${audienceId}/`))
    .reduce((n, r) => n + (r.users ?? 0), 0);
}

/** The state flags of run `n`: none (the working directory's state), or one of two URLs of one database. */
async function stateFlags(store: StoreKind): Promise<(n: number) => string[]> {
  if (store === 'directory') return () => [];
  const url = await postgresStateUrl();
  return (n) => ['--state', n % 2 === 0 ? url : url.replace('127.0.0.1', 'localhost')];
}

/** `sync FILE` of the file's sandbox audience in small batches (2,000 bytes: tens of requests). */
const syncOfAudience = (audienceId: string, file: string): string[] =>
  cliSyncArgs(target.sandbox.accounts.primary, audienceId, file, '--max-body-bytes', '2000');

/** The state's texts a privacy scan reads: the state directory's files, or the database's audit log. */
async function stateTexts(store: StoreKind, cwd: string, url: string | undefined): Promise<Record<string, string>> {
  const texts: Record<string, string> = {};
  if (store === 'postgres') {
    const db = await PostgresStore.open(url as string);
    try {
      expect(await db.audit.verify()).toMatchObject({ ok: true });
      texts['audit'] = (await db.audit.runs()).map((r) => JSON.stringify(r)).join('\n');
    } finally {
      await db.close();
    }
    return texts;
  }
  const stateDir = join(cwd, '.audience-kit');
  expect(verifyAuditLog(join(stateDir, 'audit.jsonl'))).toMatchObject({ ok: true });
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else texts[p] = readFileSync(p, 'latin1');
    }
  };
  walk(stateDir);
  return texts;
}

describe.each(STORES)('audience-kit sync (process, %s store)', { timeout: 90_000 }, (store) => {
  it('killed at several points and run again: the audience ends equal to the file, nothing confirmed re-sent', async () => {
    const cwd = tempDir('ak-sync-kill-');
    const audienceId = newAudience();
    const flags = await stateFlags(store);
    let runs = 0;
    const args = (file: string): string[] => [
      ...flags(runs++),
      ...syncOfAudience(audienceId, file),
      '--concurrency',
      '2',
      // The kills come while sending, after the hashing (a sync reads its whole input first).
      ...CALLING_THREAD,
    ];
    const a = join(cwd, 'a.csv');
    const b = join(cwd, 'b.csv');
    writeExport(a, range(0, 480));
    // 48 customers gone (10%: the default cap), 120 new.
    writeExport(b, range(48, 600));
    const first = await runCli([...args(a), '--json'], { cwd, env: target.env });
    expect(first.code, first.stderr).toBe(0);
    const outputs = [first.stdout, first.stderr];
    const sentBefore = usersSent(audienceId);

    let kills = 0;
    for (const killAfter of [1, 2, 2]) {
      const base = { answered: userRequests(audienceId), entered: gate.entered };
      gate.holding = true;
      const { child, done } = startCliProcess(args(b), { cwd, env: target.env, input: '' });
      // Let `killAfter` batches through, then kill while the next one is held.
      let exited = false;
      for (let released = 0; released <= killAfter && !exited; released++) {
        exited = (await Promise.race([gate.held().then(() => false), done.then(() => true)])) === true;
        if (!exited && released < killAfter) gate.releaseOne();
      }
      child.kill('SIGKILL');
      const r = await done;
      // A run with little left may finish before its kill point: that is fine too.
      if (r.signal === 'SIGKILL') kills++;
      else expect(r.code, r.stderr).toBe(0);
      outputs.push(r.stdout, r.stderr);
      // What the killed process left held reaches the platform now, as it would have.
      gate.releaseAll();
      await waitFor(() => userRequests(audienceId) - base.answered === gate.entered - base.entered);
    }
    expect(kills).toBeGreaterThanOrEqual(2);
    const last = await runCli([...args(b), '--json'], { cwd, env: target.env });
    outputs.push(last.stdout, last.stderr);
    expect(last.code, last.stderr).toBe(0);
    const report = JSON.parse(last.stdout) as { status: string; users: number; retries: number; requests: number };
    expect(report).toMatchObject({ status: 'completed', users: 552, retries: 0 });
    expect(target.sandbox.state.audienceSize(audienceId)).toBe(552);

    // 168 users changed. A killed run may leave confirmed-but-unrecorded batches (at most the
    // 2 in flight, 2 x ~25 users each), which the next run sends again; nothing else twice. Both
    // stores hold a batch's slot until its confirmation is durable (a file's fsync, the database's
    // insert), so this bound does not depend on the timing.
    const sent = usersSent(audienceId) - sentBefore;
    expect(sent).toBeGreaterThanOrEqual(168);
    expect(sent).toBeLessThanOrEqual(168 + 3 * 2 * 26);
    const again = await runCli([...args(b), '--json'], { cwd, env: target.env });
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 'completed', requests: 0, unchanged: 552 });

    const texts = { outputs: outputs.join('\n'), ...(await stateTexts(store, cwd, flags(0)[1])) };
    expect(scanFor(texts, range(0, 600).map(email))).toEqual([]);
  });
});

describe('audience-kit sync (two processes, two URLs of one database)', { timeout: 90_000 }, () => {
  it('the second sync of a target is refused while the first is sending: never both send', async () => {
    const cwd = tempDir('ak-sync-two-');
    const audienceId = newAudience();
    const flags = await stateFlags('postgres');
    const args = (n: number, file: string): string[] => [...flags(n), ...syncOfAudience(audienceId, file), '--json'];
    const a = join(cwd, 'a.csv');
    const b = join(cwd, 'b.csv');
    writeExport(a, range(0, 100));
    writeExport(b, range(100, 200));
    gate.holding = true;
    const first = startCliProcess(args(0, a), { cwd, env: target.env, input: '' });
    // The first process holds the target's lock: one of its batches waits at the sandbox.
    await gate.held();
    const second = await runCliProcess(args(1, b), { cwd, env: target.env, input: '' });
    expect(second.code, second.stderr).toBe(2);
    expect(second.stderr).toMatch(/another sync of this target is running \(.*pid \d+.*\)/);
    expect(second.stderr).not.toMatch(/person\.\d+@/);
    gate.releaseAll();
    const r = await first.done;
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', users: 100 });
    // Only the first file's users reached the platform, each once.
    expect(usersSent(audienceId)).toBe(100);
    expect(target.sandbox.state.audienceSize(audienceId)).toBe(100);
    // The database's audit log verifies and holds no raw value of either file.
    const texts = { outputs: [r.stdout, r.stderr, second.stdout, second.stderr].join('\n') };
    Object.assign(texts, await stateTexts('postgres', cwd, flags(0)[1]));
    expect(scanFor(texts, range(0, 200).map(email))).toEqual([]);
  });
});
