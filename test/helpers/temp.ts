import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

/** Directories made outside a test (in a beforeAll), removed when the file ends (test/setup.ts). */
export const fileScopedDirs: string[] = [];

/**
 * A fresh directory under this test file's TMPDIR, removed when the test ends (or, made in a
 * hook, when the file ends).
 */
export function tempDir(prefix = 'ak-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  } catch {
    // Not inside a test: onTestFinished refuses, the file's teardown removes it.
    fileScopedDirs.push(dir);
  }
  return dir;
}
