import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { AdsClient } from '../src/api/client.js';
import { runUpload as runUploadAt100 } from '../src/upload/run.js';
import { syncAudience as syncAudienceAt100 } from '../src/upload/sync.js';
import { hashCsv, type HashCsvRun } from '../src/hashing/pipeline.js';
import type { RawRecord } from '../src/identifiers/rows.js';
import { acquireFileLock } from '../src/state/lock.js';
import { snapshotDir } from '../src/state/snapshot.js';
import { reportJson } from '../src/upload/report.js';
import type { SyncAudienceOptions } from '../src/upload/sync.js';
import { runUpload, syncAudience, uploadAudience } from './helpers/small-audience.js';
import { PlanCollector } from '../src/upload/sync-input.js';
import { CALLING_THREAD, runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import { FIXTURE, rawValues, scanFor } from './helpers/upload-cli.js';
import {
  auditLines,
  customer,
  customers,
  expected,
  members,
  range,
  setup as setupWith,
  setupWithSlowHook,
  STORES,
  syncOf,
  usePostgres,
  userPosts,
  verifyAudit,
  type StoreKind,
} from './helpers/sync.js';

const DAY = 86_400_000;
usePostgres();

describe.each(STORES)('syncAudience (%s store)', (store: StoreKind) => {
  const setup = (...a: Parameters<typeof setupWith>) => setupWith(a[0], a[1], store);

  it('keeps the audience equal to the latest export through a series of syncs', async () => {
    const t = await setup();
    const first = await syncOf(t, customers(range(0, 200)));
    expect(first).toMatchObject({ status: 'completed', first_sync: true, adds: 200, removes: 0 });
    expect(first.update.users_confirmed).toBe(200);
    expect(first.delete.requests).toBe(0);
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, customers(range(0, 200))));

    // 10 left, 15 joined, 5 changed phone, and a few rows repeated.
    const next = [
      ...customers(range(10, 195)),
      ...range(195, 200).map((i) => customer(i, 1)),
      ...customers(range(200, 215)),
      ...customers([20, 21, 22]),
    ];
    const second = await syncOf(t, next);
    expect(second).toMatchObject({
      status: 'completed',
      first_sync: false,
      adds: 20,
      removes: 15,
      refreshes: 0,
      unchanged: 185,
      duplicates: 3,
      users: 205,
    });
    expect(second.delete).toMatchObject({ users: 15, users_confirmed: 15, status: 'completed' });
    expect(second.update).toMatchObject({ users: 20, users_confirmed: 20, status: 'completed' });
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, next));
    expect(second.snapshot.after.users).toBe(205);

    // Unchanged: nothing sent.
    const posts = userPosts(t.sandbox, t.audienceId);
    const same = await syncOf(t, next);
    expect(same).toMatchObject({ status: 'completed', requests: 0, unchanged: 205 });
    expect(same.snapshot.after.digest).toBe(second.snapshot.after.digest);
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);

    // After the refresh window every user is sent again (an injected clock, 181 days on).
    const later = { now: () => Date.now() + 181 * DAY, sleep: async () => {} };
    const refreshed = await syncOf(t, next, { clock: later });
    expect(refreshed).toMatchObject({ status: 'completed', refreshes: 205, adds: 0, removes: 0 });
    expect(refreshed.update.users_confirmed).toBe(205);
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, next));

    const audit = await verifyAudit(t);
    expect(audit).toMatchObject({ ok: true, records: 8 });
    const ends = (await auditLines(t)).map(
      (l) => JSON.parse(l) as { event: string; sync?: { removes_confirmed: number } },
    );
    expect(ends.filter((r) => r.event === 'run_end').map((r) => r.sync?.removes_confirmed)).toEqual([0, 15, 0, 0]);
  });

  it('users a fast clock recorded as sent in the future are refreshed by the next sync on the right time, not put off past their expiry', async () => {
    const t = await setup();
    const now = Date.now();
    const at = (days: number) => ({ now: () => now + days * DAY, sleep: async () => {} });
    expect(await syncOf(t, customers(range(0, 50)), { clock: at(0) })).toMatchObject({ status: 'completed' });
    // One run on a host whose clock is a year fast: its 50 new users and the 50 it finds a year
    // old (refreshed) are recorded as sent a year ahead.
    const fast = await syncOf(t, customers(range(0, 100)), { clock: at(1 + 365) });
    expect(fast).toMatchObject({ status: 'completed', adds: 50, refreshes: 50 });
    // The next day, on the right time: all 100 are sent again (their membership runs from now).
    const next = await syncOf(t, customers(range(0, 100)), { clock: at(2) });
    expect(next).toMatchObject({ status: 'completed', refreshes: 100, unchanged: 0, adds: 0 });
    // Within an hour of the sync's clock is not the future: nothing is sent.
    const again = await syncOf(t, customers(range(0, 100)), {
      clock: { now: () => now + 2 * DAY - 1800_000, sleep: async () => {} },
    });
    expect(again).toMatchObject({ status: 'completed', refreshes: 0, unchanged: 100, requests: 0 });
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, customers(range(0, 100))));
  });

  it('a user too large for one request is not recorded as a member: partial, until a larger limit sends it', async () => {
    const t = await setup();
    const big = {
      email: range(0, 16)
        .map((i) => `big.${i}@example.com`)
        .join('|'),
    };
    const rows = [...customers(range(0, 5)), big];
    const records = { defaultCountry: 'US', valueSeparator: '|' };
    const first = await syncOf(t, rows, { records, limits: { maxBodyBytes: 1024 } });
    expect(first).toMatchObject({ status: 'partial', adds: 6, oversized_users: 1, snapshot: { after: { users: 5 } } });
    expect(first.error?.code).toBe('users_oversized');
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, customers(range(0, 5))));
    const sent = await syncOf(t, rows, { records });
    expect(sent).toMatchObject({ status: 'completed', adds: 1, oversized_users: 0, snapshot: { after: { users: 6 } } });
  });

  it('refuses an empty input and a removal above the cap before sending anything', async () => {
    const t = await setup();
    await syncOf(t, customers(range(0, 100)));
    const posts = userPosts(t.sandbox, t.audienceId);
    await expect(syncOf(t, [{ email: 'not an email' }])).rejects.toMatchObject({ code: 'sync_empty_input' });
    await expect(syncOf(t, customers(range(0, 80)))).rejects.toMatchObject({
      code: 'sync_too_many_removals',
      message: expect.stringMatching(/remove 20 of 100 users/) as unknown,
    });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);
    // A dry run shows the refused plan, with what the sends would take.
    const dry = await syncOf(t, customers(range(0, 80)), { dryRun: true });
    expect(dry).toMatchObject({ status: 'refused', removes: 20, dry_run: true });
    expect(dry.error?.code).toBe('sync_too_many_removals');
    expect(dry.delete.batches).toBeGreaterThan(0);
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);
    const allowed = await syncOf(t, customers(range(0, 80)), { maxRemovals: 20 });
    expect(allowed).toMatchObject({ status: 'completed', removes: 20 });
    const emptied = await syncOf(t, [], { allowEmpty: true, maxRemovals: '100%' });
    expect(emptied).toMatchObject({ status: 'completed', removes: 80 });
    expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(0);
  });

  it('an interrupted sync keeps what was confirmed; the next run sends only the rest', async () => {
    const t = await setup();
    await syncOf(t, customers(range(0, 100)));
    const controller = new AbortController();
    const rows = customers(range(5, 110));
    const stopped = await syncOf(t, rows, {
      signal: controller.signal,
      onPhase: (phase) => {
        if (phase === 'updating') controller.abort();
      },
    });
    expect(stopped).toMatchObject({ status: 'interrupted', removes: 5, adds: 10 });
    expect(stopped.delete.users_confirmed).toBe(5);
    expect(stopped.snapshot.after.users).toBe(95);
    const rest = await syncOf(t, rows);
    expect(rest).toMatchObject({ status: 'completed', removes: 0, adds: 10, unchanged: 95 });
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
  });

  it('syncs a do-not-reach list', async () => {
    const t = await setup();
    const listId = t.sandbox.state.createDoNotReachList(t.sandbox.accounts.primary, 'dnr').id;
    const target = { doNotReachListId: listId };
    const emails = (ids: number[]): RawRecord[] => ids.map((i) => ({ email: `customer.${i}@example.com` }));
    expect(await syncOf(t, emails(range(0, 40)), { target })).toMatchObject({ status: 'completed', adds: 40 });
    const r = await syncOf(t, emails(range(4, 44)), { target });
    expect(r).toMatchObject({ status: 'completed', adds: 4, removes: 4, target: { kind: 'do_not_reach_list' } });
    expect(t.sandbox.state.dnrListSize(listId)).toBe(40);
  });

  it('converges through 503, 429, count mismatches and dropped connections', async () => {
    const t = await setup({ faults: '503=1@2,429@4,mismatch@6,drop@8,503=1@12' });
    const a = customers(range(0, 300));
    const b = [...customers(range(30, 300)), ...customers(range(300, 340))];
    let retries = 0;
    for (const rows of [a, b]) {
      const small = { limits: { maxBodyBytes: 4000 } };
      let report = await syncOf(t, rows, small);
      retries += report.retries;
      // A batch the platform kept failing is left for the next run, which sends only what is missing.
      for (let i = 0; report.status !== 'completed' && i < 3; i++) report = await syncOf(t, rows, small);
      expect(report.status).toBe('completed');
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
    }
    expect(retries).toBeGreaterThanOrEqual(4);
  });
});

describe('syncAudience (directory store)', () => {
  const setup = setupWith;

  it('refuses a second sync of the same target while one holds its lock', async () => {
    const t = await setup();
    const dir = snapshotDir(t.stateDir, {
      accountId: t.sandbox.accounts.primary,
      kind: 'custom_audience',
      id: t.audienceId,
    });
    await syncOf(t, customers(range(0, 5)));
    const release = await acquireFileLock(`${dir}.lock`);
    try {
      await expect(syncOf(t, customers(range(0, 6)))).rejects.toMatchObject({
        code: 'sync_in_progress',
        message: expect.stringMatching(new RegExp(`pid ${process.pid}`)) as unknown,
      });
    } finally {
      release();
    }
  });

  it('a batch cut by cancelSignal after the input was read makes the run interrupted, never completed; the next sync ends equal', async () => {
    const { t, hook } = await setupWithSlowHook();
    expect(await syncOf(t, customers(range(0, 100)))).toMatchObject({ status: 'completed' });
    const cancel = new AbortController();
    t.sandbox.setFaults('slow@1');
    hook.onSlow = () => cancel.abort();
    const cut = await syncOf(t, customers(range(0, 110)), { cancelSignal: cancel.signal });
    t.sandbox.setFaults('');
    expect(cut.status).toBe('interrupted');
    expect(cut.update).toMatchObject({ status: 'interrupted', users_confirmed: 0 });
    const next = await syncOf(t, customers(range(0, 110)));
    expect(next.status).toBe('completed');
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, customers(range(0, 110))));
  });

  it("refuses an upload's expiresAt or effectiveAt instead of ignoring them, before anything is read or sent", async () => {
    const t = await setup();
    for (const [option, value] of [
      ['expiresAt', '2030-01-31T00:00:00Z'],
      ['effectiveAt', 'garbage'],
    ] as const)
      await expect(syncOf(t, customers(range(0, 5)), { [option]: value } as never)).rejects.toMatchObject({
        code: 'invalid_option',
        message: expect.stringContaining(`a sync does not take ${option}`),
      });
    expect(t.sandbox.state.requests).toEqual([]);
  });

  it('keeps raw identifiers out of the snapshot, the audit log and the report', async () => {
    const t = await setup();
    const rows = customers(range(0, 50));
    await syncOf(t, rows);
    const report = await syncOf(t, customers(range(5, 55)));
    const texts: string[] = [
      JSON.stringify(reportJson(report as never)),
      readFileSync(join(t.stateDir, 'audit.jsonl'), 'latin1'),
    ];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else texts.push(readFileSync(p, 'latin1'));
      }
    };
    walk(t.stateDir);
    const raw = customers(range(0, 55)).flatMap((r) => [String(r.email), String(r.phone).replaceAll(' ', '')]);
    for (const text of texts) for (const v of raw) expect(text.includes(v)).toBe(false);
  });
});

describe('the state store option', () => {
  it('is one store: stateDir with state is refused in the parse (and a sync without either), before anything is opened', async () => {
    const stateDir = tempDir('ak-sync-one-store-');
    const base = { accountId: '1', target: { customAudienceId: '2' }, users: [], dryRun: true };
    // An unreachable URL: a store opened anyway would fail otherwise (state_unreachable), not as refused here.
    const state = 'postgres://nobody@127.0.0.1:1/none';
    const both = { code: 'invalid_option', message: 'give stateDir or state, not both' };
    await expect(syncAudience({ ...base, stateDir, state })).rejects.toMatchObject(both);
    await expect(runUpload({ ...base, stateDir, state })).rejects.toMatchObject(both);
    await expect(syncAudience(base)).rejects.toMatchObject({
      code: 'invalid_option',
      message: 'syncAudience needs stateDir or state',
    });
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it('a mistyped state URL is refused by the parse: no request made, no row of the input read', async () => {
    const touched: string[] = [];
    // A client and users that record any use: the refusal must come before both.
    const client = new Proxy({} as AdsClient, {
      get: (_t, p) => {
        touched.push(`client.${String(p)}`);
        return () => Promise.reject(new Error('used'));
      },
    });
    const users = {
      [Symbol.asyncIterator]() {
        touched.push('users read');
        return { next: () => Promise.resolve({ done: true as const, value: undefined }) };
      },
    };
    const base = { client, accountId: '1', target: { customAudienceId: '2' }, users };
    const refused = {
      code: 'invalid_option',
      message: 'state must be a PostgreSQL URL (postgres://user@host:5432/database)',
    };
    // The entries themselves: their default minimum audience size would read the input ahead first.
    for (const entry of [runUploadAt100, syncAudienceAt100, runUpload, syncAudience]) {
      await expect(entry({ ...base, state: 'postgress://app@db.example.com/ads' })).rejects.toMatchObject(refused);
      await expect(entry({ ...base, state: 'postgres://app@db.example.com' })).rejects.toMatchObject({
        code: 'state_database_unnamed',
      });
    }
    expect(touched).toEqual([]);
  });
});

describe.each(STORES)(
  'syncAudience over a CSV file, %s store (its hashing workers leave the known users out)',
  (store) => {
    const setup = () => setupWith({}, {}, store);
    /**
     * A CRM export of `rows`, hashed for sending as the CLI does (several chunks, two workers).
     * `seen.leftOut` counts the users whose text the workers left out: what the sync's planner
     * received (each chunk it plans from), counted by its sync (syncFile).
     */
    async function csvRun(dir: string, name: string, rows: RawRecord[]) {
      const path = join(dir, name);
      writeFileSync(path, `email,phone\n${rows.map((r) => `${String(r.email)},"${String(r.phone)}"`).join('\n')}\n`);
      const run = await hashCsv(path, { emit: 'packed', workers: 2, chunkBytes: 2048 });
      return Object.assign(run, { seen: { leftOut: 0 } });
    }
    /** Users left out by the workers in the chunks the planner receives (one line per user; a left-out user's is empty). */
    function countLeftOut(): { stop: () => number } {
      let leftOut = 0;
      const addPacked = PlanCollector.prototype.addPacked;
      const spy = vi.spyOn(PlanCollector.prototype, 'addPacked').mockImplementation(function (
        this: PlanCollector,
        packed,
      ) {
        leftOut += packed.jsonLines
          .split('\n')
          .slice(0, -1)
          .filter((line) => line === '').length;
        addPacked.call(this, packed);
      });
      return {
        stop: () => {
          spy.mockRestore();
          return leftOut;
        },
      };
    }
    const at = (base: number, days: number) => ({ now: () => base + days * DAY, sleep: async () => {} });
    async function syncFile(
      t: Awaited<ReturnType<typeof setup>>,
      users: HashCsvRun & { seen?: { leftOut: number } },
      extra: Partial<SyncAudienceOptions>,
    ) {
      const counting = countLeftOut();
      try {
        return await syncAudience({
          client: t.client,
          accountId: t.sandbox.accounts.primary,
          target: { customAudienceId: t.audienceId },
          users,
          ...t.state,
          limits: { maxBodyBytes: 20_000 },
          retryBaseMs: 1,
          ...extra,
        });
      } finally {
        const leftOut = counting.stop();
        if (users.seen !== undefined) users.seen.leftOut += leftOut;
      }
    }
    /** Remove every member on the platform, behind the snapshot's back: what a sync sends next shows. */
    async function emptyOnPlatform(t: Awaited<ReturnType<typeof setup>>, rows: RawRecord[]) {
      const r = await uploadAudience({
        client: t.client,
        accountId: t.sandbox.accounts.primary,
        target: { customAudienceId: t.audienceId },
        operation: 'delete',
        users: rows,
        records: {},
      });
      expect(r.status).toBe('completed');
      expect(t.sandbox.state.audienceSize(t.audienceId)).toBe(0);
    }

    it('sends the new, changed and stale users, leaves the fresh ones out, and sends all with full', async () => {
      const t = await setup();
      const dir = tempDir('ak-sync-csv-');
      const base = Date.now();
      const a = customers(range(0, 100));
      const firstRun = await csvRun(dir, 'a.csv', a);
      const first = await syncFile(t, firstRun, { clock: at(base, 0) });
      expect(first).toMatchObject({ status: 'completed', adds: 100 });
      expect(firstRun.seen.leftOut).toBe(0);

      // 100 days on: 13 left (3 of them changed phone), 30 joined, two rows repeated.
      const kept = customers(range(0, 87));
      const rowsB = [
        ...kept,
        ...range(87, 90).map((i) => customer(i, 1)),
        ...customers(range(100, 130)),
        ...customers([5, 6]),
      ];
      const secondRun = await csvRun(dir, 'b.csv', rowsB);
      const second = await syncFile(t, secondRun, { clock: at(base, 100), maxRemovals: 13 });
      expect(second).toMatchObject({
        status: 'completed',
        adds: 33,
        removes: 13,
        refreshes: 0,
        unchanged: 87,
        duplicates: 2,
        users: 120,
      });
      expect(secondRun.seen.leftOut).toBe(87 + 2); // the unchanged users, and the repeats of two of them
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rowsB));

      // 181 days after the first sync its users are due for a refresh; the 33 sent on day 100 are not.
      await emptyOnPlatform(t, rowsB);
      const thirdRun = await csvRun(dir, 'b.csv', rowsB);
      const third = await syncFile(t, thirdRun, { clock: at(base, 181) });
      expect(third).toMatchObject({ status: 'completed', refreshes: 87, adds: 0, removes: 0, unchanged: 33 });
      expect(third.update.users_confirmed).toBe(87);
      expect(thirdRun.seen.leftOut).toBe(33);
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, kept));

      const fullRun = await csvRun(dir, 'b.csv', rowsB);
      const full = await syncFile(t, fullRun, { clock: at(base, 182), full: true });
      expect(full).toMatchObject({ status: 'completed', adds: 0, removes: 0, duplicates: 2 });
      expect(full.update.users_confirmed).toBe(120);
      expect(fullRun.seen.leftOut).toBe(0);
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rowsB));
    });

    it("with the minimum audience size on (the CLI's default), read ahead before the snapshot opens, the known users are still left out", async () => {
      const t = await setup();
      const dir = tempDir('ak-sync-csv-');
      const rows = customers(range(0, 2000));
      await syncFile(t, await csvRun(dir, 'a.csv', rows), {});
      // 50 left, 40 joined; the check reads ahead to 100 users, so the first chunks were sent without the table.
      const rowsB = [...customers(range(50, 2000)), ...customers(range(2000, 2040))];
      const run = await csvRun(dir, 'b.csv', rowsB);
      const given: boolean[] = [];
      const leaveOut = run.leaveOutKnownUsers.bind(run);
      run.leaveOutKnownUsers = (table) => {
        const taken = leaveOut(table);
        if (table !== undefined) given.push(taken);
        return taken;
      };
      const report = await syncFile(t, run, { minAudienceSize: 100, maxRemovals: 50 });
      expect(report).toMatchObject({ status: 'completed', adds: 40, removes: 50, unchanged: 1950 });
      expect(given).toEqual([true]);
      // Hashed before the table came: at most 12 chunks of about 47 rows (the 3 read to reach 100 users, 10 in flight).
      expect(run.seen.leftOut).toBeGreaterThan(1950 - 700);
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rowsB));
    });

    it('a run whose sync stopped before reading it keeps every user for a full sync or an upload', async () => {
      const t = await setup();
      const dir = tempDir('ak-sync-csv-');
      const rows = customers(range(0, 60));
      await syncFile(t, await csvRun(dir, 'a.csv', rows), {});
      const stopped = new AbortController();
      stopped.abort();
      const run = await csvRun(dir, 'a.csv', rows);
      expect(await syncFile(t, run, { signal: stopped.signal })).toMatchObject({ status: 'interrupted' });
      await emptyOnPlatform(t, rows);
      const full = await syncFile(t, run, { full: true });
      expect(full).toMatchObject({ status: 'completed', users: 60 });
      expect(full.update.users_confirmed).toBe(60);
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));

      const again = await csvRun(dir, 'a.csv', rows);
      expect(await syncFile(t, again, { signal: stopped.signal })).toMatchObject({ status: 'interrupted' });
      await emptyOnPlatform(t, rows);
      const upload = await uploadAudience({
        client: t.client,
        accountId: t.sandbox.accounts.primary,
        target: { customAudienceId: t.audienceId },
        users: again,
      });
      expect(upload).toMatchObject({ status: 'completed', users_confirmed: 60 });
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
    });
  },
);

describe('audience-kit sync', () => {
  const next = (cwd: string): string => {
    const text = readFileSync(FIXTURE, 'utf8');
    const path = join(cwd, 'export-next.csv');
    writeFileSync(
      path,
      text
        .split('\n')
        .filter((l) => !l.startsWith('C10002'))
        .join('\n'),
    );
    return path;
  };

  it('syncs a changed export to the embedded sandbox: only the change is sent', async () => {
    const cwd = tempDir('ak-sync-cli-');
    const state = ['--state-dir', join(cwd, 'state')];
    const outputs: string[] = [];
    const first = await runCli(['sync', FIXTURE, '--sandbox', ...state, '--json'], { cwd });
    outputs.push(first.stdout, first.stderr);
    expect(first.code, first.stderr).toBe(0);
    const a = JSON.parse(first.stdout) as Record<string, unknown> & { update: { users_confirmed: number } };
    expect(a).toMatchObject({ status: 'completed', exit_code: 0, first_sync: true, removes: 0 });
    expect(a.update.users_confirmed).toBe(a.users);
    expect(a.sandbox).toEqual({ audience_size: a.users });
    expect(a.hints).toContain('country values not recognized (rows): "ZZ" 112');

    const file = next(cwd);
    const capped = await runCli(['sync', file, '--sandbox', ...state, '--max-removals', '5'], { cwd });
    outputs.push(capped.stdout, capped.stderr);
    expect(capped.code).toBe(2);
    expect(capped.stderr).toMatch(/error: the sync would remove 10 of \d+ users[\s\S]*fix: .*--max-removals 10/);

    // Behind the reject guard (a Proxy around the run; that it still gets the table: hash.test.ts).
    const second = await runCli(['sync', file, '--sandbox', ...state, '--max-reject-rate', '50'], { cwd });
    outputs.push(second.stdout, second.stderr);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/first sync\s+no/);
    expect(second.stderr).toContain('hint: country values not recognized (rows): "ZZ" 112');
    expect(second.stdout).toMatch(/removed \(Delete\)\s+10 of 10 users confirmed/);
    expect(second.stdout).toMatch(/added\/refreshed \(Update\)\s+0 of 0 users/);
    expect(second.stdout).toMatch(new RegExp(`sandbox audience size\\s+${Number(a.users) - 10}\\b`));

    const list = await runCli(['audit', 'list', ...state], { cwd });
    expect(list.stdout.match(/ sync /g)?.length).toBe(2);
    expect(list.stdout).toContain('+0 -10 ~0');
    const texts: Record<string, string> = { outputs: outputs.join('\n') };
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else texts[p] = readFileSync(p, 'latin1');
      }
    };
    walk(join(cwd, 'state'));
    // partner_user_id (the fixture's customer_id) is sent as it is, so the snapshot keeps it.
    expect(
      scanFor(
        texts,
        rawValues().filter((v) => !/^C\d+$/.test(v)),
      ),
    ).toEqual([]);
  });

  it('needs a target without --sandbox, and refuses an empty export', async () => {
    const cwd = tempDir('ak-sync-cli-');
    const missing = await runCli(['sync', FIXTURE, '--dry-run'], { cwd });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/sync needs --account/);
    const state = ['--state-dir', join(cwd, 'state'), ...CALLING_THREAD];
    await runCli(['sync', FIXTURE, '--sandbox', ...state, '-q'], { cwd });
    const empty = join(cwd, 'empty.csv');
    writeFileSync(empty, 'customer_id,Email\n');
    const r = await runCli(['sync', empty, '--sandbox', ...state, '--json'], { cwd });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no valid user[\s\S]*--allow-empty/);
  });
});
