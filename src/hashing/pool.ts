/**
 * The hashing worker pool: a fixed set of worker threads (worker.ts), each processing its queue
 * of chunks in order. Chunk bytes are transferred, not copied; a worker that fails or exits
 * rejects every pending chunk, so the pipeline never hangs.
 */
import { Worker } from 'node:worker_threads';
import type { HashChunkContext, HashChunkResult } from './chunk.js';
import type { HashWorkerData, HashWorkerReply, HashWorkerRequest } from './worker.js';

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
function workerLimits(
  chunkBytes: number,
  youngGenerationMb = 16,
): { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb: number } {
  return {
    maxOldGenerationSizeMb: 32 + Math.ceil((chunkBytes * 32) / (1024 * 1024)),
    maxYoungGenerationSizeMb: youngGenerationMb,
  };
}

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
    for (let i = 0; i < count; i++) {
      const worker = new Worker(WORKER_URL, {
        workerData: { hashChunkContext: ctx } satisfies HashWorkerData,
        resourceLimits: workerLimits(chunkBytes, youngGenerationMb),
      });
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
    }
  }

  private fail(error: unknown): void {
    this.failure ??= error;
    for (const { tasks } of this.workers) {
      for (const task of tasks.values()) task.reject(this.failure);
      tasks.clear();
    }
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
      entry.worker.postMessage({ seq, bytes: payload } satisfies HashWorkerRequest, [payload.buffer as ArrayBuffer]);
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
