/**
 * `mkdir -p` without Node's recursive mkdir, which never returns on a file system that answers
 * ENOENT to creating a directory whose parent exists (`/proc/x`, some FUSE and network mounts):
 * it takes the ENOENT for a missing parent, finds the parent there and tries again, for ever, at
 * 100% CPU and deaf to signals (a synchronous loop). Here each missing directory is created once,
 * parent first, and any refusal is thrown as the fs error it is (with `path` and `syscall`).
 */
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

function notDirectory(path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), {
    code: 'ENOTDIR',
    errno: -20,
    syscall: 'mkdir',
    path,
  });
}

/** Create `path` and its missing parents with `mode`: the first directory created, undefined when none was missing. */
export function makeDirs(path: string, mode: number): string | undefined {
  const missing: string[] = [];
  for (let at = resolve(path); ; at = dirname(at)) {
    const stat = statSync(at, { throwIfNoEntry: false });
    if (stat !== undefined) {
      if (!stat.isDirectory()) throw notDirectory(at);
      break;
    }
    missing.push(at);
    if (dirname(at) === at) break;
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir, { mode });
    } catch (error) {
      // Created meanwhile by another process: fine if it is a directory.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (statSync(dir, { throwIfNoEntry: false })?.isDirectory() !== true) throw notDirectory(dir);
    }
  }
  return missing[0];
}
