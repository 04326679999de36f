/**
 * The directory store: a state directory (`--state-dir`), the embedded default. Snapshots in
 * `snapshots/<kind>-<hash>/` with the target's lock file beside each (`<dir>.lock`), the audit
 * log in `audit.jsonl`, run journals in `runs/<key>/`: the files as they always were.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError, EnvironmentError } from '../errors.js';
import { defaultAuditLogPath } from './audit.js';
import { FileAuditLog } from './audit-file.js';
import { ensureDir, writeFileNoFollow } from './fs.js';
import { findJournal, listJournals, RunJournal, type JournalKey, type OpenJournalOptions } from './journal.js';
import { acquireHeldFileLock } from './lock.js';
import { HeldLease } from '../util/lease.js';
import { fsyncPath, snapshotDir, snapshotName } from './snapshot.js';
import {
  leaseLost,
  refuseUnfinishedMove,
  syncInProgress,
  type RunJournals,
  type StateStore,
  type TargetLockOptions,
  type TargetSession,
} from './store.js';
import type { SnapshotTarget } from './snapshot-format.js';
import type { UploadJournal } from './journal.js';

/** The marker of an unfinished `state move` into the directory (StateStore.moveMarker). */
const MOVE_MARKER = 'move.json';

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
      list: async () => listJournals(stateDir),
    };
  }

  describe(): string {
    return this.stateDir;
  }

  /** The lock file `snapshots/<target>.lock` (state/lock.ts). */
  async lockTarget(target: SnapshotTarget, o: TargetLockOptions = {}): Promise<TargetSession> {
    if (o.moving !== true) await refuseUnfinishedMove(this);
    const dir = snapshotDir(this.stateDir, target);
    ensureDir(dirname(dir));
    const lockPath = `${dir}.lock`;
    const lock = await acquireHeldFileLock(lockPath, {
      timeoutMs: o.waitMs ?? 0,
      ...(o.sleep === undefined ? {} : { sleep: o.sleep }),
      ...(o.now === undefined ? {} : { now: o.now }),
    }).catch((error: unknown) => {
      if (!(error instanceof EnvironmentError) || error.code !== 'file_locked') throw error;
      throw syncInProgress(error.message, error);
    });
    // Only a lock whose process is gone is ever taken over here (state/lock.ts): nothing of it is in flight.
    const lease = new HeldLease({
      prove: () => (lock.held() ? Promise.resolve() : Promise.reject(new Error('lock file removed or replaced'))),
      lost: () => leaseLost(lockPath, 'its lock file was removed or replaced by another process'),
      ...(o.proofIntervalMs === undefined ? {} : { proofIntervalMs: o.proofIntervalMs }),
    });
    lease.start();
    let released = false;
    return {
      dir,
      lease,
      writeAhead: undefined,
      damage: undefined,
      durable: () => Promise.resolve(),
      persist: () => Promise.resolve(),
      release: () => {
        lease.stop();
        if (!released) lock.release();
        released = true;
        return Promise.resolve();
      },
    };
  }

  /** The snapshot directories holding files, named by the audit log's sync records (their names are hashes). */
  async targets(): Promise<SnapshotTarget[]> {
    const root = join(this.stateDir, 'snapshots');
    if (!existsSync(root)) return [];
    const held = readdirSync(root, { withFileTypes: true })
      .filter((e) => e.isDirectory() && readdirSync(join(root, e.name)).length > 0)
      .map((e) => e.name);
    if (held.length === 0) return [];
    const named = new Map<string, SnapshotTarget>();
    for (const run of await this.audit.runs().catch(() => [])) {
      const s = run.start;
      if (s?.operation !== 'sync') continue;
      const target: SnapshotTarget = { accountId: s.account_id, kind: s.target.kind, id: s.target.id };
      named.set(snapshotName(target), target);
    }
    return held.map((name) => {
      const target = named.get(name);
      if (target !== undefined) return target;
      throw new ConfigError(
        'state_target_unknown',
        `no sync record of ${this.audit.describe()} names the snapshot ${join(root, name)}: its account and target cannot be told from its hashed name`,
        {
          fix: 'move the state with the audit log its syncs wrote (sync --audit-log FILE: copy that file to STATE_DIR/audit.jsonl first)',
        },
      );
    });
  }

  /** `move.json`: `{ format, from, started_at }` (an unreadable one is a marker all the same). */
  moveMarker(): Promise<string | undefined> {
    const path = join(this.stateDir, MOVE_MARKER);
    if (!existsSync(path)) return Promise.resolve(undefined);
    let from: unknown;
    try {
      from = (JSON.parse(readFileSync(path, 'utf8')) as { from?: unknown }).from;
    } catch {
      from = undefined;
    }
    return Promise.resolve(typeof from === 'string' ? from : 'an unknown source');
  }

  setMoveMarker(source: string | undefined): Promise<void> {
    const path = join(this.stateDir, MOVE_MARKER);
    if (source === undefined) rmSync(path, { force: true });
    else {
      ensureDir(this.stateDir);
      const marker = { format: 1, from: source, started_at: new Date().toISOString() };
      writeFileNoFollow(path, Buffer.from(`${JSON.stringify(marker)}\n`));
      fsyncPath(path);
    }
    fsyncPath(this.stateDir);
    return Promise.resolve();
  }

  discardMoved(): Promise<void> {
    rmSync(join(this.stateDir, 'snapshots'), { recursive: true, force: true });
    rmSync(this.audit.describe(), { force: true });
    fsyncPath(this.stateDir);
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
