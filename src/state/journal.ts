/**
 * The run journal: what an upload has had confirmed, so a killed or interrupted run resumes
 * without losing or re-sending a confirmed batch.
 *
 * Batches are deterministic given the input (its SHA-256) and the options that shape them, so
 * the journal stores no users: a resumed run recomputes the same batches and skips those
 * confirmed (by index, after checking the content hash). One journal per (input, account,
 * target, options): `<stateDir>/runs/<key>/journal.jsonl`, appended one line per event with
 * fsync, so SIGKILL at any moment loses nothing that was confirmed; a torn last line is
 * dropped when the journal is reopened.
 *
 * Batches that still fail after every retry are kept in `failed/` as their exact request
 * body: hashed identifiers plus `partner_user_id` as sent (customer data, never printed).
 * The state dir is created with mode 0700 and its files 0600; the failed bodies are deleted
 * when the run completes.
 */
import { closeSync, existsSync, ftruncateSync, openSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { acquireFileLock } from './lock.js';
import { ConfigError, EnvironmentError, environmentError, StateError } from '../errors.js';
import { appendWhole, ensureDir, openNoFollow, stateFs, statRegularFile, writeFileNoFollow } from './fs.js';
import type { BatchGroup } from '../platform/batch.js';
import type { TargetKind } from '../platform/targets.js';
import { VERSION } from '../version.js';
import { sha256Hex } from '../util/sha256.js';

export const DEFAULT_STATE_DIR = '.audience-kit';

/** SHA-256 (hex) of a request body: the identity of a batch in the journal. */
export function batchDigest(body: Uint8Array): string {
  return sha256Hex(body);
}

/** What identifies a run: same key, same batches. */
export interface JournalKey {
  input: { name: string; size: number; sha256: string };
  accountId: string;
  target: { kind: TargetKind; id: string };
  /** Every option that changes the batches (mapping, normalization, group, limits). Plain JSON. */
  options: Record<string, unknown>;
}

/** Stable JSON (sorted keys) so the same options always give the same key. */
function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function journalKeyId(key: JournalKey): string {
  const { input, accountId, target, options } = key;
  return sha256Hex(stableStringify({ sha256: input.sha256, size: input.size, accountId, target, options })).slice(
    0,
    32,
  );
}

export interface ConfirmedBatch {
  index: number;
  sha256: string;
  users: number;
}

export interface FailedBatch {
  index: number;
  sha256: string;
  users: number;
  operationUsers: number[];
  group: BatchGroup;
  reason: string;
}

export type JournalLine =
  | {
      type: 'header';
      v: typeof JOURNAL_VERSION;
      key: string;
      created_at: string;
      tool_version: string;
      input: JournalKey['input'];
      account_id: string;
      target: JournalKey['target'];
      options: Record<string, unknown>;
    }
  | { type: 'run'; run_id: string; at: string; resumed: boolean }
  | { type: 'confirmed'; index: number; sha256: string; users: number; at: string }
  | {
      type: 'failed';
      index: number;
      sha256: string;
      users: number;
      operation_users: number[];
      group: BatchGroup;
      reason: string;
      at: string;
    }
  | { type: 'input_end'; batches: number; at: string }
  | { type: 'complete'; at: string };

/** What a journal on disk says, without opening it for writing. */
export interface JournalSummary {
  key: string;
  path: string;
  createdAt: string;
  complete: boolean;
  confirmed: number;
  confirmedUsers: number;
  failed: number;
  /** Known once a run has read the whole input. */
  totalBatches: number | undefined;
  runIds: string[];
}

/** The journal cannot be used as it is, or not for this run (a state error: the fix is a restart). */
export class JournalError extends StateError {}

function journalDir(stateDir: string, key: string): string {
  return join(stateDir, 'runs', key);
}

/** Journal format: 2 chains every line to the previous one (`prev`). */
const JOURNAL_VERSION = 2;
/** `prev` of the header line. */
export const JOURNAL_GENESIS = sha256Hex('audience-kit run journal v2');

const RESTART_FIX =
  "start over with unfinished: 'restart' (confirmed users are sent again, which the platform treats as a no-op for Update)";

/**
 * Parse journal lines and check their chain: each line's `prev` is the SHA-256 of the line
 * before (the header's is JOURNAL_GENESIS), like the audit log, so an edited, inserted or
 * removed line (a forged `confirmed` that would make a resume skip users) is refused. With
 * `tornTail` (a file), a last line cut off by a kill (no newline, or not JSON) is ignored; a
 * store that writes whole lines (a database) refuses it. `head` is the hash the next line links to.
 */
export function parseJournalBytes(
  data: Buffer,
  where: string,
  tornTail: boolean,
): { lines: JournalLine[]; validBytes: number; head: string } {
  const lines: JournalLine[] = [];
  let start = 0;
  let validBytes = 0;
  let head = JOURNAL_GENESIS;
  while (start < data.length) {
    const end = data.indexOf(0x0a, start);
    if (end < 0) break;
    const bytes = data.subarray(start, end);
    let line: JournalLine & { prev?: unknown };
    try {
      line = JSON.parse(bytes.toString('utf8')) as JournalLine & { prev?: unknown };
    } catch {
      if (tornTail && end + 1 >= data.length) break;
      throw new JournalError('journal_corrupt', `the run journal ${where} has an unreadable line in the middle`, {
        fix: RESTART_FIX,
      });
    }
    if (lines.length === 0 && line.type === 'header') checkJournalFormat(where, line);
    if (line.prev !== head || (lines.length === 0) !== (line.type === 'header')) {
      throw new JournalError(
        'journal_tampered',
        `the run journal ${where} was altered: line ${lines.length + 1} does not link to the line before it (edited, inserted or removed lines)`,
        { fix: `${RESTART_FIX}; and find out who wrote to the state directory` },
      );
    }
    lines.push(line);
    head = sha256Hex(bytes);
    start = end + 1;
    validBytes = start;
  }
  if (!tornTail && start < data.length)
    throw new JournalError('journal_corrupt', `the run journal ${where} has a line without its end`, {
      fix: RESTART_FIX,
    });
  return { lines, validBytes, head };
}

function parseJournal(path: string): { lines: JournalLine[]; validBytes: number; head: string } {
  statRegularFile(path);
  return parseJournalBytes(readFileSync(path), path, true);
}

/** A journal in another format is refused: an older one cannot be resumed, a newer one is never misread. */
function checkJournalFormat(path: string, header: Extract<JournalLine, { type: 'header' }>): void {
  const v = header.v as unknown;
  if (v === JOURNAL_VERSION) return;
  if (typeof v === 'number' && Number.isInteger(v) && v > JOURNAL_VERSION) {
    throw new JournalError(
      'journal_newer_format',
      `the run journal ${path} is format ${v}, written by a newer audience-kit (${String(header.tool_version)}); this version reads format ${JOURNAL_VERSION}; nothing was sent`,
      { fix: `resume with the audience-kit version that wrote it (or a newer one), or ${RESTART_FIX}` },
    );
  }
  throw new JournalError(
    'journal_old_format',
    `the run journal ${path} was written by an older audience-kit (format ${String(v)}, not chained)`,
    { fix: RESTART_FIX },
  );
}

interface JournalState {
  header: Extract<JournalLine, { type: 'header' }> | undefined;
  confirmed: Map<number, ConfirmedBatch>;
  failed: Map<number, FailedBatch>;
  totalBatches: number | undefined;
  complete: boolean;
  runIds: string[];
}

function foldJournal(lines: JournalLine[]): JournalState {
  const s: JournalState = {
    header: undefined,
    confirmed: new Map(),
    failed: new Map(),
    totalBatches: undefined,
    complete: false,
    runIds: [],
  };
  for (const l of lines) {
    switch (l.type) {
      case 'header':
        s.header = l;
        break;
      case 'run':
        s.runIds.push(l.run_id);
        break;
      case 'confirmed':
        s.confirmed.set(l.index, { index: l.index, sha256: l.sha256, users: l.users });
        s.failed.delete(l.index);
        break;
      case 'failed':
        s.failed.set(l.index, {
          index: l.index,
          sha256: l.sha256,
          users: l.users,
          operationUsers: l.operation_users,
          group: l.group,
          reason: l.reason,
        });
        break;
      case 'input_end':
        s.totalBatches = l.batches;
        break;
      case 'complete':
        s.complete = true;
        break;
    }
  }
  return s;
}

/** What a journal's lines say, for `find` (`where` names it in messages). */
export function summarizeJournal(key: string, where: string, lines: JournalLine[]): JournalSummary {
  const s = foldJournal(lines);
  let confirmedUsers = 0;
  for (const c of s.confirmed.values()) confirmedUsers += c.users;
  return {
    key,
    path: where,
    createdAt: s.header?.created_at ?? '',
    complete: s.complete,
    confirmed: s.confirmed.size,
    confirmedUsers,
    failed: s.failed.size,
    totalBatches: s.totalBatches,
    runIds: s.runIds,
  };
}

/** The journal for this key, if one exists (complete or not). */
export function findJournal(stateDir: string, key: JournalKey): JournalSummary | undefined {
  const id = journalKeyId(key);
  const path = join(journalDir(stateDir, id), 'journal.jsonl');
  if (statRegularFile(path) === undefined) return undefined;
  return summarizeJournal(id, path, parseJournal(path).lines);
}

/** Every journal of the state directory (complete or not). */
export function listJournals(stateDir: string): JournalSummary[] {
  const runs = join(stateDir, 'runs');
  if (!existsSync(runs)) return [];
  const found: JournalSummary[] = [];
  for (const id of readdirSync(runs).sort()) {
    const path = join(runs, id, 'journal.jsonl');
    if (statRegularFile(path) !== undefined) found.push(summarizeJournal(id, path, parseJournal(path).lines));
  }
  return found;
}

export interface OpenJournalOptions {
  /** 'resume' continues an existing journal (or starts one if none); 'new' replaces any. */
  mode: 'new' | 'resume';
  runId: string;
  now?: () => Date;
}

/** A failed batch's kept request body and the input line of each of its users. */
/** A batch that failed after every retry, as the engine hands it to `recordFailed`. */
export interface BatchToKeep {
  index: number;
  body: Buffer;
  users: number;
  operationUsers: number[];
  group: BatchGroup;
  lines: Uint32Array;
}

export interface KeptBatch {
  body: Buffer;
  lines: Uint32Array;
}

/**
 * A kept batch's input line numbers as every store keeps them: uint32s, big-endian (the database's
 * `audience_kit_journal_failed.lines`, the directory's `failed/NNNNNN.lines.u32be`; pinned by
 * test/golden/journal-v2/ and test/state-contract.test.ts).
 */
export function linesToBytes(lines: Uint32Array): Buffer {
  const out = Buffer.alloc(lines.length * 4);
  lines.forEach((line, i) => out.writeUInt32BE(line, i * 4));
  return out;
}

/**
 * `bytes` read as uint32s of the order given (big-endian; `LE` only for a directory's legacy
 * `.lines`); undefined when it is not a whole number of them (the batch is then not resumed from it).
 */
export function bytesToLines(bytes: Buffer, order: 'BE' | 'LE' = 'BE'): Uint32Array | undefined {
  if (bytes.length % 4 !== 0) return undefined;
  const lines = new Uint32Array(bytes.length / 4);
  for (let i = 0; i < lines.length; i++)
    lines[i] = order === 'BE' ? bytes.readUInt32BE(i * 4) : bytes.readUInt32LE(i * 4);
  return lines;
}

/** The directory's kept line numbers (big-endian), and the name of those an earlier version wrote in the machine's order. */
const LINES_FILE = '.lines.u32be';
const LEGACY_LINES_FILE = '.lines';

/** Where an opened journal resumes from: the lines read back (none for a new journal). */
export interface JournalStart {
  key: string;
  resumed: boolean;
  lines: JournalLine[];
  head: string;
  now: () => Date;
}

/**
 * What an upload run uses of its journal (upload/run.ts, upload/ledger.ts, upload/engine.ts):
 * ChainedJournal in state/journal.ts, whose subclasses store it (RunJournal: the file;
 * LineJournal, state/line-logs.ts: a backend's line log). Every record method resolves once the record is durable in
 * the store, and records are chained in the order the methods were called.
 */
export interface UploadJournal {
  readonly key: string;
  /** Where the journal is, for messages: its directory, or the database and key (never a password). */
  readonly location: string;
  readonly resumed: boolean;
  readonly confirmed: ReadonlyMap<number, ConfirmedBatch>;
  readonly failed: ReadonlyMap<number, FailedBatch>;
  readonly totalBatches: number | undefined;
  readonly complete: boolean;
  isConfirmed(index: number, sha256: string): boolean;
  recordConfirmed(index: number, sha256: string, users: number): Promise<void>;
  recordFailed(batch: BatchToKeep, sha256: string, reason: string): Promise<void>;
  readFailedBatch(index: number): Promise<KeptBatch | undefined>;
  recordInputEnd(batches: number): Promise<void>;
  markComplete(): Promise<void>;
  /** Release the journal's lock. Idempotent. */
  close(): Promise<void>;
}

/**
 * A journal opened for one run, whatever stores it: the chain, the books and the record methods.
 * Appends are serialized (each waits for the one before, so concurrent confirmations never fork
 * the chain) and each is durable in the store before its promise resolves. A store implements
 * the line and kept-body writes: the file (RunJournal below) or a backend's line log (state/line-logs.ts).
 */
export abstract class ChainedJournal implements UploadJournal {
  readonly key: string;
  /** True when this run continues an earlier one. */
  readonly resumed: boolean;
  /** SHA-256 of the last line: the next line's `prev`. */
  private head: string;
  private readonly state: JournalState;
  private readonly now: () => Date;
  private writes: Promise<void> = Promise.resolve();

  protected constructor(start: JournalStart) {
    this.key = start.key;
    this.resumed = start.resumed;
    this.head = start.head;
    this.state = foldJournal(start.lines);
    this.now = start.now;
  }

  /** Where the journal is, for messages: its directory, or the database and key. */
  abstract readonly location: string;
  /** Store one line (without its newline) after the last one, durably. */
  protected abstract writeLine(text: string): Promise<void>;
  /** Store a failed batch's body and lines durably (replacing any kept under its index). */
  protected abstract keepBatch(index: number, batch: KeptBatch): Promise<void>;
  /** A kept batch as stored (undefined when missing or unreadable). */
  protected abstract loadBatch(index: number): Promise<KeptBatch | undefined>;
  /** Remove one kept batch, or all of them. */
  protected abstract dropBatches(index?: number): Promise<void>;
  /** Stop writing and release the journal's lock. Idempotent. */
  abstract close(): Promise<void>;

  /** The first lines of a run: the header (a new journal), then the run. */
  protected async begin(key: JournalKey, runId: string): Promise<void> {
    if (!this.resumed) {
      await this.append({
        type: 'header',
        v: JOURNAL_VERSION,
        key: this.key,
        created_at: this.now().toISOString(),
        tool_version: VERSION,
        input: key.input,
        account_id: key.accountId,
        target: key.target,
        options: key.options,
      });
    }
    await this.append({ type: 'run', run_id: runId, at: this.now().toISOString(), resumed: this.resumed });
  }

  /** One line, durable, whole or not at all; after every line appended before it. */
  private append(line: JournalLine): Promise<void> {
    const write = this.writes.then(async () => {
      const text = JSON.stringify({ ...line, prev: this.head });
      await this.writeLine(text);
      this.head = sha256Hex(text);
      if (line.type === 'header') this.state.header = line;
    });
    this.writes = write.catch(() => undefined);
    return write;
  }

  /** Confirmed batches of earlier runs (index → content hash). */
  get confirmed(): ReadonlyMap<number, ConfirmedBatch> {
    return this.state.confirmed;
  }

  /** Batches kept after failing in an earlier run (or this one). */
  get failed(): ReadonlyMap<number, FailedBatch> {
    return this.state.failed;
  }

  /** Batch count of the input, once a run has read it whole. */
  get totalBatches(): number | undefined {
    return this.state.totalBatches;
  }

  get complete(): boolean {
    return this.state.complete;
  }

  /**
   * Check a recomputed batch against the journal: true when it was confirmed (skip it).
   * Throws when the journal confirmed different content under this index.
   */
  isConfirmed(index: number, sha256: string): boolean {
    const c = this.state.confirmed.get(index);
    if (c === undefined) return false;
    if (c.sha256 !== sha256) {
      throw new JournalError(
        'journal_mismatch',
        `batch ${index} differs from the batch the journal recorded as confirmed: the input, the options or the tool version changed since that run`,
        {
          fix: "run again with unfinished: 'restart' to start over (users already uploaded are sent again; Update treats them as no-ops)",
        },
      );
    }
    return true;
  }

  async recordConfirmed(index: number, sha256: string, users: number): Promise<void> {
    await this.append({ type: 'confirmed', index, sha256, users, at: this.now().toISOString() });
    this.state.confirmed.set(index, { index, sha256, users });
    if (this.state.failed.delete(index)) await this.dropBatches(index);
  }

  /** Keep a batch that failed after every retry, for a later resume. */
  async recordFailed(batch: BatchToKeep, sha256: string, reason: string): Promise<void> {
    await this.keepBatch(batch.index, { body: batch.body, lines: batch.lines });
    const f: FailedBatch = {
      index: batch.index,
      sha256,
      users: batch.users,
      operationUsers: batch.operationUsers,
      group: batch.group,
      reason,
    };
    await this.append({
      type: 'failed',
      index: f.index,
      sha256,
      users: f.users,
      operation_users: f.operationUsers,
      group: f.group,
      reason,
      at: this.now().toISOString(),
    });
    this.state.failed.set(batch.index, f);
  }

  /** The stored body of a failed batch, verified against its hash (undefined if missing or altered). */
  async readFailedBatch(index: number): Promise<KeptBatch | undefined> {
    const f = this.state.failed.get(index);
    if (f === undefined) return undefined;
    const kept = await this.loadBatch(index);
    return kept === undefined || batchDigest(kept.body) !== f.sha256 ? undefined : kept;
  }

  async recordInputEnd(batches: number): Promise<void> {
    if (this.state.totalBatches === batches) return;
    if (this.state.totalBatches !== undefined) {
      throw new JournalError(
        'journal_mismatch',
        `the input now makes ${batches} batches, the journal recorded ${this.state.totalBatches}`,
        {
          fix: "run again with unfinished: 'restart' to start over",
        },
      );
    }
    await this.append({ type: 'input_end', batches, at: this.now().toISOString() });
    this.state.totalBatches = batches;
  }

  /** Every batch confirmed: mark complete and delete the kept bodies. */
  async markComplete(): Promise<void> {
    await this.append({ type: 'complete', at: this.now().toISOString() });
    this.state.complete = true;
    await this.dropBatches();
  }
}

/** Refused while another process holds the journal's lock (`holder` names it when known). */
export function runInProgress(holder: string, cause?: unknown): ConfigError {
  return new ConfigError(
    'run_in_progress',
    `another audience-kit process is uploading this file with these options right now (${holder})`,
    {
      fix: "wait for it to finish (or stop it), then run again with unfinished: 'resume'",
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

/**
 * The journal file `runs/<key>/journal.jsonl`: each line appended with one write + fsync, a
 * lock file held for the run's duration so two runs of the same upload cannot interleave.
 */
export class RunJournal extends ChainedJournal {
  readonly dir: string;
  readonly path: string;
  private fd: number;
  private readonly release: () => void;

  private constructor(start: JournalStart, init: { dir: string; path: string; fd: number; release: () => void }) {
    super(start);
    this.dir = init.dir;
    this.path = init.path;
    this.fd = init.fd;
    this.release = init.release;
  }

  get location(): string {
    return this.dir;
  }

  static async open(stateDir: string, key: JournalKey, options: OpenJournalOptions): Promise<RunJournal> {
    const id = journalKeyId(key);
    const dir = journalDir(stateDir, id);
    ensureDir(dir);
    const release = await acquireFileLock(join(dir, 'lock'), { timeoutMs: 2000 }).catch((error: unknown) => {
      // Held by a live run (the lock names it); anything else (not writable, a directory) as it is.
      if (!(error instanceof EnvironmentError) || error.code !== 'file_locked') throw error;
      throw runInProgress(error.message, error);
    });
    let fd = -1;
    try {
      const path = join(dir, 'journal.jsonl');
      const start = readForResume(path, id, options);
      if (!start.resumed) {
        if (existsSync(path)) renameSync(path, join(dir, `journal.${Date.now()}.old.jsonl`));
        rmSync(join(dir, 'failed'), { recursive: true, force: true });
      }
      fd = openNoFollow(path, 'append');
      const journal = new RunJournal(start, { dir, path, fd, release });
      await journal.begin(key, options.runId);
      return journal;
    } catch (error) {
      if (fd >= 0) closeSync(fd);
      release();
      throw environmentError(error, 'opening the run journal in', dir);
    }
  }

  protected writeLine(text: string): Promise<void> {
    appendWhole(this.fd, Buffer.from(`${text}\n`, 'utf8'), this.path);
    return Promise.resolve();
  }

  protected keepBatch(index: number, batch: KeptBatch): Promise<void> {
    ensureDir(join(this.dir, 'failed'));
    const base = this.failedBasePath(index);
    writeDurable(`${base}.body.json`, batch.body);
    writeDurable(`${base}${LINES_FILE}`, linesToBytes(batch.lines));
    rmSync(`${base}${LEGACY_LINES_FILE}`, { force: true });
    return Promise.resolve();
  }

  /** The body and its lines: `.lines.u32be`, or a `.lines` an earlier version wrote in this machine's order. */
  protected loadBatch(index: number): Promise<KeptBatch | undefined> {
    const base = this.failedBasePath(index);
    try {
      const body = readFileSync(`${base}.body.json`);
      const lines = existsSync(`${base}${LINES_FILE}`)
        ? bytesToLines(readFileSync(`${base}${LINES_FILE}`))
        : bytesToLines(readFileSync(`${base}${LEGACY_LINES_FILE}`), endianness());
      return Promise.resolve(lines === undefined ? undefined : { body, lines });
    } catch {
      return Promise.resolve(undefined);
    }
  }

  protected dropBatches(index?: number): Promise<void> {
    if (index === undefined) {
      rmSync(join(this.dir, 'failed'), { recursive: true, force: true });
    } else {
      const base = this.failedBasePath(index);
      for (const suffix of ['.body.json', LINES_FILE, LEGACY_LINES_FILE]) rmSync(`${base}${suffix}`, { force: true });
    }
    return Promise.resolve();
  }

  close(): Promise<void> {
    if (this.fd >= 0) {
      closeSync(this.fd);
      this.fd = -1;
      this.release();
    }
    return Promise.resolve();
  }

  private failedBasePath(index: number): string {
    return join(this.dir, 'failed', String(index).padStart(6, '0'));
  }
}

/** An unfinished journal to resume (its torn last line cut off), or a fresh start. */
function readForResume(path: string, key: string, options: OpenJournalOptions): JournalStart {
  const now = options.now ?? (() => new Date());
  if (options.mode === 'resume' && existsSync(path)) {
    const { lines, validBytes, head } = parseJournal(path);
    if (resumable(lines)) {
      const fd = openSync(path, 'r+');
      try {
        ftruncateSync(fd, validBytes);
      } finally {
        closeSync(fd);
      }
      return { key, resumed: true, lines, head, now };
    }
  }
  return { key, resumed: false, lines: [], head: JOURNAL_GENESIS, now };
}

/** A journal with its header and no completion: a run to continue. */
export function resumable(lines: JournalLine[]): boolean {
  const s = foldJournal(lines);
  return s.header !== undefined && !s.complete;
}

function writeDurable(path: string, data: Buffer): void {
  writeFileNoFollow(path, data);
  const fd = openSync(path, 'r');
  try {
    stateFs.fsyncSync(fd);
  } catch (error) {
    throw environmentError(error, 'writing', path);
  } finally {
    closeSync(fd);
  }
}

/** Resume without a journal to resume, or an unfinished journal neither resumed nor restarted. */
export function unfinishedRunError(summary: JournalSummary): ConfigError {
  const total = summary.totalBatches === undefined ? '' : ` of ${summary.totalBatches}`;
  return new ConfigError(
    'unfinished_run',
    `an unfinished upload of this file with these options exists (${summary.confirmed}${total} batches confirmed, ${summary.failed} failed, started ${summary.createdAt})`,
    { fix: "pass unfinished: 'resume' to continue it, or unfinished: 'restart' to start over" },
  );
}
