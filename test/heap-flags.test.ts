import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

// V8 flags are the process's: each case runs in a process of its own, on the built modules (dist/).
const DIST = new URL('../dist/', import.meta.url).href;

/** Runs `body` (an ES module's code, after the imports below) in a new node process; its JSON output. */
function run<T>(body: string): T {
  const script = `
    import { once } from 'node:events';
    import { getHeapSpaceStatistics } from 'node:v8';
    import { Worker } from 'node:worker_threads';
    import { afterWorkerStart, beforeWorkerStart, setMainHeapFlags } from '${DIST}util/heap-flags.js';
    import { prestartHashWorkers } from '${DIST}hashing/pool.js';
    const newSpaceMb = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
    /** The young generation's largest size while 3M objects are made, 200,000 of them alive at a time. */
    function churn() {
      const alive = new Array(200_000);
      let largest = newSpaceMb();
      for (let i = 0; i < 3_000_000; i++) {
        alive[i % alive.length] = { i };
        if ((i & 0xffff) === 0) largest = Math.max(largest, newSpaceMb());
      }
      return largest;
    }
    ${body}`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as T;
}

describe('the main thread heap flags (bin sets them for upload and sync)', () => {
  it("hold after the hashing pool's worker starts, which resets them: the main thread's young generation does not grow", () => {
    const mainYoung = (flags: boolean, worker: boolean): number =>
      run<number>(`
        if (${flags}) setMainHeapFlags('--semi-space-growth-factor=1');
        const [worker] = prestartHashWorkers(${worker ? 1 : 0});
        worker?.ref(); // prestarted workers are unreferenced
        if (worker) await once(worker, 'online');
        const largest = churn();
        await worker?.terminate();
        console.log(JSON.stringify(largest));`);
    const flagged = mainYoung(true, false);
    // Without the flags the same allocations grow it: what the test would see if they were lost.
    expect(mainYoung(false, true)).toBeGreaterThan(2 * flagged);
    expect(mainYoung(true, true)).toBe(flagged);
  });

  it('let a worker start at the largest young generation its limits allow, which the growth flag would keep it from reaching', () => {
    const worker = (flags: boolean): { start: number; largest: number } =>
      run(`
        if (${flags}) setMainHeapFlags('--semi-space-growth-factor=1');
        beforeWorkerStart(6);
        const w = new Worker(${JSON.stringify(
          `import { getHeapSpaceStatistics } from 'node:v8';
           import { parentPort } from 'node:worker_threads';
           const newSpaceMb = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
           const start = newSpaceMb();
           const alive = new Array(200000);
           let largest = start;
           for (let i = 0; i < 3000000; i++) { alive[i % alive.length] = { i }; if ((i & 0xffff) === 0) largest = Math.max(largest, newSpaceMb()); }
           parentPort.postMessage({ start, largest });`,
        )}, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 6 } });
        w.once('online', afterWorkerStart);
        const [sizes] = await once(w, 'message');
        await w.terminate();
        console.log(JSON.stringify(sizes));`);
    const plain = worker(false);
    const flagged = worker(true);
    // Without the flags a worker starts small and grows to its limit as it works.
    expect(plain.largest).toBeGreaterThan(plain.start);
    // With them it starts at that limit, where the growth flag would otherwise have held it at its first size.
    expect(flagged).toEqual({ start: plain.largest, largest: plain.largest });
  });
});
