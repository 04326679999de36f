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
  mkdirSync,
  openSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { EnvironmentError, environmentError } from '../errors.js';

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

/** Create a directory (and its parents) with mode 0700; EnvironmentError when that is impossible. */
export function ensureDir(path: string): void {
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    if (errno === 'EEXIST' || errno === 'ENOTDIR') {
      throw new EnvironmentError('path_not_directory', `${path} (or a parent of it) is not a directory`, {
        path,
        cause: error,
        fix: 'pass a stateDir that is a directory (or that does not exist yet)',
      });
    }
    // Said as what it is: a permission problem, never mistaken for another run holding the lock.
    if (errno === 'EACCES' || errno === 'EPERM' || errno === 'EROFS') {
      throw new EnvironmentError('state_not_writable', `state directory not writable: ${path} (${errno})`, {
        path,
        cause: error,
        fix: 'fix the permissions (or mount the disk read-write), or pass a writable stateDir',
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
