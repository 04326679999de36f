import { cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox, type Sandbox } from '../src/sandbox/index.js';
import { EXIT_CODES } from '../src/cli/exit-codes.js';
import { CALLING_THREAD, runCli, startCliProcess } from './helpers/cli.js';
import { createTestDatabase } from './helpers/postgres.js';
import { members, postgresStateUrl, range, setMembers, STORES, usePostgres, userPosts } from './helpers/sync.js';
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
    expect(refused.code).toBe(EXIT_CODES.state);
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

// A sync killed while sending (SIGKILL from the `slow` hook of its third request) whose write-ahead
// record is then damaged: lost (the `pending` file; the database's rows, as a failover to an
// asynchronous standby loses the last autocommitted inserts), with a gap, or of another version.
// The next day's sync of a DIFFERENT file, by a second worker (another directory and home; the
// database through another host name), must be refused with nothing sent, and `--recover` must end
// with the audience equal to the file, or say that it cannot and how to re-anchor it: never exit 0
// with users it could not account for.
async function sql(url: string, text: string): Promise<number> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query(text)).rowCount ?? 0;
  } finally {
    await db.end();
  }
}

type Damage = (where: { cwd: string; url: string | undefined }) => Promise<void>;

const lostPending: Damage = ({ cwd }) => {
  const snapshots = join(cwd, '.audience-kit', 'snapshots');
  const dir = join(snapshots, readdirSync(snapshots).find((f) => !f.endsWith('.lock')) ?? '');
  rmSync(join(dir, 'pending'));
  return Promise.resolve();
};

const POSTGRES_DAMAGES: [string, Damage][] = [
  [
    'the write-ahead rows lost',
    async ({ url }) => expect(await sql(url ?? '', 'DELETE FROM audience_kit_snapshot_wal')).toBeGreaterThan(2),
  ],
  [
    'a gap in the write-ahead rows',
    async ({ url }) =>
      expect(
        await sql(
          url ?? '',
          'DELETE FROM audience_kit_snapshot_wal WHERE seq = (SELECT max(seq) - 1 FROM audience_kit_snapshot_wal)',
        ),
      ).toBe(1),
  ],
  [
    'the write-ahead table dropped',
    async ({ url }) => {
      await sql(url ?? '', 'DROP TABLE audience_kit_snapshot_wal');
    },
  ],
  [
    'write-ahead rows of another version',
    async ({ url }) =>
      expect(await sql(url ?? '', 'UPDATE audience_kit_snapshot_wal SET version = version + 1')).toBeGreaterThan(2),
  ],
];

/** What a killed sync left: its working directory, the audience, its state database (none: the directory store). */
interface Killed {
  cwd: string;
  audienceId: string;
  url: string | undefined;
}

/** Syncs a, then starts the sync of b and SIGKILLs it in its third request, applied once the process is gone. */
async function killedSync(url: string | undefined): Promise<Killed> {
  const cwd = tempDir('ak-sync-damage-');
  const audienceId = sandbox.state.createCustomAudience(sandbox.accounts.primary, 'damage').id;
  const a = writeExport(join(cwd, 'a.csv'), range(0, 200));
  // b removes 0..20 and adds 200..280; c takes back 0..10 and drops 230..280.
  const b = writeExport(join(cwd, 'b.csv'), range(20, 280));
  const state = url === undefined ? [] : ['--state', url];
  expect((await runCli(syncArgs(a, audienceId, state), { cwd, env })).code).toBe(0);

  sandbox.setFaults('slow@3');
  const { child, done } = startCliProcess(syncArgs(b, audienceId, state), { cwd, env, input: '' });
  let logged = Infinity;
  onSlow = async () => {
    logged = sandbox.state.requests.length;
    child.kill('SIGKILL');
    await done;
  };
  expect((await done).signal).toBe('SIGKILL');
  // The request it was killed in is applied once it is gone: wait for the sandbox to log it.
  while (sandbox.state.requests.length <= logged) await new Promise((r) => setTimeout(r, 5));
  sandbox.setFaults('');
  onSlow = () => Promise.resolve();
  return { cwd, audienceId, url };
}

/**
 * Damages the killed sync's write-ahead record; the next day's sync of c by a second worker is
 * refused with nothing sent, --recover completes (directory) or says the audience must be
 * re-anchored (postgres), and so does every later sync until acknowledged.
 */
async function damagedThenSynced(killed: Killed, damage: Damage): Promise<void> {
  const { cwd, audienceId, url } = killed;
  await damage({ cwd, url });

  // A second worker: another directory (the state directory copied to it) and home.
  const second = tempDir('ak-sync-damage-2-');
  if (url === undefined) cpSync(join(cwd, '.audience-kit'), join(second, '.audience-kit'), { recursive: true });
  const c = writeExport(join(second, 'c.csv'), [...range(0, 10), ...range(30, 230)]);
  const env2 = { ...env, HOME: second };
  const other = url === undefined ? [] : ['--state', url.replace('127.0.0.1', 'localhost')];
  const before = members(sandbox, audienceId);
  const posts = userPosts(sandbox, audienceId);
  const refused = await runCli(syncArgs(c, audienceId, ['--max-removals', '100%', ...other]), {
    cwd: second,
    env: env2,
  });
  expect(refused.code, refused.stderr).toBe(EXIT_CODES.state);
  expect(refused.stderr).toMatch(/write-ahead/);
  expect(refused.stderr).toMatch(/--recover/);
  expect(userPosts(sandbox, audienceId)).toBe(posts);
  expect(members(sandbox, audienceId)).toEqual(before);

  const recovered = await runCli(
    [...syncArgs(c, audienceId, ['--recover', '--max-removals', '100%', ...other]), '--json'],
    {
      cwd: second,
      env: env2,
    },
  );
  const report = JSON.parse(recovered.stdout) as { status: string; error?: { code: string } };
  if (url === undefined) {
    // The frames of the users it was adding are in the data file: every one is accounted for.
    expect(recovered.code, recovered.stderr).toBe(0);
    expect(report).toMatchObject({ status: 'completed' });
    expect(members(sandbox, audienceId)).toEqual(await reference(second, c));
  } else {
    // The users the killed sync may have added went with the rows: the audience can only be re-anchored by a replace.
    expect(recovered.code, recovered.stderr).toBe(5);
    expect(report).toMatchObject({ status: 'partial', error: { code: 'snapshot_users_unrecovered' } });
    expect(recovered.stdout + recovered.stderr).toMatch(/new audience/);
  }
  // Every later sync says so too, until acknowledged: never a silent `completed`.
  const again = await runCli([...syncArgs(c, audienceId, other), '--json'], { cwd: second, env: env2 });
  expect(again.code === 0, again.stderr).toBe(url === undefined);
}

describe('a killed sync whose write-ahead record is damaged', { timeout: 90_000 }, () => {
  it('the pending file lost (directory store)', async () => {
    await damagedThenSynced(await killedSync(undefined), lostPending);
  });

  // One killed sync for the four damages: each gets a copy of its database (CREATE DATABASE …
  // TEMPLATE) and the audience as the kill left it.
  describe('postgres store: one killed sync, its database copied for each damage', () => {
    let template: { url: string; drop: () => Promise<void> };
    let killed: Killed;
    let left: number[];
    beforeAll(async () => {
      template = await createTestDatabase();
      killed = await killedSync(template.url);
      left = members(sandbox, killed.audienceId);
    });
    afterAll(async () => {
      await template.drop();
    });

    it.each(POSTGRES_DAMAGES)('%s (postgres store)', async (_, damage) => {
      const copy = await createTestDatabase(template.url);
      onTestFinished(copy.drop);
      setMembers(sandbox, killed.audienceId, left);
      await damagedThenSynced({ ...killed, url: copy.url }, damage);
    });
  });
});
