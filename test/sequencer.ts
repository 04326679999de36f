import { statSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds the slow files took in `npm test` from a fresh clone on the 2-core machine, at load 11 to
 * 14 (26 Nov; vitest's per-file durations, about 2.5 times the idle ones). A stale figure only
 * changes the order.
 */
const SECONDS: Readonly<Record<string, number>> = {
  'test/sync.test.ts': 56,
  'test/sync-unclean.test.ts': 42,
  'test/sync-kill.test.ts': 35,
  'test/upload-postgres.test.ts': 31,
  'test/upload-signals.test.ts': 31,
  'test/hash.test.ts': 29,
  'test/sync-uncertain.test.ts': 20,
  'test/sync-cli.test.ts': 19,
  'test/upload-cli.test.ts': 19,
  'test/hash-cli.test.ts': 13,
  'test/crm-exports.test.ts': 12,
  'test/cli-pipes.test.ts': 12,
  'test/hostile-state.test.ts': 12,
  'test/plan.test.ts': 12,
  'test/manage.test.ts': 10,
  'test/journal.test.ts': 10,
  'test/sighup.test.ts': 9,
  'test/state-postgres.test.ts': 9,
  'test/state-move.test.ts': 8,
  'test/examples.test.ts': 6,
  'test/hostile-input.test.ts': 6,
  'test/api-client.test.ts': 6,
  'test/replay.test.ts': 6,
  'test/postgres-harness.test.ts': 6,
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
