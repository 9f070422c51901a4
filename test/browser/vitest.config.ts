// The dashboard's browser suite (`npm run test:browser`): one daemon with a seeded history and one
// headless Chromium, both started once in global-setup.ts and shared by every file, which run one
// at a time (the machine has two cores; the browser and the daemon need them more than vitest does).
import path from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: path.resolve(import.meta.dirname, '../..'),
  test: {
    include: ['test/browser/**/*.test.ts'],
    globalSetup: ['test/browser/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    isolate: false,
    testTimeout: 60_000,
    // Pages render when their queries answer; on a loaded two-core machine that can take seconds
    // (vitest's default poll gives up after one).
    expect: { poll: { timeout: 15_000, interval: 50 } },
    // The build of web/dist and the seeded history (with an RCA) run before the first file.
    hookTimeout: 300_000,
  },
});
