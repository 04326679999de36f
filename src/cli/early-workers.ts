/**
 * The hashing workers `bin` starts before it loads the CLI (pool.ts prestartHashWorkers): `hash`
 * has its workers load their modules (about 0.1 s) while the main thread loads the CLI's, parses
 * the command line and opens the file, instead of after (docs/performance.md, "Sixth pass"). Its
 * pool takes them when their limits fit its run and ends them otherwise; a command that stops
 * before hashing exits as before (they are unreferenced until taken). Not for `upload` and
 * `sync`: they open their state and target first, and a large file's run wants workers of other
 * limits. This reads the command line before yargs does, for a count only: what it cannot read
 * as the CLI will (a value the CLI refuses, help) starts none.
 */
import { defaultHashWorkers, MAX_HASH_WORKERS, prestartHashWorkers } from '../hashing/pool.js';

/** How many workers to start early for `args` (the command line after the script). */
export function earlyWorkers(args: readonly string[]): number {
  const command = args.find((arg) => !arg.startsWith('-'));
  if (command !== 'hash' || args.some((arg) => arg === '--help' || arg === '-h')) return 0;
  const at = args.findIndex((arg) => arg === '--workers' || arg.startsWith('--workers='));
  if (at === -1) return defaultHashWorkers();
  const given = args[at] as string;
  const value = given.startsWith('--workers=') ? given.slice('--workers='.length) : args[at + 1];
  const workers = value === undefined || value.trim() === '' ? NaN : Number(value);
  return Number.isSafeInteger(workers) && workers >= 0 && workers <= MAX_HASH_WORKERS ? workers : 0;
}

/** Start the workers `args` will use, if any (bin/, before it loads the CLI). */
export function startEarlyWorkers(args: readonly string[]): void {
  const count = earlyWorkers(args);
  if (count > 0) prestartHashWorkers(count);
}
