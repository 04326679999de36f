import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { createClient, type AdsClient } from '../src/api/client.js';
import type { Clock } from '../src/util/clock.js';
import type { AuditRecord } from '../src/state/audit.js';
import type { TakeoverWait } from '../src/state/store.js';
import { advisoryKey } from '../src/state/postgres/keys.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import { snapshotDir } from '../src/state/snapshot.js';
import { withoutPasswords } from '../src/cli/process-title.js';
import { redactUrl } from '../src/state/postgres/connection.js';
import { EXIT_CODES, exitCodeFor } from '../src/cli/exit-codes.js';
import { BIN, CALLING_THREAD, cliEnv, runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import { sandboxEnv } from './helpers/upload-cli.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './helpers/embedded-postgres.js';
import { PGBOUNCER, startPgBouncer } from './helpers/pgbouncer.js';
import { createTestRole } from './helpers/postgres.js';
import {
  customers,
  expected,
  members,
  range,
  setup,
  syncOf,
  usePostgres,
  userPosts,
  type SyncSetup,
} from './helpers/sync.js';

// The lock-loss race (issue #32): a sync whose database session ends while it waits (a 429's
// reset, a 503's retry-after, the back-off before a re-send after a count mismatch) must not send
// once the session is gone, since a second worker can take the target and sync in the meantime;
// that worker waits out whatever the first could still have in flight. The next day's different
// file must then end exact. Real PostgreSQL, the sandbox as platform, the second worker on another
// store (another host name of the database, as on a second machine).
usePostgres();

// A proof fails after 3 intervals unanswered: 900 ms, not 300, so a loaded machine (the whole suite on 2 cores) does not lose a lease the test did not end.
const LEASE_MS = 300;

async function sql(url: string, text: string, params: unknown[] = []): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text, params);
  } finally {
    await client.end();
  }
}

const withoutOptions = (url: string): string => {
  const u = new URL(url);
  u.searchParams.delete('options');
  return u.toString();
};
const otherHost = (url: string): string => url.replace('127.0.0.1', 'localhost');

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A role of the test's own with a schema it owns: the state URL through it, and the role's name. */
async function roleState(stateUrl: string): Promise<{ url: string; role: string }> {
  const db = withoutOptions(stateUrl);
  const role = await createTestRole(db);
  cleanups.push(role.drop);
  const name = decodeURIComponent(new URL(role.url).username);
  const schema = `s_${randomBytes(6).toString('hex')}`;
  await sql(db, `CREATE SCHEMA ${schema} AUTHORIZATION ${pg.escapeIdentifier(name)}`);
  const url = new URL(role.url);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url: url.toString(), role: name };
}

type Ending = 'terminated' | 'restarted' | 'idle_session_timeout';

/**
 * A private server for the restart case (never the suite's, which other test files share): started
 * once for the file, when that case first needs it (initdb and a start, about 2 s).
 */
let privateServer: Promise<EmbeddedPostgres> | undefined;
afterAll(async () => {
  await (await privateServer)?.stop();
});

/** A state URL in a new schema of the private server. */
async function privateState(): Promise<string> {
  // In the system's temporary directory (the run's root's parent), which the server's user can enter.
  privateServer ??= startEmbeddedPostgres(dirname(inject('tmpRoot')));
  const url = new URL((await privateServer).url);
  const schema = `s_${randomBytes(6).toString('hex')}`;
  await sql(url.toString(), `CREATE SCHEMA ${schema}`);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** How many sessions of the database hold an advisory lock, as the server sees them. */
async function advisoryHolders(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: withoutOptions(url) });
  await client.connect();
  try {
    const r = await client.query<{ n: number }>(
      `SELECT count(DISTINCT pid)::int AS n FROM pg_locks WHERE locktype = 'advisory'
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    return r.rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

/** Ends the sessions holding the database's advisory locks, or restarts the private server (every session ends). */
async function endSessions(url: string, ending: Ending): Promise<void> {
  const db = withoutOptions(url);
  if (ending === 'terminated') {
    await sql(
      db,
      `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
  } else if (ending === 'restarted') {
    await (await privateServer)?.restart();
  } else {
    // The role's idle_session_timeout (500 ms) ends a session left idle that long.
    await new Promise((resolve) => setTimeout(resolve, 800));
  }
}

/** A fast clock whose first sleep runs `hook` first (every sleep waits for it to end). */
function hookedClock(hook: () => Promise<void>): Clock {
  let skew = 0;
  let fired: Promise<void> | undefined;
  return {
    now: () => Date.now() + skew,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      fired ??= hook();
      await fired;
      skew += ms;
    },
  };
}

function recordingClock(sleeps: number[]): Clock {
  let skew = 0;
  return {
    now: () => Date.now() + skew,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      sleeps.push(ms);
      skew += ms;
    },
  };
}

const FAULTS = [
  ['a 429 reset', '429@1'],
  ['503 retries', '503=1@1+2'],
  ['a count mismatch', 'mismatch@1+2'],
] as const;
const ENDINGS: readonly Ending[] = ['terminated', 'restarted', 'idle_session_timeout'];
// Every wait with every ending: the session terminated, a real restart of a private server, the role's timeout.
const CASES = ENDINGS.flatMap((ending) => FAULTS.map(([name, spec]) => [name, ending, spec] as const));

/** A client that retries at once on `clock` (closed when the test ends). */
function waitingClient(t: SyncSetup, clock: Clock, maxAttempts?: number): AdsClient {
  const client = createClient({
    adsBaseUrl: t.sandbox.adsBaseUrl,
    credentials: t.sandbox.credentials,
    clock,
    retry: { baseMs: 1, maxMs: 2 },
    ...(maxAttempts === undefined ? {} : { maxAttempts }),
  });
  cleanups.push(() => client.close());
  return client;
}

describe('a sync that loses its lock while it waits', () => {
  it.each(CASES)(
    'sends nothing more (waiting on %s, session %s); the worker taking over waits out its requests; the next file ends exact',
    async (_, ending, faults) => {
      const t = await setup({}, {}, 'postgres');
      let url = (t.state as { state: string }).state;
      let role: string | undefined;
      if (ending === 'idle_session_timeout') ({ url, role } = await roleState(url));
      if (ending === 'restarted') url = await privateState();
      await syncOf(t, customers(range(0, 100)), { state: url });

      if (role !== undefined)
        await sql(withoutOptions(url), `ALTER ROLE ${pg.escapeIdentifier(role)} SET idle_session_timeout = '500ms'`);
      t.sandbox.setFaults(faults);
      let [postsBeforeTakeover, postsAfterTakeover] = [-1, -1];
      let takeover: unknown;
      const takeoverSleeps: number[] = [];
      const takeoverWaits: TakeoverWait[] = [];
      const clock = hookedClock(async () => {
        await endSessions(url, ending);
        t.sandbox.setFaults('');
        postsBeforeTakeover = userPosts(t.sandbox, t.audienceId);
        // A second worker, on another store, syncs another file meanwhile.
        takeover = await syncOf(t, customers(range(0, 90)), {
          state: otherHost(url),
          clock: recordingClock(takeoverSleeps),
          maxRemovals: '100%',
          onTakeoverWait: (wait) => takeoverWaits.push(wait),
        }).catch((error: unknown) => error);
        postsAfterTakeover = userPosts(t.sandbox, t.audienceId);
      });
      const client = waitingClient(t, clock, 6);
      const first = await syncOf(t, customers(range(0, 150)), {
        state: url,
        client,
        clock,
        leaseIntervalMs: LEASE_MS,
      }).catch((error: unknown) => error);
      expect(postsAfterTakeover).toBeGreaterThan(0);
      if (ending === 'idle_session_timeout') {
        // The sync's session is never idle (a heartbeat, and the timeout off for it): it keeps its
        // lock, the second worker is refused having sent nothing, and the first ends its file.
        expect(takeover).toMatchObject({ code: 'sync_in_progress' });
        expect(postsAfterTakeover).toBe(postsBeforeTakeover);
        expect(first).toMatchObject({ status: 'completed' });
      } else {
        // Nothing of the first worker's reached the platform once its session had ended.
        expect(userPosts(t.sandbox, t.audienceId)).toBe(postsAfterTakeover);
        expect(first).toMatchObject({
          error: { code: expect.stringMatching(/^state_(lease|connection)_lost$/) as unknown },
        });
        expect(takeover).toMatchObject({ status: 'completed' });
        // It waited out any request the first could still have had in flight before it sent.
        expect(Math.max(...takeoverSleeps)).toBeGreaterThanOrEqual(client.requestTimeoutMs);
        // And said so, naming the holder it waits for.
        expect(takeoverWaits).toEqual([
          {
            ms: Math.max(...takeoverSleeps),
            holder: { host: hostname(), pid: process.pid, since: expect.any(String) },
          },
        ]);
      }

      const next = customers([...range(0, 80), ...range(200, 210)]);
      await syncOf(t, next, { state: otherHost(url), maxRemovals: '100%' });
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, next));
    },
  );
});

/**
 * A TCP proxy to `target` whose `freeze()` stops forwarding on the connections open then, in both
 * directions, and closes none of them (what a stateful firewall or NAT that lost its state, or a
 * peer that vanished, does: no RST, no data); later connections pass. `clientGaveUp` resolves when
 * the client closes a frozen connection.
 */
async function freezableProxy(target: { host: string; port: number }) {
  const open = new Set<{ client: Socket; upstream: Socket }>();
  let gaveUp: () => void = () => undefined;
  const clientGaveUp = new Promise<void>((resolve) => (gaveUp = resolve));
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    const pair = { client, upstream };
    open.add(pair);
    client.pipe(upstream).on('error', () => undefined);
    upstream.pipe(client).on('error', () => undefined);
    client.on('close', () => open.delete(pair));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sockets: Socket[] = [];
  server.on('connection', (socket) => sockets.push(socket));
  return {
    port: (server.address() as AddressInfo).port,
    freeze: () => {
      for (const { client, upstream } of open) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        for (const socket of [client, upstream]) socket.on('data', () => undefined).resume(); // read and dropped
        client.once('end', gaveUp);
        client.once('close', gaveUp);
      }
      open.clear();
    },
    clientGaveUp,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a half-open connection to the database', () => {
  it('stops the sync with state_lease_lost in bounded time, nothing sent after; an operator ends the session and another worker takes over', async () => {
    const t = await setup({}, {}, 'postgres');
    const url = (t.state as { state: string }).state;
    await syncOf(t, customers(range(0, 100)), { state: url });
    const direct = new URL(url);
    const proxy = await freezableProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    cleanups.push(proxy.close);
    const proxied = new URL(url);
    proxied.host = `127.0.0.1:${proxy.port}`;
    // node-postgres's query_timeout in the URL bounds every statement (the audit log's 120 s by default).
    proxied.searchParams.set('query_timeout', '500');

    t.sandbox.setFaults('503=1@1+2');
    let postsAfterTakeover = -1;
    let takeover: unknown;
    let heldWhenFrozen = -1;
    const clock = hookedClock(async () => {
      proxy.freeze();
      // The client gives up on its own (its lease's proof is not answered within 3 intervals)...
      await proxy.clientGaveUp;
      // ...while the server still sees the session and its lock (no FIN reached it): an operator ends it.
      const locks = await advisoryHolders(url);
      heldWhenFrozen = locks;
      await endSessions(url, 'terminated');
      t.sandbox.setFaults('');
      takeover = await syncOf(t, customers(range(0, 90)), {
        state: otherHost(url),
        clock: recordingClock([]),
        maxRemovals: '100%',
      }).catch((error: unknown) => error);
      postsAfterTakeover = userPosts(t.sandbox, t.audienceId);
    });
    const client = waitingClient(t, clock, 6);
    const started = Date.now();
    let auditError: unknown;
    const first = await syncOf(t, customers(range(0, 150)), {
      state: proxied.toString(),
      client,
      clock,
      leaseIntervalMs: LEASE_MS,
      // As the CLI does: the end record's failure (its pooled connection is frozen too) beside the report.
      onAuditError: (error) => (auditError = error),
    }).catch((error: unknown) => error);
    const elapsed = Date.now() - started;
    expect(heldWhenFrozen).toBe(1);
    expect(first).toMatchObject({ error: { code: 'state_lease_lost' } });
    expect(auditError).toMatchObject({
      code: 'state_connection_lost',
      message: expect.stringContaining('half-open') as unknown,
    });
    expect(takeover).toMatchObject({ status: 'completed' });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(postsAfterTakeover);
    // Bounded: the lease's loss within 4 intervals, the audit log's end record within its query_timeout.
    expect(elapsed).toBeLessThan(10_000);

    const next = customers([...range(0, 80), ...range(200, 210)]);
    await syncOf(t, next, { state: otherHost(url), maxRemovals: '100%' });
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, next));
  });
});

describe('a takeover after an unclean end', () => {
  it('says on stderr how long it waits and for which holder, once', async () => {
    const t = await setup({}, {}, 'postgres');
    const url = (t.state as { state: string }).state;
    const cwd = tempDir('ak-takeover-');
    const file = join(cwd, 'in.csv');
    writeFileSync(file, 'email\ncustomer.1@example.com\ncustomer.2@example.com\n');
    const target = ['--account', t.sandbox.accounts.primary, '--audience', t.audienceId];
    const env = sandboxEnv(t.sandbox);
    const sync = () =>
      runCli(['sync', file, ...target, '--state', url, '--default-country', 'US', ...CALLING_THREAD], { cwd, env });
    expect((await sync()).code).toBe(0);
    // A holder record never cleared: a sync on another machine that ended uncleanly (short timeouts).
    const holder = {
      host: 'etl-7',
      pid: 4242,
      since: '2026-01-02T03:04:05.000Z',
      request_timeout_ms: 150,
      abort_within_ms: 50,
    };
    await sql(url, 'UPDATE audience_kit_targets SET holder = $1', [JSON.stringify(holder)]);
    const r = await sync();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.split('\n').filter((line) => line.startsWith('notice: waiting'))).toEqual([
      'notice: waiting 1 s before sending: its last holder (pid 4242 on host etl-7, since 2026-01-02T03:04:05.000Z) ended uncleanly and could still have a request to the platform in flight',
    ]);
  });
});

/**
 * A target synced once in the directory store, `faults` set for the next sync; `replace()` puts
 * another process's lock in the place of that sync's (a lock removed by hand, then taken), ends
 * the faults and counts the posts sent until then (`posts()`).
 */
async function lockToReplace(faults: string) {
  const t = await setup();
  await syncOf(t, customers(range(0, 100)));
  const lock = `${snapshotDir(t.stateDir, { accountId: t.sandbox.accounts.primary, kind: 'custom_audience', id: t.audienceId })}.lock`;
  t.sandbox.setFaults(faults);
  let posts = -1;
  const replace = (): void => {
    rmSync(lock);
    writeFileSync(lock, JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }));
    t.sandbox.setFaults('');
    posts = userPosts(t.sandbox, t.audienceId);
  };
  return { t, lock, replace, posts: () => posts };
}

describe('the directory store’s lease', () => {
  it('a sync whose lock file is replaced while it waits sends nothing more and commits nothing; the next sync ends exact', async () => {
    const { t, lock, replace, posts } = await lockToReplace('503=1@1+2');
    const clock = hookedClock(() => Promise.resolve(replace()));
    const client = waitingClient(t, clock);
    const first = await syncOf(t, customers(range(0, 150)), { client, clock, leaseIntervalMs: LEASE_MS });
    expect(first).toMatchObject({ status: 'failed', error: { code: 'state_lease_lost' } });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts());
    rmSync(lock);
    const next = customers([...range(0, 80), ...range(200, 210)]);
    await syncOf(t, next, { maxRemovals: '100%' });
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, next));
  });
});

/** A fast clock whose first sleep runs `hook`, then lasts until its signal aborts (the lease found lost). */
function clockWaitingForLoss(hook: () => void): Clock {
  let skew = 0;
  let hooked = false;
  return {
    now: () => Date.now() + skew,
    sleep: async (ms, signal) => {
      signal?.throwIfAborted();
      skew += ms;
      if (hooked) return;
      hooked = true;
      hook();
      await new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason as Error)));
    },
  };
}

describe('a lease lost during the back-off before a re-send', () => {
  it('ends the sync and its batch as the lease lost (exit 8), not as a stop', async () => {
    const { t, lock, replace, posts } = await lockToReplace('mismatch@1+2');
    // The heartbeat finds the lock replaced while the sender waits to re-send after the mismatches.
    const clock = clockWaitingForLoss(replace);
    const client = waitingClient(t, clock);
    const first = await syncOf(t, customers(range(0, 150)), { client, clock, leaseIntervalMs: LEASE_MS });
    expect(first).toMatchObject({
      status: 'failed',
      error: { code: 'state_lease_lost' },
      update: { status: 'failed', batches_confirmed: 0 },
    });
    expect(exitCodeFor(first.error)).toBe(EXIT_CODES.environment);
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts());
    rmSync(lock);
  });
});

describe('database faults', () => {
  it('a session ended during an audit append is a typed error, not a crash; the store goes on with a new connection', async () => {
    const t = await setup({}, {}, 'postgres');
    const url = (t.state as { state: string }).state;
    const store = await PostgresStore.open(url);
    cleanups.push(() => store.close());
    const record = {
      event: 'run_start',
      run_id: 'r1',
      at: new Date().toISOString(),
      account_id: 'a',
      target: { kind: 'custom_audience', id: 'x' },
      operation: 'sync',
    } as unknown as AuditRecord;
    // The append waits for the log's lock, held here, on a pooled connection that is then ended.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    cleanups.push(() => holder.end());
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [advisoryKey('audit')]);
    // Its outcome is taken at once: it may reject while the terminating query's answer is still on its way.
    const appended = store.audit.append(record).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Looked for from another connection: inside the holder's transaction the view is its first snapshot.
    const watcher = new pg.Client({ connectionString: url });
    await watcher.connect();
    cleanups.push(() => watcher.end());
    let pid: number | undefined;
    while (pid === undefined) {
      const r = await watcher.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE application_name = 'audience-kit' AND wait_event_type = 'Lock'
           AND datname = current_database()`,
      );
      pid = r.rows[0]?.pid;
    }
    await watcher.query('SELECT pg_terminate_backend($1)', [pid]);
    // In the audit log's own words, not a sync's lock ("its lock on the target may be gone").
    expect(await appended).toMatchObject({
      code: expect.stringMatching(/^state_/) as unknown,
      message: expect.stringContaining('the audit log') as unknown,
    });
    await holder.query('COMMIT');
    await expect(store.audit.append(record)).resolves.toMatchObject({ run_id: 'r1' });
  });
});

describe('the password of a state URL', () => {
  it('is not in the process list of a running CLI (/proc/<pid>/cmdline)', async () => {
    // A server that accepts and never answers: the CLI waits on its connection, long enough to look.
    // The title is rewritten before the CLI loads anything that connects, so once the server sees
    // the connection the process list must already show the URL without its password.
    let connected!: () => void;
    const connection = new Promise<void>((resolve) => (connected = resolve));
    const silent = createServer((socket) => {
      socket.resume(); // read (and drop) what the client sends, so its end is seen and close() can finish
      connected();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => silent.close(() => resolve())));
    const { port } = silent.address() as AddressInfo;
    const child = spawn(
      process.execPath,
      [BIN, 'audit', 'list', '--state', `postgres://u:Secret-7f3a@127.0.0.1:${port}/db`],
      {
        env: cliEnv(),
        stdio: 'ignore',
      },
    );
    cleanups.push(async () => {
      child.kill('SIGKILL');
      await once(child, 'exit').catch(() => undefined);
    });
    await connection;
    const shown = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').replace(/\0+/g, ' ');
    expect(shown).toContain('audit list --state postgres://u@127.0.0.1:');
    expect(shown).not.toContain('Secret-7f3a');
  });

  it('is removed whole when the user or the password holds a raw @ (as URL parsing, and pg, read them)', () => {
    // Azure-style user names (admin@server) and an unencoded @ in the password both connect.
    expect(withoutPasswords('--state=postgres://admin@srv:Se@cret@db.example.com:5432/kit')).toBe(
      '--state=postgres://admin@srv@db.example.com:5432/kit',
    );
    expect(withoutPasswords('postgres://u:p@ss@host/db?sslmode=require')).toBe('postgres://u@host/db?sslmode=require');
    expect(withoutPasswords('postgres://u@host:5432/db?note=a@b')).toBe('postgres://u@host:5432/db?note=a@b');
    // The client key's passphrase too (libpq's sslpassword), in the title and in messages.
    expect(withoutPasswords('postgres://u@h/db?sslpassword=Key-9c&sslmode=require')).toBe(
      'postgres://u@h/db?sslpassword=&sslmode=require',
    );
    expect(redactUrl('postgres://u:p@h/db?sslpassword=Key-9c&sslmode=require')).toBe(
      'postgres://u@h/db?sslmode=require',
    );
  });
});

describe('a pooler in transaction mode', () => {
  it('is refused at the lock, with the fix, when the lock the session took is not held by it', async () => {
    const t = await setup({}, {}, 'postgres');
    const url = new URL((t.state as { state: string }).state);
    const schema = /search_path=(\S+)/.exec(url.searchParams.get('options') ?? '')?.[1] ?? '';
    // What a transaction-mode pooler does to a session's advisory lock, emulated: the lock is
    // "taken" (true) by a statement whose session is not the next statement's (here, by no session).
    await syncOf(t, customers(range(0, 10)), { state: url.toString() });
    await sql(
      url.toString(),
      `CREATE FUNCTION ${schema}.pg_try_advisory_lock(bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true'`,
    );
    url.searchParams.set('options', `-c search_path=${schema},pg_catalog`);
    const posts = userPosts(t.sandbox, t.audienceId);
    await expect(syncOf(t, customers(range(0, 20)), { state: url.toString() })).rejects.toMatchObject({
      code: 'state_pooler_transaction_mode',
      fix: expect.stringContaining('session mode') as unknown,
    });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);
  });

  it.skipIf(PGBOUNCER === undefined)(
    'a real PgBouncer in transaction mode (skipped when no pgbouncer is installed) is refused with the fix, nothing sent and no lock left on the server; in session mode the same URL syncs',
    async () => {
      const t = await setup({}, {}, 'postgres');
      // The database's public schema: PgBouncer drops the URL's options (search_path).
      const db = withoutOptions((t.state as { state: string }).state);
      const transaction = await startPgBouncer(db, 'transaction');
      cleanups.push(transaction.stop);
      await expect(syncOf(t, customers(range(0, 20)), { state: transaction.through(db) })).rejects.toMatchObject({
        code: 'state_pooler_transaction_mode',
        fix: expect.stringContaining('session mode') as unknown,
      });
      expect(userPosts(t.sandbox, t.audienceId)).toBe(0);
      expect(await advisoryHolders(db)).toBe(0);
      // The fix followed: a pool in session mode (or PostgreSQL itself).
      const session = await startPgBouncer(db, 'session');
      cleanups.push(session.stop);
      const rows = customers(range(0, 150));
      await expect(syncOf(t, rows, { state: session.through(db) })).resolves.toMatchObject({ status: 'completed' });
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
    },
  );
});
