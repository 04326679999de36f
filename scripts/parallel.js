#!/usr/bin/env node
// Runs npm scripts at once (`node scripts/parallel.js lint typecheck build`): each is one
// single-threaded process, so on two cores running them side by side halves the wait.
// Each script's output is printed whole when it ends, in the order given; the exit code is
// the first failure's.
import { spawn } from 'node:child_process';

const npm = process.env['npm_execpath'];
const runs = process.argv.slice(2).map(
  (script) =>
    new Promise((resolve) => {
      // Through the npm that started us when there is one (no shell, works on Windows too).
      const [command, args] = npm
        ? [process.execPath, [npm, 'run', '--silent', script]]
        : ['npm', ['run', '--silent', script]];
      const child = spawn(command, args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        shell: !npm && process.platform === 'win32',
      });
      const output = [];
      child.stdout.on('data', (b) => output.push(b));
      child.stderr.on('data', (b) => output.push(b));
      child.on('error', (error) => resolve({ script, code: 1, output: [Buffer.from(`${error.message}\n`)] }));
      child.on('close', (code) => resolve({ script, code: code ?? 1, output }));
    }),
);

let failed = 0;
for (const run of runs) {
  const { script, code, output } = await run;
  process.stdout.write(`> ${script}${code === 0 ? '' : ` (failed, exit ${code})`}\n`);
  process.stdout.write(Buffer.concat(output));
  if (code !== 0 && failed === 0) failed = code;
}
process.exitCode = failed;
