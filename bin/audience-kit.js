#!/usr/bin/env node
const { hidePasswordsFromProcessList } = await import('../dist/cli/process-title.js');
hidePasswordsFromProcessList(process.argv);
// An upload's or a sync's main thread keeps its garbage small: its young generation stays at V8's
// first size (1 MB semi-spaces, not grown to 16 MB ones) and its old generation is collected once it
// has grown by 20% instead of V8's up to 4x (docs/performance.md, "Memory of a sync", "Memory of an
// upload"). Read as V8 runs, so they take effect here, before the CLI's modules load, and set again
// after each hashing worker starts, which resets them (src/util/heap-flags.ts); the flags are the
// process's, which the CLI owns (the library sets none). The command is the first word (the global
// options before it are flags, as main.ts reads it).
const args = process.argv.slice(2);
const command = args.find((arg) => !arg.startsWith('-'));
if (command === 'sync' || command === 'upload')
  (await import('../dist/util/heap-flags.js')).setMainHeapFlags(
    '--semi-space-growth-factor=1 --heap-growing-percent=20',
  );
// `hash` starts its hashing workers before the CLI loads (src/cli/early-workers.ts).
(await import('../dist/cli/early-workers.js')).startEarlyWorkers(args);
const { main } = await import('../dist/cli/main.js');

process.exitCode = await main(args);
