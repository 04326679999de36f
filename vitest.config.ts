import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Child processes (not threads): tests start worker threads and set process.env.TMPDIR.
    pool: 'forks',
    // Vitest's default on 2 cores is 1 worker; most CLI and client tests wait on a local
    // server, a journal fsync or a deliberate 120 ms sandbox delay, so 3 overlap those waits
    // (measured: 103 s against 175 s for the test files alone, on a loaded 2-core machine).
    maxWorkers: 3,
    // A worker runs its files one after another in the same process, keeping loaded modules:
    // 15 s less CPU per run. test/setup.ts still gives each file its own TMPDIR and checks it.
    isolate: false,
    // The longest files first (test/sequencer.ts): on a fresh clone vitest has no durations and
    // orders by file size, so a short file with long waits could start last and end the run alone.
    sequence: { sequencer: LongestFirst },
  },
});
