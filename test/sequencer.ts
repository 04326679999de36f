import { statSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds the slow files took in an idle `npm test` on the 2-core machine (vitest's per-file
 * durations; docs/testing.md, "What takes the time"). A stale figure only changes the order.
 */
const SECONDS: Readonly<Record<string, number>> = {
  'test/sync.test.ts': 22,
  'test/sync-unclean.test.ts': 18,
  'test/sync-kill.test.ts': 14,
  'test/sync-cli.test.ts': 12.5,
  'test/upload-signals.test.ts': 12,
  'test/upload-postgres.test.ts': 12,
  'test/hash.test.ts': 9.6,
  'test/upload-cli.test.ts': 9.5,
  'test/hash-cli.test.ts': 8.9,
  'test/journal.test.ts': 7.7,
  'test/hostile-state.test.ts': 7.2,
  'test/sync-uncertain.test.ts': 6.3,
  'test/hostile-input.test.ts': 5.7,
  'test/crm-exports.test.ts': 5.6,
  'test/sighup.test.ts': 5.2,
  'test/api-client.test.ts': 5.1,
  'test/snapshot.test.ts': 4.5,
  'test/manage.test.ts': 3.9,
  'test/examples.test.ts': 3.5,
  'test/plan.test.ts': 3.3,
  'test/upload.test.ts': 3.3,
  'test/cli-pipes.test.ts': 3.1,
};

/** A file not listed: 0.05 ms per byte of source (the listed files take 0.1 to 1 ms per byte, most others less). */
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
