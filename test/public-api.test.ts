import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The package root is a reviewed list. Adding or removing a name is a decision: make it in
 * src/index.ts, test/public-api.json, the README's library section and docs/library.md together.
 */
// The built declarations (test/global-setup.ts builds dist/ when a source is newer; `npm test` has just
// built): the names are the compiler's own, and reading the .d.ts files alone takes a fraction of a second
// where a program over src/ took the compiler seconds.
const ENTRY = fileURLToPath(new URL('../dist/index.d.ts', import.meta.url));
const EXPECTED = JSON.parse(readFileSync(new URL('public-api.json', import.meta.url), 'utf8')) as {
  values: string[];
  types: string[];
};

/** Every name the entry exports, types included, as the compiler sees it. */
function exportedNames(): string[] {
  // Only the package's own declarations: the exported names need no lib, @types or dependency, and
  // leaving those out (only relative imports resolved) keeps the program at the package's own .d.ts files.
  const options: ts.CompilerOptions = {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noLib: true,
    types: [],
    noEmit: true,
  };
  const host = ts.createCompilerHost(options);
  host.resolveModuleNames = (names, containing) =>
    names.map((n) =>
      n.startsWith('.') ? ts.resolveModuleName(n, containing, options, host).resolvedModule : undefined,
    );
  const program = ts.createProgram([ENTRY], options, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(ENTRY);
  const module = source === undefined ? undefined : checker.getSymbolAtLocation(source);
  if (module === undefined) throw new Error(`cannot load ${ENTRY}`);
  return checker.getExportsOfModule(module).map((s) => s.getName());
}

function diff(actual: readonly string[], expected: readonly string[]): { added: string[]; removed: string[] } {
  return {
    added: actual.filter((n) => !expected.includes(n)).sort(),
    removed: expected.filter((n) => !actual.includes(n)).sort(),
  };
}

describe('public API (package root)', () => {
  it('exports exactly the reviewed values', async () => {
    const values = Object.keys(await import('../src/index.js'));
    expect(diff(values, EXPECTED.values)).toEqual({ added: [], removed: [] });
  });

  it('exports exactly the reviewed types', () => {
    const types = exportedNames().filter((n) => !EXPECTED.values.includes(n));
    expect(diff(types, EXPECTED.types)).toEqual({ added: [], removed: [] });
  });

  // Types a caller can name through the ones exported (UploadReport['status'], ClientOptions['credentials'])
  // and values with one generic form (normalizeIdentifier) are not separate names.
  it('stays small (the issue asks for about 60 names)', () => {
    expect(EXPECTED.values.length + EXPECTED.types.length).toBeLessThanOrEqual(62);
  });

  it('lists every error code once, and the codes are snake_case', async () => {
    const { ERROR_CODES } = await import('../src/index.js');
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    for (const code of ERROR_CODES) expect(code).toMatch(/^[a-z][a-z0-9_]*$/);
  });
});

/** The names in backticks in the table rows of `text` (a group column's words are not in backticks). */
function tableNames(text: string): string[] {
  const rows = text.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| group'));
  return rows.flatMap((row) => [...row.matchAll(/`([A-Za-z_]+)`/g)].map((m) => m[1] ?? ''));
}

function docSection(file: string, start: string, end: string): string {
  const text = readFileSync(new URL(file, import.meta.url), 'utf8');
  const from = text.indexOf(start);
  const to = text.indexOf(end, from + start.length);
  if (from < 0 || to < 0) throw new Error(`${file}: no section between ${start} and ${end}`);
  return text.slice(from, to);
}

describe('public API as documented', () => {
  const all = [...EXPECTED.values, ...EXPECTED.types];

  it("README's library section lists exactly the reviewed names", () => {
    const section = docSection('../README.md', '<!-- public-surface:start -->', '<!-- public-surface:end -->');
    expect(diff(tableNames(section), all)).toEqual({ added: [], removed: [] });
  });

  it('docs/library.md says which functions are async (await name(, → Promise<, or "async" beside the name)', async () => {
    const guide = readFileSync(new URL('../docs/library.md', import.meta.url), 'utf8');
    const root = (await import('../src/index.js')) as Record<string, unknown>;
    const isAsync = (v: unknown): boolean => typeof v === 'function' && v.constructor.name === 'AsyncFunction';
    const asyncNames = Object.keys(root).filter((name) => isAsync(root[name]));
    expect(asyncNames).toContain('resolveConnectionConfig');
    // The API client's endpoint table says it once for all of its functions.
    const endpoints = docSection('../docs/library.md', '| function | request | returns |', '\n\n');
    expect(guide).toContain('Endpoint functions are async');
    const said = (name: string): boolean =>
      guide.includes(`await ${name}(`) ||
      endpoints.includes(`\`${name}`) ||
      guide.split('\n').some((l) => l.includes(`\`${name}(`) && /Promise<|\basync\b/i.test(l));
    expect(asyncNames.filter((name) => !said(name))).toEqual([]);
  });

  it("docs/library.md's public surface table lists exactly the reviewed names", () => {
    const section = docSection('../docs/library.md', '## Public surface', '\n## ');
    expect(diff(tableNames(section), all)).toEqual({ added: [], removed: [] });
  });
});

describe('audience-kit/sandbox subpath (built package)', () => {
  // Resolved through package.json `exports` (self-reference), as a user's project would.
  const require = createRequire(import.meta.url);

  it('is importable and requirable; the root does not carry the sandbox', async () => {
    const imported = (await import('audience-kit/sandbox')) as Record<string, unknown>;
    expect(typeof imported.startSandbox).toBe('function');
    const required = require('audience-kit/sandbox') as Record<string, unknown>;
    expect(typeof required.startSandbox).toBe('function');
    const root = require('audience-kit') as Record<string, unknown>;
    expect(typeof root.createClient).toBe('function');
    expect(root.startSandbox).toBeUndefined();
  });
});
