/**
 * A state backend in this process's memory (state/backend.ts): for tests, and the proof that a
 * backend is one file. Its state lives as long as the object: it is no store for real syncs.
 * A lease is exclusive among the sessions of one `MemoryBackend`; `loseLease` ends one as a
 * database's terminated session would. A commit builds the target's new files apart and swaps them
 * in at its end, so a commit cut off midway leaves the files as they were.
 */
import { sleep } from '../util/clock.js';
import { HeldLease } from '../util/lease.js';
import { fenced, type BackendLease, type CommitWriter, type StateBackend, type WriteAheadRecord } from './backend.js';
import type { CommittedView, StoredFileHead } from './backend.js';
import { runInProgress } from './journal.js';
import { LineAuditLog, LineJournals, type AuditLines, type JournalLines, type JournalRun } from './line-logs.js';
import { snapshotName } from './snapshot.js';
import type { AuditLog, RunJournals, TargetLockOptions } from './store.js';
import type { SnapshotTarget } from './snapshot-format.js';
import { leaseLost, syncInProgress } from './store.js';

interface MemoryFile {
  head: StoredFileHead;
  /** The file's SHA-256 followed by its sealed block digests, as the commit stored them. */
  blocks: Buffer | null;
  rows: Map<number, Buffer>;
}

interface MemoryTarget {
  target: SnapshotTarget;
  fence: number;
  files: Map<string, MemoryFile>;
  log: { fence: number; record: WriteAheadRecord }[];
  holder: symbol | undefined;
}

export class MemoryBackend implements StateBackend {
  readonly kind = 'memory';
  readonly audit: AuditLog;
  readonly journals: RunJournals;
  /** The audit log's lines and the journals as stored (tests read their bytes). */
  readonly auditLines: MemoryAuditLines;
  readonly journalLines: MemoryJournalLines;
  private readonly targetsByName = new Map<string, MemoryTarget>();
  private marker: string | undefined;

  constructor(private readonly name = 'memory') {
    this.auditLines = new MemoryAuditLines(`${name} (audit log)`);
    this.journalLines = new MemoryJournalLines(name);
    this.audit = new LineAuditLog(this.auditLines);
    this.journals = new LineJournals(this.journalLines);
  }

  describe(): string {
    return this.name;
  }

  /** Taken at once when free; else tried again every 50 ms until `waitMs` has passed. */
  async lease(target: SnapshotTarget, o: TargetLockOptions): Promise<BackendLease> {
    const name = snapshotName(target);
    const t = this.targetsByName.get(name) ?? { target, fence: 0, files: new Map(), log: [], holder: undefined };
    this.targetsByName.set(name, t);
    const now = o.now ?? Date.now;
    const began = now();
    while (t.holder !== undefined) {
      if (now() - began >= (o.waitMs ?? 0)) throw syncInProgress(`another session of ${this.name} holds it`);
      await (o.sleep ?? sleep)(50);
    }
    return new MemoryLease(t, this.name, o.proofIntervalMs);
  }

  /** End the lease held on `target`, as a database ends a terminated session's lock: its holder finds it lost. */
  loseLease(target: SnapshotTarget): void {
    const t = this.targetsByName.get(snapshotName(target));
    if (t !== undefined) t.holder = undefined;
  }

  targets(): Promise<SnapshotTarget[]> {
    return Promise.resolve(
      [...this.targetsByName.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .filter(([, t]) => t.files.size > 0 || t.log.length > 0)
        .map(([, t]) => t.target),
    );
  }

  moveMarker(): Promise<string | undefined> {
    return Promise.resolve(this.marker);
  }

  setMoveMarker(source: string | undefined): Promise<void> {
    this.marker = source;
    return Promise.resolve();
  }

  /** Empties every target and keeps its lease: a held target stays held, as PostgreSQL's lock does. */
  discardMoved(): Promise<void> {
    for (const t of this.targetsByName.values()) {
      t.files = new Map();
      t.log = [];
    }
    this.auditLines.stored.length = 0;
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

class MemoryLease implements BackendLease {
  readonly lease: HeldLease;
  private readonly token = Symbol('lease');

  constructor(
    private readonly t: MemoryTarget,
    private readonly where: string,
    proofIntervalMs: number | undefined,
  ) {
    t.holder = this.token;
    this.lease = new HeldLease({
      prove: () => (this.held() ? Promise.resolve() : Promise.reject(new Error('lease ended'))),
      lost: () => leaseLost(where, 'its lease was ended'),
      ...(proofIntervalMs === undefined ? {} : { proofIntervalMs }),
    });
    this.lease.start();
  }

  private held(): boolean {
    return this.t.holder === this.token;
  }

  read<T>(work: (view: CommittedView) => Promise<T>): Promise<T> {
    const { t } = this;
    const fence = t.fence;
    const log = t.log.filter((l) => l.fence === fence).map((l) => l.record);
    return work({
      fence: String(fence),
      files: () => Promise.resolve([...t.files.values()].map((f) => ({ ...f.head }))),
      rows: (name, into) => rowsOf(t.files.get(name), into),
      staleRecords: () => Promise.resolve(t.log.length - log.length),
      records: (after, limit) => Promise.resolve(log.filter((r) => r.seq > after).slice(0, limit)),
    });
  }

  append(fence: string, record: WriteAheadRecord): Promise<void> {
    if (String(this.t.fence) !== fence) return Promise.reject(fenced(this.where));
    // PostgreSQL's primary key (target, seq) refuses a record written twice.
    if (this.t.log.some((r) => r.record.seq === record.seq))
      return Promise.reject(new Error(`${this.where}: write-ahead record ${record.seq} already stored`));
    this.t.log.push({ fence: this.t.fence, record: { ...record, data: Buffer.from(record.data) } });
    return Promise.resolve();
  }

  async commit(fence: string, work: (writer: CommitWriter) => Promise<void>): Promise<string> {
    if (String(this.t.fence) !== fence) throw fenced(this.where);
    const files = new Map([...this.t.files].map(([name, f]) => [name, { ...f, rows: new Map(f.rows) }]));
    await work(memoryWriter(files));
    if (String(this.t.fence) !== fence) throw fenced(this.where);
    // A lease lost during the commit: PostgreSQL's ends with the session, and the commit with it.
    if (!this.held()) throw leaseLost(this.where, 'its lease was ended');
    this.t.files = files;
    this.t.log = [];
    this.t.fence++;
    return String(this.t.fence);
  }

  release(): Promise<void> {
    this.lease.stop();
    if (this.held()) this.t.holder = undefined;
    return Promise.resolve();
  }
}

async function* rowsOf(file: MemoryFile | undefined, into: Buffer): AsyncGenerator<{ seq: number; bytes: Buffer }> {
  for (const seq of [...(file?.rows.keys() ?? [])].sort((a, b) => a - b)) {
    const row = file?.rows.get(seq) as Buffer;
    yield { seq, bytes: into.subarray(0, row.copy(into)) };
  }
}

function memoryWriter(files: Map<string, MemoryFile>): CommitWriter {
  return {
    blocks: (name, size, sealedBytes) => {
      const f = files.get(name);
      const ok = f?.head.size === size && f.blocks?.length === sealedBytes;
      return Promise.resolve(ok ? (f.blocks ?? undefined) : undefined);
    },
    remove: (name) => Promise.resolve(void files.delete(name)),
    put: ({ blocks, ...head }, whole) => {
      const rows = whole ? new Map<number, Buffer>() : (files.get(head.name)?.rows ?? new Map<number, Buffer>());
      files.set(head.name, { head, blocks: blocks && Buffer.concat([head.sha256, blocks]), rows });
      return Promise.resolve();
    },
    row: (name, seq, bytes) => Promise.resolve(void files.get(name)?.rows.set(seq, Buffer.from(bytes))),
    storedRow: (name, seq, into) => {
      const row = files.get(name)?.rows.get(seq);
      return Promise.resolve(row && into.subarray(0, row.copy(into)));
    },
    replaceRow: (name, seq, bytes) => {
      const rows = files.get(name)?.rows;
      if (rows?.has(seq) === true) rows.set(seq, Buffer.from(bytes));
      return Promise.resolve();
    },
  };
}

/** The audit log's lines, in order. */
class MemoryAuditLines implements AuditLines {
  readonly stored: string[] = [];

  constructor(readonly where: string) {}

  append(next: (last: string | undefined) => string): Promise<void> {
    this.stored.push(next(this.stored.at(-1)));
    return Promise.resolve();
  }

  lines(): Promise<string[]> {
    return Promise.resolve([...this.stored]);
  }

  importInto(lines: readonly string[]): Promise<boolean> {
    if (this.stored.length > 0) return Promise.resolve(false);
    this.stored.push(...lines);
    return Promise.resolve(true);
  }
}

interface StoredJournal {
  lines: string[];
  kept: Map<number, { body: Buffer; lines: Buffer }>;
  locked: boolean;
}

/** The run journals: lines and kept batches by key, a journal locked while a run holds it. */
class MemoryJournalLines implements JournalLines {
  readonly stored = new Map<string, StoredJournal>();

  constructor(readonly where: string) {}

  keys(): Promise<string[]> {
    return Promise.resolve([...this.stored.keys()]);
  }

  read(key: string): Promise<string[]> {
    return Promise.resolve([...(this.stored.get(key)?.lines ?? [])]);
  }

  lock(key: string): Promise<JournalRun> {
    const j = this.stored.get(key) ?? { lines: [], kept: new Map(), locked: false };
    this.stored.set(key, j);
    if (j.locked) return Promise.reject(runInProgress(`it holds the journal's lock in ${this.where}`));
    j.locked = true;
    const done = Promise.resolve();
    return Promise.resolve({
      read: () => Promise.resolve([...j.lines]),
      forget: () => {
        j.lines = [];
        j.kept.clear();
        return done;
      },
      append: (seq, line) => {
        j.lines[seq] = line;
        return done;
      },
      keep: (index, body, lines) => {
        j.kept.set(index, { body: Buffer.from(body), lines });
        return done;
      },
      load: (index) => Promise.resolve(j.kept.get(index)),
      drop: (index) => {
        if (index === undefined) j.kept.clear();
        else j.kept.delete(index);
        return done;
      },
      close: () => {
        j.locked = false;
        return done;
      },
    });
  }
}
