import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/errors.js';
import { EXIT_CODES } from '../src/cli/exit-codes.js';
import { postgresClientMissing } from '../src/state/open-store.js';
import { runCliProcess } from './helpers/cli.js';
import { tempDir } from './helpers/temp.js';

/**
 * `pg` and `pg-copy-streams` are optional peer dependencies: loaded only when a state URL is
 * used, and their absence is a usage error naming the install command, never a crash.
 */
const notFound = (name: string): Error =>
  Object.assign(new Error(`Cannot find package '${name}' imported from /x/dist/state/postgres/store.js`), {
    code: 'ERR_MODULE_NOT_FOUND',
  });

/** NODE_OPTIONS for a CLI process that resolves `pg` as if it were not installed. */
function withoutPg(): string {
  const dir = tempDir('ak-no-pg-');
  writeFileSync(
    join(dir, 'hook.mjs'),
    "export async function resolve(spec, ctx, next) {\n  return next(spec, spec === 'pg' ? { ...ctx, parentURL: 'file:///' } : ctx);\n}\n",
  );
  writeFileSync(
    join(dir, 'register.mjs'),
    "import { register } from 'node:module';\nregister('./hook.mjs', import.meta.url);\n",
  );
  return `--import ${pathToFileURL(join(dir, 'register.mjs')).href}`;
}

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** The modules `entry` loads when it is imported: static value imports and re-exports (not `import type`, not `import()`). */
function loadedBy(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!file.endsWith('.ts')) return;
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
    for (const node of source.statements) {
      const typeOnly = ts.isImportDeclaration(node)
        ? node.importClause?.isTypeOnly === true
        : ts.isExportDeclaration(node) && node.isTypeOnly;
      const from = (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier;
      if (typeOnly || !from || !ts.isStringLiteral(from)) continue;
      const name = from.text;
      visit(name.startsWith('.') ? resolve(dirname(file), name.replace(/\.js$/, '.ts')) : name);
    }
  };
  visit(join(SRC, entry));
  return seen;
}

describe('the PostgreSQL client is optional', () => {
  it('neither the package, the CLI nor anything they import loads pg or pg-copy-streams until a state URL is opened', () => {
    // The CLI loads a command's module when the command runs (main.ts imports none of them).
    const commands = readdirSync(join(SRC, 'cli/commands')).map((f) => `cli/commands/${f}`);
    for (const entry of ['index.ts', 'cli/main.ts', ...commands]) {
      const loaded = loadedBy(entry);
      expect(loaded.size, entry).toBeGreaterThan(10);
      expect(
        [...loaded].filter((m) => m === 'pg' || m === 'pg-copy-streams'),
        entry,
      ).toEqual([]);
    }
    // The check itself: the store's module does load them.
    expect(loadedBy('state/postgres/store.ts')).toContain('pg');
    expect(loadedBy('state/postgres/store.ts')).toContain('pg-copy-streams');
  });

  it('a client package not found is state_client_missing with the install command; other failures pass', () => {
    for (const name of ['pg', 'pg-copy-streams']) {
      const error = postgresClientMissing(notFound(name));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toMatchObject({ code: 'state_client_missing' });
      expect(error?.message).toContain(`the package ${name}`);
      expect(error?.fix).toContain('npm install pg@^8.23.1 pg-copy-streams@^7.0.0');
    }
    expect(postgresClientMissing(notFound('zod'))).toBeUndefined();
    expect(postgresClientMissing(new Error("Cannot find package 'pg'"))).toBeUndefined();
    expect(postgresClientMissing(undefined)).toBeUndefined();
  });

  it('without pg, a state URL exits 2 naming the install command', async () => {
    const cwd = tempDir('ak-no-pg-run-');
    const env = { NODE_OPTIONS: withoutPg() };
    const listed = await runCliProcess(['audit', 'list', '--state', 'postgres://ak@127.0.0.1:1/ak'], { cwd, env });
    expect(listed.code, listed.stderr).toBe(EXIT_CODES.usage);
    expect(listed.stderr).toMatch(/needs the package pg, which is not installed/);
    expect(listed.stderr).toMatch(/fix: npm install pg@\^8\.23\.1 pg-copy-streams@\^7\.0\.0/);
  });
});
