// `npm run bench [-- NAMES [OPTIONS]]`: runs each benchmark (default hash,upload,sync,phones; also hostile, a few minutes,
// and profile: where the CPU of `hash` goes, per thread and stage)
// in its own process so peak RSS is measured per bench.
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

const benches = (process.argv[2] ?? 'hash,upload,sync,phones').split(',');
console.log(`machine: ${cpus().length} cores, node ${process.version}`);
for (const name of benches) {
  const file = fileURLToPath(new URL(`./${name}.js`, import.meta.url));
  console.log(`\n== ${name}`);
  const result = spawnSync(process.execPath, ['--expose-gc', file, ...process.argv.slice(3)], { stdio: 'inherit' });
  if (result.status !== 0) process.exitCode = result.status ?? 1;
}
