// The shipped reporters (`flakehouse/vitest`, `flakehouse/jest`, `flakehouse/playwright`) run inside
// the real runners on the sample projects of test/fixtures/runners/ (retries on; a pass, a test
// that fails once and passes on retry, a hard failure, a skip) and deliver to the real daemon; the
// run is then read back through the API (and the executions table for what the API leaves out).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { REPO_ROOT } from '../helpers/process.js';

const SAMPLES = path.join(REPO_ROOT, 'test/fixtures/runners');
const BINS = {
  vitest: [path.join(REPO_ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.config.ts'],
  jest: [path.join(REPO_ROOT, 'node_modules/jest/bin/jest.js'), '--config', 'jest.config.cjs', '--ci'],
  playwright: [path.join(REPO_ROOT, 'node_modules/@playwright/test/cli.js'), 'test', '--config', 'playwright.config.ts'],
} as const;
type Runner = keyof typeof BINS;

interface RunnerOutcome {
  code: number | null;
  output: string;
}

let td: TestDaemon;
let scratch: string;

beforeAll(async () => {
  // Polling the read API counts against the per-project rate limit; this file is not about it.
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
  scratch = mkdtempSync(path.join(tmpdir(), 'fh-runners-'));
});

afterAll(async () => {
  await td?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/**
 * Runs a sample project with its runner, as CI would: its own cwd and a clean environment (no CI
 * variables, nothing of this Vitest process), the daemon's endpoint and token.
 */
function runSample(runner: Runner, env: Record<string, string> = {}): Promise<RunnerOutcome> {
  const sampleTmp = mkdtempSync(path.join(scratch, `${runner}-`));
  const child = spawn(process.execPath, [...BINS[runner]], {
    cwd: path.join(SAMPLES, runner),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? sampleTmp,
      FH_SAMPLE_TMP: sampleTmp,
      SERVICE_ENDPOINT: td.url,
      SERVICE_TOKEN: td.token,
      SERVICE_COMMIT_SHA: 'abc1234',
      SERVICE_BRANCH: `sample-${runner}`,
      SERVICE_BUFFER_DIR: path.join(sampleTmp, 'buffer'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

interface RunDetail {
  id: string;
  status: string;
  branch: string;
  commitSha: string;
  counts: { total: number; passed: number; failed: number; skipped: number; flaky: number };
  executions: {
    id: string;
    testIdentityId: string;
    filePath: string;
    suite: string;
    title: string;
    status: string;
    attempt: number;
    durationMs: number;
    errorMessage: string | null;
    artifacts: { name: string; contentType: string; path: string; sizeBytes?: number }[];
  }[];
}

/** The one run the sample delivered, once the worker has processed it. */
async function deliveredRun(runner: Runner): Promise<RunDetail> {
  const listed = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs?branch=sample-${runner}`);
    return res.status === 200 && res.json.items.length > 0 ? res.json.items : undefined;
  }, 30_000);
  expect(listed).toHaveLength(1);
  const res = await td.request('GET', `/v1/runs/${listed[0].id}`);
  expect(res.status).toBe(200);
  return res.json as RunDetail;
}

interface StoredExecution {
  id: string;
  title: string;
  attempt: number;
  status: string;
  retry_of: string | null;
  error_type: string;
  error_message: string;
  error_stack: string;
}

/** What the API does not show: retry links, error type and stack. */
async function storedExecutions(runId: string): Promise<StoredExecution[]> {
  const store = td.daemon.store;
  return store.query<StoredExecution>(
    `SELECT toString(id) AS id, title, attempt, status, toString(retry_of) AS retry_of, error_type, error_message, error_stack
     FROM ${store.table('executions')} WHERE run_id = {runId:UUID} ORDER BY title, attempt`,
    { runId },
  );
}

function attemptsOf(run: RunDetail, title: string): RunDetail['executions'] {
  return run.executions.filter((e) => e.title === title).sort((a, b) => a.attempt - b.attempt);
}

/** The shared expectations: one flaky test (fail, then pass on retry), one hard failure (3 fails). */
async function expectFlakyAndFailure(
  run: RunDetail,
  t: { file: string; flakySuite: string; flakyTitle: string; failSuite: string; failTitle: string; failMessage: string; passTitle: string; skipTitle: string },
): Promise<void> {
  expect(run.status).toBe('failed');
  expect(run.commitSha).toBe('abc1234');

  const flaky = attemptsOf(run, t.flakyTitle);
  expect(flaky.map((e) => [e.attempt, e.status])).toEqual([
    [1, 'fail'],
    [2, 'flaky'],
  ]);
  for (const e of flaky) expect([e.filePath, e.suite]).toEqual([t.file, t.flakySuite]);
  expect(flaky[0]!.errorMessage).toBeTruthy();
  expect(flaky[1]!.errorMessage ?? '').toBe('');
  // Both attempts are one test.
  expect(flaky[1]!.testIdentityId).toBe(flaky[0]!.testIdentityId);

  const failed = attemptsOf(run, t.failTitle);
  expect(failed.map((e) => [e.attempt, e.status])).toEqual([
    [1, 'fail'],
    [2, 'fail'],
    [3, 'fail'],
  ]);
  for (const e of failed) {
    expect([e.filePath, e.suite]).toEqual([t.file, t.failSuite]);
    expect(e.errorMessage).toBe(t.failMessage);
  }

  expect(attemptsOf(run, t.passTitle).map((e) => [e.attempt, e.status])).toEqual([[1, 'pass']]);
  expect(attemptsOf(run, t.skipTitle).map((e) => [e.attempt, e.status])).toEqual([[1, 'skip']]);

  // Each retry points at the attempt before it; the hard failure keeps its type and stack.
  const stored = await storedExecutions(run.id);
  const byTitle = (title: string) => stored.filter((s) => s.title === title);
  const [f1, f2] = byTitle(t.flakyTitle);
  expect(f1!.retry_of).toBeNull();
  expect(f2!.retry_of).toBe(f1!.id);
  const [h1, h2, h3] = byTitle(t.failTitle);
  expect([h1!.retry_of, h2!.retry_of, h3!.retry_of]).toEqual([null, h1!.id, h2!.id]);
  for (const h of [h1!, h2!, h3!]) {
    expect(h.error_type).toBe('TypeError');
    expect(h.error_stack).toContain(path.basename(t.file));
  }
}

describe('runner reporters against the real daemon', () => {
  it('vitest (`retry: 2`, json transport): every attempt, the flaky test, the failure, the annotation file', async () => {
    const out = await runSample('vitest', { SERVICE_TRANSPORT: 'json' });
    expect(out.code, out.output).toBe(1); // the hard failure fails the command, the reporter does not
    expect(out.output).toMatch(/flakehouse: sent 8 executions/);
    const run = await deliveredRun('vitest');
    expect(run.counts).toEqual({ total: 5, passed: 2, failed: 1, skipped: 1, flaky: 1 });
    await expectFlakyAndFailure(run, {
      file: 'test/fixtures/runners/vitest/cart.spec.ts',
      flakySuite: 'cart > coupons',
      flakyTitle: 'applies a coupon',
      failSuite: 'cart',
      failTitle: 'computes tax',
      failMessage: 'tax table missing',
      passTitle: 'adds an item',
      skipTitle: 'ships abroad',
    });
    const [flaky1] = attemptsOf(run, 'applies a coupon');
    expect(flaky1!.errorMessage).toContain('coupon service warming up');
    const [receipt] = attemptsOf(run, 'prints a receipt');
    expect(receipt!.status).toBe('pass');
    expect(receipt!.artifacts).toEqual([expect.objectContaining({ name: 'receipt', contentType: 'text/plain', sizeBytes: 9 })]);
    expect(path.isAbsolute(receipt!.artifacts[0]!.path)).toBe(true);
  }, 120_000);

  it('jest (`jest.retryTimes(2)`, OTLP transport): every attempt as jest-circus ran it', async () => {
    const out = await runSample('jest');
    expect(out.code, out.output).toBe(1);
    expect(out.output).toMatch(/flakehouse: sent 7 executions/);
    const run = await deliveredRun('jest');
    expect(run.counts).toEqual({ total: 4, passed: 1, failed: 1, skipped: 1, flaky: 1 });
    await expectFlakyAndFailure(run, {
      file: 'test/fixtures/runners/jest/cart.spec.cjs',
      flakySuite: 'cart > coupons',
      flakyTitle: 'applies a coupon',
      failSuite: 'cart',
      failTitle: 'computes tax',
      failMessage: 'tax table missing',
      passTitle: 'adds an item',
      skipTitle: 'ships abroad',
    });
    const [flaky1] = attemptsOf(run, 'applies a coupon');
    expect(flaky1!.errorMessage).toContain('toBeGreaterThan');
    // Matcher messages are coloured for the terminal; the stored message is plain text.
    expect(flaky1!.errorMessage).not.toContain('\u001b[');
  }, 120_000);

  it('playwright (`retries: 2`, OTLP transport): every attempt with its attachments', async () => {
    const out = await runSample('playwright');
    expect(out.code, out.output).toBe(1);
    expect(out.output).toMatch(/flakehouse: sent 7 executions/);
    // Playwright's own attachments (error-context is text/markdown) are all of an accepted kind.
    expect(out.output).not.toMatch(/is not accepted/);
    const run = await deliveredRun('playwright');
    expect(run.counts).toEqual({ total: 4, passed: 1, failed: 1, skipped: 1, flaky: 1 });
    await expectFlakyAndFailure(run, {
      file: 'test/fixtures/runners/playwright/checkout.spec.ts',
      flakySuite: 'checkout > payment',
      flakyTitle: 'authorizes the card',
      failSuite: 'checkout',
      failTitle: 'sends the receipt',
      failMessage: 'mail server unreachable',
      passTitle: 'shows the total',
      skipTitle: 'ships abroad',
    });
    const [flaky1] = attemptsOf(run, 'authorizes the card');
    expect(flaky1!.errorMessage).toContain('card gateway warming up');
    // Each attempt of the failing test attached its own receipt file (next to Playwright's own
    // error context).
    const receipts = attemptsOf(run, 'sends the receipt').map((e) => e.artifacts.filter((a) => a.name === 'receipt'));
    for (const artifacts of receipts) expect(artifacts).toEqual([expect.objectContaining({ contentType: 'text/plain', sizeBytes: 9 })]);
    expect(new Set(receipts.map((a) => a[0]!.path)).size).toBe(3);
  }, 120_000);
});
