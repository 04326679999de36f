/**
 * The hashing worker pool: a fixed set of worker threads (worker.ts), each processing its queue
 * of chunks in order. Chunk bytes are transferred, not copied; a worker that fails or exits
 * rejects every pending chunk, so the pipeline never hangs.
 */
import { availableParallelism } from 'node:os';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { DEFAULT_CHUNK_BYTES } from '../ingest/records.js';
import { afterWorkerStart, beforeWorkerStart } from '../util/heap-flags.js';
import type { HashChunkContext, HashChunkResult } from './chunk.js';
import type { HashWorkerMessage, HashWorkerReply } from './worker.js';

// Under a TypeScript test runner this module is the .ts source, which a worker cannot load; the
// compiled worker next to the compiled module is what runs from dist.
const WORKER_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/hashing/worker.js', import.meta.url)
  : new URL('./worker.js', import.meta.url);

/**
 * A worker's live data is about one chunk; capping its heap makes V8 collect early instead of
 * growing towards its default limits, which is what keeps peak RSS flat with several workers.
 * The young generation stays large enough that per-row garbage dies there cheaply, unless the
 * caller trades that for memory (`youngGenerationMb`).
 */
function workerLimits(chunkBytes: number, youngGenerationMb = 16): Limits {
  return {
    maxOldGenerationSizeMb: 32 + Math.ceil((chunkBytes * 32) / (1024 * 1024)),
    maxYoungGenerationSizeMb: youngGenerationMb,
  };
}

/** The most worker threads a run may ask for (hashCsv's `workers`, the CLI's `--workers`). */
export const MAX_HASH_WORKERS = 256;

/** The worker threads of a run that names no number: one a core. */
export const defaultHashWorkers = (): number => availableParallelism();

type LimitKey = 'maxOldGenerationSizeMb' | 'maxYoungGenerationSizeMb';
/** The `resourceLimits` the pool's workers are made with. */
type Limits = { [K in LimitKey]-?: NonNullable<ResourceLimits[K]> };

/** Workers started before the command knows its input, all with EARLY_LIMITS. */
const prestarted: { worker: Worker; failed: boolean; onFail: () => void }[] = [];

/** The limits of a run of default chunks and young generation (workerLimits' defaults). */
const EARLY_LIMITS = workerLimits(DEFAULT_CHUNK_BYTES);

/**
 * Start `count` hashing workers now, with the limits of a run of default chunks and young
 * generation, so that they load their modules while the caller's thread is still busy (the CLI:
 * loading its own modules, parsing the command line, opening the file and resolving its columns,
 * 0.3-0.4 s before its pool is made). The next pool takes those whose limits match its own and
 * ends the others. Until then they are unreferenced, so a command that fails before hashing exits
 * as it would have, and they hold no data: a worker gets its context in its first message.
 * Returns the workers started.
 */
export function prestartHashWorkers(count: number): readonly Worker[] {
  return Array.from({ length: count }, () => {
    const worker = newWorker(EARLY_LIMITS);
    const entry = { worker, failed: false, onFail: () => (entry.failed = true) };
    worker.once('error', entry.onFail).once('exit', entry.onFail).unref();
    prestarted.push(entry);
    return worker;
  });
}

/** A prestarted worker taken out of `spare`, or a new one made with `limits`. */
function startWorker(limits: Limits, spare: typeof prestarted): Worker {
  const i = spare.findIndex((p) => !p.failed);
  const taken = i === -1 ? undefined : spare.splice(i, 1)[0];
  if (taken === undefined) return newWorker(limits);
  taken.worker.off('error', taken.onFail).off('exit', taken.onFail).ref();
  return taken.worker;
}

/**
 * A worker whose output (a warning Node prints in it, say) the pool writes to the process's
 * streams when it starts the worker (`forwardOutput`), rather than Node piping it there: a pipe
 * adds an `error` listener to process.stdout and process.stderr per worker, so from 11 workers
 * Node warned of a listener leak when the CLI added its own, and the CLI's check of whether a
 * command listens to stdout itself counted the workers' pipes. A prestarted worker that is ended
 * unused says nothing. Its start undoes the main thread's heap flags, if the process set any
 * (util/heap-flags.ts), which are set again once it is online.
 */
function newWorker(limits: Limits): Worker {
  beforeWorkerStart(limits.maxYoungGenerationSizeMb);
  // A worker ended before it came online (a pool closed while starting) has made its isolate too.
  return new Worker(WORKER_URL, { resourceLimits: limits, stdout: true, stderr: true })
    .once('online', afterWorkerStart)
    .once('exit', afterWorkerStart);
}

function forwardOutput(worker: Worker): void {
  worker.stdout.on('data', (bytes: Buffer) => process.stdout.write(bytes));
  worker.stderr.on('data', (bytes: Buffer) => process.stderr.write(bytes));
}

const sameLimits = (a: Limits, b: Limits): boolean =>
  a.maxOldGenerationSizeMb === b.maxOldGenerationSizeMb && a.maxYoungGenerationSizeMb === b.maxYoungGenerationSizeMb;

interface Task {
  resolve: (r: HashChunkResult) => void;
  reject: (e: unknown) => void;
}

/** A fixed set of workers, each processing its queue of chunks in order. */
export class HashWorkerPool {
  private readonly workers: { worker: Worker; tasks: Map<number, Task> }[] = [];
  private failure: unknown;
  private closed = false;

  constructor(count: number, ctx: HashChunkContext, chunkBytes: number, youngGenerationMb?: number) {
    const limits = workerLimits(chunkBytes, youngGenerationMb);
    // The prestarted workers are this pool's to take only when made with its limits.
    const early = prestarted.splice(0);
    const spare = sameLimits(limits, EARLY_LIMITS) ? early : [];
    try {
      for (let i = 0; i < count; i++) this.start(startWorker(limits, spare), ctx);
    } catch (error) {
      // A context that cannot be sent (or a thread that cannot start): no worker is left running.
      void this.close();
      throw error;
    } finally {
      // Prestarted for another run's limits, or one too many.
      for (const unused of early) void unused.worker.terminate();
    }
  }

  /** Listen to `worker`, then send it the context (its first message). */
  private start(worker: Worker, ctx: HashChunkContext): void {
    forwardOutput(worker);
    const entry = { worker, tasks: new Map<number, Task>() };
    worker.on('message', (reply: HashWorkerReply) => {
      const task = entry.tasks.get(reply.seq);
      if (task === undefined) return;
      entry.tasks.delete(reply.seq);
      if ('result' in reply) task.resolve(reply.result);
      else task.reject(workerError(reply.error.message, reply.error.stack));
    });
    worker.on('error', (error) => this.fail(workerError(error.message, error.stack, error)));
    worker.on('exit', (code) => {
      if (!this.closed) this.fail(workerError(`hash worker exited with code ${code}`));
    });
    this.workers.push(entry);
    worker.postMessage({ context: ctx } satisfies HashWorkerMessage);
  }

  private fail(error: unknown): void {
    this.failure ??= error;
    for (const { tasks } of this.workers) {
      for (const task of tasks.values()) task.reject(this.failure);
      tasks.clear();
    }
  }

  /**
   * The context of the chunks sent from now on (a worker takes its messages in order); false when
   * the pool is closed or has failed.
   */
  setContext(ctx: HashChunkContext): boolean {
    if (this.closed || this.failure !== undefined) return false;
    for (const { worker } of this.workers) worker.postMessage({ context: ctx } satisfies HashWorkerMessage);
    return true;
  }

  run(seq: number, bytes: Uint8Array): Promise<HashChunkResult> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    let entry = this.workers[0] as (typeof this.workers)[number];
    for (const w of this.workers) if (w.tasks.size < entry.tasks.size) entry = w;
    // Transfer (not copy) when the chunk owns its whole buffer.
    const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    const payload = owned ? bytes : bytes.slice();
    return new Promise<HashChunkResult>((resolve, reject) => {
      entry.tasks.set(seq, { resolve, reject });
      entry.worker.postMessage({ seq, bytes: payload } satisfies HashWorkerMessage, [payload.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.map(({ worker }) => worker.terminate()));
  }
}

function workerError(message: string, stack?: string, cause?: unknown): Error {
  const error = new Error(`hashing worker failed: ${message}`, cause === undefined ? undefined : { cause });
  if (stack !== undefined) error.stack = stack;
  return error;
}
