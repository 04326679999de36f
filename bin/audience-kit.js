#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';

// An upload's or a sync's main thread keeps its garbage small: its young generation stays at V8's
// first size (1 MB semi-spaces, not grown to 16 MB ones) and its old generation is collected once it
// has grown by 20% instead of V8's up to 4x. 10M rows: unchanged re-sync 327 -> 248 MB peak RSS at the
// same CPU, upload 380 -> 309-312 MB (docs/performance.md, "Memory of a sync", "Memory of an upload").
// Read as V8 runs, so they take effect here, before the CLI's modules load; the flags are the
// process's, which the CLI owns (the library sets none). The command is the first word (the global
// options before it are flags, as main.ts reads it).
const args = process.argv.slice(2);
const command = args.find((arg) => !arg.startsWith('-'));
if (command === 'sync' || command === 'upload')
  setFlagsFromString('--semi-space-growth-factor=1 --heap-growing-percent=20');
// The commands that hash start their workers first: the workers load their modules (about 0.1 s)
// while this thread loads the CLI's, parses the command line and opens the file, instead of after
// (docs/performance.md, "Sixth pass"). The first pool takes the workers whose limits fit its run
// and ends the rest; a command that stops before hashing exits as before. As many as `--workers`
// says (the cores by default); none for help, or for a value the CLI will refuse.
const at = args.findIndex((arg) => arg === '--workers' || arg.startsWith('--workers='));
const workers = at === -1 ? undefined : Number(args[at].startsWith('--workers=') ? args[at].slice(10) : args[at + 1]);
const help = args.some((arg) => arg === '--help' || arg === '-h');
if ((command === 'hash' || command === 'sync' || command === 'upload') && !help)
  if (workers === undefined || (Number.isSafeInteger(workers) && workers >= 0 && workers <= 256))
    (await import('../dist/hashing/pool.js')).prestartHashWorkers(workers);
const { hidePasswordsFromProcessList } = await import('../dist/cli/process-title.js');
const { main } = await import('../dist/cli/main.js');

hidePasswordsFromProcessList(process.argv);
process.exitCode = await main(args);
