#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';

// A sync's main thread keeps its young generation at V8's first size (1 MB semi-spaces) instead of
// growing it to 16 MB ones while it plans: about 50 MB less peak RSS for a 10M-row re-sync
// (docs/performance.md). Set before the CLI's modules load; its hashing workers start at their own
// limit (hashing/pool.ts).
if (process.argv[2] === 'sync') setFlagsFromString('--semi-space-growth-factor=1');
const { hidePasswordsFromProcessList } = await import('../dist/cli/process-title.js');
const { main } = await import('../dist/cli/main.js');

hidePasswordsFromProcessList(process.argv);
process.exitCode = await main(process.argv.slice(2));
