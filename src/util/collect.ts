/**
 * Garbage collections asked for, where V8's heuristics would run them too late for memory.
 *
 * A full collection between the phases of a long sync: what the planning or the sending left for
 * the collector (dead request bodies, parsed chunks) is freed before the next phase allocates,
 * instead of under it, so the phases' peaks do not add up. A young-generation collection (a
 * scavenge: 0.05 ms when little survives) while a stream's buffers die as fast as they are read.
 * `gc` is exposed by the same runtime flag Jest's `--logHeapUsage` uses.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Gc = (options?: { type: 'major' | 'minor' }) => void;

let gc: Gc | undefined;

function exposed(): Gc {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as Gc;
  }
  return gc;
}

export function collectGarbage(): void {
  exposed()();
}

export function collectYoung(): void {
  exposed()({ type: 'minor' });
}
