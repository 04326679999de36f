/**
 * The audit log and the run journals over a backend's line logs (state/backend.ts): the backend
 * keeps each record's exact line in order (and a journal's kept batches), under its own locks;
 * the chains, the checks, the folding and the resume are written here once (over audit.ts and
 * journal.ts, which the directory's files use too).
 */
import { auditRunsOf, chainAfter, lastRecordedIn, verifyAuditBytes } from './audit.js';
import type { AuditRecord, AuditRun, AuditVerification, ChainedAuditRecord, RecordedSnapshot } from './audit.js';
import { destinationNotEmpty } from './audit-file.js';
import {
  bytesToLines,
  ChainedJournal,
  journalKeyId,
  JOURNAL_GENESIS,
  linesToBytes,
  parseJournalBytes,
  resumable,
  summarizeJournal,
  type JournalKey,
  type JournalStart,
  type JournalSummary,
  type KeptBatch,
  type OpenJournalOptions,
} from './journal.js';
import type { AuditLog, RunJournals } from './store.js';
import type { SnapshotTarget } from './snapshot-format.js';
import type { UploadJournal } from './journal.js';

/** A backend's audit log: the records' exact lines (each the JSON text the chain hashes), in order. */
export interface AuditLines {
  /** For messages. */
  readonly where: string;
  /** Append the line `next` makes from the last one (undefined: the log is empty), serialized against every other writer. */
  append(next: (last: string | undefined) => string): Promise<void>;
  lines(): Promise<string[]>;
  /** The lines of the target's last sync run, when the backend can select them itself (a query); else every line is read. */
  lastSyncLines?(target: SnapshotTarget): Promise<string[]>;
  /** Write `lines` into the log, atomically, if it is empty; false (nothing written) when it is not. */
  importInto(lines: readonly string[]): Promise<boolean>;
}

export class LineAuditLog implements AuditLog {
  constructor(private readonly log: AuditLines) {}

  describe(): string {
    return this.log.where;
  }

  async append(record: AuditRecord): Promise<ChainedAuditRecord> {
    let chained: ChainedAuditRecord | undefined;
    await this.log.append((last) => {
      chained = chainAfter(last, record, this.log.where);
      return JSON.stringify(chained);
    });
    return chained as ChainedAuditRecord;
  }

  async lastRecordedSnapshot(target: SnapshotTarget): Promise<RecordedSnapshot | undefined> {
    const lines = await (this.log.lastSyncLines?.(target) ?? this.log.lines());
    return lastRecordedIn(auditRunsOf(lines, this.log.where), target);
  }

  /** The whole log in memory, as `verifyAuditLog` reads the file. */
  async verify(options: { head?: string } = {}): Promise<AuditVerification> {
    const lines = await this.log.lines();
    return verifyAuditBytes(linesBuffer(lines), this.log.where, options);
  }

  async runs(): Promise<AuditRun[]> {
    return auditRunsOf(await this.log.lines(), this.log.where);
  }

  lines(): Promise<string[]> {
    return this.log.lines();
  }

  async importLines(lines: readonly string[]): Promise<void> {
    if (!(await this.log.importInto(lines))) throw destinationNotEmpty(this.log.where);
  }
}

/** A backend's run journals: each journal's exact lines by key, and its kept batches. */
export interface JournalLines {
  /** For messages (a journal is `<where> (journal <key>)`). */
  readonly where: string;
  /** The keys of every journal held. */
  keys(): Promise<string[]>;
  /** A journal's lines, in order (none: no such journal). */
  read(key: string): Promise<string[]>;
  /** Take the journal's lock for one run (refused with `run_in_progress` while another holds it). */
  lock(key: string): Promise<JournalRun>;
}

/** A journal locked for one run: what it stores goes through it, durably before each promise resolves. */
export interface JournalRun {
  read(): Promise<string[]>;
  /** Remove its lines and kept batches (a new journal replaces them). */
  forget(): Promise<void>;
  /** Store line number `seq` (0 for the first). */
  append(seq: number, line: string): Promise<void>;
  /** Keep a failed batch's body and its line numbers (big-endian uint32s), replacing any under `index`. */
  keep(index: number, body: Buffer, lines: Buffer): Promise<void>;
  load(index: number): Promise<{ body: Buffer; lines: Buffer } | undefined>;
  /** Remove one kept batch, or all of them. */
  drop(index?: number): Promise<void>;
  /** Release the lock. Idempotent. */
  close(): Promise<void>;
}

const journalWhere = (where: string, key: string): string => `${where} (journal ${key})`;

/** A journal's lines as stored, checked like the file's (a line cut short is refused: a backend stores whole lines). */
function parse(lines: string[], where: string): ReturnType<typeof parseJournalBytes> {
  return parseJournalBytes(linesBuffer(lines), where, false);
}

export class LineJournals implements RunJournals {
  constructor(private readonly store: JournalLines) {}

  async find(key: JournalKey): Promise<JournalSummary | undefined> {
    const id = journalKeyId(key);
    return this.summary(id, await this.store.read(id));
  }

  async list(): Promise<JournalSummary[]> {
    const found: JournalSummary[] = [];
    for (const id of (await this.store.keys()).sort()) {
      const summary = this.summary(id, await this.store.read(id));
      if (summary !== undefined) found.push(summary);
    }
    return found;
  }

  private summary(id: string, lines: string[]): JournalSummary | undefined {
    if (lines.length === 0) return undefined;
    const where = journalWhere(this.store.where, id);
    return summarizeJournal(id, where, parse(lines, where).lines);
  }

  open(key: JournalKey, options: OpenJournalOptions): Promise<UploadJournal> {
    return LineJournal.open(this.store, key, options);
  }
}

class LineJournal extends ChainedJournal {
  readonly location: string;

  private constructor(
    start: JournalStart,
    private readonly run: JournalRun,
    /** The next line's number. */
    private seq: number,
    where: string,
  ) {
    super(start);
    this.location = journalWhere(where, start.key);
  }

  /** Lock, read back a journal to resume (or forget it), and write the run's first lines. */
  static async open(store: JournalLines, key: JournalKey, options: OpenJournalOptions): Promise<LineJournal> {
    const id = journalKeyId(key);
    const run = await store.lock(id);
    try {
      const found = options.mode === 'resume' ? await run.read() : [];
      const parsed = parse(found, journalWhere(store.where, id));
      const resumed = options.mode === 'resume' && resumable(parsed.lines);
      if (!resumed) await run.forget();
      const start: JournalStart = {
        key: id,
        resumed,
        lines: resumed ? parsed.lines : [],
        head: resumed ? parsed.head : JOURNAL_GENESIS,
        now: options.now ?? (() => new Date()),
      };
      const journal = new LineJournal(start, run, resumed ? found.length : 0, store.where);
      await journal.begin(key, options.runId);
      return journal;
    } catch (error) {
      await run.close();
      throw error;
    }
  }

  protected async writeLine(text: string): Promise<void> {
    await this.run.append(this.seq, text);
    this.seq++;
  }

  protected keepBatch(index: number, batch: KeptBatch): Promise<void> {
    return this.run.keep(index, batch.body, linesToBytes(batch.lines));
  }

  protected async loadBatch(index: number): Promise<KeptBatch | undefined> {
    const kept = await this.run.load(index);
    const lines = kept && bytesToLines(kept.lines);
    return kept === undefined || lines === undefined ? undefined : { body: kept.body, lines };
  }

  protected dropBatches(index?: number): Promise<void> {
    return this.run.drop(index);
  }

  close(): Promise<void> {
    return this.run.close();
  }
}

/** Stored lines as the bytes of a log file: each line with its newline. */
function linesBuffer(lines: readonly string[]): Buffer {
  return Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');
}
