/**
 * Advisory lock files for the run journal and the audit log.
 *
 * A lock is a regular file holding `{"pid","host","since"}`. It is written under a temporary name
 * and hard-linked into place, so it never exists empty or half-written: `link` fails with EEXIST
 * when the lock is held. A waiter judges the lock it finds:
 *
 * - our host and a pid that no longer runs: stale, broken at once;
 * - empty or unreadable content (an older version killed between creating and filling it, or
 *   junk) older than `emptyGraceMs` (default 2 s): stale;
 * - a symbolic link (dangling or not): never one of ours, removed (the link, not its target);
 * - another host: its pid cannot be checked here, so it is held until the wait times out;
 * - a directory, FIFO, socket or device: an EnvironmentError at once (waiting cannot fix it;
 *   reading a FIFO would block). Only the first 4 KiB of a lock are read.
 *
 * Breaking removes the file judged and no newer one (same inode, checked just before). Waiting
 * always sleeps between tries and is bounded by `timeoutMs`; the error names the holder.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, linkSync, lstatSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { EnvironmentError, environmentError } from '../errors.js';
import { sleep as realSleep } from '../util/clock.js';
import { processRunning } from '../util/process.js';

export interface LockOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** An empty or unreadable lock older than this is stale (default 2 s). */
  emptyGraceMs?: number;
  /** Injectable for tests. */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface LockHolder {
  pid: number;
  host: string;
  since: string;
}

/** Take the lock at `lockPath`; resolves to its release function. */
export async function acquireFileLock(lockPath: string, options: LockOptions = {}): Promise<() => void> {
  return (await acquireHeldFileLock(lockPath, options)).release;
}

/** A lock taken: its release, and whether it is still this process's (not removed nor replaced). */
export interface HeldFileLock {
  release: () => void;
  held: () => boolean;
}

/** Take the lock at `lockPath`, able to tell later whether it is still held (a sync's lease). */
export async function acquireHeldFileLock(lockPath: string, options: LockOptions = {}): Promise<HeldFileLock> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? realSleep;
  const start = now();
  const me: LockHolder = { pid: process.pid, host: hostname(), since: new Date(start).toISOString() };
  for (let attempt = 0; ; attempt++) {
    const ino = tryCreate(lockPath, me);
    if (ino !== undefined) {
      const held = (): boolean => stillHeld(lockPath, ino, me);
      // A lock replaced by another process's (its inode number may be the same) is left to it.
      return { release: () => (held() ? removeIfSame(lockPath, ino) : undefined), held };
    }
    const judged = judge(lockPath, options.emptyGraceMs ?? 2000, now());
    if (judged.kind === 'stale') {
      removeIfSame(lockPath, judged.ino);
      continue;
    }
    if (now() - start >= timeoutMs) throw lockedError(lockPath, judged.kind === 'held' ? judged.holder : undefined);
    // Every path through the loop that does not break the lock sleeps: no spinning.
    await sleep(Math.min(100, 5 + attempt * 5));
  }
}

/** The lock file is the one this process made (same inode, and its content names this process and start: an inode can be reused). */
function stillHeld(lockPath: string, ino: number, me: LockHolder): boolean {
  try {
    if (lstatSync(lockPath).ino !== ino) return false;
    const holder = parseHolder(readHead(lockPath));
    return holder?.pid === me.pid && holder.host === me.host && holder.since === me.since;
  } catch {
    return false;
  }
}

/** Create the lock by linking a filled temporary file; its inode, or undefined if the lock exists. */
function tryCreate(lockPath: string, me: LockHolder): number | undefined {
  const tmp = `${lockPath}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, lockPath);
      return lstatSync(lockPath).ino;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
      throw error;
    }
  } catch (error) {
    throw environmentError(error, 'creating the lock', lockPath);
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // Never created.
    }
  }
}

type Judgement = { kind: 'stale'; ino: number } | { kind: 'held'; holder?: LockHolder } | { kind: 'gone' };

function judge(lockPath: string, emptyGraceMs: number, nowMs: number): Judgement {
  let info;
  try {
    info = lstatSync(lockPath);
  } catch {
    return { kind: 'gone' };
  }
  if (info.isSymbolicLink()) return { kind: 'stale', ino: info.ino };
  if (info.isDirectory()) {
    throw new EnvironmentError('path_not_file', `the lock ${lockPath} is a directory`, {
      path: lockPath,
      fix: `remove that directory (rmdir ${lockPath}), then run again`,
    });
  }
  if (!info.isFile()) {
    // Reading a FIFO would block for ever; the tool never makes one, nor a socket or a device.
    throw new EnvironmentError('path_not_file', `the lock ${lockPath} is not a regular file`, {
      path: lockPath,
      fix: `remove it (rm ${lockPath}), then run again`,
    });
  }
  let holder: LockHolder | undefined;
  try {
    holder = parseHolder(readHead(lockPath));
  } catch {
    // Unreadable (another user's lock in a shared state dir): held.
    return { kind: 'held' };
  }
  if (holder === undefined)
    return nowMs - info.mtimeMs > emptyGraceMs ? { kind: 'stale', ino: info.ino } : { kind: 'held' };
  if (holder.host !== hostname()) return { kind: 'held', holder };
  return processRunning(holder.pid) ? { kind: 'held', holder } : { kind: 'stale', ino: info.ino };
}

/**
 * The first bytes of the lock: a holder is a short line, and a lock swapped for something else
 * since it was judged is neither read whole nor waited on (non-blocking, no link followed).
 */
function readHead(lockPath: string): string {
  const fd = openSync(lockPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const buffer = Buffer.alloc(LOCK_READ_BYTES);
    return buffer.toString('utf8', 0, readSync(fd, buffer, 0, LOCK_READ_BYTES, 0));
  } finally {
    closeSync(fd);
  }
}

const LOCK_READ_BYTES = 4096;

/** The holder a lock names; a bare pid (older versions) counts as this host's. */
function parseHolder(text: string): LockHolder | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return { pid: Number(trimmed), host: hostname(), since: 'unknown' };
  try {
    const v = JSON.parse(trimmed) as Partial<LockHolder>;
    if (typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0 && typeof v.host === 'string') {
      return { pid: v.pid, host: v.host, since: typeof v.since === 'string' ? v.since : 'unknown' };
    }
  } catch {
    // Not JSON: treated like an empty lock.
  }
  return undefined;
}

function removeIfSame(lockPath: string, ino: number): void {
  try {
    if (lstatSync(lockPath).ino === ino) unlinkSync(lockPath);
  } catch {
    // Already removed (released, or broken by another waiter).
  }
}

function lockedError(lockPath: string, holder: LockHolder | undefined): EnvironmentError {
  const who =
    holder === undefined ? 'another process' : `pid ${holder.pid} on host ${holder.host} since ${holder.since}`;
  return new EnvironmentError('file_locked', `${lockPath} is held by ${who}`, {
    path: lockPath,
    fix: `wait for that run to finish; if no such process is running, delete ${lockPath}`,
  });
}
