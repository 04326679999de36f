import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { startPostgresBroker } from './helpers/postgres-server.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

declare module 'vitest' {
  export interface ProvidedContext {
    tmpRoot: string;
    /** Where test/helpers/postgres.ts asks for the suite's PostgreSQL server. */
    postgresBroker: string;
  }
}

/** Newest modification time under `dir` (0 if it does not exist). */
function newest(dir: string): number {
  let latest = 0;
  try {
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }))
      if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  } catch {
    return 0;
  }
  return latest;
}

/**
 * Process tests run bin/ on dist/, and hashing workers load dist/ even in-process: build it
 * when a source is newer, so `npx vitest` never tests stale code (`npm test` has just built).
 */
function buildIfStale(): void {
  const built = newest(join(ROOT, 'dist'));
  const sources = Math.max(newest(join(ROOT, 'src')), statSync(join(ROOT, 'tsconfig.build.json')).mtimeMs);
  if (built >= sources) return;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  buildIfStale();
  const root = mkdtempSync(join(tmpdir(), 'audience-kit-tests-'));
  project.provide('tmpRoot', root);
  // The PostgreSQL server is chosen (or started) only when a test first asks for a database.
  const postgres = await startPostgresBroker(process.env);
  project.provide('postgresBroker', postgres.url);
  return async () => {
    const closed = await postgres.close().then(
      () => undefined,
      (error: unknown) => error,
    );
    const left = readdirSync(root);
    rmSync(root, { recursive: true, force: true });
    if (left.length > 0) throw new Error(`test files left temporary directories behind: ${left.join(', ')}`);
    if (closed !== undefined) throw closed;
  };
}
