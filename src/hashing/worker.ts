/**
 * Entry point of a hashing worker thread: its first message is the context every chunk is hashed
 * with (sent by the pool that takes the worker, which may have been started before the input was
 * known: pool.ts prestartHashWorkers); then it receives chunks (transferred bytes) and answers
 * with hashChunk's result, transferring its byte arrays back. A context sent again (a sync's
 * table of known users, given once the run has started) applies to the chunks that follow it.
 */
import { isMainThread, parentPort } from 'node:worker_threads';
import { hashChunk, type HashChunkContext, type HashChunkResult } from './chunk.js';

/** What the pool sends: the context (first, and again when it changes), chunks to hash (bytes transferred), matched by `seq`. */
export type HashWorkerMessage = { context: HashChunkContext } | { seq: number; bytes: Uint8Array };

export type HashWorkerReply =
  { seq: number; result: HashChunkResult } | { seq: number; error: { message: string; stack?: string } };

const port = parentPort;
if (!isMainThread && port !== null) {
  let ctx: HashChunkContext | undefined;
  port.on('message', (message: HashWorkerMessage) => {
    if ('context' in message) {
      ctx = message.context;
      return;
    }
    try {
      if (ctx === undefined) throw new Error('a chunk came before the hashing context');
      const result = hashChunk(message.bytes, ctx);
      port.postMessage({ seq: message.seq, result } satisfies HashWorkerReply, transferables(result));
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      port.postMessage({
        seq: message.seq,
        error: { message: e.message, ...(e.stack === undefined ? {} : { stack: e.stack }) },
      } satisfies HashWorkerReply);
    }
  });
}

/** The result's byte arrays, moved to the pool's thread rather than copied. */
function transferables(result: HashChunkResult): ArrayBuffer[] {
  const transfer: ArrayBuffer[] = [];
  if (result.output.byteLength > 0) transfer.push(result.output.buffer as ArrayBuffer);
  const packed = result.packed;
  if (packed !== undefined) {
    transfer.push(packed.lines.buffer as ArrayBuffer, packed.fingerprints.buffer as ArrayBuffer);
    if (packed.positions !== undefined) transfer.push(packed.positions.buffer as ArrayBuffer);
  }
  return transfer;
}
