import { appendFileSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  AUDIT_FORMAT,
  AUDIT_GENESIS,
  appendAuditRecord,
  readAuditRuns,
  verifyAuditLog,
  type AuditRunEnd,
  type AuditRunStart,
} from '../src/state/audit.js';
import { batchDigest, findJournal, RunJournal, type JournalKey } from '../src/state/journal.js';
import { addUnrecovered, readUnrecovered } from '../src/state/snapshot-unrecovered.js';
import { PostgresStore } from '../src/state/postgres/store.js';
import type { UploadJournal } from '../src/state/journal.js';
import { postgresStateUrl, usePostgres } from './helpers/sync.js';
import { tempDir } from './helpers/temp.js';

// The run journal's format 2 and the audit log's format 1, pinned like the snapshot's
// (snapshot-golden.test.ts): files written by this version (test/golden/journal-v2/,
// test/golden/audit-v1/, rewritten with UPDATE_GOLDEN=1 only when a format version changes)
// are read back, a fresh write gives the same records, and a newer format is refused.

usePostgres();

const GOLDEN_JOURNAL = fileURLToPath(new URL('./golden/journal-v2/', import.meta.url));
const GOLDEN_LINES_NATIVE = fileURLToPath(new URL('./golden/journal-lines-native/', import.meta.url));
const GOLDEN_UNRECOVERED = fileURLToPath(new URL('./golden/unrecovered-v1/unrecovered.json', import.meta.url));
const GOLDEN_AUDIT = fileURLToPath(new URL('./golden/audit-v1/audit.jsonl', import.meta.url));
const AT = new Date('2026-01-01T00:00:00.000Z');

const KEY: JournalKey = {
  input: { name: 'crm.csv', size: 1234, sha256: 'ab'.repeat(32) },
  accountId: '18ce54d4x5t',
  target: { kind: 'custom_audience', id: '1nmth' },
  options: { mapping: { email: ['Email'] }, max_operations: 2500 },
};
const BODY0 = Buffer.from('[{"operation_type":"Update","params":{"users":[{"email":["0"]}]}}]');
const BODY1 = Buffer.from('[{"operation_type":"Update","params":{"users":[{"email":["1"]}]}}]');

/** A run that confirmed batch 0, kept batch 1 as failed, and read the whole input (2 batches). */
async function writeJournal(stateDir: string): Promise<void> {
  await fillJournal(
    await RunJournal.open(stateDir, KEY, { mode: 'new', runId: '20260101T000000Z-aaaaaa', now: () => AT }),
  );
}

async function fillJournal(j: UploadJournal): Promise<void> {
  await j.recordConfirmed(0, batchDigest(BODY0), 1);
  const group = { operationType: 'Update' as const };
  const lines = Uint32Array.from([3]);
  await j.recordFailed(
    { index: 1, body: BODY1, users: 1, operationUsers: [1], group, lines },
    batchDigest(BODY1),
    'http_503',
  );
  await j.recordInputEnd(2);
  await j.close();
}

const START: AuditRunStart = {
  event: 'run_start',
  run_id: '20260101T000000Z-aaaaaa',
  at: AT.toISOString(),
  tool_version: '0.1.0',
  account_id: '18ce54d4x5t',
  target: { kind: 'custom_audience', id: '1nmth' },
  operation: 'sync',
  input: { name: 'crm.csv', size: 1234, sha256: 'ab'.repeat(32) },
  options: {
    default_country: 'US',
    country_column: null,
    phone_format: 'auto',
    input_hashed: 'auto',
    mapping: { email: ['Email'] },
    effective_at: null,
    expires_at: null,
    max_body_bytes: 5_000_000,
    max_operations: 2500,
    max_users_per_operation: 2500,
  },
  resumed: false,
  sandbox: true,
  snapshot_before: { users: 0, digest: 'cd'.repeat(32) },
};
const END: AuditRunEnd = {
  event: 'run_end',
  run_id: START.run_id,
  at: '2026-01-01T00:00:05.000Z',
  started_at: START.at,
  duration_ms: 5000,
  outcome: 'completed',
  input: { name: 'crm.csv', rows: 2, sha256: 'ab'.repeat(32) },
  counts: {
    rows: 2,
    users_sent: 2,
    duplicates: 0,
    rows_without_identifier: 0,
    invalid_values: 0,
    digests_passed_through: 0,
    oversized_users: 0,
    requests: 1,
    batches_confirmed: 1,
    batches_failed: 0,
    bytes: 200,
    retries: 0,
    mismatches: 0,
    rate_limit_waits: 0,
    success_count: 2,
    total_count: 2,
  },
  sync: {
    adds: 2,
    removes: 0,
    refreshes: 0,
    unchanged: 0,
    removes_confirmed: 0,
    updates_confirmed: 2,
    first_sync: true,
    snapshot_before: { users: 0, digest: 'cd'.repeat(32) },
    snapshot_after: { users: 2, digest: 'ef'.repeat(32) },
  },
};

async function writeAudit(path: string): Promise<void> {
  await appendAuditRecord(path, START);
  await appendAuditRecord(path, END);
}

/** The journal's lines without what a release or the chain changes (tool_version, prev). */
function journalRecords(path: string): unknown[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const { prev: _prev, tool_version: _tool, ...rest } = JSON.parse(l) as Record<string, unknown>;
      return rest;
    });
}

const journalFile = (stateDir: string): string => {
  const [key] = readdirSync(join(stateDir, 'runs'));
  return join(stateDir, 'runs', key!, 'journal.jsonl');
};

if (process.env.UPDATE_GOLDEN === '1') {
  rmSync(GOLDEN_JOURNAL, { recursive: true, force: true });
  await writeJournal(GOLDEN_JOURNAL);
  rmSync(join(journalFile(GOLDEN_JOURNAL), '..', 'lock'), { force: true });
  mkdirSync(join(GOLDEN_AUDIT, '..'), { recursive: true });
  rmSync(GOLDEN_AUDIT, { force: true });
  await writeAudit(GOLDEN_AUDIT);
}

describe('run journal format 2 (golden files)', () => {
  it('a fresh write gives the golden records', async () => {
    const dir = tempDir('ak-golden-j-');
    await writeJournal(dir);
    expect(journalRecords(journalFile(dir))).toEqual(journalRecords(journalFile(GOLDEN_JOURNAL)));
  });

  it('the PostgreSQL store writes the same records, line for line, and reads them back', async () => {
    const url = await postgresStateUrl();
    const store = await PostgresStore.open(url);
    try {
      const j = await store.journals.open(KEY, { mode: 'new', runId: '20260101T000000Z-aaaaaa', now: () => AT });
      await fillJournal(j);
      expect(await store.journals.list()).toHaveLength(1);
      expect(await store.journals.find(KEY)).toMatchObject({ confirmed: 1, failed: 1, totalBatches: 2 });
      const resumed = await store.journals.open(KEY, { mode: 'resume', runId: 'r2', now: () => AT });
      expect((await resumed.readFailedBatch(1))?.body).toEqual(BODY1);
      await resumed.close();
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      const rows = await db.query<{ line: string }>('SELECT line FROM audience_kit_journal_lines ORDER BY seq');
      await db.end();
      const records = rows.rows.slice(0, 5).map((r) => {
        const { prev: _prev, tool_version: _tool, ...rest } = JSON.parse(r.line) as Record<string, unknown>;
        return rest;
      });
      expect(records).toEqual(journalRecords(journalFile(GOLDEN_JOURNAL)));
    } finally {
      await store.close();
    }
  });

  it('the golden journal is read back: confirmed batch, kept failed body, batch count', async () => {
    const dir = tempDir('ak-golden-j-');
    cpSync(GOLDEN_JOURNAL, dir, { recursive: true });
    expect(findJournal(dir, KEY)).toMatchObject({ confirmed: 1, confirmedUsers: 1, failed: 1, totalBatches: 2 });
    const j = await RunJournal.open(dir, KEY, { mode: 'resume', runId: 'r2', now: () => AT });
    try {
      expect(j.isConfirmed(0, batchDigest(BODY0))).toBe(true);
      expect((await j.readFailedBatch(1))?.body).toEqual(BODY1);
      expect(Array.from((await j.readFailedBatch(1))?.lines ?? [])).toEqual([3]);
    } finally {
      await j.close();
    }
  });

  it("a kept batch's line numbers are big-endian uint32s, the same bytes in the directory and the database", async () => {
    const golden = readFileSync(join(journalFile(GOLDEN_JOURNAL), '..', 'failed', '000001.lines.u32be'));
    expect(golden).toEqual(Buffer.from([0, 0, 0, 3]));
    const dir = tempDir('ak-golden-j-');
    await writeJournal(dir);
    expect(readdirSync(join(journalFile(dir), '..', 'failed')).sort()).toEqual([
      '000001.body.json',
      '000001.lines.u32be',
    ]);
    expect(readFileSync(join(journalFile(dir), '..', 'failed', '000001.lines.u32be'))).toEqual(golden);
    const url = await postgresStateUrl();
    const store = await PostgresStore.open(url);
    try {
      await fillJournal(await store.journals.open(KEY, { mode: 'new', runId: 'r1', now: () => AT }));
      const db = new pg.Client({ connectionString: url });
      await db.connect();
      const rows = await db.query<{ lines: Buffer }>('SELECT lines FROM audience_kit_journal_failed');
      await db.end();
      expect(rows.rows.map((r) => r.lines)).toEqual([golden]);
    } finally {
      await store.close();
    }
  });

  it("a kept batch's .lines written by an earlier version (the machine's byte order) is still read, and replaced", async () => {
    const dir = tempDir('ak-golden-j-');
    cpSync(GOLDEN_JOURNAL, dir, { recursive: true });
    const failed = join(journalFile(dir), '..', 'failed');
    rmSync(join(failed, '000001.lines.u32be'));
    cpSync(join(GOLDEN_LINES_NATIVE, '000001.lines'), join(failed, '000001.lines'));
    const j = await RunJournal.open(dir, KEY, { mode: 'resume', runId: 'r2', now: () => AT });
    try {
      // Written on a little-endian machine (x86-64) by the version before big-endian files.
      expect(Array.from((await j.readFailedBatch(1))?.lines ?? [])).toEqual([3]);
      await j.recordConfirmed(1, batchDigest(BODY1), 1);
      expect(readdirSync(failed)).toEqual([]);
    } finally {
      await j.close();
    }
  });

  it('a journal of a newer format is refused, naming the version that wrote it', async () => {
    const dir = tempDir('ak-golden-j-');
    cpSync(GOLDEN_JOURNAL, dir, { recursive: true });
    const path = journalFile(dir);
    const lines = readFileSync(path, 'utf8').split('\n');
    const header = JSON.parse(lines[0]!) as Record<string, unknown>;
    lines[0] = JSON.stringify({ ...header, v: 3, tool_version: '9.0.0' });
    writeFileSync(path, lines.join('\n'));
    const err = await RunJournal.open(dir, KEY, { mode: 'resume', runId: 'r2' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'journal_newer_format' });
    expect((err as Error).message).toMatch(/format 3, written by a newer audience-kit \(9\.0\.0\)/);
  });
});

describe('audit log format 1 (golden file)', () => {
  it('a fresh write gives the golden bytes, each record carrying its format', async () => {
    const path = join(tempDir('ak-golden-a-'), 'audit.jsonl');
    await writeAudit(path);
    expect(readFileSync(path)).toEqual(readFileSync(GOLDEN_AUDIT));
    const formats = readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { v: unknown }).v);
    expect(formats).toEqual([AUDIT_FORMAT, AUDIT_FORMAT]);
  });

  it('the golden log verifies and reads back', () => {
    expect(verifyAuditLog(GOLDEN_AUDIT)).toMatchObject({ ok: true, records: 2 });
    const [run] = readAuditRuns(GOLDEN_AUDIT);
    expect(run?.end?.sync?.snapshot_after).toEqual({ users: 2, digest: 'ef'.repeat(32) });
  });

  it('records written before the format field (no v) are format 1', () => {
    const path = join(tempDir('ak-golden-a-'), 'audit.jsonl');
    appendFileSync(path, `${JSON.stringify({ ...START, prev: AUDIT_GENESIS })}\n`);
    expect(verifyAuditLog(path)).toMatchObject({ ok: true, records: 1 });
    expect(readAuditRuns(path)).toHaveLength(1);
  });

  it('a record of a newer format is refused by append, verify and readers', async () => {
    const path = join(tempDir('ak-golden-a-'), 'audit.jsonl');
    cpSync(GOLDEN_AUDIT, path);
    const head = verifyAuditLog(path).head;
    appendFileSync(path, `${JSON.stringify({ ...START, run_id: 'later', v: 2, prev: head })}\n`);
    const refused = { code: 'audit_newer_format' };
    await expect(appendAuditRecord(path, END)).rejects.toMatchObject(refused);
    expect(() => verifyAuditLog(path)).toThrow(expect.objectContaining(refused) as Error);
    expect(() => readAuditRuns(path)).toThrow(expect.objectContaining(refused) as Error);
  });
});

describe('unrecovered.json format 1 (golden file)', () => {
  it('a fresh write gives the golden bytes: the users over every recovery, exact only while each count was', () => {
    const dir = tempDir('ak-golden-u-');
    addUnrecovered(dir, 2, true);
    addUnrecovered(dir, 3, false);
    expect(readFileSync(join(dir, 'unrecovered.json'))).toEqual(readFileSync(GOLDEN_UNRECOVERED));
  });

  it('the golden file reads back', () => {
    expect(readUnrecovered(join(GOLDEN_UNRECOVERED, '..'))).toEqual({ format: 1, users: 5, exact: false });
  });

  it('a newer format is refused, never misread', () => {
    const dir = tempDir('ak-golden-u-');
    writeFileSync(join(dir, 'unrecovered.json'), `${JSON.stringify({ format: 2, users: 5, exact: false })}\n`);
    expect(() => readUnrecovered(dir)).toThrow(expect.objectContaining({ code: 'snapshot_newer_format' }) as Error);
  });
});
