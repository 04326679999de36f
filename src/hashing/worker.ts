/**
 * Entry point of a hashing worker thread: receives chunks (transferred bytes), answers with
 * hashChunk's result, transferring its byte arrays back. pool.ts starts and feeds these workers.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { hashChunk, type HashChunkContext, type HashChunkResult } from './chunk.js';

/** workerData of a hash worker. */
export interface HashWorkerData {
  hashChunkContext: HashChunkContext;
}

/** A chunk to hash (its bytes transferred) and the answer, matched by `seq`. */
export interface HashWorkerRequest {
  seq: number;
  bytes: Uint8Array;
}

export type HashWorkerReply =
  { seq: number; result: HashChunkResult } | { seq: number; error: { message: string; stack?: string } };

const data = workerData as Partial<HashWorkerData> | null;
const port = parentPort;
if (!isMainThread && port !== null && data?.hashChunkContext !== undefined) {
  const ctx = data.hashChunkContext;
  port.on('message', (message: HashWorkerRequest) => {
    try {
      const result = hashChunk(message.bytes, ctx);
      const transfer: ArrayBuffer[] = [];
      if (result.output.byteLength > 0) transfer.push(result.output.buffer as ArrayBuffer);
      const packed = result.packed;
      if (packed !== undefined) {
        transfer.push(packed.lines.buffer as ArrayBuffer, packed.fingerprints.buffer as ArrayBuffer);
        if (packed.positions !== undefined) transfer.push(packed.positions.buffer as ArrayBuffer);
      }
      port.postMessage({ seq: message.seq, result } satisfies HashWorkerReply, transfer);
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      port.postMessage({
        seq: message.seq,
        error: { message: e.message, ...(e.stack === undefined ? {} : { stack: e.stack }) },
      } satisfies HashWorkerReply);
    }
  });
}
