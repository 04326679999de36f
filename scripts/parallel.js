#!/usr/bin/env node
// Runs npm scripts at once (`node scripts/parallel.js check lint:prettier test:run`): each of the
// checks is one single-threaded process, and the tests spend part of their time waiting (a
// local server, an fsync, a gate), so on two cores running them side by side shortens the wait.
// The last script runs in the foreground: it keeps the terminal (vitest draws its progress
// there). The others' output is printed whole once the last one has ended, in the order given.
// The exit code is the first failure's, in that order: a check that fails still fails the run.
import { spawn } from 'node:child_process';

const npm = process.env['npm_execpath'];

function run(script, foreground) {
  return new Promise((resolve) => {
    // Through the npm that started us when there is one (no shell, works on Windows too).
    const [command, args] = npm
      ? [process.execPath, [npm, 'run', '--silent', script]]
      : ['npm', ['run', '--silent', script]];
    const child = spawn(command, args, {
      stdio: foreground ? 'inherit' : ['ignore', 'pipe', 'pipe'],
      shell: !npm && process.platform === 'win32',
    });
    const output = [];
    child.stdout?.on('data', (b) => output.push(b));
    child.stderr?.on('data', (b) => output.push(b));
    child.on('error', (error) => resolve({ script, code: 1, output: [Buffer.from(`${error.message}\n`)] }));
    child.on('close', (code) => resolve({ script, code: code ?? 1, output }));
  });
}

const scripts = process.argv.slice(2);
const last = scripts.length - 1;
const results = await Promise.all(scripts.map((script, i) => run(script, i === last)));
let failed = 0;
for (const [i, { script, code, output }] of results.entries()) {
  if (i < last || code !== 0) process.stdout.write(`> ${script}${code === 0 ? '' : ` (failed, exit ${code})`}\n`);
  process.stdout.write(Buffer.concat(output));
  if (code !== 0 && failed === 0) failed = code;
}
process.exitCode = failed;
