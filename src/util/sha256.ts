/** SHA-256, lowercase hex: of values (hashing), batch bodies (journal), files and audit records. */
import { createHash, hash } from 'node:crypto';
import { open } from 'node:fs/promises';

/**
 * One-shot SHA-256 (`crypto.hash`, Node >= 20.12: no Hash object per call, which matters on
 * the per-value hot path). Strings are hashed as UTF-8.
 */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

/**
 * SHA-256 of a file, in 1 MiB reads into one reused buffer: a stream would leave a new buffer per
 * read for the garbage collector, hundreds of MB of it while a large file is also being hashed.
 */
export async function fileSha256(path: string): Promise<string> {
  const h = createHash('sha256');
  const file = await open(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (;;) {
      const { bytesRead } = await file.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
  } finally {
    await file.close();
  }
  return h.digest('hex');
}
