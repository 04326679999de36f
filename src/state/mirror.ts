/**
 * A `StateStore` over a narrow backend (state/backend.ts), written once for every remote backend.
 * A target's session is a private temporary directory (0700) the backend's committed files are
 * written into (mirror-files.ts), with the write-ahead records of a sync that was killed (on this
 * machine or another) replayed over them, so `Snapshot.open` finds exactly the directory the
 * killed process had. Every write-ahead write the Snapshot makes is appended to the backend's
 * log under the fence the session read; `persist()` commits the changed files under it.
 */
import { lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AudienceKitError } from '../errors.js';
import { processRunning } from '../util/process.js';
import type { BackendLease, StateBackend } from './backend.js';
import {
  filesChanged,
  onCopy,
  readCommittedFiles,
  replayWriteAhead,
  writeCommittedFiles,
  type StoredFiles,
} from './mirror-files.js';
import type { SnapshotError } from './snapshot-format.js';
import {
  refuseUnfinishedMove,
  type AuditLog,
  type RunJournals,
  type SnapshotWriteAhead,
  type StateStore,
  type StateStoreKind,
  type TargetLockOptions,
  type TargetSession,
} from './store.js';
import type { SnapshotTarget } from './snapshot-format.js';
import type { Lease } from '../util/lease.js';

/** The private copies of snapshots are `<tmpdir>/audience-kit-state-<pid>-<random>`. */
const COPY_PREFIX = 'audience-kit-state-';

/**
 * The copies left by syncs that were killed (their process is gone): removed, since they hold
 * digests of users a later sync may remove. Only this user's directories are touched.
 */
function removeDeadCopies(): void {
  const root = tmpdir();
  for (const name of readdirSync(root)) {
    const pid = /^audience-kit-state-(\d+)-/.exec(name)?.[1];
    if (pid === undefined || processRunning(Number(pid))) continue;
    const path = join(root, name);
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory() === true && stat.uid === process.getuid?.()) rmSync(path, { recursive: true, force: true });
  }
}

export class MirrorStore implements StateStore {
  readonly kind: StateStoreKind;
  readonly audit: AuditLog;
  readonly journals: RunJournals;

  constructor(protected readonly backend: StateBackend) {
    this.kind = backend.kind;
    this.audit = backend.audit;
    this.journals = backend.journals;
  }

  describe(): string {
    return this.backend.describe();
  }

  async lockTarget(target: SnapshotTarget, options: TargetLockOptions = {}): Promise<TargetSession> {
    if (options.moving !== true) await refuseUnfinishedMove(this);
    return MirrorSession.open(await this.backend.lease(target, options));
  }

  targets(): Promise<SnapshotTarget[]> {
    return this.backend.targets();
  }

  moveMarker(): Promise<string | undefined> {
    return this.backend.moveMarker();
  }

  setMoveMarker(source: string | undefined): Promise<void> {
    return this.backend.setMoveMarker(source);
  }

  discardMoved(): Promise<void> {
    return this.backend.discardMoved();
  }

  close(): Promise<void> {
    return this.backend.close();
  }
}

class MirrorSession implements TargetSession {
  readonly writeAhead: SnapshotWriteAhead;
  readonly lease: Lease;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown;
  private released = false;
  /** Write-ahead writes queued and not settled yet. */
  private inFlight = 0;
  private committing = false;

  private constructor(
    readonly dir: string,
    private readonly held: BackendLease,
    /** The fence this session read: every write-ahead record and the commit are made under it. */
    private fence: string,
    /** The committed files as the backend holds them (what a commit compares with). */
    private stored: StoredFiles,
    private nextSeq: number,
    /** A committed file that fails its checks, or write-ahead records that could not all be replayed (a gap, another version). */
    private damaged: SnapshotError | undefined,
  ) {
    this.writeAhead = { wrote: (file, offset, bytes) => this.queue(file, offset, bytes) };
    this.lease = held.lease;
  }

  /** Copy the leased target's committed files into a private directory and replay its write-ahead records. */
  static async open(held: BackendLease): Promise<TargetSession> {
    let dir: string | undefined;
    try {
      dir = onCopy('creating a private copy of the snapshot in', tmpdir(), () => {
        removeDeadCopies();
        return mkdtempSync(join(tmpdir(), `${COPY_PREFIX}${process.pid}-`));
      });
      const into = dir;
      const read = await held.read(async (view) => {
        const stored = await readCommittedFiles(view, into);
        return { fence: view.fence, stored, replayed: await replayWriteAhead(view, into) };
      });
      const { fence, stored, replayed } = read;
      return new MirrorSession(into, held, fence, stored.files, replayed.last + 1, stored.damage ?? replayed.damage);
    } catch (error) {
      // Nothing was sent under this lease: it is given back.
      await held.release();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Until a recovery's files are committed. */
  get damage(): SnapshotError | undefined {
    return this.damaged;
  }

  private queue(file: string, offset: number, bytes: Buffer): void {
    // Its record would be stored under the fence the commit replaces, and lost with it.
    if (this.committing) throw misused('a write-ahead write was made while the session committed');
    const seq = this.nextSeq++;
    const data = Buffer.from(bytes);
    this.inFlight++;
    this.chain = this.chain.then(async () => {
      try {
        if (this.failure !== undefined) return;
        await this.held.append(this.fence, { seq, file, offset, data }).catch((error: unknown) => {
          this.failure = error;
        });
      } finally {
        this.inFlight--;
      }
    });
  }

  async durable(): Promise<void> {
    await this.chain;
    if (this.failure !== undefined) throw this.failure;
  }

  async persist(o: { recovered?: boolean } = {}): Promise<void> {
    if (this.committing) throw misused('persist() was called while the session committed');
    if (this.inFlight > 0) throw misused(`persist() was called with ${this.inFlight} write-ahead writes in flight`);
    // Files rebuilt from a damaged copy are stored only once a recovery made them whole again.
    if (this.damaged !== undefined && o.recovered !== true) throw this.damaged;
    this.committing = true;
    try {
      await this.commit();
      this.damaged = undefined;
    } finally {
      this.committing = false;
    }
  }

  /** Store the changed files under the fence, the lease proven first (as before every request). */
  private async commit(): Promise<void> {
    if (!filesChanged(this.dir, this.stored) && this.nextSeq === 1) return;
    await this.lease.verify();
    let stored: StoredFiles | undefined;
    // nextSeq > 1: write-ahead records were queued or replayed since the last commit.
    this.fence = await this.held.commit(this.fence, async (writer) => {
      stored = await writeCommittedFiles(writer, this.dir, this.stored, this.nextSeq > 1);
    });
    this.stored = stored ?? this.stored;
    this.nextSeq = 1;
    // A failed write's bytes are in the files it committed.
    this.failure = undefined;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    await this.chain;
    rmSync(this.dir, { recursive: true, force: true });
    await this.held.release();
  }
}

/** A session's caller broke its order (store.ts, TargetSession.persist). */
function misused(what: string): AudienceKitError {
  return new AudienceKitError('state_session_misused', `${what}: refused, nothing was stored`, {
    fix: 'this is a bug in the caller of the state store: await durable() before persist(), and write nothing until it resolves',
  });
}
