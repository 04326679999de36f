import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { connector, redactUrl, type Connector } from '../src/state/postgres/connection.js';
import { PostgresBackend } from '../src/state/postgres/store.js';
import { PostgresLease } from '../src/state/postgres/target-session.js';
import { postgresStateUrl, usePostgres } from './helpers/sync.js';

// A sync's locking connection is used by the write-ahead inserts, the snapshot's read, the
// commit, the lease's heartbeat and every request's proof, each on its own schedule. pg 8 queues
// a statement sent while another runs (printing a deprecation warning; pg 9 refuses it), and a
// proof queued between a transaction's statements runs inside it. Here the connection records
// any statement sent while another is under way, and any proof sent inside a transaction.
usePostgres();

const PROOF = /pg_locks/;

/** A connector whose clients record what the test refuses. */
function watched(url: string): { db: Connector; overlaps: string[]; proofs: number; proofsInTransaction: number } {
  const seen = { overlaps: [] as string[], proofs: 0, proofsInTransaction: 0 };
  const inner = connector(url, redactUrl(url));
  const watch = (client: pg.Client): pg.Client => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    let running = 0;
    let inTransaction = false;
    const text = (q: unknown): string => (typeof q === 'string' ? q : ((q as { text?: string }).text ?? 'COPY'));
    (client as { query: unknown }).query = (...args: unknown[]): unknown => {
      const sql = text(args[0]);
      if (running > 0) seen.overlaps.push(sql.slice(0, 40));
      if (PROOF.test(sql)) seen.proofs++;
      if (inTransaction && PROOF.test(sql)) seen.proofsInTransaction++;
      if (sql.startsWith('BEGIN')) inTransaction = true;
      if (sql === 'COMMIT' || sql === 'ROLLBACK') inTransaction = false;
      running++;
      const result = query(...args);
      const done = (): void => void running--;
      if (result instanceof Promise) result.then(done, done);
      // A COPY's stream: under way until it closes.
      else (result as NodeJS.EventEmitter).once('close', done);
      return result;
    };
    return client;
  };
  return {
    db: { where: inner.where, connect: async (t) => watch(await inner.connect(t)) },
    get overlaps() {
      return seen.overlaps;
    },
    get proofs() {
      return seen.proofs;
    },
    get proofsInTransaction() {
      return seen.proofsInTransaction;
    },
  };
}

describe("a sync's locking connection", () => {
  it('runs one statement or one transaction at a time: proofs wait their turn, never inside a commit, and a long commit loses no lease', async () => {
    const url = await postgresStateUrl();
    await (await PostgresBackend.open(url)).close();
    const w = watched(url);
    const target = { accountId: 'act', kind: 'custom_audience', id: randomBytes(4).toString('hex') } as const;
    // A proof times out after 3 intervals (60 ms): the commit below lasts longer than that. The
    // lease's timers run on a fake clock, moved only by the test: a loaded machine (a proof queued
    // behind an insert for more than 60 ms) cannot lose the lease, and the commit's 200 ms are exact.
    const held = await PostgresLease.open(w.db, target, { proofIntervalMs: 20 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const fence = await held.read((view) => Promise.resolve(view.fence));
      // Write-ahead inserts one after another (as the mirror sends them), and requests' proofs meanwhile.
      const proofs: Promise<void>[] = [];
      const proofsBefore = w.proofs;
      for (let seq = 1; seq <= 20; seq++) {
        proofs.push(held.lease.verify(), held.lease.verify());
        await held.append(fence, { seq, file: 'pending', offset: seq, data: randomBytes(64 * 1024) });
      }
      await Promise.all(proofs);
      // The proofs did run (one skipped for good would pass the checks below too).
      expect(w.proofs).toBeGreaterThan(proofsBefore);
      // A commit outlasting the proof timeout, with the heartbeat and requests' proofs during it.
      const during: Promise<void>[] = [];
      const next = await held.commit(fence, async (writer) => {
        await writer.put({ name: 'pending', size: 1, sha256: Buffer.alloc(32), blocks: null }, true);
        for (let i = 0; i < 10; i++) {
          during.push(held.lease.verify());
          await vi.advanceTimersByTimeAsync(20);
        }
      });
      await Promise.all(during);
      expect(next).toBe('1');
      await held.lease.verify();
      expect(held.lease.signal.aborted).toBe(false);
      expect(w.overlaps).toEqual([]);
      expect(w.proofsInTransaction).toBe(0);
    } finally {
      vi.useRealTimers();
      await held.release();
    }
  });
});
