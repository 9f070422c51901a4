// What the `flakehouse run --verify-new` / `--verify-fix` tests share (test/e2e/cli-verify*.test.ts,
// a file per runner so the suite's workers share them): a real daemon started in beforeAll and
// closed in afterAll, a scratch root, a directory where test fixtures count their invocations, and
// the environment the CLI process gets (only this, and PATH: CI's variables cannot leak in).
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startTestDaemon, type TestDaemon } from './daemon.js';

export interface VerifyBench {
  /** The daemon (set once beforeAll ran). */
  readonly td: TestDaemon;
  /** A scratch directory of this file, removed in afterAll. */
  root: string;
  /** Where fixtures count their runs: one file per test title holding the count. */
  counters: string;
  /** The CLI's environment for a run of `sha` on `branch`. */
  env: (branch: string, sha: string, extra?: Record<string, string>) => Record<string, string>;
  /** How many times the test `title` ran (its counter file). */
  counter: (title: string) => number;
}

/** Registers the hooks that start and stop the daemon; call at the top of a test file. */
export function useVerifyBench(tag: string): VerifyBench {
  const root = fs.mkdtempSync(path.join(tmpdir(), `fh-e2e-${tag}-`));
  const counters = path.join(root, 'counters');
  let td: TestDaemon | undefined;
  beforeAll(async () => {
    // Polling the read API counts against the per-project rate limit; these files are not about it.
    td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
    fs.mkdirSync(counters, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await td?.close();
    fs.rmSync(root, { recursive: true, force: true });
  });
  const daemon = (): TestDaemon => {
    if (!td) throw new Error('the daemon is not started yet (use the bench inside a test)');
    return td;
  };
  return {
    get td() {
      return daemon();
    },
    root,
    counters,
    env: (branch, sha, extra = {}) => ({
      HOME: process.env.HOME ?? root,
      SERVICE_ENDPOINT: daemon().url,
      SERVICE_TOKEN: daemon().token,
      SERVICE_BUFFER_DIR: path.join(root, 'buffer'),
      SERVICE_COMMIT_SHA: sha,
      SERVICE_BRANCH: branch,
      COUNTERS: counters,
      ...extra,
    }),
    counter: (title) => Number(fs.readFileSync(path.join(counters, title), 'utf8')),
  };
}
