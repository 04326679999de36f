#!/usr/bin/env node
// `prepare`: builds dist/ whenever npm installs or packs this package from source. npm installs
// the devDependencies of a git dependency before its prepare, but not those of a directory
// (`npm install ../audience-kit`), where tsc would be missing: then the checkout's own
// dependencies are installed first (`npm ci`, scripts off), so installing a checkout just works.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

function run(command, args, env = process.env) {
  const r = spawnSync(command, args, { cwd: root, stdio: 'inherit', env });
  if (r.error !== undefined) throw r.error;
  if (r.status !== 0) process.exit(r.status ?? 1);
}

// Installed as a dependency of another project (its directory is npm's local prefix), or in
// this checkout itself, where missing devDependencies are the user's choice (--omit=dev).
const prefix = process.env['npm_config_local_prefix'];
const asDependency = prefix !== undefined && resolve(prefix) !== resolve(root);
if (!existsSync(tsc) && !asDependency) {
  console.error('audience-kit: TypeScript is missing; run `npm ci` (with the devDependencies) to build dist/');
  process.exit(1);
}
if (!existsSync(tsc)) {
  console.error('audience-kit: building from source needs its devDependencies; installing them in', root);
  // The outer install's settings (its prefix, --omit=dev, --global...) are not this checkout's.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^npm_(config|package|lifecycle)_/i.test(k)),
  );
  const npm = process.env['npm_execpath'];
  const args = ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--include=dev'];
  if (npm) run(process.execPath, [npm, ...args], env);
  else run('npm', args, env);
}
// dist/ already built from these very sources (by `npm ci` a moment ago, before `npx audience-kit`
// in the checkout installs it into npx's cache and runs this again): nothing to do. Judged by the
// sources' content, not their times, so a stale dist/ is never kept.
const stamp = join(root, 'node_modules', '.cache', 'audience-kit', 'dist-sources.sha256');
const sources = sourcesDigest();
if (existsSync(join(root, 'dist', 'index.js')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === sources) {
  process.exit(0);
}
run(process.execPath, [tsc, '-p', 'tsconfig.build.json']);
mkdirSync(dirname(stamp), { recursive: true });
writeFileSync(stamp, sources);

/** SHA-256 of what dist/ is built from: src/, the tsconfig files and the compiler's version. */
function sourcesDigest() {
  const hash = createHash('sha256');
  const files = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .sort()
    .map((f) => join('src', f));
  for (const file of [...files, 'tsconfig.json', 'tsconfig.build.json', 'node_modules/typescript/package.json']) {
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(root, file)))
      .update('\0');
  }
  return hash.digest('hex');
}
