import { statSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds the slow files took in `npm test` from a fresh clone on the 2-core machine (28 Nov;
 * vitest's per-file durations, the suite's own load, about 2 to 3 times each file's alone). A
 * stale figure only changes the order.
 */
const SECONDS: Readonly<Record<string, number>> = {
  'test/sync-unclean.test.ts': 70,
  'test/sync.test.ts': 49,
  'test/sync-kill.test.ts': 48,
  'test/sync-lease.test.ts': 37,
  'test/state-move-kill.test.ts': 36,
  'test/state-postgres-delta.test.ts': 28,
  'test/upload-signals.test.ts': 27,
  'test/upload-postgres.test.ts': 26,
  'test/state-postgres.test.ts': 22,
  'test/state-postgres-errors.test.ts': 21,
  'test/state-contract.test.ts': 17,
  'test/sync-uncertain.test.ts': 16,
  'test/hash.test.ts': 14,
  'test/sync-cli.test.ts': 13,
  'test/hostile-input.test.ts': 11,
  'test/consent-sync.test.ts': 11,
  'test/hash-cli.test.ts': 10,
  'test/hostile-state.test.ts': 10,
  'test/journal.test.ts': 10,
  'test/upload-cli.test.ts': 10,
  'test/state-move.test.ts': 10,
  'test/sighup.test.ts': 8,
  'test/crm-exports.test.ts': 8,
  'test/sync-dedupe.test.ts': 7,
  'test/examples.test.ts': 7,
  'test/cli-pipes.test.ts': 7,
  'test/encodings.test.ts': 7,
  'test/plan.test.ts': 6,
  'test/api-client.test.ts': 6,
  'test/phone-truth.test.ts': 6,
  'test/consent.test.ts': 5,
};

/** A file not listed: 0.05 ms per byte of source (most files not listed take less, idle). */
const MS_PER_BYTE = 0.05;

/**
 * Longest files first, so that none starts late and ends the run alone while the other workers
 * are idle. A file's duration is vitest's own from the last run when it has one (kept in
 * node_modules/.vite, so none on a fresh clone, as in CI), else the figure above, else an estimate
 * from its size: a new file runs, wherever it lands in the order.
 */
export class LongestFirst extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ms = new Map(files.map((spec) => [spec, this.expectedMs(spec)]));
    return Promise.resolve([...files].sort((a, b) => (ms.get(b) ?? 0) - (ms.get(a) ?? 0)));
  }

  private expectedMs(spec: TestSpecification): number {
    const path = relative(this.ctx.config.root, spec.moduleId).replaceAll('\\', '/');
    const last = this.ctx.cache.getFileTestResults(`${spec.project.name}:${path}`);
    if (last !== undefined) return last.duration;
    const listed = SECONDS[path];
    return listed === undefined ? statSync(spec.moduleId).size * MS_PER_BYTE : listed * 1000;
  }
}
