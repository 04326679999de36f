/** SHA-256, lowercase hex: of values (hashing), batch bodies (journal), files and audit records. */
import { createHash, hash } from 'node:crypto';
import { createReadStream } from 'node:fs';

/**
 * One-shot SHA-256 (`crypto.hash`, Node >= 20.12: no Hash object per call, which matters on
 * the per-value hot path). Strings are hashed as UTF-8.
 */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

/** SHA-256 of a file, streamed in 1 MiB reads. */
export async function fileSha256(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) h.update(chunk as Buffer);
  return h.digest('hex');
}
