import { appendFileSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DirectoryStore } from '../src/state/directory-store.js';
import {
  batchDigest,
  findJournal,
  journalKeyId,
  RunJournal,
  unfinishedRunError,
  type JournalKey,
} from '../src/state/journal.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import type { StateStore } from '../src/state/store.js';
import type { UploadJournal } from '../src/state/journal.js';
import { fileSha256 } from '../src/util/sha256.js';
import { postgresStateUrl, STORES, usePostgres, type StoreKind } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';

const key = (options: Record<string, unknown> = { a: 1 }): JournalKey => ({
  input: { name: 'crm.csv', size: 10, sha256: 'a'.repeat(64) },
  accountId: 'acc',
  target: { kind: 'custom_audience', id: 'aud' },
  options,
});

const batch = (index: number, body = `[{"i":${index}}]`) => ({
  index,
  body: Buffer.from(body),
  users: 2,
  operationUsers: [2],
  group: { operationType: 'Update' as const },
  lines: Uint32Array.from([index * 2 + 2, index * 2 + 3]),
});

/** A store of journals and the means to read and alter what it holds, as someone with access to it could. */
interface Harness {
  store: StateStore;
  /** The journal's lines as stored. */
  lines(): Promise<string[]>;
  setLine(index: number, text: string): Promise<void>;
  /** Indexes of the kept batches stored. */
  kept(): Promise<number[]>;
  alterKept(index: number, body: string): Promise<void>;
}

async function sql<R extends pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<R[]> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<R>(text, params)).rows;
  } finally {
    await db.end();
  }
}

async function harness(kind: StoreKind): Promise<Harness> {
  const id = journalKeyId(key());
  if (kind === 'directory') {
    const stateDir = tempDir('ak-j-');
    const dir = join(stateDir, 'runs', id);
    const file = join(dir, 'journal.jsonl');
    const read = (): string[] => readFileSync(file, 'utf8').trim().split('\n');
    return {
      store: new DirectoryStore(stateDir),
      lines: () => Promise.resolve(read()),
      setLine: (i, text) => {
        const lines = read();
        lines[i] = text;
        writeFileSync(file, `${lines.join('\n')}\n`);
        return Promise.resolve();
      },
      kept: () =>
        Promise.resolve(
          existsSync(join(dir, 'failed'))
            ? readdirSync(join(dir, 'failed'))
                .filter((f) => f.endsWith('.body.json'))
                .map((f) => Number.parseInt(f, 10))
            : [],
        ),
      alterKept: (i, body) => {
        writeFileSync(join(dir, 'failed', `${String(i).padStart(6, '0')}.body.json`), body);
        return Promise.resolve();
      },
    };
  }
  const url = await postgresStateUrl();
  const store = await PostgresStore.open(url);
  return {
    store,
    lines: async () =>
      (
        await sql<{ line: string }>(url, 'SELECT line FROM audience_kit_journal_lines WHERE key = $1 ORDER BY seq', [
          id,
        ])
      ).map((r) => r.line),
    setLine: async (i, text) => {
      await sql(url, 'UPDATE audience_kit_journal_lines SET line = $3 WHERE key = $1 AND seq = $2', [id, i, text]);
    },
    kept: async () =>
      (
        await sql<{ batch: number }>(
          url,
          'SELECT batch FROM audience_kit_journal_failed WHERE key = $1 ORDER BY batch',
          [id],
        )
      ).map((r) => r.batch),
    alterKept: async (i, body) => {
      await sql(url, 'UPDATE audience_kit_journal_failed SET body = $3 WHERE key = $1 AND batch = $2', [
        id,
        i,
        Buffer.from(body),
      ]);
    },
  };
}

usePostgres();

describe('run journal', () => {
  it('keys runs by input and options, independent of key order', () => {
    expect(journalKeyId(key({ a: 1, b: 2 }))).toBe(journalKeyId(key({ b: 2, a: 1 })));
    expect(journalKeyId(key({ a: 1 }))).not.toBe(journalKeyId(key({ a: 2 })));
  });
});

describe.each(STORES)('run journal (%s store)', (kind: StoreKind) => {
  let h: Harness;
  beforeEach(async () => {
    h = await harness(kind);
  });
  afterEach(async () => {
    await h.store.close();
  });
  const open = (mode: 'new' | 'resume', runId: string): Promise<UploadJournal> =>
    h.store.journals.open(key(), { mode, runId });

  it('records confirmations durably and resumes them', async () => {
    const j = await open('new', 'r1');
    await j.recordConfirmed(0, batchDigest(batch(0).body), 2);
    await j.recordConfirmed(2, batchDigest(batch(2).body), 2);
    await j.close();
    expect(await h.store.journals.find(key())).toMatchObject({ complete: false, confirmed: 2, runIds: ['r1'] });

    const r = await open('resume', 'r2');
    expect(r.resumed).toBe(true);
    expect(r.isConfirmed(0, batchDigest(batch(0).body))).toBe(true);
    expect(r.isConfirmed(1, batchDigest(batch(1).body))).toBe(false);
    expect(() => r.isConfirmed(2, batchDigest(Buffer.from('other')))).toThrow(/differs/);
    await r.recordConfirmed(1, batchDigest(batch(1).body), 2);
    await r.recordInputEnd(3);
    await r.markComplete();
    await r.close();
    const types = (await h.lines()).map((l) => (JSON.parse(l) as { type: string }).type);
    expect(types).toEqual(['header', 'run', 'confirmed', 'confirmed', 'run', 'confirmed', 'input_end', 'complete']);
    expect(await h.store.journals.find(key())).toMatchObject({ complete: true, confirmed: 3, totalBatches: 3 });

    // A completed journal is not resumed: a new run starts over.
    const again = await open('resume', 'r3');
    expect(again.resumed).toBe(false);
    expect(again.confirmed.size).toBe(0);
    await again.close();
    expect(await h.lines()).toHaveLength(2);
  });

  it('chains concurrent records in call order', async () => {
    const j = await open('new', 'r1');
    await Promise.all([0, 1, 2, 3].map((i) => j.recordConfirmed(i, batchDigest(batch(i).body), 2)));
    await j.close();
    const r = await open('resume', 'r2');
    expect([...r.confirmed.keys()]).toEqual([0, 1, 2, 3]);
    await r.close();
  });

  it('keeps failed batches, verifies them when read back, and removes them once confirmed or complete', async () => {
    const j = await open('new', 'r1');
    for (const i of [4, 5, 6]) await j.recordFailed(batch(i), batchDigest(batch(i).body), 'HTTP 503 after retries');
    await j.close();
    expect(await h.kept()).toEqual([4, 5, 6]);
    const r = await open('resume', 'r2');
    expect(r.failed.get(4)).toMatchObject({ users: 2, reason: 'HTTP 503 after retries', operationUsers: [2] });
    const kept = await r.readFailedBatch(4);
    expect(kept?.body).toEqual(batch(4).body);
    expect([...(kept?.lines ?? [])]).toEqual([10, 11]);
    await h.alterKept(5, '[{"altered":true}]');
    expect(await r.readFailedBatch(5)).toBeUndefined();
    await r.recordConfirmed(4, batchDigest(batch(4).body), 2);
    expect(await h.kept()).toEqual([5, 6]);
    await r.markComplete();
    expect(await h.kept()).toEqual([]);
    await r.close();
  });

  it('refuses a journal whose lines were altered, and one of a newer format', async () => {
    const j = await open('new', 'r1');
    await j.recordConfirmed(0, batchDigest(batch(0).body), 2);
    await j.recordConfirmed(2, batchDigest(batch(2).body), 2);
    await j.close();
    const lines = await h.lines();
    const forged = JSON.parse(lines[2]!) as Record<string, unknown>;
    await h.setLine(2, JSON.stringify({ ...forged, index: 1 }));
    await expect(open('resume', 'r2')).rejects.toMatchObject({ code: 'journal_tampered' });
    await expect(h.store.journals.find(key())).rejects.toMatchObject({ code: 'journal_tampered' });
    await h.setLine(2, lines[2]!);
    const header = JSON.parse(lines[0]!) as Record<string, unknown>;
    await h.setLine(0, JSON.stringify({ ...header, v: 3, tool_version: '9.0.0' }));
    await expect(open('resume', 'r2')).rejects.toMatchObject({ code: 'journal_newer_format' });
    // A restart replaces it unread.
    const fresh = await open('new', 'r3');
    expect(fresh.resumed).toBe(false);
    await fresh.close();
  });

  it('refuses a second run of the same upload while one holds it, and lets it in once closed', async () => {
    const first = await open('new', 'r1');
    await expect(open('resume', 'r2')).rejects.toMatchObject({ code: 'run_in_progress' });
    await first.close();
    const second = await open('resume', 'r2');
    expect(second.resumed).toBe(true);
    await second.close();
  });
});

describe('run journal file', () => {
  it('is written mode 0600 in a 0700 directory and tolerates a torn last line', async () => {
    const dir = tempDir('ak-j-');
    const j = await RunJournal.open(dir, key(), { mode: 'new', runId: 'r1' });
    await j.recordConfirmed(0, batchDigest(batch(0).body), 2);
    await j.recordFailed(batch(4), batchDigest(batch(4).body), 'HTTP 503 after retries');
    await j.close();
    expect(statSync(j.path).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(j.dir, 'failed', '000004.body.json')).mode & 0o777).toBe(0o600);
    // A kill in the middle of a write leaves half a line.
    appendFileSync(j.path, '{"type":"confirmed","index":1,"sha');
    expect(findJournal(dir, key())).toMatchObject({ complete: false, confirmed: 1, runIds: ['r1'] });
    const r = await RunJournal.open(dir, key(), { mode: 'resume', runId: 'r2' });
    expect(r.isConfirmed(0, batchDigest(batch(0).body))).toBe(true);
    await r.recordConfirmed(1, batchDigest(batch(1).body), 2);
    await r.close();
    expect(findJournal(dir, key())).toMatchObject({ confirmed: 2 });
  });

  it('refuses a run while another process holds the lock file', async () => {
    const dir = tempDir('ak-j-');
    const j = await RunJournal.open(dir, key(), { mode: 'new', runId: 'r1' });
    writeFileSync(join(j.dir, 'lock'), `${process.ppid}\n`);
    await expect(RunJournal.open(dir, key(), { mode: 'resume', runId: 'r2' })).rejects.toMatchObject({
      code: 'run_in_progress',
    });
    await j.close();
  });

  it('explains an unfinished run with the way out', () => {
    const e = unfinishedRunError({
      key: 'k',
      path: 'p',
      createdAt: '2030-01-01T00:00:00.000Z',
      complete: false,
      confirmed: 3,
      confirmedUsers: 6,
      failed: 1,
      totalBatches: 9,
      runIds: [],
    });
    expect(e.message).toMatch(/3 of 9 batches confirmed, 1 failed/);
    expect(e.fix).toMatch(/unfinished: 'resume'.*unfinished: 'restart'/);
  });

  it('fingerprints a file with SHA-256', async () => {
    const dir = tempDir('ak-j-');
    const f = join(dir, 'x.csv');
    writeFileSync(f, 'abc');
    expect(await fileSha256(f)).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
