/**
 * V8 heap flags for the main thread of a process whose owner wants its garbage kept small: the
 * CLI sets them for `upload` and `sync` (bin/audience-kit.js); the library sets none of its own.
 *
 * Two facts of Node 20 shape this module (measured on 20.20.2, test/heap-flags.test.ts):
 * - A flag set at run time is process-wide and read by every heap as it runs, but each isolate
 *   made after it, a worker thread's included, puts it back to V8's default as it starts. So the
 *   hashing pool's first worker undid the CLI's flags: the main thread of a 10M-row upload grew
 *   its young generation to 16 MB semi-spaces, as without them. They are set again once each
 *   worker is online (`afterWorkerStart`).
 * - With `--semi-space-growth-factor=1` a worker's young generation would stay at its first size
 *   (1 MB semi-spaces): many more scavenges of the rows it hashes (+13% CPU for a 1M upload). So a
 *   worker starts at the largest young generation its resource limits allow (`beforeWorkerStart`:
 *   `--min-semi-space-size`, read as an isolate is made and capped by its limits), where it
 *   otherwise grew to in the first chunks anyway.
 */
import { setFlagsFromString } from 'node:v8';

let mainHeapFlags: string | undefined;

/** Set `flags` for the rest of the process, and again after each worker the pool starts. */
export function setMainHeapFlags(flags: string): void {
  mainHeapFlags = flags;
  setFlagsFromString(flags);
}

/** Before a worker with that young-generation limit is made: it starts at that size (with the main heap flags only). */
export function beforeWorkerStart(maxYoungGenerationMb: number): void {
  if (mainHeapFlags !== undefined) setFlagsFromString(`--min-semi-space-size=${maxYoungGenerationMb}`);
}

/** Once a worker is online: the main heap flags its start reset, set again. */
export function afterWorkerStart(): void {
  if (mainHeapFlags !== undefined) setFlagsFromString(mainHeapFlags);
}
