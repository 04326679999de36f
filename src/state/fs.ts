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
  mkdirSync,
  openSync,
  writeSync,
} from 'node:fs';
import { EnvironmentError, environmentError } from '../errors.js';

/**
 * The fs calls that write state. Tests replace them to simulate a full disk or a failing device
 * (there is no small tmpfs to fill in the test environment); nothing else changes them.
 */
export const stateFs = {
  writeSync: (fd: number, buffer: Uint8Array, offset: number, length: number): number =>
    writeSync(fd, buffer, offset, length),
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
    throw environmentError(error, 'creating the directory', path);
  }
}

/**
 * Open a file for writing without following a symbolic link at its last component (O_NOFOLLOW):
 * a link planted where the tool writes (a preview, the journal, the audit log) is refused
 * instead of redirecting the write to another file. Files are created with `mode`.
 */
export function openNoFollow(path: string, flags: 'append' | 'truncate' | 'exclusive', mode = 0o600): number {
  const base = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW;
  const extra = flags === 'append' ? constants.O_APPEND : flags === 'truncate' ? constants.O_TRUNC : constants.O_EXCL;
  try {
    const fd = openSync(path, base | extra, mode);
    // A file that existed with a wider mode gets `mode` too: it is about to hold our data.
    if (flags === 'truncate') fchmodSync(fd, mode);
    return fd;
  } catch (error) {
    throw environmentError(error, 'opening', path);
  }
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
