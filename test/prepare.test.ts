import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/temp.js';

// `npx audience-kit` in a checkout installs the checkout into npx's cache, which runs `prepare`
// again right after `npm ci` built dist/: it must not rebuild (18-45 s) from the same sources,
// and must rebuild from changed ones. Run on a copy of the script with a stand-in compiler.

const PREPARE = new URL('../scripts/prepare.js', import.meta.url);

function checkout(): { root: string; builds: () => number; prepare: () => void } {
  const root = tempDir('ak-prepare-');
  for (const dir of ['scripts', 'src/cli', 'node_modules/typescript/bin'])
    mkdirSync(join(root, dir), { recursive: true });
  copyFileSync(PREPARE, join(root, 'scripts', 'prepare.js'));
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }');
  for (const f of ['tsconfig.json', 'tsconfig.build.json']) writeFileSync(join(root, f), '{}');
  writeFileSync(join(root, 'node_modules/typescript/package.json'), '{ "version": "5.9.3" }');
  // The stand-in tsc: writes dist/index.js and counts its runs.
  writeFileSync(
    join(root, 'node_modules/typescript/bin/tsc'),
    "const fs = require('node:fs'); fs.mkdirSync('dist', { recursive: true }); fs.writeFileSync('dist/index.js', ''); fs.appendFileSync('builds.log', 'x');",
  );
  writeFileSync(join(root, 'src', 'index.ts'), 'export const a = 1;\n');
  writeFileSync(join(root, 'src', 'cli', 'main.ts'), 'export const b = 2;\n');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('npm_')));
  return {
    root,
    builds: () => readFileSync(join(root, 'builds.log'), 'utf8').length,
    prepare: () => {
      const r = spawnSync(process.execPath, [join(root, 'scripts', 'prepare.js')], {
        cwd: root,
        env,
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
    },
  };
}

describe('prepare (scripts/prepare.js)', () => {
  it('builds dist/ once for the same sources, again when a source, a tsconfig or the compiler changes', () => {
    const c = checkout();
    c.prepare();
    expect(c.builds()).toBe(1);
    c.prepare();
    expect(c.builds()).toBe(1);
    writeFileSync(join(c.root, 'src', 'cli', 'main.ts'), 'export const b = 3;\n');
    c.prepare();
    expect(c.builds()).toBe(2);
    writeFileSync(join(c.root, 'tsconfig.build.json'), '{ "compilerOptions": {} }');
    c.prepare();
    expect(c.builds()).toBe(3);
    writeFileSync(join(c.root, 'node_modules/typescript/package.json'), '{ "version": "5.9.4" }');
    c.prepare();
    c.prepare();
    expect(c.builds()).toBe(4);
  });
});
