// The runner matrix (test/e2e/runner-matrix*.test.ts, a file per runner kind so the suite's workers
// share it): the runner reporters against the runner versions the README's "Supported runners"
// table names, each installed from the npm registry at that exact version
// (test/helpers/runner-install.ts, cached machine-wide under ~/.cache/flakehouse/runners; a runner
// needing a newer Node than the tests' runs on .ci/run's pinned Node 24, also from the registry),
// not the repository's own: on Vitest 3.2 the Vitest reporter used to throw
// `testCase.artifacts is not a function` once per test and Vitest exited 1 on a green suite.
// For every runner, in a scratch project that uses the client package as a user's does:
//   - a green suite exits 0 with the reporter and its run is stored in a real daemon, whole;
//   - a failing suite exits with the same code as without the reporter (1), and is stored too.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from './daemon.js';
import { installedNode, installedRunner } from './runner-install.js';

export type Kind = 'vitest' | 'jest' | 'playwright';

interface Runner {
  kind: Kind;
  /** What is installed: `name@exact-version`. */
  packages: string[];
  /**
   * The Node major the runner itself requires (its `engines`): below it the runner runs on the
   * pinned Node 24 of .ci/run (installed from the registry), and is skipped where there is none.
   */
  minNode?: number;
}

/** .ci/run's pinned Node 24. */
const NODE24 = '24.21.0';

// Keep in step with the README's "Supported runners" table.
export const MATRIX: Runner[] = [
  { kind: 'vitest', packages: ['vitest@3.2.7'] },
  { kind: 'vitest', packages: ['vitest@4.1.12'] },
  // Vitest 5 requires Node ^22.12 (on Node 20 its own default reporter throws on `Map.groupBy`).
  { kind: 'vitest', packages: ['vitest@5.1.2'], minNode: 22 },
  { kind: 'jest', packages: ['jest@29.7.0'] },
  { kind: 'jest', packages: ['jest@30.5.2'] },
  { kind: 'playwright', packages: ['@playwright/test@1.65.1'] },
];

const label = (r: Runner): string => r.packages[0]!;
const nodeMajor = Number(process.versions.node.split('.')[0]);
/** The Node each runner runs on: this one, or Node 24 when it needs a newer one. */
const nodeFor = new Map<string, string>();
const runs = (r: Runner): boolean => nodeFor.has(label(r));

/** The sample project of each kind: its config (reporters from FH_REPORTER, suite from FH_SUITE) and tests. */
const PROJECTS: Record<Kind, Record<string, string>> = {
  vitest: {
    'package.json': '{ "private": true, "type": "module" }',
    'vitest.config.mjs': `import { defineConfig } from 'vitest/config';
const scratch = process.env.FH_SAMPLE_TMP;
export default defineConfig({
  cacheDir: scratch + '/vite-cache',
  test: {
    include: [process.env.FH_SUITE + '/*.test.mjs'],
    reporters: process.env.FH_REPORTER === 'off' ? ['default'] : ['default', 'flakehouse/vitest'],
    attachmentsDir: scratch + '/attachments',
  },
});
`,
    'green/cart.test.mjs': `import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
describe('cart', () => {
  it('adds an item', () => { expect([1].concat(2)).toEqual([1, 2]); });
  it('computes tax', () => { expect(10 * 0.2).toBe(2); });
  // annotate(…, { path }) exists from Vitest 3.2; older ones just pass.
  it('prints a receipt', async (ctx) => {
    const file = process.env.FH_SAMPLE_TMP + '/receipt.txt';
    writeFileSync(file, 'total: 3\\n');
    if (typeof ctx.annotate === 'function') await ctx.annotate('receipt', { path: file, contentType: 'text/plain' });
  });
  it.skip('ships abroad', () => {});
});
`,
    'red/cart.test.mjs': `import { describe, expect, it } from 'vitest';
describe('cart', () => {
  it('adds an item', () => { expect(1 + 1).toBe(2); });
  it('applies a coupon', () => { expect(90, 'coupon not applied').toBe(80); });
});
`,
  },
  jest: {
    'package.json': '{ "private": true }',
    'jest.config.cjs': `module.exports = {
  rootDir: __dirname,
  testMatch: ['<rootDir>/' + process.env.FH_SUITE + '/*.test.cjs'],
  transform: {},
  reporters: process.env.FH_REPORTER === 'off' ? ['default'] : ['default', 'flakehouse/jest'],
  cacheDirectory: process.env.FH_SAMPLE_TMP + '/jest-cache',
  watchman: false,
};
`,
    'green/cart.test.cjs': `describe('cart', () => {
  it('adds an item', () => { expect([1].concat(2)).toEqual([1, 2]); });
  it('computes tax', () => { expect(10 * 0.2).toBe(2); });
  it('prints a receipt', () => { expect('total: 3').toContain('3'); });
  it.skip('ships abroad', () => {});
});
`,
    'red/cart.test.cjs': `describe('cart', () => {
  it('adds an item', () => { expect(1 + 1).toBe(2); });
  it('applies a coupon', () => { expect(90).toBe(80); });
});
`,
  },
  playwright: {
    'package.json': '{ "private": true, "type": "module" }',
    'playwright.config.mjs': `import { defineConfig } from '@playwright/test';
export default defineConfig({
  testDir: process.env.FH_SUITE,
  testMatch: '*.spec.mjs',
  workers: 1,
  outputDir: process.env.FH_SAMPLE_TMP + '/test-results',
  reporter: process.env.FH_REPORTER === 'off' ? [['list']] : [['list'], ['flakehouse/playwright']],
});
`,
    // No browser: the tests do not use the \`page\` fixture.
    'green/cart.spec.mjs': `import { writeFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
test.describe('cart', () => {
  test('adds an item', () => { expect([1].concat(2)).toEqual([1, 2]); });
  test('computes tax', () => { expect(10 * 0.2).toBe(2); });
  test('prints a receipt', async () => {
    const file = test.info().outputPath('receipt.txt');
    writeFileSync(file, 'total: 3\\n');
    await test.info().attach('receipt', { path: file, contentType: 'text/plain' });
  });
  test.skip('ships abroad', () => {});
});
`,
    'red/cart.spec.mjs': `import { expect, test } from '@playwright/test';
test.describe('cart', () => {
  test('adds an item', () => { expect(1 + 1).toBe(2); });
  test('applies a coupon', () => { expect(90).toBe(80); });
});
`,
  },
};

const COMMAND: Record<Kind, (installDir: string) => string[]> = {
  vitest: (d) => [path.join(d, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.config.mjs'],
  jest: (d) => [path.join(d, 'node_modules/jest/bin/jest.js'), '--config', 'jest.config.cjs', '--ci'],
  playwright: (d) => [path.join(d, 'node_modules/@playwright/test/cli.js'), 'test', '--config', 'playwright.config.mjs'],
};

const installs = new Map<string, string>();

/** A file's daemon and scratch directory (set in its beforeAll). */
interface Bench {
  td: TestDaemon;
  scratch: string;
}

/** The matrix's tests for the runners of `kind`: a daemon, their installs, a green and a red suite each. */
export function runnerMatrix(kind: Kind): void {
  const runners = MATRIX.filter((r) => r.kind === kind);
  const bench = {} as Bench;
  beforeAll(async () => {
    // Polling the read API counts against the per-project rate limit; this file is not about it.
    bench.td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
    bench.scratch = mkdtempSync(path.join(tmpdir(), `fh-runner-matrix-${kind}-`));
    // One at a time: two cores are shared with the rest of the suite. Cached after the first run.
    for (const r of runners) {
      const node = nodeMajor >= (r.minNode ?? 0) ? process.execPath : await installedNode(NODE24);
      if (node === undefined) continue;
      nodeFor.set(label(r), node);
      installs.set(label(r), await installedRunner(r.packages));
    }
  }, 600_000);

  afterAll(async () => {
    await bench.td?.close();
    if (bench.scratch) rmSync(bench.scratch, { recursive: true, force: true });
  });

  describe.each(runners.map((r) => [label(r), r] as const))('%s with its flakehouse reporter', (name, runner) => matrixTests(bench, name, runner));
}

/** A scratch copy of the sample project of `r`'s kind, its node_modules the cached install. */
function sampleProject({ scratch }: Bench, r: Runner): string {
  const dir = mkdtempSync(path.join(scratch, `${label(r).replace(/[/@]/g, '-')}-`));
  for (const [file, text] of Object.entries(PROJECTS[r.kind])) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  symlinkSync(path.join(installs.get(label(r))!, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

interface Outcome {
  code: number | null;
  output: string;
}

/** Runs the suite as CI would: its own cwd, a clean environment, the daemon's endpoint and token. */
function runSuite({ td, scratch }: Bench, r: Runner, project: string, suite: 'green' | 'red', opts: { reporter: boolean; branch: string }): Promise<Outcome> {
  const sampleTmp = mkdtempSync(path.join(scratch, 'tmp-'));
  const child = spawn(nodeFor.get(label(r))!, COMMAND[r.kind](installs.get(label(r))!), {
    cwd: project,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: sampleTmp,
      FH_SAMPLE_TMP: sampleTmp,
      FH_SUITE: suite,
      FH_REPORTER: opts.reporter ? 'on' : 'off',
      SERVICE_ENDPOINT: td.url,
      SERVICE_TOKEN: td.token,
      SERVICE_COMMIT_SHA: 'abc1234',
      SERVICE_BRANCH: opts.branch,
      SERVICE_BUFFER_DIR: path.join(sampleTmp, 'buffer'),
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

interface StoredRun {
  status: string;
  executions: { filePath: string; suite: string; title: string; status: string; artifacts: { name: string }[] }[];
}

async function storedRun({ td }: Bench, branch: string): Promise<StoredRun> {
  const items = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
    return res.status === 200 && res.json.items.length > 0 ? (res.json.items as { id: string }[]) : undefined;
  }, 30_000);
  expect(items).toHaveLength(1);
  const res = await td.request('GET', `/v1/runs/${items[0]!.id}`);
  expect(res.status).toBe(200);
  return res.json as StoredRun;
}

const byTitle = (run: StoredRun): [string, string, string][] =>
  run.executions.map((e): [string, string, string] => [e.suite, e.title, e.status]).sort((a, b) => a[1].localeCompare(b[1]));

function matrixTests(bench: Bench, name: string, runner: Runner): void {
  // Decided in beforeAll (an install), so checked in each test.
  const skipUnlessRunnable = (ctx: { skip: (note?: string) => void }): void => {
    if (!runs(runner)) ctx.skip(`needs Node ${runner.minNode}, and no Node ${NODE24} binary for this platform`);
  };
  it('a green suite exits 0 and its run is stored whole', { timeout: 120_000 }, async (ctx) => {
    skipUnlessRunnable(ctx);
    const branch = `matrix-${name}-green`;
    const ran = await runSuite(bench, runner, sampleProject(bench, runner), 'green', { reporter: true, branch });
    expect(ran.output).not.toMatch(/could not handle/);
    expect(ran.code, ran.output).toBe(0);
    const run = await storedRun(bench, branch);
    expect(run.status).toBe('passed');
    expect(byTitle(run)).toEqual([
      ['cart', 'adds an item', 'pass'],
      ['cart', 'computes tax', 'pass'],
      ['cart', 'prints a receipt', 'pass'],
      ['cart', 'ships abroad', 'skip'],
    ]);
    expect(new Set(run.executions.map((e) => e.filePath)).size).toBe(1);
    // The attachment, where the runner has an API for it (Vitest's annotate from 3.2, Playwright's attach).
    if (runner.kind !== 'jest') {
      const receipt = run.executions.find((e) => e.title === 'prints a receipt')!;
      expect(receipt.artifacts.map((a) => a.name)).toEqual(['receipt']);
    }
  });

  it('a failing suite exits as it does without the reporter (1), and is stored', { timeout: 120_000 }, async (ctx) => {
    skipUnlessRunnable(ctx);
    const branch = `matrix-${name}-red`;
    // The runner without the reporter and with it, side by side (each in a copy of the project, its
    // caches and output in a scratch directory of its own): one's wait for its runner is the other's.
    const [without, ran] = await Promise.all([
      runSuite(bench, runner, sampleProject(bench, runner), 'red', { reporter: false, branch: `matrix-${name}-red-bare` }),
      runSuite(bench, runner, sampleProject(bench, runner), 'red', { reporter: true, branch }),
    ]);
    expect(without.code, without.output).toBe(1);
    expect(ran.output).not.toMatch(/could not handle/);
    expect(ran.code, ran.output).toBe(without.code);
    const run = await storedRun(bench, branch);
    expect(run.status).toBe('failed');
    expect(byTitle(run)).toEqual([
      ['cart', 'adds an item', 'pass'],
      ['cart', 'applies a coupon', 'fail'],
    ]);
  });
}
