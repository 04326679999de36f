/**
 * The hashing pipeline: mapped CSV records -> normalized, SHA-256-hashed user objects, with a
 * summary of what was rejected and why (counts and line numbers, never values).
 *
 * Two entry points share one per-record path (identifiers/rows.ts, then `addUserToSummary`):
 * - `hashRecords(rows)`: one row at a time, for library users with their own rows or objects;
 * - `hashCsv(source)`: the fast path used by `hash` and `upload`. The main thread only reads
 *   bytes and cuts them at record boundaries (ingest/csv.ts); worker threads (pool.ts) parse,
 *   normalize and hash whole chunks (chunk.ts), so the CPU-heavy work runs on every core.
 *   Results are re-ordered by chunk sequence (output keeps input order) and the number of
 *   chunks in flight is bounded, so memory stays flat whatever the file size and a slow consumer
 *   (the uploader) slows the reading down.
 */
import { givenLabel } from '../identifiers/labels.js';
import { statSync } from 'node:fs';
import { z } from 'zod';
import {
  openCsv,
  type CsvBadRow,
  type CsvInput,
  type CsvRow,
  type CsvSource,
  type ReadCsvOptions,
} from '../ingest/csv.js';
import { DEFAULT_CHUNK_BYTES, type CsvChunk, type CsvRowError } from '../ingest/records.js';
import type { CsvDelimiter } from '../ingest/preamble.js';
import type { CsvEncoding, CsvEncodingSource } from '../ingest/encodings.js';
import { SAMPLE_ROWS } from '../identifiers/content.js';
import { readAhead } from '../util/read-ahead.js';
import {
  checkConsentColumns,
  CONSENT_POLICIES,
  DEFAULT_CONSENT_POLICY,
  type ConsentPolicy,
} from '../identifiers/consent.js';
import { resolveMapping, type ColumnMapping, type MappingOptions } from '../identifiers/mapping.js';
import { ConfigError } from '../errors.js';
import { normalizeCountryCode } from '../identifiers/countries.js';
import type { BuiltUser, NormalizeOptions, Reject } from '../identifiers/types.js';
import { RowUsers, type RawRecord, type RowRules } from '../identifiers/rows.js';
import {
  hashChunk,
  mappedTypes,
  type HashChunkContext,
  type HashChunkResult,
  type HashEmit,
  type HashedUser,
  type PackedUsers,
} from './chunk.js';
import type { KnownUsers } from './known-users.js';
import { defaultHashWorkers, HashWorkerPool, MAX_HASH_WORKERS } from './pool.js';
import {
  addBadRowToSummary,
  addConsentToSummary,
  addUserToSummary,
  createHashSummary,
  mergeHashSummary,
  type HashSummary,
} from './summary.js';

// ---------------------------------------------------------------------------------------------
// Options.

/** The consent option of hashCsv and hashRecords. */
export interface ConsentOptions {
  /**
   * What a row's consent and opt-out columns decide (identifiers/consent.ts): `exclude`
   * (default: a row that says no gives no user), `require-consent` (only a row that says yes
   * does), `include` (every row does), `refused` (only the rows that say no).
   */
  consent?: ConsentPolicy;
}

export interface HashRecordsOptions extends NormalizeOptions, MappingOptions, ConsentOptions {
  /** A mapping resolved beforehand; otherwise resolved from the first row's header (or keys). */
  mapping?: ColumnMapping;
}

export interface HashCsvOptions extends NormalizeOptions, MappingOptions, ReadCsvOptions, ConsentOptions {
  /** Worker threads; default: available cores. 0 runs everything on the calling thread. */
  workers?: number;
  /**
   * `users` (default): HashedUser objects; `jsonl` / `csv`: the `hash` command's output, rendered
   * by the workers; `packed`: PackedUsers, what uploadAudience consumes fastest.
   */
  emit?: HashEmit;
  /** Chunks read ahead of the consumer (bounds memory). Default 4 per worker + 2. */
  maxChunksInFlight?: number;
}

const optionsSchema = z.object({
  workers: z.number().int().min(0).max(MAX_HASH_WORKERS).optional(),
  chunkBytes: z
    .number()
    .int()
    .min(1)
    .max(256 * 1024 * 1024)
    .optional(),
  maxRecordBytes: z.number().int().min(1).optional(),
  maxChunksInFlight: z.number().int().min(1).max(1024).optional(),
  emit: z.enum(['users', 'jsonl', 'csv', 'packed']).optional(),
  phoneFormat: z.enum(['e164', 'digits']).optional(),
  phoneCountryCode: z.enum(['national', 'included', 'auto']).optional(),
  inputHashed: z.enum(['auto', 'always', 'never']).optional(),
  valueSeparator: z.string().min(1).optional(),
  partnerIdsMayBeEmails: z.boolean().optional(),
  defaultCountry: z.string().optional(),
  delimiter: z.enum([',', ';', '\t', '|']).optional(),
  encoding: z.string().min(1).optional(),
  consent: z.enum(CONSENT_POLICIES).optional(),
});

/** Validate the normalization options (ConfigError naming the field); returns them with the country canonical. */
export function checkNormalizeOptions<T extends NormalizeOptions>(opts: T): T {
  const parsed = optionsSchema.safeParse(opts);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? 'options';
    throw new ConfigError('invalid_option', `invalid option ${field}: ${issue?.message ?? 'invalid'}`, {
      fix: `correct ${field} (the normalization options are listed in docs/normalization.md)`,
    });
  }
  if (opts.defaultCountry === undefined) return opts;
  const country = normalizeCountryCode(opts.defaultCountry);
  if (country === undefined) {
    throw new ConfigError(
      'invalid_default_country',
      `defaultCountry ${givenLabel(opts.defaultCountry)} is not a known country`,
      {
        fix: 'pass an ISO 3166-1 code or an English country name, such as US, GBR or Germany',
      },
    );
  }
  return { ...opts, defaultCountry: country };
}

function normalizeOptionsOf(opts: NormalizeOptions): NormalizeOptions {
  const out: NormalizeOptions = {};
  if (opts.defaultCountry !== undefined) out.defaultCountry = opts.defaultCountry;
  if (opts.phoneFormat !== undefined) out.phoneFormat = opts.phoneFormat;
  if (opts.phoneCountryCode !== undefined) out.phoneCountryCode = opts.phoneCountryCode;
  if (opts.inputHashed !== undefined) out.inputHashed = opts.inputHashed;
  if (opts.valueSeparator !== undefined) out.valueSeparator = opts.valueSeparator;
  if (opts.partnerIdsMayBeEmails === true) out.partnerIdsMayBeEmails = true;
  return out;
}

/** hashRecords' options, checked once (ConfigError naming the field): the rules each row is built by. */
export function resolveRowRules(opts: HashRecordsOptions): RowRules {
  const checked = checkNormalizeOptions(opts);
  return {
    normalize: normalizeOptionsOf(checked),
    mapping: checked,
    given: opts.mapping,
    consent: checked.consent ?? DEFAULT_CONSENT_POLICY,
  };
}

// ---------------------------------------------------------------------------------------------
// One row at a time.

function isBadRow(r: unknown): r is CsvBadRow {
  const o = r as Partial<CsvBadRow> & { fields?: unknown };
  return typeof o.line === 'number' && typeof o.error === 'string' && o.fields === undefined;
}

/** A stream of users plus the running summary (complete once iterated). */
export interface HashRecordsRun extends AsyncIterable<BuiltUser> {
  readonly summary: HashSummary;
  /** The normalization options the users are built with (checked; the country canonical). */
  readonly normalize: NormalizeOptions;
  /** What the rows' consent columns decide. */
  readonly consent: ConsentPolicy;
  /** The mapping in use (resolved at the first row when not given; it grows as records show new keys). */
  readonly mapping: ColumnMapping | undefined;
  /** Record keys seen so far that feed nothing (neither an identifier type nor the country). */
  readonly ignoredKeys: readonly string[];
}

/**
 * The items of `rows`, the first `n` read ahead and handed to `onHead` before any is yielded
 * (the mapping judges each column by them). The source is closed when iteration stops early.
 */
async function* withHead<T>(
  rows: AsyncIterable<T> | Iterable<T>,
  n: number,
  onHead: (head: T[]) => void,
): AsyncGenerator<T> {
  const ahead = await readAhead(rows, (head) => head.length < n);
  onHead([...ahead.head]);
  yield* ahead.all();
}

/**
 * Hash rows one at a time. `rows` may be readCsv's output (CsvRow / bad rows, counted) or plain
 * objects keyed by column name (RawRecord; line = position, 1-based), mapped from every key
 * seen (see identifiers/rows.ts) unless `mapping` is given. Every well-formed row yields one
 * BuiltUser (`user` is `{}` when no identifier was valid). Throws ConfigError when the rows end
 * and no key ever named an identifier.
 */
export function hashRecords(rows: HashedRows, opts: HashRecordsOptions = {}): HashRecordsRun {
  return hashRows(rows, resolveRowRules(opts));
}

type HashedRows = AsyncIterable<CsvRow | CsvBadRow | RawRecord> | Iterable<CsvRow | CsvBadRow | RawRecord>;

/** hashRecords with its rules resolved at the entry (uploadAudience's `records`): nothing is checked again. */
export function hashRows(rows: HashedRows, rules: RowRules): HashRecordsRun {
  const summary = createHashSummary();
  const users = new RowUsers(rules);
  let head: (CsvRow | RawRecord)[] = [];
  async function* run(): AsyncGenerator<BuiltUser> {
    let position = 0;
    for await (const row of withHead(rows, SAMPLE_ROWS, (h) => (head = h.filter(isWellFormed)))) {
      position++;
      if (isBadRow(row)) {
        addBadRowToSummary(summary, row.line, row.error);
        continue;
      }
      const built = users.build(row, position, head);
      const consent = users.consent;
      if (consent !== undefined)
        addConsentToSummary(summary, rules.consent, consent.columns, consent.read, built.line, !built.withheld);
      if (built.withheld !== true) addUserToSummary(summary, built);
      yield built;
    }
    users.finish();
  }
  return {
    normalize: rules.normalize,
    consent: rules.consent,
    get summary() {
      return summary;
    },
    get mapping() {
      return users.mapping;
    },
    get ignoredKeys() {
      return users.ignoredKeys;
    },
    [Symbol.asyncIterator]: () => run(),
  };
}

const isWellFormed = (r: CsvRow | CsvBadRow | RawRecord): r is CsvRow | RawRecord => !isBadRow(r);

// ---------------------------------------------------------------------------------------------
// The fast path.

/** One chunk of hashCsv's output, in input order, with absolute line numbers. */
export interface HashedChunk {
  seq: number;
  /** First physical line the chunk covers. */
  firstLine: number;
  lines: number;
  /** Every well-formed data row's user (`{}` included), in order; empty unless emit is `users`. */
  users: HashedUser[];
  /** Rendered output lines as UTF-8 bytes (emit `jsonl`/`csv`); empty for `users`. */
  output: Uint8Array;
  rejects: Reject[];
  malformed: CsvBadRow[];
  /** Emit `packed` only: the chunk's users as uploadAudience takes them fastest. */
  packed?: PackedUsers;
}

export interface HashCsvRun extends AsyncIterable<HashedChunk> {
  /** Input file name (or `stdin` / `stream`). */
  readonly name: string;
  readonly header: readonly string[];
  /** Line of the header: past 1 when a preamble (notes, a title, blank lines) was skipped. */
  readonly headerLine: number;
  readonly mapping: ColumnMapping;
  /** The normalization options the users are built with (checked; the country canonical). */
  readonly normalize: NormalizeOptions;
  /** What the rows' consent columns decide. */
  readonly consent: ConsentPolicy;
  readonly delimiter: CsvDelimiter;
  readonly encoding: CsvEncoding;
  /** Whether the encoding came from a byte-order mark, was detected, or was the `encoding` option. */
  readonly encodingSource: CsvEncodingSource;
  readonly compressed: boolean;
  /** Worker threads used (0 = calling thread). */
  readonly workers: number;
  /** Running totals; complete once iteration ends. */
  readonly summary: HashSummary;
  /** Size on disk (compressed size for .gz); undefined for stdin and streams. */
  readonly totalBytes: number | undefined;
  /** Bytes consumed so far, same unit as totalBytes (for progress and ETA). */
  bytesRead(): number;
  /** Stop early: terminate the workers and close the input (iteration does it when it ends). */
  close(): Promise<void>;
  /**
   * For syncAudience: its snapshot's table of known users (HashChunkContext.knownUsers); a packed
   * run's workers then leave out the text of the users the sync will not send. Given before the
   * run starts, every chunk is looked up in it (and a large table shrinks the workers' young
   * generation); given later (a sync reads its input ahead for the minimum audience size before
   * its snapshot is open), the chunks sent to hashing from then on. `undefined` takes it back; the
   * run lets go of it when it closes. False when no table can be given (not packed, closed): the
   * sync cuts out the text itself.
   */
  leaveOutKnownUsers(table: KnownUsers | undefined): boolean;
}

/**
 * The fast path: open `source`, resolve the column mapping from its header (ConfigError /
 * InputError are thrown here, before any row is read), then iterate the returned run to get
 * HashedChunks in input order. Work is spread over `workers` threads; at most
 * `maxChunksInFlight` chunks are read ahead of the consumer.
 */
export async function hashCsv(source: CsvSource, opts: HashCsvOptions = {}): Promise<HashCsvRun> {
  const checked = checkNormalizeOptions(opts);
  const { input, mapping } = await openMapped(source, checked);
  const workers = checked.workers ?? defaultHashWorkers();
  const chunks = new CsvChunks(input, chunkContext(input, mapping, checked), {
    workers,
    chunkBytes: checked.chunkBytes ?? DEFAULT_CHUNK_BYTES,
    maxInFlight: checked.maxChunksInFlight ?? Math.max(4, workers * 4 + 2),
  });
  const hashRun: HashCsvRun = {
    name: input.name,
    header: input.header,
    headerLine: input.headerLine,
    mapping,
    normalize: chunks.ctx.normalize,
    consent: chunks.ctx.consent,
    delimiter: input.delimiter,
    encoding: input.encoding,
    encodingSource: input.encodingSource,
    compressed: input.compressed,
    workers,
    summary: chunks.summary,
    totalBytes: input.totalBytes,
    bytesRead: () => input.bytesRead(),
    close: () => chunks.close(),
    leaveOutKnownUsers: (table) => chunks.leaveOutKnownUsers(table),
    [Symbol.asyncIterator]: () => chunks.run(),
  };
  // A regular file can be read again (a consent policy's do-not-reach pass); stdin, a pipe or a stream cannot.
  if (typeof source === 'string' && source !== '-' && isRegularFile(source)) {
    const again = (changes: HashCsvOptions): Promise<HashCsvRun> => hashCsv(source, { ...opts, ...changes });
    Object.defineProperty(hashRun, REREAD, { value: again, configurable: true });
  }
  return hashRun;
}

const REREAD = Symbol('audience-kit.reread');

/**
 * A hashCsv run of a regular file (through a guard's Proxy too) opened again from its start with
 * `changes` to its options; undefined for anything that can be read only once (nothing is opened).
 */
export function rereadCsv(users: unknown): ((changes: HashCsvOptions) => Promise<HashCsvRun>) | undefined {
  const again: unknown = (users as { [REREAD]?: unknown } | null)?.[REREAD];
  return typeof again === 'function' ? (again as (changes: HashCsvOptions) => Promise<HashCsvRun>) : undefined;
}

function isRegularFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The opened input and the mapping of its header; the input is closed when the mapping is refused. */
async function openMapped(
  source: CsvSource,
  opts: HashCsvOptions,
): Promise<{ input: CsvInput; mapping: ColumnMapping }> {
  const input = await openCsv(source, opts);
  try {
    const mapping = resolveMapping(input.header, opts, input.sample);
    checkConsentColumns(opts.consent ?? DEFAULT_CONSENT_POLICY, mapping.consent);
    return { input, mapping };
  } catch (error) {
    await input.close();
    throw error;
  }
}

/** What every chunk is hashed with, on the calling thread or in a worker. */
function chunkContext(input: CsvInput, mapping: ColumnMapping, opts: HashCsvOptions): HashChunkContext {
  return {
    columns: input.header.length,
    header: [...input.header],
    delimiter: input.delimiter,
    mapping,
    normalize: normalizeOptionsOf(opts),
    consent: opts.consent ?? DEFAULT_CONSENT_POLICY,
    emit: opts.emit ?? 'users',
    outputTypes: mappedTypes(mapping),
  };
}

interface ChunkLimits {
  /** Worker threads (0: the calling thread). */
  workers: number;
  chunkBytes: number;
  /** Chunks read ahead of the consumer. */
  maxInFlight: number;
}

/**
 * One hashCsv run's chunks: iterated once, hashed in the workers (made when the iteration
 * starts) or inline, in input order; closing ends the workers and the input.
 */
class CsvChunks {
  readonly summary = createHashSummary();
  private pool: HashWorkerPool | undefined;
  private started = false;
  private closed = false;
  /** The context of the chunks sent to hashing from now on: `ctx`, with a sync's table while one is given. */
  private current: HashChunkContext;

  constructor(
    private readonly input: CsvInput,
    readonly ctx: HashChunkContext,
    private readonly limits: ChunkLimits,
  ) {
    this.current = ctx;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The table can be 60 MB: a closed run does not keep it.
    this.current = this.ctx;
    await this.pool?.close();
    await this.input.close();
  }

  /** HashCsvRun.leaveOutKnownUsers: a started run's workers get the table in a new context message. */
  leaveOutKnownUsers(table: KnownUsers | undefined): boolean {
    if (table !== undefined && (this.closed || this.ctx.emit !== 'packed')) return false;
    const next = table === undefined ? this.ctx : { ...this.ctx, knownUsers: table };
    // A failed pool hashes nothing more: it takes no table.
    if (this.pool !== undefined && !this.pool.setContext(next) && table !== undefined) return false;
    this.current = next;
    return true;
  }

  async *run(): AsyncGenerator<HashedChunk> {
    // Before a pool is made: one made for a run read already would keep the process alive.
    if (this.started) throw new Error('a hashCsv run can be iterated only once');
    this.started = true;
    const hash = this.hasher();
    let line = this.input.firstDataLine;
    try {
      for await (const { seq, result } of inOrder(this.input, hash, this.limits.maxInFlight)) {
        mergeHashSummary(this.summary, result.summary, line);
        yield absolute(seq, line, result);
        line += result.lines;
      }
    } finally {
      await this.close();
    }
  }

  /** How this iteration hashes a chunk: the workers' pool, or inline when there are none. */
  private hasher(): (chunk: CsvChunk, seq: number) => Promise<HashChunkResult> {
    const { workers, chunkBytes } = this.limits;
    const ctx = this.current;
    if (workers > 0)
      this.pool = new HashWorkerPool(workers, ctx, chunkBytes, youngGenerationFor(ctx, this.input.totalBytes));
    const pool = this.pool;
    const inline = (bytes: Uint8Array): Promise<HashChunkResult> =>
      Promise.resolve().then(() => hashChunk(bytes, this.current));
    return (chunk, seq) => {
      if (chunk.kind === 'bad') return Promise.resolve(badChunk(chunk.error, chunk.lines));
      return pool === undefined ? inline(chunk.bytes) : pool.run(seq, chunk.bytes);
    };
  }
}

/**
 * An upload or a sync (packed users) keeps its dedupe beside the workers: a sync 6 bytes per
 * snapshot user (the snapshot's table; the users it adds are deduplicated on disk past 262,144,
 * upload/added-users.ts), an upload about 10 bytes per user (upload/plan.ts UserDedupe). From 4M
 * snapshot users (a 24 MB table), or a file of 128 MB or more (about 2M rows), the workers' young
 * generation shrinks from 16 to 6 MB: a 10M-row sync's peak RSS stays under 300 MB, a 10M-row
 * upload's falls from 324 to 309-312 MB (still above); it costs about 6% more CPU in scavenges, so
 * smaller runs and `hash` keep the default (docs/performance.md).
 */
const youngGenerationFor = (ctx: HashChunkContext, totalBytes: number | undefined): number | undefined =>
  ctx.emit === 'packed' && ((ctx.knownUsers?.count ?? 0) >= 4_000_000 || (totalBytes ?? 0) >= 128 << 20)
    ? 6
    : undefined;

/**
 * Read `input`'s chunks, start `hash` on each as soon as it is read (at most `maxInFlight`
 * ahead of the consumer) and yield the results in sequence order.
 */
async function* inOrder(
  input: CsvInput,
  hash: (chunk: CsvChunk, seq: number) => Promise<HashChunkResult>,
  maxInFlight: number,
): AsyncGenerator<{ seq: number; result: HashChunkResult }> {
  const chunks = input.chunks()[Symbol.asyncIterator]();
  const inFlight = new Map<number, Promise<HashChunkResult>>();
  let dispatched = 0;
  let delivered = 0;
  let ended = false;
  // A read that is still waiting when the oldest result is ready: that result is delivered
  // first, so a slow pipe (stdin) does not hold back what was already hashed.
  let pendingRead: ReturnType<typeof chunks.next> | undefined;
  const headReady = Symbol('head ready');
  const ready = (): typeof headReady => headReady;
  for (;;) {
    while (!ended && dispatched - delivered < maxInFlight) {
      if (pendingRead === undefined) {
        pendingRead = chunks.next();
        // Awaited below; this only keeps a failure after an early stop from going unhandled.
        pendingRead.catch(() => undefined);
      }
      const head = inFlight.get(delivered);
      const next = head === undefined ? await pendingRead : await Promise.race([pendingRead, head.then(ready, ready)]);
      if (next === headReady) break;
      pendingRead = undefined;
      if (next.done === true) {
        ended = true;
        break;
      }
      const result = hash(next.value, dispatched);
      // Rejections are consumed in order below; this only keeps Node from reporting them early.
      result.catch(() => undefined);
      inFlight.set(dispatched++, result);
    }
    if (delivered === dispatched) return;
    const seq = delivered++;
    const result = await (inFlight.get(seq) as Promise<HashChunkResult>);
    inFlight.delete(seq);
    yield { seq, result };
  }
}

function badChunk(error: CsvRowError, lines: number): HashChunkResult {
  const summary = createHashSummary();
  addBadRowToSummary(summary, 0, error);
  return { lines, users: [], output: new Uint8Array(0), rejects: [], malformed: [{ line: 0, error }], summary };
}

function absolute(seq: number, firstLine: number, r: HashChunkResult): HashedChunk {
  for (const u of r.users) u.line += firstLine;
  // `rejects` holds the very objects of the users' `rejects` (structured clone keeps shared
  // references), so shifting them once covers both.
  for (const rej of r.rejects) rej.line += firstLine;
  for (const m of r.malformed) m.line += firstLine;
  const chunk: HashedChunk = {
    seq,
    firstLine,
    lines: r.lines,
    users: r.users,
    output: r.output,
    rejects: r.rejects,
    malformed: r.malformed,
  };
  if (r.packed !== undefined) {
    const lines = r.packed.lines;
    for (let i = 0; i < lines.length; i++) lines[i] = (lines[i] as number) + firstLine;
    chunk.packed = r.packed;
  }
  return chunk;
}
