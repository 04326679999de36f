/**
 * A full garbage collection, between the phases of a long sync: what the planning or the sending
 * left for the collector (dead request bodies, parsed chunks) is freed before the next phase
 * allocates, instead of under it, so the phases' peaks do not add up. V8 only runs one when its
 * heuristics say so; `gc` is exposed by the same runtime flag Jest's `--logHeapUsage` uses.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let gc: (() => void) | undefined;

export function collectGarbage(): void {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as () => void;
  }
  gc();
}
