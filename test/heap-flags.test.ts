import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// V8 flags are the process's: each case runs in a process of its own, on the built modules (dist/).
const DIST = new URL('../dist/', import.meta.url).href;

/** Runs `body` (an ES module's code, after the lines below) in a new node process; its JSON output. */
async function run<T>(body: string): Promise<T> {
  const script = `
    import { once } from 'node:events';
    import { getHeapSpaceStatistics } from 'node:v8';
    import { Worker } from 'node:worker_threads';
    import { setMainHeapFlags } from '${DIST}util/heap-flags.js';
    import { prestartHashWorkers } from '${DIST}hashing/pool.js';
    const newSpaceMb = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
    /** Starts a hashing worker as the pool does, and waits until it is online (ended after). */
    async function poolWorker() {
      const [worker] = prestartHashWorkers(1);
      worker.ref(); // prestarted workers are unreferenced
      await once(worker, 'online');
      return worker;
    }
    ${body}`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
  return JSON.parse(stdout) as T;
}

/** The code of a new space's largest size while 3M objects are made, 200,000 of them alive at a time. */
const CHURN = `(() => {
  const alive = new Array(200_000);
  let largest = newSpaceMb();
  for (let i = 0; i < 3_000_000; i++) {
    alive[i % alive.length] = { i };
    if ((i & 0xffff) === 0) largest = Math.max(largest, newSpaceMb());
  }
  return largest;
})()`;

describe('the main thread heap flags (bin sets them for upload and sync)', () => {
  it("hold after the hashing pool's worker starts, which undoes them: the main thread's young generation does not grow", async () => {
    const mainYoung = (flags: boolean, worker: boolean): Promise<number> =>
      run<number>(`
        if (${flags}) setMainHeapFlags('--semi-space-growth-factor=1');
        const worker = ${worker} ? await poolWorker() : undefined;
        const largest = ${CHURN};
        await worker?.terminate();
        console.log(JSON.stringify(largest));`);
    const [flagged, unflagged, flaggedWithWorker] = await Promise.all([
      mainYoung(true, false),
      mainYoung(false, true),
      mainYoung(true, true),
    ]);
    // Without the flags the same allocations grow it (to 32 MB on Node 20): what would be seen if they were lost.
    expect(unflagged).toBeGreaterThan(2 * flagged);
    expect(flaggedWithWorker).toBe(flagged);
  });

  it('make the pool start each worker at the largest young generation its limits allow, where the growth flag would hold it at its first', async () => {
    // The pool's worker cannot be looked into; the start size it set stays set for the process,
    // so a probe worker made next (with smaller limits, which cap it) shows it.
    const probe = (flags: boolean): Promise<{ start: number; largest: number }> =>
      run(`
        if (${flags}) setMainHeapFlags('--semi-space-growth-factor=1');
        await (await poolWorker()).terminate();
        const probe = new Worker(${JSON.stringify(`
          import { getHeapSpaceStatistics } from 'node:v8';
          import { parentPort } from 'node:worker_threads';
          const newSpaceMb = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 2 ** 20;
          const start = newSpaceMb();
          parentPort.postMessage({ start, largest: ${CHURN} });`)}, { eval: true, resourceLimits: { maxYoungGenerationSizeMb: 6 } });
        const [sizes] = await once(probe, 'message');
        await probe.terminate();
        console.log(JSON.stringify(sizes));`);
    const [plain, flagged] = await Promise.all([probe(false), probe(true)]);
    // Without the flags a worker starts small and grows to its limit as it works.
    expect(plain.largest).toBeGreaterThan(plain.start);
    // With them it starts at that limit and stays there.
    expect(flagged).toEqual({ start: plain.largest, largest: plain.largest });
  });
});
