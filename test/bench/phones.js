// The differential phone check of test/phone-differential.test.ts on a big generated corpus (the suite runs
// 10,000 rows): `npm run bench -- phones [--rows N]`, 300,000 rows by default. Fails on any mismatch (the
// test's own assertions, through vitest's exit code).
import { spawnSync } from 'node:child_process';
import { opt, ROOT } from './common.js';

const vitest = `${ROOT}node_modules/vitest/vitest.mjs`;
const rows = opt('rows', '300000');
const started = Date.now();
const result = spawnSync(process.execPath, [vitest, 'run', 'test/phone-differential.test.ts'], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, PHONE_DIFFERENTIAL_ROWS: rows },
});
console.log(`phones: ${rows} generated rows, ${((Date.now() - started) / 1000).toFixed(1)} s, exit ${result.status}`);
process.exitCode = result.status ?? 1;
