import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../src/sandbox/index.js';
import { CALLING_THREAD, runCli, startCliProcess } from './helpers/cli.js';
import { members, postgresStateUrl, STORES, usePostgres } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';
import { gate, target, userRequests, useHeldSandbox, waitFor } from './helpers/upload-cli.js';

// `sync --consent do-not-reach=LIST` keeps two targets equal to the file: the audience holds the
// people whose row does not say no, the list those whose row does. A person who opts out between
// two syncs leaves the audience (Delete) and joins the list; one who opts back in the reverse. A
// process killed (SIGKILL) between the two targets, while the list's first batch is held,
// converges on the next run, with the state in a directory and in PostgreSQL.
useHeldSandbox();
usePostgres();

const email = (i: number): string => `person.${i}@example.org`;
/** An export of people 0..299 whose `Unsubscribed` cell says true for `out(i)`. */
function writeExport(path: string, out: (i: number) => boolean): void {
  const rows = Array.from({ length: 300 }, (_, i) => `${email(i)},${out(i) ? 'true' : 'false'}`);
  writeFileSync(path, `Email,Unsubscribed\n${rows.join('\n')}\n`);
}
const outV1 = (i: number): boolean => i % 10 === 0;
// 30 more opt out (i % 10 === 1); 15 of those who had opt back in (i % 20 === 0).
const outV2 = (i: number): boolean => (i % 10 === 0 && i % 20 !== 0) || i % 10 === 1;

/** The user keys the sandbox holds for a do-not-reach list (its internal set). */
function listMembers(sandbox: Sandbox, listId: string): number[] {
  const state = sandbox.state as unknown as { dnrLists: Map<string, { users: { slots: Float64Array } }> };
  const slots = state.dnrLists.get(listId)?.users.slots ?? new Float64Array();
  return [...slots].filter((k) => k >= 0).sort((a, b) => a - b);
}

/** An audience and a do-not-reach list of `account` (the sandbox allows one list per account). */
function targets(account: string) {
  const audience = target.sandbox.state.createCustomAudience(account, `consent-${account}`).id;
  return { account, audience, list: target.sandbox.state.createDoNotReachList(account).id };
}

/** `--state-dir DIR`, or `--state URL` (a PostgreSQL schema of its own). */
type StateArgs = ['--state-dir' | '--state', string];

const args = (t: ReturnType<typeof targets>, file: string, state: StateArgs): string[] => [
  'sync',
  file,
  '--account',
  t.account,
  '--audience',
  t.audience,
  '--consent',
  `do-not-reach=${t.list}`,
  ...state,
  '--max-removals',
  '100%',
  '--max-body-bytes',
  '2000',
  '--concurrency',
  '1',
  ...CALLING_THREAD,
];

describe('sync --consent do-not-reach: both targets equal to the file', { timeout: 90_000 }, () => {
  it('opt-outs and opt-ins move between the audience and the list; a kill between the two converges', async () => {
    const cwd = tempDir('ak-consent-sync-');
    const v1 = join(cwd, 'v1.csv');
    const v2 = join(cwd, 'v2.csv');
    writeExport(v1, outV1);
    writeExport(v2, outV2);

    // The reference: both syncs run through, nothing held.
    const ref = targets(target.sandbox.accounts.primary);
    const refState: StateArgs = ['--state-dir', join(cwd, 'ref-state')];
    const requests: number[] = [];
    for (const file of [v1, v2]) {
      const r = await runCli([...args(ref, file, refState), '--json'], { cwd, env: target.env });
      expect(r.code, r.stderr).toBe(0);
      // The list's phase lines say whose sync they are; the named audience's do not.
      expect(r.stderr.split(`do-not-reach list ${ref.list}: the rows that say no`)).toHaveLength(2);
      requests.push(userRequests(ref.audience));
    }
    const audienceRequests = (requests[1] ?? 0) - (requests[0] ?? 0);
    expect(target.sandbox.state.audienceSize(ref.audience)).toBe(255);
    expect(target.sandbox.state.dnrListSize(ref.list)).toBe(45);

    // The same series, killed between the two targets of the second sync, on each state store.
    for (const store of STORES) {
      const account = store === 'directory' ? target.sandbox.accounts.secondary : target.sandbox.state.createAccount();
      const state: StateArgs =
        store === 'directory' ? ['--state-dir', join(cwd, 'state')] : ['--state', await postgresStateUrl()];
      await killedBetweenTargets(targets(account), state, { cwd, v1, v2, ref, audienceRequests });
    }
  });
});

/** The series on `t`, killed (SIGKILL) while the list's first batch of the second sync is held; then run again. */
async function killedBetweenTargets(
  t: ReturnType<typeof targets>,
  state: StateArgs,
  {
    cwd,
    v1,
    v2,
    ref,
    audienceRequests,
  }: { cwd: string; v1: string; v2: string; ref: ReturnType<typeof targets>; audienceRequests: number },
): Promise<void> {
  const first = await runCli([...args(t, v1, state), '--json'], { cwd, env: target.env });
  expect(first.code, first.stderr).toBe(0);
  const doc = JSON.parse(first.stdout) as { users: number; do_not_reach: { users: number; status: string } };
  expect(doc).toMatchObject({ users: 270, do_not_reach: { users: 30, status: 'completed' } });
  const before = userRequests(t.audience);

  gate.holding = true;
  const { child, done } = startCliProcess(args(t, v2, state), { cwd, env: target.env, input: '' });
  // The audience's batches go through; the next one held is the list's.
  for (let released = 0; released < audienceRequests; released++) {
    await gate.held();
    gate.releaseOne();
    await waitFor(() => userRequests(t.audience) - before === released + 1);
  }
  await gate.held();
  child.kill('SIGKILL');
  const killed = await done;
  expect(killed.signal).toBe('SIGKILL');
  gate.releaseAll();
  // The audience is the file's already; the list is not yet.
  expect(members(target.sandbox, t.audience)).toEqual(members(target.sandbox, ref.audience));
  expect(target.sandbox.state.dnrListSize(t.list)).not.toBe(45);

  const again = await runCli([...args(t, v2, state), '--json'], { cwd, env: target.env });
  expect(again.code, again.stderr).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ status: 'completed', do_not_reach: { status: 'completed' } });
  expect(members(target.sandbox, t.audience)).toEqual(members(target.sandbox, ref.audience));
  expect(listMembers(target.sandbox, t.list)).toEqual(listMembers(target.sandbox, ref.list));
  // The file's people, nobody twice: the audience and the list are disjoint.
  const audience = new Set(members(target.sandbox, t.audience));
  expect(listMembers(target.sandbox, t.list).filter((k) => audience.has(k))).toEqual([]);
}
