/**
 * The directory store: a state directory (`--state-dir`), the embedded default. Snapshots in
 * `snapshots/<kind>-<hash>/` with the target's lock file beside each (`<dir>.lock`), the audit
 * log in `audit.jsonl`, run journals in `runs/<key>/`: the files as they always were.
 */
import { dirname } from 'node:path';
import { EnvironmentError } from '../errors.js';
import { defaultAuditLogPath } from './audit.js';
import { FileAuditLog } from './audit-file.js';
import { ensureDir } from './fs.js';
import { findJournal, RunJournal, type JournalKey, type OpenJournalOptions } from './journal.js';
import { acquireFileLock } from './lock.js';
import { snapshotDir } from './snapshot.js';
import {
  syncInProgress,
  type RunJournals,
  type SnapshotTarget,
  type StateStore,
  type TargetLockOptions,
  type TargetSession,
  type UploadJournal,
} from './store.js';

export class DirectoryStore implements StateStore {
  readonly kind = 'directory';
  readonly audit: FileAuditLog;
  readonly journals: RunJournals;

  /** `stateDir` must be absolute (the CLI resolves it against the working directory). */
  constructor(readonly stateDir: string) {
    this.audit = new FileAuditLog(defaultAuditLogPath(stateDir));
    this.journals = {
      find: async (key: JournalKey) => findJournal(stateDir, key),
      open: (key: JournalKey, o: OpenJournalOptions): Promise<UploadJournal> => RunJournal.open(stateDir, key, o),
    };
  }

  describe(): string {
    return this.stateDir;
  }

  /** The lock file `snapshots/<target>.lock` (state/lock.ts). */
  async lockTarget(target: SnapshotTarget, o: TargetLockOptions = {}): Promise<TargetSession> {
    const dir = snapshotDir(this.stateDir, target);
    ensureDir(dirname(dir));
    const release = await acquireFileLock(`${dir}.lock`, {
      timeoutMs: o.waitMs ?? 0,
      ...(o.sleep === undefined ? {} : { sleep: o.sleep }),
      ...(o.now === undefined ? {} : { now: o.now }),
    }).catch((error: unknown) => {
      if (!(error instanceof EnvironmentError) || error.code !== 'file_locked') throw error;
      throw syncInProgress(error.message, error);
    });
    let released = false;
    return {
      dir,
      writeAhead: undefined,
      durable: () => Promise.resolve(),
      persist: () => Promise.resolve(),
      release: () => {
        if (!released) release();
        released = true;
        return Promise.resolve();
      },
    };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
