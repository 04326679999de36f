import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HashProgress } from '../src/cli/hash-progress.js';
import { fitProgressLine, ProgressPrinter } from '../src/upload/progress.js';
import type { UploadProgress } from '../src/upload/types.js';
import { FIXTURES, runCli } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

const upload: UploadProgress = {
  rows: 12_500_000,
  users: 12_400_000,
  duplicates: 10,
  batchesPacked: 160,
  requestsSent: 150,
  batchesConfirmed: 140,
  batchesSkipped: 1,
  batchesFailed: 2,
  usersConfirmed: 11_000_000,
  bytesSent: 7e8,
  retries: 12,
  mismatches: 1,
  rateLimitWaits: 3,
  waitedMs: 64_000,
  inFlight: 4,
  elapsedMs: 1_000_000,
  inputBytesRead: 25,
  inputTotalBytes: 100,
  done: false,
};

/** What a terminal shows of redrawn output: the text after the last clear-line. */
const shown = (writes: string[]): string => (writes.join('').split('\r\x1b[2K').at(-1) ?? '').trimEnd();

describe('progress lines fit the terminal', () => {
  it('leaves out whole parts, least useful first, keeping their order; cuts only a first part wider than the terminal', () => {
    const parts = [
      { text: 'rows 1,000', drop: 0 },
      { text: 'users 990', drop: 1 },
      { text: '10% ETA 1:00', drop: 2 },
      { text: 'elapsed 0:10', drop: 3 },
    ];
    expect(fitProgressLine(parts, 200)).toBe('rows 1,000 · users 990 · 10% ETA 1:00 · elapsed 0:10');
    expect(fitProgressLine(parts, 40)).toBe('rows 1,000 · users 990 · 10% ETA 1:00');
    expect(fitProgressLine(parts, 13)).toBe('rows 1,000');
    expect(fitProgressLine([{ text: 'x'.repeat(30), drop: 0 }], 20)).toBe(`${'x'.repeat(18)}…`);
  });

  it('upload: the whole line on a wide terminal (not cut at 80), the main counts and the ETA on a narrow one', () => {
    for (const columns of [200, 100, 60]) {
      const writes: string[] = [];
      new ProgressPrinter({ write: (t) => writes.push(t), tty: true, columns: () => columns }).update(upload);
      const line = shown(writes);
      expect(line.length).toBeLessThan(columns);
      expect(line).toMatch(/^rows 12,500,000 · users 12,400,000/);
      if (columns === 200) expect(line.length).toBeGreaterThan(80);
      if (columns === 200) expect(line).toContain('elapsed 16:40');
      if (columns === 100) expect(line).toContain('25% ETA 50:00');
    }
  });

  it('hash: drawn a few times a second once the run is a second old, cleared at the end', () => {
    let now = 0;
    const writes: string[] = [];
    const progress = new HashProgress({
      write: (t) => writes.push(t),
      columns: () => 120,
      totalBytes: 1000,
      now: () => now,
    });
    now = 500;
    progress.update(10_000, 100);
    expect(writes).toEqual([]);
    now = 2000;
    progress.update(40_000, 400);
    expect(shown(writes)).toBe('hashing: rows 40,000 · 40% ETA 0:03 · 20,000 rows/s · elapsed 0:02');
    now = 2100;
    progress.update(42_000, 420);
    expect(writes).toHaveLength(1);
    progress.finish();
    expect(writes.at(-1)).toBe('\r\x1b[2K');
  });

  it('hash CLI: progress on a terminal only, never with --quiet, and the output is the same', async () => {
    const dir = tempDir('ak-progress-');
    const file = join(FIXTURES, 'crm-export.csv');
    let t = 0;
    // Each reading of the clock is two seconds later: the run looks long enough for a line.
    const clock = (): number => (t += 2000);
    const args = (out: string): string[] => ['hash', file, '--workers', '0', '-o', join(dir, out)];
    const tty = await runCli(args('tty.csv'), { tty: true, now: clock });
    expect(tty.code, tty.stderr).toBe(0);
    const redraws = tty.stderr.split('\r\x1b[2K');
    expect(redraws.length).toBeGreaterThan(2);
    expect(redraws[1]).toMatch(/^hashing: rows [\d,]+ · \d+% ETA \d:\d\d · [\d,]+ rows\/s · elapsed \d:\d\d$/);
    // Cleared before the summary.
    expect(redraws.at(-1)).toMatch(/^rows read +2991/);
    const quiet = await runCli([...args('quiet.csv'), '-q'], { tty: true, now: clock });
    const piped = await runCli(args('piped.csv'), { now: clock });
    for (const r of [quiet, piped]) expect(r.stderr).not.toContain('hashing:');
    expect(readFileSync(join(dir, 'tty.csv'), 'utf8')).toBe(readFileSync(join(dir, 'piped.csv'), 'utf8'));
  });
});
