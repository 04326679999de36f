import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  appendAuditRecord,
  AUDIT_GENESIS,
  findAuditRun,
  newRunId,
  readAuditRuns,
  verifyAuditLog,
  type AuditRunEnd,
  type AuditRunStart,
} from '../src/state/audit.js';
import { tempDir } from './helpers/temp.js';

function tmp(): string {
  return tempDir('ak-audit-');
}

function startRecord(runId: string): AuditRunStart {
  return {
    event: 'run_start',
    run_id: runId,
    at: '2030-01-01T00:00:00.000Z',
    tool_version: '0.1.0',
    account_id: 'acc1',
    target: { kind: 'custom_audience', id: 'aud1' },
    operation: 'update',
    input: { name: 'crm.csv', size: 123, sha256: 'a'.repeat(64) },
    options: {
      default_country: 'US',
      country_column: null,
      phone_format: 'digits',
      input_hashed: 'auto',
      mapping: { email: ['Email'] },
      effective_at: null,
      expires_at: null,
      max_body_bytes: 5_000_000,
      max_operations: 2500,
      max_users_per_operation: 10_000,
    },
    resumed: false,
    sandbox: true,
  };
}

function endRecord(runId: string): AuditRunEnd {
  const zero = {
    rows: 10,
    users_sent: 9,
    duplicates: 1,
    rows_without_identifier: 0,
    invalid_values: 0,
    digests_passed_through: 0,
    oversized_users: 0,
    requests: 1,
    batches_confirmed: 1,
    batches_failed: 0,
    bytes: 900,
    retries: 0,
    mismatches: 0,
    rate_limit_waits: 0,
    success_count: 9,
    total_count: 9,
  };
  return {
    event: 'run_end',
    run_id: runId,
    at: '2030-01-01T00:00:01.000Z',
    started_at: '2030-01-01T00:00:00.000Z',
    duration_ms: 1000,
    outcome: 'completed',
    input: { name: 'crm.csv', rows: 10, sha256: null },
    counts: zero,
  };
}

describe('audit log', () => {
  it('chains records from the genesis value and verifies', async () => {
    const path = join(tmp(), 'sub', 'audit.jsonl');
    const a = await appendAuditRecord(path, startRecord('r1'));
    expect(a.prev).toBe(AUDIT_GENESIS);
    await appendAuditRecord(path, endRecord('r1'));
    await appendAuditRecord(path, startRecord('r2'));
    const v = verifyAuditLog(path);
    expect(v).toMatchObject({ ok: true, records: 3 });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const runs = readAuditRuns(path);
    expect(runs.map((r) => [r.run_id, r.start !== undefined, r.end !== undefined])).toEqual([
      ['r1', true, true],
      ['r2', true, false],
    ]);
    expect(findAuditRun(path, 'r1').end?.outcome).toBe('completed');
    expect(() => findAuditRun(path, 'nope')).toThrow(/no run nope/);
  });

  it('reports the first broken link when a line is edited, removed or torn', async () => {
    const path = join(tmp(), 'audit.jsonl');
    for (const id of ['r1', 'r2', 'r3']) {
      await appendAuditRecord(path, startRecord(id));
      await appendAuditRecord(path, endRecord(id));
    }
    const original = readFileSync(path, 'utf8');
    const lines = original.split('\n');

    writeFileSync(path, original.replace('"users_sent":9', '"users_sent":8'));
    expect(verifyAuditLog(path)).toMatchObject({
      ok: false,
      broken: { line: 3, problem: expect.stringMatching(/line 2 was modified/) },
    });

    writeFileSync(path, [...lines.slice(0, 2), ...lines.slice(3)].join('\n'));
    expect(verifyAuditLog(path)).toMatchObject({ ok: false, broken: { line: 3 } });

    writeFileSync(path, lines.slice(1).join('\n'));
    expect(verifyAuditLog(path)).toMatchObject({
      ok: false,
      broken: { line: 1, problem: expect.stringMatching(/genesis/) },
    });

    writeFileSync(path, original.slice(0, -10));
    expect(verifyAuditLog(path)).toMatchObject({
      ok: false,
      broken: { line: 6, problem: expect.stringMatching(/incomplete/) },
    });

    // Appending after a torn line keeps the torn line visible to verify.
    await appendAuditRecord(path, startRecord('r4'));
    expect(verifyAuditLog(path)).toMatchObject({ ok: false, broken: { line: 6, problem: 'not a JSON record' } });
  });

  it('never lets two concurrent processes interleave or fork the chain', async () => {
    const dir = tmp();
    const path = join(dir, 'audit.jsonl');
    const dist = fileURLToPath(new URL('../dist/state/audit.js', import.meta.url));
    expect(existsSync(dist), 'build first: npx tsc -p tsconfig.build.json').toBe(true);
    const script = `
      import { appendAuditRecord } from ${JSON.stringify(dist)};
      const rec = JSON.parse(process.argv[1]);
      for (let i = 0; i < 40; i++) await appendAuditRecord(${JSON.stringify(path)}, { ...rec, run_id: rec.run_id + '-' + i });
    `;
    const run = (id: string): Promise<number | null> =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(startRecord(id))], {
          stdio: 'inherit',
        });
        child.on('error', reject);
        child.on('close', resolve);
      });
    const codes = await Promise.all([run('p1'), run('p2'), run('p3')]);
    expect(codes).toEqual([0, 0, 0]);
    expect(verifyAuditLog(path)).toMatchObject({ ok: true, records: 120 });
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('breaks a stale lock left by a dead process', async () => {
    const path = join(tmp(), 'audit.jsonl');
    writeFileSync(`${path}.lock`, '2147483646\n');
    await appendAuditRecord(path, startRecord('r1'), { timeoutMs: 1000 });
    expect(verifyAuditLog(path).ok).toBe(true);
  });

  it('makes sortable run ids', () => {
    expect(newRunId(new Date('2030-01-02T03:04:05.678Z'))).toMatch(/^20300102T030405Z-[0-9a-f]{6}$/);
  });
});
