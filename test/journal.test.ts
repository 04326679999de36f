import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  batchDigest,
  findJournal,
  journalKeyId,
  RunJournal,
  unfinishedRunError,
  type JournalKey,
} from '../src/state/journal.js';
import { fileSha256 } from '../src/util/sha256.js';
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

describe('run journal', () => {
  it('keys runs by input and options, independent of key order', () => {
    expect(journalKeyId(key({ a: 1, b: 2 }))).toBe(journalKeyId(key({ b: 2, a: 1 })));
    expect(journalKeyId(key({ a: 1 }))).not.toBe(journalKeyId(key({ a: 2 })));
  });

  it('records confirmations durably, resumes them, and tolerates a torn last line', async () => {
    const dir = tempDir('ak-j-');
    const j = await RunJournal.open(dir, key(), { mode: 'new', runId: 'r1' });
    j.recordConfirmed(0, batchDigest(batch(0).body), 2);
    j.recordConfirmed(2, batchDigest(batch(2).body), 2);
    j.close();
    expect(statSync(j.path).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    // A kill in the middle of a write leaves half a line.
    appendFileSync(j.path, '{"type":"confirmed","index":1,"sha');
    expect(findJournal(dir, key())).toMatchObject({ complete: false, confirmed: 2, runIds: ['r1'] });

    const r = await RunJournal.open(dir, key(), { mode: 'resume', runId: 'r2' });
    expect(r.resumed).toBe(true);
    expect(r.isConfirmed(0, batchDigest(batch(0).body))).toBe(true);
    expect(r.isConfirmed(1, batchDigest(batch(1).body))).toBe(false);
    expect(() => r.isConfirmed(2, batchDigest(Buffer.from('other')))).toThrow(/differs/);
    r.recordConfirmed(1, batchDigest(batch(1).body), 2);
    r.recordInputEnd(3);
    r.markComplete();
    r.close();
    const lines = readFileSync(r.path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string });
    expect(lines.map((l) => l.type)).toEqual([
      'header',
      'run',
      'confirmed',
      'confirmed',
      'run',
      'confirmed',
      'input_end',
      'complete',
    ]);
    expect(findJournal(dir, key())).toMatchObject({ complete: true, confirmed: 3, totalBatches: 3 });

    // A completed journal is not resumed: a new run starts over.
    const again = await RunJournal.open(dir, key(), { mode: 'resume', runId: 'r3' });
    expect(again.resumed).toBe(false);
    expect(again.confirmed.size).toBe(0);
    again.close();
  });

  it('keeps failed batches (mode 0600) and verifies them when read back', async () => {
    const dir = tempDir('ak-j-');
    const j = await RunJournal.open(dir, key(), { mode: 'new', runId: 'r1' });
    const b = batch(4);
    j.recordFailed(b, batchDigest(b.body), 'HTTP 503 after retries');
    j.close();
    const r = await RunJournal.open(dir, key(), { mode: 'resume', runId: 'r2' });
    expect(r.failed.get(4)).toMatchObject({ users: 2, reason: 'HTTP 503 after retries', operationUsers: [2] });
    const kept = r.readFailedBatch(4);
    expect(kept?.body).toEqual(b.body);
    expect([...(kept?.lines ?? [])]).toEqual([10, 11]);
    const bodyPath = join(r.dir, 'failed', '000004.body.json');
    expect(statSync(bodyPath).mode & 0o777).toBe(0o600);
    writeFileSync(bodyPath, '[{"altered":true}]');
    expect(r.readFailedBatch(4)).toBeUndefined();
    r.close();
  });

  it('refuses a second process on the same run while one holds it', async () => {
    const dir = tempDir('ak-j-');
    const j = await RunJournal.open(dir, key(), { mode: 'new', runId: 'r1' });
    writeFileSync(join(j.dir, 'lock'), `${process.ppid}\n`);
    await expect(RunJournal.open(dir, key(), { mode: 'resume', runId: 'r2' })).rejects.toMatchObject({
      code: 'run_in_progress',
    });
    j.close();
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
