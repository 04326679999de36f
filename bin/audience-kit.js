#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';

// A sync keeps its snapshot's fingerprints (6 bytes per user) beside the hashing pipeline; young
// generation semi-spaces of 2 MB instead of up to 16 MB keep a 10M-user sync's peak RSS under
// 300 MB, at no measured cost in time (docs/performance.md). Set before anything is allocated.
if (process.argv[2] === 'sync') setFlagsFromString('--max-semi-space-size=2');
const { main } = await import('../dist/cli/main.js');

process.exitCode = await main(process.argv.slice(2));
