import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { AuditRunStart } from '../src/state/audit.js';
import type { BackendLease, StateBackend } from '../src/state/backend.js';
import { DirectoryStore } from '../src/state/directory-store.js';
import { batchDigest, type JournalKey } from '../src/state/journal.js';
import { MemoryBackend } from '../src/state/memory-backend.js';
import { MirrorStore } from '../src/state/mirror.js';
import { PostgresBackend, PostgresStore } from '../src/state/postgres/store.js';
import { snapshotDir } from '../src/state/snapshot.js';
import { addUnrecovered } from '../src/state/snapshot-unrecovered.js';
import type { SnapshotTarget } from '../src/state/snapshot-format.js';
import type { StateStore, TargetSession } from '../src/state/store.js';
import { postgresStateUrl, usePostgres } from './helpers/sync.js';
import { sha256Hex } from '../src/util/sha256.js';
import { tempDir } from './helpers/temp.js';

// The state stores' contract (docs/design.md, "State stores"): every store passes the same cases,
// the directory, PostgreSQL and the in-memory backend alike; a new backend is added to STORES.
// What the directory cannot do (it has no fence and no commit of its own: its files are the
// record, written in place by the snapshot) is said by its `fences` and `backend`.

usePostgres();

const T: SnapshotTarget = { accountId: '18ce54d4x5t', kind: 'custom_audience', id: '1nmth' };
const GOLDEN_LINES = fileURLToPath(
  new URL('./golden/journal-v2/runs/ce37ad0e8a63c22e588d35778ddd5d09/failed/000001.lines.u32be', import.meta.url),
);
const GOLDEN_UNRECOVERED = fileURLToPath(new URL('./golden/unrecovered-v1/unrecovered.json', import.meta.url));
/** No takeover wait in these tests: the previous holder is this very process. */
const NO_WAIT = { sleep: () => Promise.resolve(), proofIntervalMs: 300 };

interface Opened {
  store: StateStore;
  /** Another store on the same state: another process's view. */
  another(): Promise<StateStore>;
  /** End the lease held on T from outside, as a lost database session or a removed lock file would. */
  loseLease(): Promise<void>;
  /** The kept batches' line numbers as stored, byte for byte. */
  keptLines(): Promise<Buffer[]>;
  /** A store over the same backend whose wrapping `wrap` can change (undefined: not a backend). */
  backend?: (wrap: (lease: BackendLease) => BackendLease) => Promise<StateStore>;
  /** A write under a lost lease is refused once another holder committed. */
  fences: boolean;
}

const opened: StateStore[] = [];
const track = <S extends StateStore>(s: S): S => {
  opened.push(s);
  return s;
};

/** A store of the same backend whose leases `wrap` changes. */
function wrapped(backend: StateBackend, wrap: (lease: BackendLease) => BackendLease): StateStore {
  const lease = async (...args: Parameters<StateBackend['lease']>): Promise<BackendLease> =>
    wrap(await backend.lease(...args));
  return track(new MirrorStore(new Proxy(backend, { get: (b, k) => (k === 'lease' ? lease : Reflect.get(b, k)) })));
}

const STORES: Record<string, () => Promise<Opened>> = {
  directory: () => {
    const dir = tempDir('ak-contract-');
    return Promise.resolve({
      store: track(new DirectoryStore(dir)),
      another: () => Promise.resolve(track(new DirectoryStore(dir))),
      loseLease: () => Promise.resolve(rmSync(`${snapshotDir(dir, T)}.lock`)),
      keptLines: () => {
        const runs = join(dir, 'runs');
        return Promise.resolve(
          readdirSync(runs).flatMap((key) => {
            const failed = join(runs, key, 'failed');
            if (!existsSync(failed)) return [];
            return readdirSync(failed)
              .filter((f) => f.endsWith('.lines.u32be'))
              .sort()
              .map((f) => readFileSync(join(failed, f)));
          }),
        );
      },
      fences: false,
    });
  },
  postgres: async () => {
    const url = await postgresStateUrl();
    const query = async <R extends pg.QueryResultRow>(text: string): Promise<R[]> => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        return (await c.query<R>(text)).rows;
      } finally {
        await c.end();
      }
    };
    return {
      store: track(await PostgresStore.open(url)),
      another: async () => track(await PostgresStore.open(url)),
      loseLease: async () => {
        await query(
          `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        );
      },
      keptLines: async () =>
        (await query<{ lines: Buffer }>('SELECT lines FROM audience_kit_journal_failed ORDER BY batch')).map(
          (r) => r.lines,
        ),
      backend: async (wrap) => wrapped(await PostgresBackend.open(url), wrap),
      fences: true,
    };
  },
  memory: () => {
    const b = new MemoryBackend();
    return Promise.resolve({
      store: track(new MirrorStore(b)),
      another: () => Promise.resolve(track(new MirrorStore(b))),
      loseLease: () => Promise.resolve(b.loseLease(T)),
      keptLines: () =>
        Promise.resolve([...b.journalLines.stored.values()].flatMap((j) => [...j.kept.values()].map((k) => k.lines))),
      backend: (wrap) => Promise.resolve(wrapped(b, wrap)),
      fences: true,
    });
  },
};

/** What the snapshot does with a write-ahead write: the local write, then the store hears it. */
function writeAhead(session: TargetSession, file: string, offset: number, bytes: Buffer): void {
  mkdirSync(session.dir, { recursive: true });
  const path = join(session.dir, file);
  const fd = openSync(path, offset === 0 && file === 'pending' ? 'w' : existsSync(path) ? 'r+' : 'w', 0o600);
  try {
    writeSync(fd, bytes, 0, bytes.length, offset);
  } finally {
    closeSync(fd);
  }
  session.writeAhead?.wrote(file, offset, bytes);
}

/** The committed files a new session of `store` finds (name → bytes). */
async function filesOf(store: StateStore): Promise<Record<string, Buffer>> {
  const s = await store.lockTarget(T, NO_WAIT);
  try {
    // Read back whole: no file failed its size or SHA-256.
    expect(s.damage).toBeUndefined();
    const names = readdirSync(s.dir).filter((n) => !n.endsWith('.lock'));
    return Object.fromEntries(names.sort().map((n) => [n, readFileSync(join(s.dir, n))]));
  } finally {
    await s.release();
  }
}

/** Each file's size and SHA-256 (a failed comparison of MBs of bytes would take the diff minutes). */
const digests = (files: Record<string, Buffer>): Record<string, string> =>
  Object.fromEntries(Object.entries(files).map(([n, b]) => [n, `${b.length}:${sha256Hex(b)}`]));

/** Lock T, let `change` write the session's files, persist, release. */
async function commit(store: StateStore, change: (dir: string) => void): Promise<void> {
  const s = await store.lockTarget(T, NO_WAIT);
  try {
    mkdirSync(s.dir, { recursive: true });
    change(s.dir);
    await s.persist();
  } finally {
    await s.release();
  }
}

const KEY: JournalKey = {
  input: { name: 'crm.csv', size: 1234, sha256: 'ab'.repeat(32) },
  accountId: '18ce54d4x5t',
  target: { kind: 'custom_audience', id: '1nmth' },
  options: { mapping: { email: ['Email'] }, max_operations: 2500 },
};

function start(runId: string): AuditRunStart {
  return {
    event: 'run_start',
    run_id: runId,
    at: '2026-01-01T00:00:00.000Z',
    tool_version: '0.1.0',
    account_id: T.accountId,
    target: { kind: T.kind, id: T.id },
    operation: 'upload',
    input: { name: 'crm.csv', size: 1, sha256: 'ab'.repeat(32) },
    options: {},
    resumed: false,
    sandbox: true,
  } as unknown as AuditRunStart;
}

describe.each(Object.keys(STORES))('state store contract: %s', (kind) => {
  const open = async (): Promise<Opened> => (STORES[kind] as () => Promise<Opened>)();
  const closeAll = async (): Promise<void> => {
    for (const s of opened.splice(0)) await s.close();
  };

  it('a lease is exclusive: a second holder is refused (sync_in_progress), or waits, until the first releases', async () => {
    const o = await open();
    try {
      const first = await o.store.lockTarget(T, NO_WAIT);
      const other = await o.another();
      await expect(other.lockTarget(T)).rejects.toMatchObject({ code: 'sync_in_progress' });
      await first.lease.verify();
      await first.release();
      const second = await other.lockTarget(T, NO_WAIT);
      // A holder that waits (waitMs) gets the lease once it is released.
      let refused = 0;
      const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
      const sleep = (ms: number): Promise<void> => {
        refused++; // the lease was held when tried: the store waits before it tries again
        return pause(Math.min(ms, 50));
      };
      const waiting = o.store.lockTarget(T, { waitMs: 20_000, proofIntervalMs: 300, sleep });
      while (refused === 0) await pause(10);
      await second.release();
      await (await waiting).release();
    } finally {
      await closeAll();
    }
  });

  it('a lost lease is heard (its signal aborted); a store with a fence then refuses its writes once another holder committed', async () => {
    const o = await open();
    try {
      const a = await o.store.lockTarget(T, NO_WAIT);
      await o.loseLease();
      await expect(a.lease.verify()).rejects.toThrow();
      expect(a.lease.signal.aborted).toBe(true);
      if (!o.fences) return await a.release();
      const b = await (await o.another()).lockTarget(T, { ...NO_WAIT, waitMs: 10_000 });
      writeFileSync(join(b.dir, 'index'), 'b');
      await b.persist();
      await b.release();
      writeAhead(a, 'pending', 0, Buffer.from('a'));
      await expect(a.durable()).rejects.toMatchObject({ code: expect.stringMatching(/^state_/) as unknown });
      writeFileSync(join(a.dir, 'index'), 'a');
      await expect(a.persist()).rejects.toMatchObject({ code: expect.stringMatching(/^state_/) as unknown });
      await a.release();
      expect(await filesOf(await o.another())).toEqual({ index: Buffer.from('b') });
    } finally {
      await closeAll();
    }
  });

  it('a commit proves the lease first: a lease ended from outside, not yet heard, stores nothing', async () => {
    const o = await open();
    if (!o.fences) return await closeAll(); // the directory's commit is the snapshot's rename, under its lock
    try {
      await commit(o.store, (dir) => writeFileSync(join(dir, 'index'), 'before'));
      const a = await o.store.lockTarget(T, NO_WAIT);
      await o.loseLease();
      writeFileSync(join(a.dir, 'index'), 'after');
      await expect(a.persist()).rejects.toMatchObject({
        code: expect.stringMatching(/^state_(lease|connection)_lost$/) as unknown,
      });
      await a.release();
      expect(await filesOf(await o.another())).toEqual({ index: Buffer.from('before') });
    } finally {
      await closeAll();
    }
  });

  it('persist refuses, typed, while write-ahead writes are in flight, and a write or a second persist during its commit', async () => {
    const o = await open();
    if (!o.fences) return await closeAll(); // the directory has no write-ahead log: its files are the record
    try {
      const s = await o.store.lockTarget(T, NO_WAIT);
      writeAhead(s, 'pending', 0, Buffer.from('one'));
      await expect(s.persist()).rejects.toMatchObject({ code: 'state_session_misused' });
      await s.durable();
      writeFileSync(join(s.dir, 'index'), 'i');
      const persisting = s.persist();
      expect(() => writeAhead(s, 'pending', 3, Buffer.from('two'))).toThrow(
        expect.objectContaining({ code: 'state_session_misused' }) as unknown as Error,
      );
      await expect(s.persist()).rejects.toMatchObject({ code: 'state_session_misused' });
      await persisting;
      await s.release();
      expect(await filesOf(await o.another())).toEqual({ index: Buffer.from('i') });
    } finally {
      await closeAll();
    }
  });

  it('a damaged session refuses to persist (its damage) unless a recovery rebuilt the files', async () => {
    const o = await open();
    if (o.backend === undefined) return await closeAll(); // the directory's damage is judged by Snapshot.open
    try {
      await commit(o.store, (dir) => writeFileSync(join(dir, 'index'), 'sound'));
      // Write-ahead rows of another version: the session is damaged.
      const damaged = await o.backend((lease) => ({
        lease: lease.lease,
        read: (work) => lease.read((view) => work({ ...view, staleRecords: () => Promise.resolve(1) })),
        append: (fence, record) => lease.append(fence, record),
        release: () => lease.release(),
        commit: (fence, work) => lease.commit(fence, work),
      }));
      const s = await damaged.lockTarget(T, NO_WAIT);
      try {
        expect(s.damage).toMatchObject({ code: 'snapshot_write_ahead_damaged' });
        writeFileSync(join(s.dir, 'index'), 'unchecked');
        await expect(s.persist()).rejects.toBe(s.damage);
      } finally {
        await s.release();
      }
      expect(await filesOf(await o.another())).toEqual({ index: Buffer.from('sound') });
      const r = await damaged.lockTarget(T, NO_WAIT);
      try {
        writeFileSync(join(r.dir, 'index'), 'recovered');
        await r.persist({ recovered: true });
        expect(r.damage).toBeUndefined();
      } finally {
        await r.release();
      }
      expect(await filesOf(await o.another())).toEqual({ index: Buffer.from('recovered') });
    } finally {
      await closeAll();
    }
  });

  it('write-ahead writes are kept in order: a session after a kill finds the bytes as they were written', async () => {
    const o = await open();
    try {
      await commit(o.store, (dir) => writeFileSync(join(dir, 'data.0'), 'head:'));
      const s = await o.store.lockTarget(T, NO_WAIT);
      const parts = ['one', 'two', 'three'].map((p) => Buffer.from(p));
      let at = 0;
      for (const p of parts) {
        writeAhead(s, 'pending', at, p);
        at += p.length;
      }
      writeAhead(s, 'data.0', 5, Buffer.from('frame'));
      writeAhead(s, 'pending', 3, Buffer.from('TWO'));
      await s.durable();
      // No persist: the process is gone, its session with it.
      await s.release();
      expect(await filesOf(await o.another())).toEqual({
        'data.0': Buffer.from('head:frame'),
        pending: Buffer.from('oneTWOthree'),
      });
    } finally {
      await closeAll();
    }
  });

  it('the audit log and a run journal keep their records in the order appended', async () => {
    const o = await open();
    try {
      for (const id of ['r1', 'r2', 'r3']) await o.store.audit.append(start(id));
      const runs = (await (await o.another()).audit.runs()).map((r) => r.run_id);
      expect(runs).toEqual(['r1', 'r2', 'r3']);
      expect(await o.store.audit.verify()).toMatchObject({ ok: true, records: 3 });
      const j = await o.store.journals.open(KEY, { mode: 'new', runId: 'r1' });
      await Promise.all([0, 1, 2].map((i) => j.recordConfirmed(i, batchDigest(Buffer.from([i])), 1)));
      await j.close();
      const resumed = await o.store.journals.open(KEY, { mode: 'resume', runId: 'r2' });
      expect([...resumed.confirmed.keys()]).toEqual([0, 1, 2]);
      await resumed.close();
    } finally {
      await closeAll();
    }
  });

  it('a commit cut off midway leaves the files as they were, nothing of it visible; the next commit stores them', async () => {
    const o = await open();
    if (o.backend === undefined) return await closeAll(); // the directory's commit is the snapshot's rename
    try {
      const before = randomBytes(1 << 20);
      await commit(o.store, (dir) => writeFileSync(join(dir, 'data.0'), before));
      const cut = await o.backend((lease) => ({
        lease: lease.lease,
        read: (work) => lease.read(work),
        append: (fence, record) => lease.append(fence, record),
        release: () => lease.release(),
        commit: (fence, work) => {
          let rows = 0;
          return lease.commit(fence, (w) =>
            work({
              ...w,
              row: (name, seq, bytes) => (++rows === 2 ? Promise.reject(new Error('cut')) : w.row(name, seq, bytes)),
            }),
          );
        },
      }));
      const after = randomBytes(3 << 20);
      await expect(
        commit(cut, (dir) => {
          writeFileSync(join(dir, 'data.0'), after);
          writeFileSync(join(dir, 'index'), 'new');
        }),
      ).rejects.toThrow();
      expect(digests(await filesOf(o.store))).toEqual(digests({ 'data.0': before }));
      await commit(o.store, (dir) => writeFileSync(join(dir, 'data.0'), after));
      expect(digests(await filesOf(o.store))).toEqual(digests({ 'data.0': after }));
    } finally {
      await closeAll();
    }
  });

  it('a data file changed in place reads back exactly, commit after commit (block deltas)', async () => {
    const o = await open();
    try {
      let expected = randomBytes(300_000);
      const index = Buffer.from('index');
      await commit(o.store, (dir) => {
        writeFileSync(join(dir, 'data.0'), expected);
        writeFileSync(join(dir, 'index'), index);
      });
      // Each commit's changes, written in place: [offset, length]; past the end, the file grows.
      const commits: [number, number][][] = [
        [[5, 1]],
        [
          [1020, 10],
          [150_000, 100],
          [299_999, 1],
        ],
        [
          [0, 2048],
          [300_000, 5000],
        ],
        [
          [304_999, 1],
          [100_000, 1],
        ],
      ];
      for (const changes of commits) {
        const patches = changes.map(([at, length]) => ({ at, bytes: randomBytes(length) }));
        await commit(o.store, (dir) => {
          const fd = openSync(join(dir, 'data.0'), 'r+');
          for (const { at, bytes } of patches) writeSync(fd, bytes, 0, bytes.length, at);
          closeSync(fd);
        });
        const size = Math.max(expected.length, ...patches.map(({ at, bytes }) => at + bytes.length));
        const next = Buffer.alloc(size);
        expected.copy(next);
        for (const { at, bytes } of patches) bytes.copy(next, at);
        expected = next;
        // The exact bytes, every file: the data file as changed, the index untouched, nothing else.
        const files = await filesOf(o.store);
        expect(digests(files)).toEqual(digests({ 'data.0': expected, index }));
        expect(Buffer.compare(files['data.0'] ?? Buffer.alloc(0), expected)).toBe(0);
      }
      await commit(o.store, (dir) => rmSync(join(dir, 'data.0')));
      expect(await filesOf(o.store)).toEqual({ index });
    } finally {
      await closeAll();
    }
  });

  it('targets() names a committed target; the move marker is set and cleared; discardMoved empties the store', async () => {
    const o = await open();
    try {
      expect(await o.store.targets()).toEqual([]);
      // The directory names a snapshot by the audit log's sync records (its directory's name is a hash).
      await o.store.audit.append({ ...start('r1'), operation: 'sync' } as AuditRunStart);
      await commit(o.store, (dir) => writeFileSync(join(dir, 'index'), 'i'));
      expect(await (await o.another()).targets()).toEqual([T]);
      expect(await o.store.moveMarker()).toBeUndefined();
      await o.store.setMoveMarker('/from/here');
      expect(await (await o.another()).moveMarker()).toBe('/from/here');
      await expect(o.store.lockTarget(T)).rejects.toMatchObject({ code: 'state_move_unfinished' });
      await o.store.discardMoved();
      await o.store.setMoveMarker(undefined);
      expect(await o.store.moveMarker()).toBeUndefined();
      expect(await o.store.targets()).toEqual([]);
      expect(await o.store.audit.lines()).toEqual([]);
    } finally {
      await closeAll();
    }
  });

  it("golden bytes: a kept batch's line numbers are big-endian uint32s, unrecovered.json is format 1", async () => {
    const o = await open();
    try {
      const j = await o.store.journals.open(KEY, { mode: 'new', runId: 'r1' });
      const body = Buffer.from('[]');
      const group = { operationType: 'Update' as const };
      const batch = { body, users: 1, operationUsers: [1], group };
      await j.recordFailed({ ...batch, index: 1, lines: Uint32Array.from([3]) }, batchDigest(body), 'http_503');
      await j.recordFailed({ ...batch, index: 2, lines: Uint32Array.from([0x01020304, 7]) }, batchDigest(body), 'x');
      expect(Array.from((await j.readFailedBatch(2))?.lines ?? [])).toEqual([0x01020304, 7]);
      await j.close();
      expect(await o.keptLines()).toEqual([readFileSync(GOLDEN_LINES), Buffer.from([1, 2, 3, 4, 0, 0, 0, 7])]);

      await commit(o.store, (dir) => {
        addUnrecovered(dir, 2, true);
        addUnrecovered(dir, 3, false);
      });
      expect((await filesOf(await o.another()))['unrecovered.json']).toEqual(readFileSync(GOLDEN_UNRECOVERED));
    } finally {
      await closeAll();
    }
  });
});
