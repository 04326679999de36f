/**
 * The benches (test/bench/*.js) are plain JavaScript run against dist/, so the typecheck does not
 * see what they import: a name moved or no longer exported broke `npm run bench` unseen. This
 * reads each bench's imports of dist/ and checks every name against the module's source.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const BENCH = join(import.meta.dirname, 'bench');

/** `dist/<path>.js` and the names a bench takes from it. */
function distImports(text: string): { path: string; names: string[] }[] {
  // A module named once in a constant (`const SANDBOX = `${ROOT}dist/sandbox/index.js``), then imported by it.
  const named = new Map(
    [...text.matchAll(/const (\w+) = `\$\{ROOT\}dist\/([\w/.-]+)\.js`/g)].map((m) => [m[1] as string, m[2] as string]),
  );
  const target = (spec: string): string | undefined =>
    /dist\/([\w/.-]+)\.js/.exec(spec)?.[1] ?? [...named].find(([name]) => new RegExp(`\\b${name}\\b`).test(spec))?.[1];
  const found: { path: string; names: string[] }[] = [];
  const patterns = [/(?:const|import)\s*\{([^}]+)\}\s*=?\s*(?:await import\(([^)]+)\)|from\s+([^;\n]+))/g];
  for (const re of patterns) {
    for (const m of text.matchAll(re)) {
      const path = target(m[2] ?? m[3] ?? '');
      if (path === undefined) continue;
      const names = (m[1] as string).split(',').map((n) => n.trim().split(/\s+as\s+|:\s*/)[0] as string);
      found.push({ path, names: names.filter((n) => n !== '') });
    }
  }
  return found;
}

describe('the benches import only what dist/ exports', () => {
  const files = readdirSync(BENCH).filter((f) => f.endsWith('.js'));
  it.each(files)('%s', async (file) => {
    for (const { path, names } of distImports(readFileSync(join(BENCH, file), 'utf8'))) {
      const source = join(import.meta.dirname, '..', 'src', `${path}.ts`);
      const mod = (await import(/* @vite-ignore */ source)) as Record<string, unknown>;
      for (const name of names) expect(mod[name], `${file}: ${name} from dist/${path}.js`).toBeDefined();
    }
  });

  it('finds the imports it checks', () => {
    const all = files.flatMap((f) => distImports(readFileSync(join(BENCH, f), 'utf8')));
    expect(all.map((i) => i.path)).toEqual(
      expect.arrayContaining(['sandbox/index', 'identifiers/normalize', 'api/rate-limit', 'index']),
    );
  });
});
