/**
 * The audit log: append-only JSONL, one record when an upload starts and one when it ends,
 * chained so that editing, inserting or removing a line breaks the chain at the next line.
 *
 * Each record carries `prev`, the SHA-256 (hex) of the previous line's bytes (without its
 * newline); the first record links to AUDIT_GENESIS. A record is appended with one write()
 * on an O_APPEND descriptor followed by fsync, under an advisory lock file, because `prev`
 * must be the line actually preceding it even when two runs append at the same moment.
 *
 * Records hold counts, names and ids only: never identifiers, identifier hashes or secrets.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { ConfigError, environmentError, InputError } from '../errors.js';
import type { ConsentJson } from '../hashing/summary.js';
import type { TargetKind } from '../platform/targets.js';
import { sha256Hex } from '../util/sha256.js';
import { appendWhole, ensureDir, openNoFollow } from './fs.js';
import { acquireFileLock, type LockOptions } from './lock.js';

/** `prev` of the first record: SHA-256 of this fixed text. */
export const AUDIT_GENESIS = sha256Hex('audience-kit audit log v1');

/**
 * Audit record format, written as each record's `v`. Records written before the field existed
 * have none and are read as format 1. A record of a newer format is refused (by append, verify
 * and every reader), never misread or chained onto.
 */
export const AUDIT_FORMAT = 1;

export type RunOutcome = 'completed' | 'partial' | 'failed' | 'interrupted';

/** The options that change what is sent (never values). */
export interface AuditRunOptions {
  default_country: string | null;
  country_column: string | null;
  phone_format: string;
  input_hashed: string;
  mapping: Record<string, string[]>;
  effective_at: string | null;
  expires_at: string | null;
  max_body_bytes: number;
  max_operations: number;
  max_users_per_operation: number;
}

export interface AuditRunStart {
  event: 'run_start';
  run_id: string;
  at: string;
  tool_version: string;
  account_id: string;
  target: { kind: TargetKind; id: string };
  /** `sync`: the run was a sync (removals and updates; see AuditRunEnd.sync). */
  operation: 'update' | 'delete' | 'sync';
  input: { name: string; size: number | null; sha256: string | null };
  options: AuditRunOptions;
  /** True when this run continues an earlier one from its journal. */
  resumed: boolean;
  sandbox: boolean;
  /** Syncs: the target's snapshot when the sync started. */
  snapshot_before?: AuditSnapshotState;
  /**
   * Syncs: the run's write-ahead record (`pending`) was begun, durable in the store, before this
   * record, over the index of commit sequence `index_seq`. Until the run's end records its commit,
   * that record, or a commit over that index, must be there (state/snapshot.ts `writeAheadLost`).
   */
  write_ahead?: { index_seq: number };
}

/** A sync snapshot: its user count and the SHA-256 of its users' fingerprints (no identifier). */
export interface AuditSnapshotState {
  users: number;
  digest: string;
}

/** What a sync planned and had confirmed, and its snapshot before and after. */
export interface AuditSyncCounts {
  adds: number;
  removes: number;
  refreshes: number;
  unchanged: number;
  removes_confirmed: number;
  updates_confirmed: number;
  first_sync: boolean;
  snapshot_before: AuditSnapshotState;
  snapshot_after: AuditSnapshotState;
  /** With a run_start's `write_ahead`: whether the store took the run's commit. */
  committed?: boolean;
}

/** The report's counts (all numbers). */
export interface AuditCounts {
  rows: number;
  users_sent: number;
  duplicates: number;
  rows_without_identifier: number;
  invalid_values: number;
  digests_passed_through: number;
  oversized_users: number;
  requests: number;
  batches_confirmed: number;
  batches_failed: number;
  bytes: number;
  retries: number;
  mismatches: number;
  rate_limit_waits: number;
  success_count: number;
  total_count: number;
  /** Batches confirmed by the platform that the journal could not record (disk full). */
  unrecorded_batches?: number;
}

export interface AuditRunEnd {
  event: 'run_end';
  run_id: string;
  at: string;
  started_at: string;
  duration_ms: number;
  outcome: RunOutcome;
  input: { name: string; rows: number; sha256: string | null };
  counts: AuditCounts;
  /**
   * Inputs with consent or opt-out columns: the policy, rows that said no, yes, nothing or
   * something unreadable, rows left out, and per column the values read as no (words and counts;
   * never identifiers). Optional: records without it are read as before.
   */
  consent?: ConsentJson;
  /** Syncs only. */
  sync?: AuditSyncCounts;
  /** Error code when the run stopped on an error. */
  error?: string;
}

export type AuditRecord = AuditRunStart | AuditRunEnd;
export type ChainedAuditRecord = AuditRecord & { v: typeof AUDIT_FORMAT; prev: string };

export function defaultAuditLogPath(stateDir: string): string {
  return `${stateDir.replace(/\/+$/, '')}/audit.jsonl`;
}

/** A run id that sorts by start time: `20250101T120000Z-3f9a1c`. */
export function newRunId(now: Date = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/**
 * Append one record, chained to the current last line. Returns the record as written.
 * The directory is created (mode 0700) and the file too (mode 0600).
 */
export async function appendAuditRecord(
  path: string,
  record: AuditRecord,
  options: LockOptions = {},
): Promise<ChainedAuditRecord> {
  ensureDir(dirname(path), 'auditLog');
  const release = await acquireFileLock(`${path}.lock`, options);
  try {
    const fd = openNoFollow(path, 'append');
    try {
      const { line, endsWithNewline } = lastLine(path);
      const chained = chainAfter(line, record, path);
      // A torn last line (crash mid-write) stays visible to verify; the new record starts a new line.
      const text = `${endsWithNewline ? '' : '\n'}${JSON.stringify(chained)}\n`;
      appendWhole(fd, Buffer.from(text, 'utf8'), path);
      return chained;
    } catch (error) {
      throw environmentError(error, 'appending to the audit log', path);
    } finally {
      closeSync(fd);
    }
  } finally {
    release();
  }
}

/** `record` chained to the log's last line (undefined: an empty log); a last record of a newer format is refused. */
export function chainAfter(line: Buffer | string | undefined, record: AuditRecord, where: string): ChainedAuditRecord {
  if (line !== undefined) checkAuditFormat(where, parseAuditLine(line));
  return { v: AUDIT_FORMAT, ...record, prev: line === undefined ? AUDIT_GENESIS : sha256Hex(line) };
}

export function parseAuditLine(bytes: Buffer | string): unknown {
  try {
    return JSON.parse(typeof bytes === 'string' ? bytes : bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Refuses a record of a newer format (`v` above AUDIT_FORMAT); anything else is for verify to judge. */
export function checkAuditFormat(path: string, record: unknown): void {
  const v = (record as { v?: unknown } | null | undefined)?.v;
  if (typeof v !== 'number' || v <= AUDIT_FORMAT) return;
  throw new ConfigError(
    'audit_newer_format',
    `the audit log ${path} holds records of format ${v}, written by a newer audience-kit; this version reads format ${AUDIT_FORMAT} and did not read or append to it`,
    { fix: 'use the audience-kit version that wrote those records (or a newer one) with this state' },
  );
}

/** The bytes of the last line (without newline), reading backwards from the end. */
function lastLine(path: string): { line: Buffer | undefined; endsWithNewline: boolean } {
  const size = statSync(path).size;
  if (size === 0) return { line: undefined, endsWithNewline: true };
  const fd = openSync(path, 'r');
  try {
    const chunks: Buffer[] = [];
    let pos = size;
    let endsWithNewline = false;
    let first = true;
    while (pos > 0) {
      const len = Math.min(64 * 1024, pos);
      pos -= len;
      const buf = Buffer.alloc(len);
      readSync(fd, buf, 0, len, pos);
      let end = len;
      if (first) {
        first = false;
        if (buf[len - 1] === 0x0a) {
          endsWithNewline = true;
          end = len - 1;
        }
      }
      const nl = buf.lastIndexOf(0x0a, end - 1);
      if (nl >= 0 && end > 0) {
        chunks.unshift(buf.subarray(nl + 1, end));
        return { line: Buffer.concat(chunks), endsWithNewline };
      }
      chunks.unshift(buf.subarray(0, end));
    }
    return { line: Buffer.concat(chunks), endsWithNewline };
  } finally {
    closeSync(fd);
  }
}

const recordSchema = z.object({
  event: z.enum(['run_start', 'run_end']),
  run_id: z.string().min(1),
  at: z.string().min(1),
  v: z.number().int().positive().optional(),
  prev: z.string().regex(/^[0-9a-f]{64}$/),
});

export interface AuditBrokenLink {
  /** 1-based line number of the first line that does not verify. */
  line: number;
  problem: string;
}

export interface AuditVerification {
  ok: boolean;
  records: number;
  /** SHA-256 of the last line: record it elsewhere to detect truncation of the tail later. */
  head: string;
  broken?: AuditBrokenLink;
  /** With `head`: the line whose hash it is (records after it were appended since it was noted). */
  headLine?: number;
}

/**
 * Check every link of the chain; reports the first broken one. With `head` (a head printed by
 * an earlier verify and kept elsewhere), also check that the line it names is still there:
 * removing or editing the last records leaves an intact chain, but not that line.
 */
export function verifyAuditLog(path: string, options: { head?: string } = {}): AuditVerification {
  return verifyAuditBytes(readAuditFile(path), path, options);
}

/** verifyAuditLog on the log's bytes (each line ending with a newline), wherever they are stored (`where`, for messages). */
export function verifyAuditBytes(data: Buffer, where: string, options: { head?: string } = {}): AuditVerification {
  const wanted = options.head?.toLowerCase();
  let headLine = wanted === AUDIT_GENESIS ? 0 : undefined;
  let prev = AUDIT_GENESIS;
  let start = 0;
  let lineNo = 0;
  while (start < data.length) {
    let end = data.indexOf(0x0a, start);
    const complete = end >= 0;
    if (!complete) end = data.length;
    lineNo++;
    const bytes = data.subarray(start, end);
    const fail = (problem: string): AuditVerification => ({
      ok: false,
      records: lineNo - 1,
      head: prev,
      broken: { line: lineNo, problem },
    });
    if (!complete)
      return fail('the last line is incomplete (no newline): a write was cut off or the file was truncated');
    const parsed = parseAuditLine(bytes);
    if (parsed === undefined) return fail('not a JSON record');
    checkAuditFormat(where, parsed);
    const r = recordSchema.safeParse(parsed);
    if (!r.success) {
      const field = r.error.issues[0]?.path.join('.') ?? 'record';
      return fail(`field "${field}" is missing or invalid`);
    }
    if (r.data.prev !== prev) {
      return fail(
        lineNo === 1
          ? 'prev does not match the genesis value: lines were removed from the start'
          : `prev does not match the SHA-256 of line ${lineNo - 1}: line ${lineNo - 1} was modified, or lines were inserted or removed before line ${lineNo}`,
      );
    }
    prev = sha256Hex(bytes);
    if (prev === wanted) headLine = lineNo;
    start = end + 1;
  }
  if (wanted === undefined) return { ok: true, records: lineNo, head: prev };
  if (headLine === undefined) {
    return {
      ok: false,
      records: lineNo,
      head: prev,
      broken: {
        line: lineNo,
        problem: `no line has the recorded head ${wanted}: the record it named (and any after it) was removed or edited, or the log was replaced`,
      },
    };
  }
  return { ok: true, records: lineNo, head: prev, headLine };
}

function readAuditFile(path: string): Buffer {
  if (!existsSync(path)) {
    throw new InputError('audit_log_missing', `no audit log at ${path}`, {
      fix: 'pass the stateDir the uploads used (or the auditLog path); the CLI keeps it in ~/.local/state/audience-kit unless AUDIENCE_KIT_STATE_DIR or XDG_STATE_HOME says otherwise',
    });
  }
  return readFileSync(path);
}

/** One run as listed: its start record and, when it ended, its end record. */
export interface AuditRun {
  run_id: string;
  start?: AuditRunStart;
  end?: AuditRunEnd;
}

/** Runs in log order (unparseable lines are skipped here; `verifyAuditLog` reports them). */
export function readAuditRuns(path: string): AuditRun[] {
  return auditRunsOf(readAuditFile(path).toString('utf8').split('\n'), path);
}

/** The runs of the log's lines, in order (`where` names the log in messages). */
export function auditRunsOf(lines: Iterable<string>, where: string): AuditRun[] {
  const runs = new Map<string, AuditRun>();
  for (const line of lines) {
    if (line === '') continue;
    const rec = parseAuditLine(line) as ChainedAuditRecord | null | undefined;
    checkAuditFormat(where, rec);
    if (typeof rec?.run_id !== 'string') continue;
    const run = runs.get(rec.run_id) ?? { run_id: rec.run_id };
    if (rec.event === 'run_start') run.start = rec;
    else if (rec.event === 'run_end') run.end = rec;
    runs.set(rec.run_id, run);
  }
  return [...runs.values()];
}

export function findAuditRun(path: string, runId: string): AuditRun {
  return findRunIn(readAuditRuns(path), runId, path);
}

/** The run `runId` among `runs` of the log `where` (a path, or a store's description). */
export function findRunIn(runs: AuditRun[], runId: string, where: string): AuditRun {
  const run = runs.find((r) => r.run_id === runId);
  if (run === undefined) {
    throw new ConfigError('audit_run_not_found', `no run ${runId} in ${where}`, {
      fix: 'list the runs with `audience-kit audit list`',
    });
  }
  return run;
}

/**
 * What the audit log last recorded of a target's snapshot; with `openRun` when that run began a
 * write-ahead record whose commit it did not record (killed, or its commit not stored).
 */
export interface RecordedSnapshot extends AuditSnapshotState {
  openRun?: { runId: string; indexSeq: number };
}

/**
 * The sync snapshot the audit log last recorded for a target (read-only): the last sync run's
 * `snapshot_after`, or, for a run without an end record (killed), its `snapshot_before`.
 * Undefined when the log (or a sync of the target in it) does not exist.
 */
export function lastRecordedSnapshot(
  path: string,
  target: { accountId: string; kind: TargetKind; id: string },
): RecordedSnapshot | undefined {
  if (!existsSync(path)) return undefined;
  return lastRecordedIn(readAuditRuns(path), target);
}

/** lastRecordedSnapshot among `runs` (in log order). */
export function lastRecordedIn(
  all: AuditRun[],
  target: { accountId: string; kind: TargetKind; id: string },
): RecordedSnapshot | undefined {
  const runs = all.filter(
    (r) =>
      r.start?.operation === 'sync' &&
      r.start.account_id === target.accountId &&
      r.start.target.kind === target.kind &&
      r.start.target.id === target.id,
  );
  const last = runs.at(-1);
  const state = last?.end?.sync?.snapshot_after ?? last?.start?.snapshot_before;
  const indexSeq = (last?.start?.write_ahead as { index_seq?: unknown } | undefined)?.index_seq;
  if (state === undefined || last?.start === undefined || typeof indexSeq !== 'number') return state;
  if (last.end?.sync?.committed === true) return state;
  return { ...state, openRun: { runId: last.start.run_id, indexSeq } };
}
