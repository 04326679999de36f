import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { CALLING_THREAD, runCli, startCliProcess } from './helpers/cli.js';
import { members, postgresStateUrl, range, STORES, usePostgres } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';
import { sandboxEnv } from './helpers/upload-cli.js';

// `sync` as a real process killed while sending, at a point the sandbox chooses: the `slow`
// fault of request N calls the sandbox's sleep, which signals the process and (for SIGKILL)
// waits for it to be gone before the sandbox applies the request. The platform then holds a
// batch the process never heard back about. The next sync, of a DIFFERENT file, must leave
// the audience equal to that file. With the PostgreSQL store, that sync connects through another
// host name (as another machine would).
usePostgres();

let sandbox: Sandbox;
let env: NodeJS.ProcessEnv;
/** What the sandbox's sleep does when a `slow` fault fires. */
let onSlow: () => Promise<void> = () => Promise.resolve();

beforeAll(async () => {
  sandbox = await startSandbox({ seed: 5, sleep: () => onSlow() });
  env = sandboxEnv(sandbox);
});
afterAll(async () => {
  await sandbox.close();
});

const email = (i: number): string => `person.${i}@example.org`;
function writeExport(path: string, ids: number[]): string {
  writeFileSync(path, `Email\n${ids.map(email).join('\n')}\n`);
  return path;
}

function syncArgs(file: string, audienceId: string, extra: string[] = []): string[] {
  const target = ['--account', sandbox.accounts.primary, '--audience', audienceId];
  // On the calling thread: the signal comes while sending, after the hashing (a sync reads its input first).
  return ['sync', file, ...target, '--max-body-bytes', '2000', '--concurrency', '1', ...CALLING_THREAD, ...extra];
}

const references = new Map<string, number[]>();
/** The users a plain upload of `file` puts in a fresh audience: what the synced one must hold. */
async function reference(cwd: string, file: string): Promise<number[]> {
  const key = readFileSync(file, 'utf8');
  const known = references.get(key);
  if (known !== undefined) return known;
  const id = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'reference').id;
  const target = ['--account', sandbox.accounts.primary, '--audience', id];
  const r = await runCli(['upload', file, ...target, ...CALLING_THREAD, '--state-dir', join(cwd, 'ref')], { cwd, env });
  expect(r.code, r.stderr).toBe(0);
  references.set(key, members(sandbox, id));
  return members(sandbox, id);
}

/** Signal the process when the sandbox's `slow` fault fires; SIGKILL: wait until it is gone. */
function killOnSlow(child: ChildProcess, signal: NodeJS.Signals, exited: Promise<unknown>): void {
  onSlow = async () => {
    child.kill(signal);
    if (signal === 'SIGKILL') await exited;
  };
}

describe.each(STORES)(
  'sync killed while sending, then a sync of another file (%s store)',
  { timeout: 90_000 },
  (store) => {
    it.each([
      ['SIGKILL', 'in the Delete phase', 'slow@1'],
      ['SIGKILL', 'in the Update phase', 'slow@3'],
      ['SIGHUP', 'in the Update phase', 'slow@2'],
    ] as const)('%s %s', async (signal, _, faults) => {
      const cwd = tempDir('ak-sync-unclean-');
      const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'unclean').id;
      const a = writeExport(join(cwd, 'a.csv'), range(0, 200));
      // b removes 0..20 and adds 200..280; c takes back 0..10 and drops 230..280.
      const b = writeExport(join(cwd, 'b.csv'), range(20, 280));
      const c = writeExport(join(cwd, 'c.csv'), [...range(0, 10), ...range(30, 230)]);
      const url = store === 'postgres' ? await postgresStateUrl() : undefined;
      const state = url === undefined ? [] : ['--state', url];
      const first = await runCli(syncArgs(a, audienceId, state), { cwd, env });
      expect(first.code, first.stderr).toBe(0);

      sandbox.setFaults(faults);
      const { child, done } = startCliProcess(syncArgs(b, audienceId, state), { cwd, env, input: '' });
      killOnSlow(child, signal, done);
      const killed = await done;
      expect(killed.code === 0 && killed.signal === null, killed.stderr).toBe(false);
      sandbox.setFaults('');
      onSlow = () => Promise.resolve();

      const other = url === undefined ? [] : ['--state', url.replace('127.0.0.1', 'localhost')];
      const next = await runCli([...syncArgs(c, audienceId, ['--max-removals', '100%', ...other]), '--json'], {
        cwd,
        env,
      });
      expect(next.code, next.stderr).toBe(0);
      expect(JSON.parse(next.stdout)).toMatchObject({ status: 'completed' });
      expect(members(sandbox, audienceId)).toEqual(await reference(cwd, c));
    });
  },
);

describe('a damaged snapshot, by a process', { timeout: 90_000 }, () => {
  it('a damaged snapshot is refused with the recovery as its fix; --recover ends with the audience equal to the file', async () => {
    const cwd = tempDir('ak-sync-recover-');
    const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'recover').id;
    const a = writeExport(join(cwd, 'a.csv'), range(0, 150));
    const c = writeExport(join(cwd, 'c.csv'), range(40, 190));
    expect((await runCli(syncArgs(a, audienceId), { cwd, env })).code).toBe(0);
    const snapshots = join(cwd, '.audience-kit', 'snapshots');
    const dir = join(snapshots, readdirSync(snapshots).find((f) => !f.endsWith('.lock')) ?? '');
    rmSync(join(dir, 'index'));

    const refused = await runCli(syncArgs(c, audienceId), { cwd, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/index is missing/);
    expect(refused.stderr).toMatch(/--recover/);

    const recovered = await runCli([...syncArgs(c, audienceId, ['--recover', '--max-removals', '100%']), '--json'], {
      cwd,
      env,
    });
    expect(recovered.code, recovered.stderr).toBe(0);
    expect(JSON.parse(recovered.stdout)).toMatchObject({ status: 'completed', removes: 40, adds: 40, refreshes: 110 });
    expect(members(sandbox, audienceId)).toEqual(await reference(cwd, c));
  });
});
