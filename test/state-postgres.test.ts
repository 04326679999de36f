import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { EnvironmentError } from '../src/errors.js';
import { stateFs } from '../src/state/fs.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import type { StateStore } from '../src/state/store.js';
import { schemaSql, SCHEMA_VERSION } from '../src/state/postgres/schema.js';
import { commitLossRisk } from '../src/state/postgres/durability.js';
import { createTestDatabase } from './helpers/postgres.js';
import { Snapshot } from '../src/state/snapshot.js';
import { runCli } from './helpers/cli.js';
import {
  customers,
  members,
  expected,
  postgresStateUrl,
  range,
  setup,
  syncOf,
  usePostgres,
  userPosts,
} from './helpers/sync.js';

// The PostgreSQL store's own guarantees: one sync per target across stores and connections,
// fencing of a writer whose lock is gone, the schema's version and rights, and the snapshot
// files stored byte for byte. One database for the file, one schema per test.
usePostgres();

const GOLDEN = fileURLToPath(new URL('./golden/snapshot-v2/', import.meta.url));
const GOLDEN_TARGET = { accountId: '18ce54d4x5t', kind: 'custom_audience', id: '1nmth' } as const;

async function sql<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

/** The same database and schema through another host name: a second store, as on a second machine. */
const otherHost = (url: string): string => url.replace('127.0.0.1', 'localhost');

async function openStores(url: string) {
  const a = await PostgresStore.open(url);
  const b = await PostgresStore.open(otherHost(url));
  return { a, b, close: () => Promise.all([a.close(), b.close()]) };
}

describe('PostgreSQL state store', () => {
  it('two stores on one database never both sync a target: the second is refused naming the holder', async () => {
    const t = await setup({}, {}, 'postgres');
    const url = (t.state as { state: string }).state;
    const s = await openStores(url);
    try {
      const target = { accountId: t.sandbox.accounts.primary, kind: 'custom_audience', id: t.audienceId } as const;
      const held = await s.a.lockTarget(target, { runId: 'run-a' });
      await expect(syncOf(t, customers(range(0, 20)), { state: s.b })).rejects.toMatchObject({
        code: 'sync_in_progress',
        message: expect.stringMatching(new RegExp(`pid ${process.pid} on host .* run run-a`)) as unknown,
      });
      expect(userPosts(t.sandbox, t.audienceId)).toBe(0);
      await held.release();

      // Both at once: whichever runs second finds the lock held or the target already synced.
      const both = await Promise.allSettled([
        syncOf(t, customers(range(0, 200)), { state: s.a }),
        syncOf(t, customers(range(0, 200)), { state: s.b }),
      ]);
      const done = both.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      for (const r of both) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'sync_in_progress' });
      expect(done.map((r) => r.update.users_confirmed).sort()).toEqual(done.length === 1 ? [200] : [0, 200]);
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, customers(range(0, 200))));
    } finally {
      await s.close();
    }
  });

  // The session's durable() calls: 0 the write-ahead record begun, 1 the removals' intents, 2 their
  // confirmation, 3 the additions' intents.
  it.each([
    ['at the removals’ confirmation', 2],
    ['at the additions’ write-ahead record', 3],
  ])(
    'a sync whose connection (and lock) is lost %s stops before sending what it could not record, and the next one completes',
    async (_, cutAt) => {
      const t = await setup({}, {}, 'postgres');
      const url = (t.state as { state: string }).state;
      await syncOf(t, customers(range(0, 100)));
      const posts = userPosts(t.sandbox, t.audienceId);
      const store = await PostgresStore.open(url);
      try {
        // The session's connection is ended by the server between the removals and the additions:
        // the writes after the first intent are held back until it is gone, so the order is certain
        // (a held confirmation is not stored: the wrapper's durable() does not wait for it).
        const cut: StateStore = Object.create(store) as StateStore;
        cut.lockTarget = async (target, o) => {
          const inner = await store.lockTarget(target, o);
          let durables = 0;
          const held: [string, number, Buffer][] = [];
          return {
            ...inner,
            dir: inner.dir,
            writeAhead: { wrote: (...w) => (durables <= 1 ? inner.writeAhead?.wrote(...w) : held.push(w)) },
            durable: async () => {
              if (durables++ === cutAt) {
                await sql(
                  url,
                  `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
                );
                for (const w of held) inner.writeAhead?.wrote(...w);
              }
              return inner.durable();
            },
            persist: () => inner.persist(),
            release: () => inner.release(),
          };
        };
        const rows = customers(range(10, 120));
        // The run ends `partial` with the error: the write that failed, or the lease the connection's
        // end lost first, whichever is heard first. Either way nothing more is sent.
        const lost = syncOf(t, rows, { state: cut });
        await expect(lost).resolves.toMatchObject({
          status: 'partial',
          error: { code: expect.stringMatching(/^state_(connection|lease)_lost$/) as unknown },
        });
        // The removals' batch only: no Update was sent without its write-ahead record.
        expect(userPosts(t.sandbox, t.audienceId)).toBe(posts + 1);
        // The removals' confirmations were not stored: those users are uncertain, removed again.
        const next = await syncOf(t, rows);
        expect(next).toMatchObject({ status: 'completed', adds: 20, removes: 10 });
        expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
      } finally {
        await store.close();
      }
    },
  );

  it('a writer whose lock is gone cannot store its records or its commit (fenced by the version)', async () => {
    const url = await postgresStateUrl();
    const store = await PostgresStore.open(url);
    try {
      const session = await store.lockTarget(GOLDEN_TARGET);
      // Another process committed meanwhile (as after this session's connection, and lock, was lost).
      await sql(url, 'UPDATE audience_kit_targets SET version = version + 1');
      session.writeAhead?.wrote('pending', 0, Buffer.from('x'));
      await expect(session.durable()).rejects.toMatchObject({ code: 'state_fenced' });
      cpSync(join(GOLDEN, 'index'), join(session.dir, 'index'));
      await expect(session.persist()).rejects.toMatchObject({ code: 'state_fenced' });
      await session.release();
      expect(await sql(url, 'SELECT * FROM audience_kit_snapshot_files')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("stores the golden snapshot's files byte for byte, and a killed sync's write-ahead records rebuild its pending log", async () => {
    const url = await postgresStateUrl();
    const s = await openStores(url);
    try {
      const first = await s.a.lockTarget(GOLDEN_TARGET);
      for (const f of ['index', 'data.0']) cpSync(join(GOLDEN, f), join(first.dir, f));
      await first.persist();
      // The pending log as a killed sync leaves it, in two writes.
      const pending = readFileSync(join(GOLDEN, 'pending'));
      first.writeAhead?.wrote('pending', 0, pending.subarray(0, 24));
      first.writeAhead?.wrote('pending', 24, pending.subarray(24));
      await first.durable();
      await first.release();
      // The private copy is removed with the session.
      expect(existsSync(first.dir)).toBe(false);

      const second = await s.b.lockTarget(GOLDEN_TARGET);
      expect(readdirSync(second.dir).sort()).toEqual(['data.0', 'index', 'pending']);
      for (const f of ['index', 'data.0', 'pending'])
        expect(readFileSync(join(second.dir, f)), f).toEqual(readFileSync(join(GOLDEN, f)));
      const snapshot = Snapshot.open(second.dir, { target: GOLDEN_TARGET });
      expect(snapshot.count).toBe(4);
      snapshot.close();
      await second.release();
    } finally {
      await s.close();
    }
  });

  it('stores a file of several 1 MiB parts and reads it back whole', async () => {
    const url = await postgresStateUrl();
    const store = await PostgresStore.open(url);
    try {
      const bytes = randomBytes((5 << 20) / 2 + 7);
      const first = await store.lockTarget(GOLDEN_TARGET);
      writeFileSync(join(first.dir, 'data.3'), bytes);
      await first.persist();
      await first.release();
      const parts = await sql<{ n: string }>(url, 'SELECT count(*) AS n FROM audience_kit_snapshot_patches');
      expect(parts[0]?.n).toBe('3');
      const second = await store.lockTarget(GOLDEN_TARGET);
      expect(readFileSync(join(second.dir, 'data.3')).equals(bytes)).toBe(true);
      await second.release();
    } finally {
      await store.close();
    }
  });

  it('the CLI takes one store: --state with --state-dir, or both variables, is a usage error; a password is never printed', async () => {
    const url = new URL(await postgresStateUrl());
    url.password = 'db-secret';
    const withPassword = url.toString();
    const both = await runCli(['audit', 'list', '--state', withPassword, '--state-dir', 'x']);
    expect(both).toMatchObject({ code: 2, stderr: expect.stringMatching(/--state and --state-dir/) as unknown });
    const env = { AUDIENCE_KIT_STATE_URL: withPassword, AUDIENCE_KIT_STATE_DIR: 'x' };
    expect(await runCli(['audit', 'list'], { env })).toMatchObject({ code: 2 });
    const bad = await runCli(['audit', 'list', '--state', 'mysql://u:db-secret@h/d']);
    expect(bad).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--state must be a PostgreSQL URL/) as unknown,
    });
    // Trust authentication ignores the password: the log is read, and the URL shown without it.
    const listed = await runCli(['audit', 'verify', '--json', '--debug'], {
      env: { AUDIENCE_KIT_STATE_URL: withPassword, AUDIENCE_KIT_STATE_DIR: undefined },
    });
    expect(listed.code, listed.stderr).toBe(0);
    // Port 1 (whatever the server's port: the suite's own server takes a free one): nothing answers.
    const closed = new URL(withPassword);
    closed.port = '1';
    const unreachable = await runCli(['audit', 'list', '--debug', '--state', closed.toString()]);
    expect(unreachable).toMatchObject({
      code: 8,
      stderr: expect.stringMatching(/state_unreachable|could not connect/) as unknown,
    });
    for (const r of [both, bad, listed, unreachable]) expect(r.stdout + r.stderr).not.toContain('db-secret');
  });

  it('refuses a schema newer than this version, and names the SQL to a user who may not create it', async () => {
    const url = await postgresStateUrl();
    await (await PostgresStore.open(url)).close();
    const versions = await sql<{ version: number }>(url, 'SELECT version FROM audience_kit_migrations');
    expect(versions.map((v) => v.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
    await sql(url, `INSERT INTO audience_kit_migrations (version) VALUES (${SCHEMA_VERSION + 1})`);
    await expect(PostgresStore.open(url)).rejects.toMatchObject({
      code: 'state_schema_newer',
      message: expect.stringMatching(`version ${SCHEMA_VERSION + 1}, newer`) as unknown,
    });

    // A login role without CREATE on a fresh schema (PostgreSQL 15: public grants none either).
    const empty = await postgresStateUrl();
    const role = `ak_nocreate_${Date.now().toString(36)}`;
    await sql(empty, `CREATE ROLE ${role} LOGIN PASSWORD 'role-secret'`);
    try {
      const schema = new URL(empty).searchParams.get('options')?.split('=')[1] as string;
      await sql(empty, `GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
      const asRole = new URL(empty);
      asRole.username = role;
      asRole.password = 'role-secret';
      const refused = await PostgresStore.open(asRole.toString()).catch((e: unknown) => e);
      expect(refused).toMatchObject({
        code: 'state_schema_denied',
        fix: expect.stringMatching(/audience-kit state schema/) as unknown,
      });
      expect(JSON.stringify(refused) + String((refused as Error).message)).not.toContain('role-secret');
      // What the fix says: the owner runs the printed SQL (and grants), then the role works.
      const printed = await runCli(['state', 'schema']);
      expect(printed.stdout).toBe(schemaSql());
      await sql(empty, printed.stdout);
      await sql(
        empty,
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role}; GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${role}`,
      );
      await (await PostgresStore.open(asRole.toString())).close();
    } finally {
      await sql(empty, `DROP OWNED BY ${role}; DROP ROLE ${role}`);
    }
  });
});

describe('PostgreSQL store: a lost table has a way out', () => {
  it('a deleted migrations table is rebuilt from the tables (each version was applied again over tables that had it), and a dropped write-ahead table is created again', async () => {
    const t = await setup({}, {}, 'postgres');
    const url = (t.state as { state: string }).state;
    await syncOf(t, customers(range(0, 40)));
    await sql(url, 'DROP TABLE audience_kit_migrations');
    expect((await syncOf(t, customers(range(0, 40)))).status).toBe('completed');
    await sql(url, 'DELETE FROM audience_kit_migrations');
    expect((await syncOf(t, customers(range(0, 40)))).status).toBe('completed');
    expect(await sql(url, 'SELECT version AS v FROM audience_kit_migrations ORDER BY 1')).toEqual(
      Array.from({ length: SCHEMA_VERSION }, (_, i) => ({ v: i + 1 })),
    );
    // The owner's script too, run over tables whose record was lost.
    await sql(url, 'DELETE FROM audience_kit_migrations');
    await sql(url, schemaSql());
    expect(await sql(url, 'SELECT count(*)::int AS n FROM audience_kit_migrations')).toEqual([{ n: SCHEMA_VERSION }]);

    // Dropped between syncs (a killed sync's rows with it: test/sync-unclean.test.ts).
    await sql(url, 'DROP TABLE audience_kit_snapshot_wal');
    const rows = customers(range(10, 50));
    expect(await syncOf(t, rows, { maxRemovals: '100%' })).toMatchObject({
      status: 'completed',
      adds: 10,
      removes: 10,
    });
    expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
  });
});

describe('PostgreSQL store: a damaged snapshot has a way out', () => {
  // Each damage of the database's copy of the committed files (60 users), and what a recovery can
  // read back of them: every user, or the exact number it could not (a row that reaches past the
  // file's recorded size is not applied, as a truncated data file loses its frames).
  const DAMAGES = [
    [
      'a byte of the data file',
      "UPDATE audience_kit_snapshot_patches SET data = set_byte(data, 200, get_byte(data, 200) # 1) WHERE name LIKE 'data.%'",
      1,
    ],
    ['the rows of the data file', "DELETE FROM audience_kit_snapshot_patches WHERE name LIKE 'data.%'", 60],
    [
      'the size of the data file',
      "UPDATE audience_kit_snapshot_files SET size = size - 1 WHERE name LIKE 'data.%'",
      60,
    ],
    [
      'the SHA-256 of the index',
      "UPDATE audience_kit_snapshot_files SET sha256 = sha256(sha256) WHERE name = 'index'",
      0,
    ],
    [
      'a byte of the index',
      "UPDATE audience_kit_snapshot_patches SET data = set_byte(data, 40, get_byte(data, 40) # 1) WHERE name = 'index'",
      0,
    ],
  ] as const;

  it.each(DAMAGES)(
    '%s: refused with nothing sent; --recover rebuilds it and ends equal to the file, or names the users it could not read',
    async (_, damage, unrecovered) => {
      const t = await setup({}, {}, 'postgres');
      const url = (t.state as { state: string }).state;
      await syncOf(t, customers(range(0, 60)));
      await sql(url, damage);
      const posts = userPosts(t.sandbox, t.audienceId);
      const rows = customers(range(10, 80));
      await expect(syncOf(t, rows, { maxRemovals: '100%' })).rejects.toMatchObject({
        code: 'snapshot_corrupt',
        fix: expect.stringMatching(/recover: true/) as unknown,
      });
      expect(userPosts(t.sandbox, t.audienceId)).toBe(posts);

      // The way out works when followed (it failed with the same error forever).
      const recovered = await syncOf(t, rows, { recover: true, maxRemovals: '100%' });
      if (unrecovered === 0) {
        expect(recovered.status).toBe('completed');
        expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
      } else {
        expect(recovered).toMatchObject({ status: 'partial', error: { code: 'snapshot_users_unrecovered' } });
        expect(recovered.error?.message).toMatch(new RegExp(`^${unrecovered} users`));
      }
      // And it holds: the next sync of another file is not refused again.
      const next = await syncOf(t, customers(range(20, 90)), { maxRemovals: '100%', acceptUnrecovered: true });
      expect(next.status).toBe('completed');
    },
  );
});

describe('PostgreSQL store: a disk error of the private copy is the disk’s, not the database’s', () => {
  const realWrite = stateFs.writeSync;
  const realTruncate = stateFs.ftruncateSync;
  afterEach(() => {
    stateFs.writeSync = realWrite;
    stateFs.ftruncateSync = realTruncate;
  });
  const noSpace = (syscall: string): never => {
    throw Object.assign(new Error(`ENOSPC: no space left on device, ${syscall}`), { code: 'ENOSPC', syscall });
  };

  /** A store whose target holds the golden snapshot's files. */
  async function committed(url: string): Promise<StateStore> {
    const store = await PostgresStore.open(url);
    const first = await store.lockTarget(GOLDEN_TARGET);
    for (const f of ['index', 'data.0']) cpSync(join(GOLDEN, f), join(first.dir, f));
    await first.persist();
    await first.release();
    return store;
  }

  /** The directory store's error for the disk, its fix naming where the copy lives; nothing of the database. */
  function expectCopyFailure(error: unknown, code: string, url: string): void {
    expect(error).toBeInstanceOf(EnvironmentError);
    const e = error as EnvironmentError;
    expect(e).toMatchObject({ code });
    expect(e.path.startsWith(join(tmpdir(), 'audience-kit-state-'))).toBe(true);
    expect(e.fix).toMatch(/TMPDIR/);
    for (const text of [e.message, e.fix ?? '']) {
      expect(text).not.toContain(new URL(url).host);
      expect(text).not.toMatch(/database/);
    }
  }

  it.each([
    ['a write', () => (stateFs.writeSync = () => noSpace('write'))],
    ['a truncation', () => (stateFs.ftruncateSync = () => noSpace('ftruncate'))],
  ])('%s refused while the copy is written: disk_full at the copy’s path, with its fix', async (_, fail) => {
    const url = await postgresStateUrl();
    const store = await committed(url);
    try {
      fail();
      const error = await store.lockTarget(GOLDEN_TARGET).then(
        (session) => session.release(),
        (e: unknown) => e,
      );
      expectCopyFailure(error, 'disk_full', url);
    } finally {
      await store.close();
    }
  });

  it('a file of the copy that cannot be read at the commit: its own error, not state_connection_lost', async () => {
    const url = await postgresStateUrl();
    const store = await committed(url);
    try {
      const session = await store.lockTarget(GOLDEN_TARGET);
      // A directory where the data file was: reading it fails with EISDIR.
      rmSync(join(session.dir, 'data.0'));
      mkdirSync(join(session.dir, 'data.0'));
      const error = await session.persist().catch((e: unknown) => e);
      await session.release();
      expectCopyFailure(error, 'path_not_file', url);
    } finally {
      await store.close();
    }
  });
});

describe('PostgreSQL store: a server that can lose acknowledged commits is refused', () => {
  const withOption = (url: string, option: string): string => {
    const u = new URL(url);
    u.searchParams.set('options', `${u.searchParams.get('options') ?? ''} -c ${option}`.trim());
    return u.toString();
  };

  it('synchronous_commit off for the session or the database: refused with the fix, which works when followed', async () => {
    const url = await postgresStateUrl();
    await expect(PostgresStore.open(withOption(url, 'synchronous_commit=off'))).rejects.toMatchObject({
      code: 'state_commits_unsafe',
      fix: expect.stringMatching(/synchronous_commit = on/) as unknown,
    });
    // The database's own default (never the server's: others share it).
    const db = await createTestDatabase();
    try {
      await sql(db.url, `ALTER DATABASE "${new URL(db.url).pathname.slice(1)}" SET synchronous_commit = off`);
      await expect(PostgresStore.open(db.url)).rejects.toMatchObject({ code: 'state_commits_unsafe' });
      await (await PostgresStore.open(withOption(db.url, 'synchronous_commit=on'))).close();
    } finally {
      await db.drop();
    }
  });

  it('standbys that are all asynchronous (as pg_stat_replication shows them) are refused; a synchronous one, or none visible, is not', () => {
    const on = (standbys: (string | null)[]) => commitLossRisk({ synchronousCommit: 'on', standbys });
    expect(on([])).toBeUndefined();
    expect(on(['async'])).toMatchObject({ risk: expect.stringMatching(/all asynchronous/) as unknown, failover: true });
    expect(on(['potential', 'async'])?.risk).toMatch(/all asynchronous/);
    expect(on(['sync', 'async'])).toBeUndefined();
    expect(on(['quorum'])).toBeUndefined();
    expect(on([null, null])).toBeUndefined();
    expect(commitLossRisk({ synchronousCommit: 'local', standbys: ['sync'] })).toMatchObject({ failover: true });
    expect(commitLossRisk({ synchronousCommit: 'remote_apply', standbys: ['sync'] })).toBeUndefined();
    expect(commitLossRisk({ synchronousCommit: 'off', standbys: [] })).toMatchObject({ failover: false });
  });

  it('an asynchronous-only standby: both printed ways out work when followed (the opt-in in the URL, a synchronous standby); the opt-in never accepts synchronous_commit off', async () => {
    const t = await setup({}, {}, 'postgres');
    const stateUrl = new URL((t.state as { state: string }).state);
    const schema = /search_path=(\S+)/.exec(stateUrl.searchParams.get('options') ?? '')?.[1] ?? '';
    // What pg_stat_replication shows on a primary with one asynchronous standby, emulated ahead of pg_catalog.
    const standby = (state: string) =>
      sql(
        stateUrl.toString(),
        `CREATE OR REPLACE VIEW ${schema}.pg_stat_replication AS SELECT '${state}'::text AS sync_state`,
      );
    await standby('async');
    stateUrl.searchParams.set('options', `-c search_path=${schema},pg_catalog`);
    const url = stateUrl.toString();
    const refused = await syncOf(t, customers(range(0, 20)), { state: url }).catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'state_commits_unsafe',
      message: expect.stringMatching(/all asynchronous/) as unknown,
    });
    expect(userPosts(t.sandbox, t.audienceId)).toBe(0);

    // The opt-in, as the fix prints it, added to the URL: the syncs run, and end exact.
    const optIn = /add (\w+=\w+) to the state URL/.exec((refused as { fix: string }).fix)?.[1] ?? '';
    expect(optIn).toBe('audience_kit_async_standby=accept');
    const accepted = `${url}&${optIn}`;
    for (const rows of [customers(range(0, 150)), customers([...range(10, 140), ...range(200, 230)])]) {
      const r = await syncOf(t, rows, { state: accepted, maxRemovals: '100%' });
      expect(r.status).toBe('completed');
      expect(members(t.sandbox, t.audienceId)).toEqual(await expected(t, rows));
    }
    await expect(PostgresStore.open(`${url}&audience_kit_async_standby=yes`)).rejects.toMatchObject({
      code: 'invalid_option',
    });
    // Accepting a failover's loss is not accepting a crash's.
    await expect(PostgresStore.open(withOption(accepted, 'synchronous_commit=off'))).rejects.toMatchObject({
      code: 'state_commits_unsafe',
      fix: expect.stringMatching(/synchronous_commit = on/) as unknown,
    });

    // The administrator's fix: the standby made synchronous, as pg_stat_replication then shows it; no opt-in needed.
    await standby('sync');
    await (await PostgresStore.open(url)).close();
  });
});
