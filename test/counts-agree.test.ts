import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLING_THREAD, runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';
import { FIXTURE } from './helpers/upload-cli.js';

// `upload` and a first `sync` of the same file through the same faults send the same users in
// the same batches: every count both tell must be equal, in the audit record, the text report
// and the --json report, and each place must agree with the others.

/**
 * Three batches: a 503 retried by the client on the first, a count mismatch re-sent on the second.
 * One request at a time: the faults hit request numbers, which must be the same batches in both runs.
 */
const SEND = [
  '--sandbox',
  '--sandbox-faults',
  '503=0@1,mismatch@3',
  '--max-body-bytes',
  '200000',
  '--concurrency',
  '1',
  ...CALLING_THREAD,
];

interface Run {
  json: Record<string, unknown>;
  text: Map<string, string>;
  summary: string;
  audit: Record<string, number>;
}

async function run(command: 'upload' | 'sync'): Promise<Run> {
  const cwd = tempDir('ak-counts-');
  const state = ['--state-dir', join(cwd, 'state')];
  const json = await runCli([command, FIXTURE, ...SEND, ...state, '--json'], { cwd });
  expect(json.code, json.stderr).toBe(0);
  const text = await runCli([command, FIXTURE, ...SEND, '--state-dir', join(cwd, 'state-text')], { cwd });
  expect(text.code, text.stderr).toBe(0);
  const [fields = '', summary = ''] = text.stdout.split('\n\n');
  const ends = readFileSync(join(cwd, 'state', 'audit.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { event: string; counts?: Record<string, number> })
    .filter((r) => r.event === 'run_end');
  expect(ends).toHaveLength(1);
  return {
    json: JSON.parse(json.stdout) as Record<string, unknown>,
    text: new Map(fields.split('\n').map((l) => [l.split(/ {2,}/)[0] ?? '', l.split(/ {2,}/)[1] ?? ''])),
    summary,
    audit: ends[0]?.counts ?? {},
  };
}

const sumOf = (o: unknown, key: string): number =>
  Object.values(o as Record<string, Record<string, number>>).reduce((n, v) => n + (v[key] ?? 0), 0);

describe('upload and sync of the same file tell the same counts', () => {
  it('in the audit record, the text report and --json (the fixture through a 503 and a count mismatch)', async () => {
    const up = await run('upload');
    const sy = await run('sync');
    const update = sy.json.update as Record<string, unknown>;

    // The audit records: every count equal, and the fixture's rejected values and digest counted
    // (a sync recorded 0 and 0: its counts were summed from the sends alone).
    expect(sy.audit).toEqual(up.audit);
    expect(up.audit.rows).toBe(2991);
    expect(up.audit.invalid_values).toBeGreaterThan(300);
    expect(up.audit.digests_passed_through).toBe(1);
    // `requests` counts every attempt: each batch's first, the client's retry and the re-send.
    expect(up.audit).toMatchObject({ batches_confirmed: 3, retries: 2, requests: 5 });

    // --json: the input's counts at the top of both reports, the sends' in sync's `update`.
    for (const k of [
      'rows',
      'rows_without_identifier',
      'malformed_rows',
      'users',
      'duplicates',
      'oversized_users',
      'identifiers',
      'invalid_by_reason',
      'reject_rate',
      'requests',
      'bytes',
      'retries',
      'status',
      'exit_code',
      'input',
      'sandbox',
      'hints',
    ])
      expect([k, sy.json[k]]).toEqual([k, up.json[k]]);
    for (const k of ['users_confirmed', 'users_failed', 'batches', 'batches_confirmed', 'batches_failed', 'mismatches'])
      expect([k, update[k]]).toEqual([k, up.json[k]]);

    // The audit record says what --json says.
    const j = up.json;
    expect(up.audit).toMatchObject({
      rows: j.rows,
      users_sent: j.users,
      duplicates: j.duplicates,
      rows_without_identifier: j.rows_without_identifier,
      invalid_values: sumOf(j.invalid_by_reason, 'count'),
      digests_passed_through: sumOf(j.identifiers, 'digests'),
      oversized_users: j.oversized_users,
      requests: j.requests,
      batches_confirmed: j.batches_confirmed,
      batches_failed: j.batches_failed,
      bytes: j.bytes,
      retries: j.retries,
      mismatches: j.mismatches,
      rate_limit_waits: j.rate_limit_waits,
      success_count: j.success_count,
      total_count: j.total_count,
    });
    expect(sumOf(j.identifiers, 'invalid')).toBe(up.audit.invalid_values);

    // The text reports say it too.
    expect(sy.summary).toBe(up.summary);
    for (const [u, s, value] of [
      ['rows read', 'rows read', j.rows],
      ['users', 'users', j.users],
      ['duplicates (sent once)', 'duplicates (one user)', j.duplicates],
      ['retries', 'retries', j.retries],
    ] as const) {
      expect(up.text.get(u)).toBe(String(value));
      expect(sy.text.get(s)).toBe(String(value));
    }
    expect(up.text.get('requests')).toBe(String(j.requests));
    expect(sy.text.get('added/refreshed (Update)')).toBe(
      `${String(j.users_confirmed)} of ${String(j.users)} users confirmed, ${String(j.requests)} requests, completed`,
    );
  });
});
