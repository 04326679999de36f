/**
 * V8 heap flags for the main thread of a process whose owner wants its garbage kept small: the
 * CLI sets them for `upload` and `sync` (bin/audience-kit.js); the library sets none of its own.
 *
 * Two facts of V8 (Node 20.20.2's, checked by test/heap-flags.test.ts) shape this module:
 * - `--semi-space-growth-factor=1` (a young generation that never grows) is a value V8 itself
 *   treats as out of range: each isolate made after it is set, a worker thread's included, raises
 *   it to 2 as it configures its heap (Heap::ConfigureHeap). So the hashing pool's first worker
 *   undid it, and the main thread of a 10M-row upload grew its new space to 32 MB. The flags are
 *   set again once each worker is online, or gone (`afterWorkerStart`). In the moment between, a
 *   scavenge on the main thread may still grow its new space, which setting them does not shrink.
 *   (`--heap-growing-percent` is not touched by a new isolate; it is set again with the rest.)
 * - The flags are process-wide: held at its first size, a worker's young generation would be
 *   scavenged far more often (+13% CPU for a 1M upload). So a worker starts at the largest young
 *   generation its resource limits allow (`beforeWorkerStart`: `--min-semi-space-size`, read as an
 *   isolate is made and capped by its limits), where it otherwise grew to in its first chunks. It
 *   stays set for any isolate made later in the process: in the CLI, only the pool's workers.
 */
import { setFlagsFromString } from 'node:v8';

let mainHeapFlags: string | undefined;

/** Set `flags` for the rest of the process, and again after each worker the pool starts. */
export function setMainHeapFlags(flags: string): void {
  mainHeapFlags = flags;
  setFlagsFromString(flags);
}

/**
 * Before a worker with that young-generation limit (MB) is made, with the main heap flags set: it
 * starts at that size. The flag is in MB of one semi-space, a third of a young generation: V8 caps
 * it at what the worker's limit allows, so the limit itself is passed.
 */
export function beforeWorkerStart(maxYoungGenerationMb: number): void {
  if (mainHeapFlags !== undefined) setFlagsFromString(`--min-semi-space-size=${Math.ceil(maxYoungGenerationMb)}`);
}

/** Once a worker is online, or has exited without coming online: the main heap flags, set again. */
export function afterWorkerStart(): void {
  if (mainHeapFlags !== undefined) setFlagsFromString(mainHeapFlags);
}
