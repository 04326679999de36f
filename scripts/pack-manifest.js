#!/usr/bin/env node
// `prepack` / `postpack`: the packed package.json has no install-time script, so a project that
// installs the tarball with `npm install --strict-allow-scripts` needs to approve none. `prepare`
// builds dist/ for an install from a checkout or a git URL (which have no dist/); npm counts it as
// an install script of any non-registry dependency, a tarball file included, although a tarball
// is never prepared and already holds dist/. So `prepack` builds dist/ (scripts/prepare.js), then
// writes the manifest without it (the original kept beside it), and `postpack` puts the original
// back; a pack that died in between is undone by the next `strip` or `restore`.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const manifest = join(root, 'package.json');
const kept = join(root, 'node_modules', '.cache', 'audience-kit', 'package.json.before-pack');

/** Scripts npm runs when a package is installed (`prepare`: for a git, directory or tarball dependency). */
export const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

/** The manifest as packed: `pkg` without its install-time scripts. */
export function packedManifest(pkg) {
  const scripts = Object.fromEntries(Object.entries(pkg.scripts ?? {}).filter(([k]) => !INSTALL_SCRIPTS.includes(k)));
  return { ...pkg, scripts };
}

function restore() {
  if (existsSync(kept)) renameSync(kept, manifest);
}

function strip() {
  restore();
  mkdirSync(dirname(kept), { recursive: true });
  const text = readFileSync(manifest, 'utf8');
  writeFileSync(kept, text);
  writeFileSync(manifest, `${JSON.stringify(packedManifest(JSON.parse(text)), null, 2)}\n`);
}

const mode = process.argv[2];
if (mode === 'strip') strip();
else if (mode === 'restore') restore();
else if (mode !== undefined) {
  console.error('usage: node scripts/pack-manifest.js strip|restore');
  process.exit(2);
}
