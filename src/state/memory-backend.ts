/**
 * A state backend in this process's memory (state/backend.ts): for tests, and the proof that a
 * backend is one file. Its state lives as long as the object: it is no store for real syncs.
 * A lease is exclusive among the sessions of one `MemoryBackend`; `loseLease` ends one as a
 * database's terminated session would. A commit builds the target's new files apart and swaps them
 * in at its end, so a commit cut off midway leaves the files as they were.
 */
import { HeldLease } from '../util/lease.js';
import { auditRunsOf, chainAfter, lastRecordedIn, parseAuditLine, verifyAuditBytes } from './audit.js';
import type { AuditRecord, AuditRun, AuditVerification, ChainedAuditRecord, RecordedSnapshot } from './audit.js';
import { destinationNotEmpty } from './audit-file.js';
import { fenced, type BackendLease, type CommitWriter, type StateBackend, type WriteAheadRecord } from './backend.js';
import type { CommittedView, StoredFileHead } from './backend.js';
import {
  bytesToLines,
  ChainedJournal,
  journalKeyId,
  JOURNAL_GENESIS,
  linesToBytes,
  parseJournalBytes,
  resumable,
  runInProgress,
  summarizeJournal,
  type JournalKey,
  type JournalStart,
  type JournalSummary,
  type KeptBatch,
  type OpenJournalOptions,
} from './journal.js';
import { snapshotName } from './snapshot.js';
import type { AuditLog, RunJournals, SnapshotTarget, TargetLockOptions, UploadJournal } from './store.js';
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
  readonly audit: MemoryAuditLog;
  readonly journals: MemoryJournals;
  readonly targetsByName = new Map<string, MemoryTarget>();
  private marker: string | undefined;

  constructor(private readonly name = 'memory') {
    this.audit = new MemoryAuditLog(`${name} (audit log)`);
    this.journals = new MemoryJournals(name);
  }

  describe(): string {
    return this.name;
  }

  lease(target: SnapshotTarget, o: TargetLockOptions): Promise<BackendLease> {
    const name = snapshotName(target);
    const t = this.targetsByName.get(name) ?? { target, fence: 0, files: new Map(), log: [], holder: undefined };
    this.targetsByName.set(name, t);
    if (t.holder !== undefined) return Promise.reject(syncInProgress(`another session of ${this.name} holds it`));
    return Promise.resolve(new MemoryLease(t, this.name, o.proofIntervalMs));
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

  discardMoved(): Promise<void> {
    this.targetsByName.clear();
    this.audit.stored.length = 0;
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
    this.t.log.push({ fence: this.t.fence, record: { ...record, data: Buffer.from(record.data) } });
    return Promise.resolve();
  }

  async commit(fence: string, work: (writer: CommitWriter) => Promise<void>): Promise<string> {
    if (String(this.t.fence) !== fence) throw fenced(this.where);
    const files = new Map([...this.t.files].map(([name, f]) => [name, { ...f, rows: new Map(f.rows) }]));
    await work(memoryWriter(files));
    if (String(this.t.fence) !== fence) throw fenced(this.where);
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
  };
}

class MemoryAuditLog implements AuditLog {
  readonly stored: string[] = [];

  constructor(private readonly where: string) {}

  describe(): string {
    return this.where;
  }

  append(record: AuditRecord): Promise<ChainedAuditRecord> {
    const chained = chainAfter(this.stored.at(-1), record, this.where);
    this.stored.push(JSON.stringify(chained));
    return Promise.resolve(chained);
  }

  async lastRecordedSnapshot(target: SnapshotTarget): Promise<RecordedSnapshot | undefined> {
    return lastRecordedIn(await this.runs(), target);
  }

  verify(options: { head?: string } = {}): Promise<AuditVerification> {
    const bytes = Buffer.from(this.stored.map((l) => `${l}\n`).join(''), 'utf8');
    return Promise.resolve(verifyAuditBytes(bytes, this.where, options));
  }

  runs(): Promise<AuditRun[]> {
    return Promise.resolve(auditRunsOf(this.stored, this.where));
  }

  lines(): Promise<string[]> {
    return Promise.resolve([...this.stored]);
  }

  importLines(lines: readonly string[]): Promise<void> {
    if (this.stored.length > 0) return Promise.reject(destinationNotEmpty(this.where));
    for (const line of lines) parseAuditLine(line);
    this.stored.push(...lines);
    return Promise.resolve();
  }
}

interface StoredJournal {
  lines: string[];
  kept: Map<number, { body: Buffer; lines: Buffer }>;
  locked: boolean;
}

class MemoryJournals implements RunJournals {
  readonly stored = new Map<string, StoredJournal>();

  constructor(private readonly where: string) {}

  find(key: JournalKey): Promise<JournalSummary | undefined> {
    const id = journalKeyId(key);
    const j = this.stored.get(id);
    return Promise.resolve(j === undefined || j.lines.length === 0 ? undefined : this.summary(id, j));
  }

  list(): Promise<JournalSummary[]> {
    const ids = [...this.stored.keys()].sort();
    return Promise.resolve(
      ids.flatMap((id) =>
        this.stored.get(id)?.lines.length ? [this.summary(id, this.stored.get(id) as StoredJournal)] : [],
      ),
    );
  }

  private summary(id: string, j: StoredJournal): JournalSummary {
    return summarizeJournal(id, `${this.where} (journal ${id})`, readJournal(j, this.where).lines);
  }

  open(key: JournalKey, options: OpenJournalOptions): Promise<UploadJournal> {
    return MemoryJournal.open(this.stored, this.where, key, options);
  }
}

function readJournal(j: StoredJournal, where: string): ReturnType<typeof parseJournalBytes> {
  return parseJournalBytes(Buffer.from(j.lines.map((l) => `${l}\n`).join(''), 'utf8'), where, false);
}

class MemoryJournal extends ChainedJournal {
  readonly location: string;

  private constructor(
    start: JournalStart,
    private readonly j: StoredJournal,
    where: string,
  ) {
    super(start);
    this.location = `${where} (journal ${start.key})`;
  }

  static async open(
    all: Map<string, StoredJournal>,
    where: string,
    key: JournalKey,
    options: OpenJournalOptions,
  ): Promise<MemoryJournal> {
    const id = journalKeyId(key);
    const j = all.get(id) ?? { lines: [], kept: new Map(), locked: false };
    all.set(id, j);
    if (j.locked) throw runInProgress(`it holds the journal's lock in ${where}`);
    const found = options.mode === 'resume' ? readJournal(j, where) : undefined;
    const resumed = found !== undefined && resumable(found.lines);
    if (!resumed) {
      j.lines = [];
      j.kept.clear();
    }
    const start = {
      key: id,
      resumed,
      lines: resumed ? found.lines : [],
      head: resumed ? found.head : JOURNAL_GENESIS,
      now: options.now ?? (() => new Date()),
    };
    j.locked = true;
    const journal = new MemoryJournal(start, j, where);
    await journal.begin(key, options.runId);
    return journal;
  }

  protected writeLine(text: string): Promise<void> {
    this.j.lines.push(text);
    return Promise.resolve();
  }

  protected keepBatch(index: number, batch: KeptBatch): Promise<void> {
    this.j.kept.set(index, { body: Buffer.from(batch.body), lines: linesToBytes(batch.lines) });
    return Promise.resolve();
  }

  protected loadBatch(index: number): Promise<KeptBatch | undefined> {
    const kept = this.j.kept.get(index);
    const lines = kept && bytesToLines(kept.lines);
    return Promise.resolve(kept === undefined || lines === undefined ? undefined : { body: kept.body, lines });
  }

  protected dropBatches(index?: number): Promise<void> {
    if (index === undefined) this.j.kept.clear();
    else this.j.kept.delete(index);
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.j.locked = false;
    return Promise.resolve();
  }
}
