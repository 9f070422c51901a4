import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The browser suite has its own config and command (npm run test:browser: Chromium, web/dist).
    exclude: ['test/browser/**'],
    // Builds the CLI once (scripts/build-cli.mjs) for the tests that spawn it.
    globalSetup: ['test/helpers/global-setup.ts'],
    // chDB binds one data directory per process: forks, not threads (test/helpers/daemon.ts keys
    // the path by pid, and each daemon gets a database of its own on it).
    pool: 'forks',
    // A worker keeps its process and module cache from file to file: importing src/ and chDB once
    // per worker instead of once per file (no test mocks modules or changes process-wide state).
    isolate: false,
    // Half again as many workers as cores: a worker spends about a third of its time waiting on the
    // processes, servers and timers its tests start, and a third worker fills those gaps. On two
    // cores, in one run: 2 workers 137 s, 3 workers 118 s, 4 workers 126 s (233, 226, 246 CPU-s).
    maxWorkers: Math.ceil(availableParallelism() * 1.5),
    // V8 collects garbage on each worker's own thread instead of background threads: with three
    // workers and chDB's pools already on two cores, the helpers only add contention. Full runs on
    // two cores, alternating: 160 and 168 s (302 and 321 CPU-s) against 170 and 186 s (323 and 354).
    execArgv: ['--single-threaded-gc'],
    // Ceilings, not targets: tests wait for conditions, and with both cores busy beside the suite a
    // test takes two to three times as long as on a quiet machine.
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
