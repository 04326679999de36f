/**
 * Writing state safely: appends that leave a whole record or nothing, files created without
 * following symbolic links, and fs failures reported as EnvironmentError (exit 8) with the path.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  lstatSync,
  openSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { AudienceKitError, EnvironmentError, environmentError } from '../errors.js';
import { makeDirs } from '../util/make-dirs.js';

/**
 * The fs calls that write state. Tests replace them to simulate a full disk or a failing device
 * (there is no small tmpfs to fill in the test environment); nothing else changes them.
 */
export const stateFs = {
  writeSync: (fd: number, buffer: Uint8Array, offset: number, length: number, position?: number): number =>
    writeSync(fd, buffer, offset, length, position),
  fsyncSync: (fd: number): void => fsyncSync(fd),
  ftruncateSync: (fd: number, length: number): void => ftruncateSync(fd, length),
};

/** What each fs call was doing, for the message ("while writing /state/..."). */
const FS_ACTIONS: Record<string, string> = {
  open: 'opening',
  read: 'reading',
  write: 'writing',
  fsync: 'syncing',
  fdatasync: 'syncing',
  ftruncate: 'truncating',
  close: 'closing',
  fstat: 'reading',
  stat: 'reading',
  lstat: 'reading',
  scandir: 'reading',
  rename: 'renaming',
  unlink: 'removing',
  rm: 'removing',
  rmdir: 'removing',
  mkdir: 'creating the directory',
  copyfile: 'copying',
  chmod: 'changing the mode of',
  fchmod: 'changing the mode of',
};

type FsErrno = NodeJS.ErrnoException & { code: string; syscall: string };

function isFsErrno(error: unknown): error is FsErrno {
  const e = error as Partial<NodeJS.ErrnoException> | undefined;
  return error instanceof Error && typeof e?.code === 'string' && typeof e.syscall === 'string';
}

/**
 * A raw fs error that escaped a state write (errno and syscall: a snapshot write, an EFBIG, a
 * rename) as an EnvironmentError (exit 8) naming the path: the error's own, else `path` (a write
 * on a file descriptor names none). An `internal` AudienceKitError wrapping one (a report's
 * `asKitError`) is unwrapped; anything else is returned unchanged. Only fs calls are mapped: a
 * path-less errno of another syscall (a socket's) stays what it was.
 */
export function stateFailure<T>(error: T, path: string): T | EnvironmentError {
  const raw = error instanceof AudienceKitError && error.code === 'internal' ? error.cause : error;
  if (!isFsErrno(raw)) return error;
  const action = FS_ACTIONS[raw.syscall];
  if (action === undefined && raw.path === undefined) return error;
  const at = raw.path ?? path;
  const doing = action ?? `${raw.syscall} on`;
  return environmentError(raw, doing, at) as EnvironmentError;
}

/**
 * Append `bytes` to `fd` (opened O_APPEND, under the file's lock) as a whole record or not at
 * all: a failed or short write, or a failed fsync, truncates the file back to where it was, so
 * no torn record is left behind for readers (or for the next record's chain link).
 */
export function appendWhole(fd: number, bytes: Uint8Array, path: string): void {
  const start = fstatSync(fd).size;
  try {
    let written = 0;
    while (written < bytes.length) {
      const n = stateFs.writeSync(fd, bytes, written, bytes.length - written);
      if (n <= 0) throw Object.assign(new Error('write wrote nothing'), { code: 'EIO' });
      written += n;
    }
    stateFs.fsyncSync(fd);
    const size = fstatSync(fd).size;
    if (size !== start + bytes.length) {
      throw Object.assign(new Error(`file is ${size} bytes, expected ${start + bytes.length}`), { code: 'EIO' });
    }
  } catch (error) {
    try {
      stateFs.ftruncateSync(fd, start);
    } catch {
      // Truncating failed too: the reader drops a torn last line (journal) or reports it (audit).
    }
    throw environmentError(error, 'appending to', path);
  }
}

/**
 * Create a directory (and its parents) with mode 0700; EnvironmentError when that is impossible,
 * whose fix names `option`, the library option that gave the path (the CLI shows its flag).
 */
export function ensureDir(path: string, option: 'stateDir' | 'auditLog' = 'stateDir'): void {
  try {
    makeDirs(path, 0o700);
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    // The parent exists (makeDirs made it or found it), yet the file system says there is none.
    if (errno === 'ENOENT') {
      const at = (error as NodeJS.ErrnoException).path ?? path;
      throw new EnvironmentError(
        'state_not_writable',
        `cannot create the directory ${at}: its file system refuses (ENOENT)`,
        {
          path,
          cause: error,
          fix: `pass ${option === 'auditLog' ? 'an' : 'a'} ${option} on a disk where directories can be created (not /proc, /sys or a read-only mount)`,
        },
      );
    }
    if (errno === 'EEXIST' || errno === 'ENOTDIR') {
      throw new EnvironmentError('path_not_directory', `${path} (or a parent of it) is not a directory`, {
        path,
        cause: error,
        fix: `pass ${option === 'auditLog' ? 'an' : 'a'} ${option} ${option === 'auditLog' ? 'whose directory' : 'that'} is a directory (or does not exist yet)`,
      });
    }
    // Said as what it is: a permission problem, never mistaken for another run holding the lock.
    if (errno === 'EACCES' || errno === 'EPERM' || errno === 'EROFS') {
      throw new EnvironmentError('state_not_writable', `state directory not writable: ${path} (${errno})`, {
        path,
        cause: error,
        fix: `fix the permissions (or mount the disk read-write), or pass a writable ${option}`,
      });
    }
    throw environmentError(error, 'creating the directory', path);
  }
}

/**
 * Open a file for writing without following a symbolic link at its last component (O_NOFOLLOW):
 * a link planted where the tool writes (a preview, the journal, the audit log) is refused
 * instead of redirecting the write to another file. Files are created with `mode`.
 */
export function openNoFollow(path: string, flags: 'append' | 'truncate' | 'exclusive', mode = 0o600): number {
  // O_NONBLOCK: opening a FIFO planted there would otherwise wait for a reader for ever.
  const base = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  const extra = flags === 'append' ? constants.O_APPEND : flags === 'truncate' ? constants.O_TRUNC : constants.O_EXCL;
  let fd: number;
  try {
    fd = openSync(path, base | extra, mode);
  } catch (error) {
    // ENXIO: a FIFO without a reader.
    throw (error as NodeJS.ErrnoException).code === 'ENXIO' ? notAFile(path) : environmentError(error, 'opening', path);
  }
  const info = fstatSync(fd);
  if (info.isFIFO() || info.isSocket()) {
    closeSync(fd);
    throw notAFile(path);
  }
  // A file that existed with a wider mode gets `mode` too: it is about to hold our data.
  if (flags === 'truncate' && info.isFile()) fchmodSync(fd, mode);
  return fd;
}

/**
 * Check that `path` is a regular file before reading it whole: a FIFO would block the read for
 * ever, and a link (to /dev/zero, say) would be read without end. Undefined when it does not exist.
 */
export function statRegularFile(path: string): Stats | undefined {
  let info: Stats;
  try {
    info = lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw environmentError(error, 'reading', path);
  }
  if (info.isSymbolicLink()) {
    throw new EnvironmentError('path_is_symlink', `${path} is a symbolic link: refused`, {
      path,
      fix: 'audience-kit never makes links in its state directory: remove the link (it was planted there)',
    });
  }
  if (!info.isFile()) throw notAFile(path);
  return info;
}

function notAFile(path: string): EnvironmentError {
  return new EnvironmentError('path_not_file', `${path} is not a regular file`, {
    path,
    fix: 'remove it (audience-kit creates a regular file there), then run again',
  });
}

/** Write a whole file (created 0600 by default, never through a symbolic link). */
export function writeFileNoFollow(path: string, data: Uint8Array, mode = 0o600): void {
  const fd = openNoFollow(path, 'truncate', mode);
  try {
    let written = 0;
    while (written < data.length) written += stateFs.writeSync(fd, data, written, data.length - written);
  } catch (error) {
    throw environmentError(error, 'writing', path);
  } finally {
    closeSync(fd);
  }
}
