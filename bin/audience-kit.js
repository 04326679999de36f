#!/usr/bin/env node
const { hidePasswordsFromProcessList } = await import('../dist/cli/process-title.js');
hidePasswordsFromProcessList(process.argv);
// An upload's main thread keeps its garbage small: its young generation stays at V8's first size (1 MB
// semi-spaces, not grown to 16 MB ones), and an upload's or a sync's old generation is collected once
// it has grown by 20% instead of V8's up to 4x (docs/performance.md, "Memory of an upload", "Memory of
// a sync"). Not the young generation of a sync: it cost its first sync 40% more CPU, for memory it
// has no need of. Read as V8 runs, so they take effect when set here, before the CLI loads, and are set
// again after each hashing worker starts, which undoes the first (src/util/heap-flags.ts); the flags
// are the process's, which the CLI owns (the library sets none). The command is the first word (the
// global options before it are flags, as main.ts reads it).
const args = process.argv.slice(2);
const command = args.find((arg) => !arg.startsWith('-'));
const heapFlags = {
  upload: '--semi-space-growth-factor=1 --heap-growing-percent=20',
  sync: '--heap-growing-percent=20',
};
if (command === 'upload' || command === 'sync')
  (await import('../dist/util/heap-flags.js')).setMainHeapFlags(heapFlags[command]);
// `hash` starts its hashing workers before the CLI loads (src/cli/early-workers.ts).
(await import('../dist/cli/early-workers.js')).startEarlyWorkers(args);
const { main } = await import('../dist/cli/main.js');

process.exitCode = await main(args);
// Once nothing is left to do (output written, its errors reported), the process waits IDLE_MS more,
// then ends by process.exit, not by its event loop running out. On Node before 24 the main isolate,
// ending by itself, leaves the platform before V8 disposes of it, and a compile job still running on
// a V8 thread then aborts the process (SIGABRT, "Assertion failed: (data.first) != nullptr" in
// NodePlatform::ForIsolate; Node 24 disposes first). Seen once in CI, after an upload had saved its
// journal and printed its report: the exit code 130 became a crash. process.exit tears down no main
// isolate (the hashing workers' still are, idle by then). It joins V8's threads instead, which could
// wait forever for a compile job parked until the main thread collects garbage (nodejs/node#54918,
// seen with Maglev, Node 22 on): the idle wait lets such jobs end first, the main thread serving them.
const IDLE_MS = 30;
let ending = false;
process.on('beforeExit', () => {
  if (ending) return;
  ending = true;
  setTimeout(() => process.exit(), IDLE_MS);
});
