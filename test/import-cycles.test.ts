import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Linter } from 'eslint';
import ts from 'typescript';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

/**
 * The layers of src/ (eslint.config.js `LAYERS`, enforced file by file by its no-restricted-imports
 * configs) checked here on the resolved graph too, and no import cycle in src/, type-only imports included (what `madge --circular` reports): a
 * cycle means two modules are one concern split in two, or a shared piece that wants its own
 * module.
 */
const SRC = fileURLToPath(new URL('../src/', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports and re-exports of a file, resolved to source paths. */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name.replace(/\.js$/, '.ts')));
}

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('module graph of src/', () => {
  it('has no import cycle', () => {
    const graph = new Map(sourceFiles(SRC).map((f) => [f, importsOf(f)]));
    expect(graph.size).toBeGreaterThan(30);
    const named = cycles(graph).map((c) => c.map((f) => relative(SRC, f)));
    expect(named).toEqual([]);
  });

  it('hashing imports nothing of state: the workers look users up through hashing/known-users.ts', () => {
    const hashing = sourceFiles(join(SRC, 'hashing'));
    expect(hashing.length).toBeGreaterThan(3);
    const crossing = hashing.flatMap((f) =>
      importsOf(f)
        .filter((i) => relative(SRC, i).startsWith('state'))
        .map((i) => `${relative(SRC, f)} -> ${relative(SRC, i)}`),
    );
    expect(crossing).toEqual([]);
  });

  it('finds a cycle when there is one (the check itself works)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(cycles(graph)).toEqual([['a', 'b', 'c']]);
  });
});

/** The layer table and its lint configs, from eslint.config.js (plain JavaScript, hence typed here). */
const CONFIG: string = '../eslint.config.js';
const { forbidden, LAYER_CONFIGS, LAYERS } = (await import(CONFIG)) as {
  forbidden: (unit: string) => Array<[string, string]>;
  LAYER_CONFIGS: Linter.Config[];
  LAYERS: string[][];
};

/** The layer unit of a source path: its folder under src/, or a top-level file's name. */
const unitOf = (file: string): string => relative(SRC, file).split('/')[0]!.replace(/\.ts$/, '');

describe('layers of src/', () => {
  it('every folder and top-level file of src/ has a layer', () => {
    const units = readdirSync(SRC, { withFileTypes: true }).map((e) => e.name.replace(/\.ts$/, ''));
    expect(units.filter((u) => !LAYERS.flat().includes(u))).toEqual([]);
  });

  it('no import reaches a unit its layer may not import (the resolved graph, as the lint rule reads it)', () => {
    const crossing = sourceFiles(SRC).flatMap((f) => {
      const rules = new Map(forbidden(unitOf(f)));
      return importsOf(f)
        .filter((i) => rules.has(unitOf(i)))
        .map((i) => `${relative(SRC, f)} -> ${relative(SRC, i)}: ${rules.get(unitOf(i))}`);
    });
    expect(crossing).toEqual([]);
  });

  it('the lint rule names the layer rule and the offending import', () => {
    const linter = new Linter({ configType: 'flat', cwd: fileURLToPath(new URL('..', import.meta.url)) });
    const config = [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, ...LAYER_CONFIGS];
    const lint = (file: string, line: string): string[] => linter.verify(line, config, file).map((m) => m.message);
    expect(lint('src/state/journal.ts', "import type { BatchGroup } from '../upload/plan.js';")).toEqual([
      expect.stringMatching(
        /'\.\.\/upload\/plan\.js'.*layers: state \(layer 3\) imports nothing of upload, a layer above it/,
      ),
    ]);
    expect(lint('src/state/postgres/store.ts', "export * from '../../upload/plan.js';")).toEqual([
      expect.stringMatching(/no barrel: export each name by name/),
      expect.stringMatching(/layers: state \(layer 3\) imports nothing of upload/),
    ]);
    expect(lint('src/upload/target.ts', "export * from './plan.js';")).toEqual([
      expect.stringMatching(/no barrel: export each name by name/),
    ]);
    expect(lint('src/upload/target.ts', "export { BatchPacker } from './plan.js';")).toEqual([
      expect.stringMatching(/no re-export: importers take the name from the module that defines it/),
    ]);
    expect(lint('src/index.ts', "export { BatchPacker } from './upload/plan.js';")).toEqual([]);
    expect(lint('src/index.ts', "export * from './upload/plan.js';")).toEqual([
      expect.stringMatching(/no barrel: export each name by name/),
    ]);
    expect(lint('src/sandbox/users.ts', "import { IDENTIFIER_TYPES } from '../platform/users.js';")).toEqual([
      expect.stringMatching(/the sandbox imports none of the client's rules/),
    ]);
    expect(lint('src/cli/commands/sync.ts', "import { x } from './upload.js';")).toEqual([
      expect.stringMatching(/a command imports no other command/),
    ]);
    expect(lint('src/api/endpoints.ts', "import type { AudienceUser } from '../identifiers/normalize.js';")).toEqual([
      expect.stringMatching(/api and identifiers share layer 6: neither imports the other/),
    ]);
    expect(lint('src/upload/run.ts', "import { startSandbox } from '../sandbox/index.js';")).toEqual([
      expect.stringMatching(/only the CLI imports the sandbox/),
    ]);
    expect(lint('src/cli/send-session.ts', "import { startSandbox } from '../sandbox/server.js';")).toEqual([
      expect.stringMatching(/the CLI reaches the sandbox through its entry/),
    ]);
    expect(lint('src/cli/send-session.ts', "import { startSandbox } from '../sandbox/index.js';")).toEqual([]);
    expect(lint('src/upload/run.ts', "import { openStore } from '../state/open-store.js';")).toEqual([]);
    expect(lint('src/sandbox/server.ts', "import { isLoopbackHost } from '../util/host.js';")).toEqual([]);
  });
});
