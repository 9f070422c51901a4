// `flakehouse run --verify-new` / `--verify-fix` as CI runs them: the real CLI process wrapping a
// real test command against a real daemon. A new test (never run on the base branch) is re-run
// with the `--rerun` template; one that fails 1 of 10 runs makes `run` exit non-zero and the PR
// gate block it as a new failure ("new test failed 1 of 10"); one that passes every run neither.
// A `Fixes-flaky:` trailer in the HEAD commit makes `run` re-run that test 20 times: all pass →
// "fix verified" in the output and the PR comment; a failure → "fix not verified", non-zero.
// Vitest's adapter is run for real on the runner fixture.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { REPO_ROOT, runCliProcess, type CliResult } from '../helpers/process.js';
import { jestSample } from '../helpers/jest-sample.js';
import { commitRepo } from '../helpers/git-repo.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'fh-e2e-verify-'));
const repo = path.join(root, 'repo');
const counters = path.join(root, 'counters');
let td: TestDaemon;

/**
 * The "test runner": `node suite.js [file title]` runs the tests named in TESTS (or only the one
 * named) and writes a JUnit report of them to reports/out.xml. Each test counts its invocations in
 * a file; FAIL_<title>=n makes its n-th invocation fail (deterministic: "fails on the 3rd run").
 * Exits 1 when a test failed.
 */
const SUITE = `
const fs = require('fs'), path = require('path');
const [file, only] = process.argv.slice(2);
const titles = only ? [only] : process.env.TESTS.split(',');
let failed = false;
const cases = titles.map((t) => {
  const counter = path.join(process.env.COUNTERS, t);
  const n = (fs.existsSync(counter) ? Number(fs.readFileSync(counter, 'utf8')) : 0) + 1;
  fs.writeFileSync(counter, String(n));
  const fail = Number(process.env['FAIL_' + t] || 0) === n || process.env['FAIL_' + t] === 'always';
  failed = failed || fail;
  return '<testcase classname="cart" name="' + t + '" file="test/cart.test.js" time="0.01">' + (fail ? '<failure message="' + t + ' failed on run ' + n + '">boom</failure>' : '') + '</testcase>';
});
fs.mkdirSync('reports', { recursive: true });
fs.writeFileSync('reports/out.xml', '<?xml version="1.0"?><testsuite name="cart">' + cases.join('') + '</testsuite>');
console.log('ran ' + titles.join(', ') + (file ? ' (' + file + ')' : ''));
process.exit(failed ? 1 : 0);
`;

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
  fs.mkdirSync(counters, { recursive: true });
  commitRepo(repo, { 'suite.js': SUITE }, 'the suite');
}, 60_000);

afterAll(async () => {
  await td?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

function env(branch: string, sha: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOME: process.env.HOME ?? root,
    SERVICE_ENDPOINT: td.url,
    SERVICE_TOKEN: td.token,
    SERVICE_BUFFER_DIR: path.join(root, 'buffer'),
    SERVICE_COMMIT_SHA: sha,
    SERVICE_BRANCH: branch,
    COUNTERS: counters,
    ...extra,
  };
}

const RERUN = `${JSON.stringify(process.execPath)} suite.js {file} {title}`;

function run(args: string[], e: Record<string, string>, cwd = repo): Promise<CliResult> {
  return runCliProcess(['run', '--junit', 'reports/out.xml', ...args, '--', process.execPath, 'suite.js'], { cwd, env: e, timeoutMs: 180_000 });
}

const counter = (title: string): number => Number(fs.readFileSync(path.join(counters, title), 'utf8'));

async function gate(sha: string): Promise<any> {
  await td.settled();
  return td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs/gate?commitSha=${sha}&baseBranch=main`);
    return res.status === 200 && res.json.found ? res.json : undefined;
  }, 30_000);
}

describe('flakehouse run --verify-new', () => {
  it('a new test failing 1 of 10 runs exits non-zero and blocks the gate as a new failure', async () => {
    // The base branch knows test A.
    const base = await run([], env('main', 'a000001', { TESTS: 'A' }), repo);
    expect(base.code, base.stderr).toBe(0);
    await td.settled();

    // The PR adds B, whose 3rd run fails: the command (run 1) passes, re-run 2 of 9 (run 3) fails.
    const res = await run(['--verify-new', '9', '--rerun', RERUN, '--base-branch', 'main'], env('feature-b', 'b000001', { TESTS: 'A,B', FAIL_B: '3' }));
    expect(res.stdout).toContain('ran A, B');
    expect(res.stderr).toContain('verify: 1 new test(s) never seen on main: re-running each 9 time(s)');
    expect(res.stderr).toContain('verify: re-run 9/9 of test/cart.test.js > cart > B');
    expect(res.stderr).not.toContain('re-run 1/9 of test/cart.test.js > cart > A');
    expect(counter('B')).toBe(10);
    expect(counter('A')).toBe(2); // the base run and the PR's command: A is not new
    expect(res.stderr).toContain('verify: new test failed 1 of 10: test/cart.test.js > cart > B');
    expect(res.stderr).toMatch(/verify: 1 test\(s\) failed verification: exiting 1\n {2}new test failed 1 of 10/);
    expect(res.code, res.stderr).toBe(1);

    // The run holds every attempt of B, the failed one among them, marked as the proof of a new test.
    const g = await gate('b000001');
    expect(g.gate.verdict).toBe('block');
    expect(g.gate.newFailures).toBe(1);
    const b = g.gate.tests.find((t: any) => t.title === 'B');
    expect(b).toMatchObject({ classification: 'new_failure', knownFlake: false, status: 'flaky', newTest: { runs: 10, failed: 1 } });
    expect(g.gate.tests.map((t: any) => t.title)).toEqual(['B']);
    expect(g.markdown).toContain('new test failed 1 of 10');
    const summary = (await td.request('GET', '/v1/runs/summary?commitSha=b000001')).json;
    expect(summary.markdown).toContain('🆕 new test failed 1 of 10');

    // The CLI's own gate command reads the same.
    const cliGate = await runCliProcess(['gate', '--commit', 'b000001', '--base', 'main'], { cwd: repo, env: env('feature-b', 'b000001') });
    expect(cliGate.stdout + cliGate.stderr).toContain('new test failed 1 of 10');
    expect(cliGate.code).not.toBe(0);
  }, 240_000);

  it('a new test that passes every run exits 0 and does not block; too many new tests: none re-run', async () => {
    const res = await run(['--verify-new', '9', '--rerun', RERUN, '--base-branch', 'main'], env('feature-c', 'c000001', { TESTS: 'A,C' }));
    expect(res.stderr).toContain('verify: new test passed 10 of 10: test/cart.test.js > cart > C');
    expect(res.code, res.stderr).toBe(0);
    expect(counter('C')).toBe(10);
    await td.settled();
    const g = await td.request('GET', '/v1/runs/gate?commitSha=c000001&baseBranch=main');
    expect(g.status).toBe(200);
    expect(g.json.gate.verdict).toBe('pass');
    expect(g.json.gate.tests).toEqual([]);

    // Two new tests with --verify-max-new 1: a message, no re-run, the command's code.
    const many = await run(['--verify-new', '5', '--verify-max-new', '1', '--rerun', RERUN, '--base-branch', 'main'], env('feature-d', 'd000001', { TESTS: 'A,D,E' }));
    expect(many.stderr).toContain('verify: 2 tests look new to main, more than --verify-max-new 1: none re-run');
    expect(many.code, many.stderr).toBe(0);
    expect(counter('D')).toBe(1);
  }, 240_000);

  it('the budget stops the re-runs and says so', async () => {
    const res = await run(['--verify-new', '50', '--verify-budget', '1', '--rerun', `${JSON.stringify(process.execPath)} -e "setTimeout(()=>require('child_process').execFileSync(process.execPath,['suite.js','{file}','{title}'],{stdio:'inherit'}),600)"`, '--base-branch', 'main'], env('feature-f', 'f000001', { TESTS: 'A,F' }));
    expect(res.stderr).toMatch(/verify: new test passed (\d+) of \1: test\/cart\.test\.js > cart > F \(\d+ re-run\(s\) not done: the budget ran out\)/);
    expect(counter('F')).toBeLessThan(6);
    expect(res.code, res.stderr).toBe(0);
  }, 120_000);
});

describe('flakehouse run --verify-fix', () => {
  const commit = (message: string): string => {
    fs.writeFileSync(path.join(repo, 'fix.txt'), message);
    execFileSync('git', ['add', 'fix.txt'], { cwd: repo });
    execFileSync('git', ['commit', '-q', '-m', message], { cwd: repo });
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo, encoding: 'utf8' }).trim();
  };

  it('re-runs the test named in Fixes-flaky 20 times: all pass → "fix verified", in the PR comment too', async () => {
    const sha = commit('Fix the coupon race\n\nFixes-flaky: cart > G\n');
    const res = await run(['--verify-fix', '--rerun', RERUN], env('fix-g', sha, { TESTS: 'A,G' }));
    expect(res.stderr).toContain('verify: 1 test(s) named in Fixes-flaky: re-running each 20 time(s)');
    expect(res.stderr).toContain('verify: fix verified: passed 20 of 20: test/cart.test.js > cart > G');
    expect(res.code, res.stderr).toBe(0);
    expect(counter('G')).toBe(21);
    await td.settled();
    const summary = await td.waitFor(async () => {
      const r = await td.request('GET', `/v1/runs/summary?commitSha=${sha}`);
      return r.status === 200 ? r.json : undefined;
    }, 30_000);
    expect(summary.summary.fixes).toEqual([expect.objectContaining({ title: 'G', runs: 20, failed: 0, verified: true })]);
    expect(summary.markdown).toContain('✅ fix verified: passed 20 of 20 re-runs — cart › G');
  }, 240_000);

  it('a failure among the 20 → "fix not verified: failed 1 of 20", non-zero', async () => {
    const sha = commit('Try again\n\nFixes-flaky: H\n');
    const res = await run(['--verify-fix', '--rerun', RERUN], env('fix-h', sha, { TESTS: 'A,H', FAIL_H: '7' }));
    expect(res.stderr).toContain('verify: fix not verified: failed 1 of 20: test/cart.test.js > cart > H');
    expect(res.code, res.stderr).toBe(1);
    await td.settled();
    const summary = (await td.request('GET', `/v1/runs/summary?commitSha=${sha}`)).json;
    expect(summary.markdown).toContain('❌ fix not verified: failed 1 of 20 re-runs');
  }, 240_000);
});

describe('runner adapters, for real', () => {
  it('re-runs each new test of the runner fixture with `vitest run <file> -t`', async () => {
    const sample = path.join(REPO_ROOT, 'test/fixtures/runners/vitest');
    const scratch = fs.mkdtempSync(path.join(root, 'vitest-'));
    const vitest = [process.execPath, path.join(REPO_ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.config.ts'];
    const res = await runCliProcess(['run', '--verify-new', '2', '--verify-max-new', '10', '--base-branch', 'main', '--', ...vitest], {
      cwd: sample,
      env: env('vitest-new', 'e000001', { FH_SAMPLE_TMP: scratch, SERVICE_TRANSPORT: 'json' }),
      timeoutMs: 180_000,
    });
    const file = 'test/fixtures/runners/vitest/cart.spec.ts';
    expect(res.stderr).toContain('verify: 4 new test(s) never seen on main: re-running each 2 time(s)');
    expect(res.stderr).toContain('vitest.config.ts cart.spec.ts -t ^cart adds an item$'); // the words as run
    // Each re-run selected exactly its test: nothing missing, the passing one passed every run.
    expect(res.stderr).not.toContain('reported nothing');
    expect(res.stderr).toContain(`verify: new test passed 3 of 3: ${file} > cart > adds an item`);
    // The flaky coupon test fails its first attempt in every run (its retry passes): 3 of 6.
    expect(res.stderr).toContain(`verify: new test failed 3 of 6: ${file} > cart > coupons > applies a coupon`);
    expect(res.stderr).toContain(`verify: new test failed 9 of 9: ${file} > cart > computes tax`);
    expect(res.code).toBe(1);
  }, 180_000);

  it('Jest: `jest <file> -t` re-runs each new test; the reporter hands every re-run over', async () => {
    const { dir: sample, command: jest } = jestSample(root);
    const res = await runCliProcess(['run', '--verify-new', '2', '--base-branch', 'main', '--', ...jest], { cwd: sample, env: env('jest-new', 'e000002'), timeoutMs: 180_000 });
    expect(res.stderr).toContain('verify: 3 new test(s) never seen on main: re-running each 2 time(s)');
    expect(res.stderr).toContain("cart.spec.cjs -t ^cart coupons applies a coupon$");
    expect(res.stderr).not.toContain('reported nothing');
    expect(res.stderr).toContain('verify: new test passed 3 of 3: cart.spec.cjs > cart > adds an item');
    expect(res.stderr).toContain('verify: new test failed 3 of 6: cart.spec.cjs > cart > coupons > applies a coupon');
    expect(res.stderr).toContain('verify: new test failed 9 of 9: cart.spec.cjs > cart > computes tax');
    expect(res.code).toBe(1);
  }, 180_000);

  it('Playwright: `playwright test <file> -g` re-runs each new test of the runner fixture', async () => {
    const sample = path.join(REPO_ROOT, 'test/fixtures/runners/playwright');
    const scratch = fs.mkdtempSync(path.join(root, 'pw-'));
    const pw = [process.execPath, path.join(REPO_ROOT, 'node_modules/@playwright/test/cli.js'), 'test', '--config', 'playwright.config.ts'];
    const res = await runCliProcess(['run', '--verify-new', '1', '--base-branch', 'main', '--', ...pw], { cwd: sample, env: env('pw-new', 'e000004', { FH_SAMPLE_TMP: scratch }), timeoutMs: 180_000 });
    const file = 'test/fixtures/runners/playwright/checkout.spec.ts';
    expect(res.stderr).toContain('verify: 3 new test(s) never seen on main: re-running each 1 time(s)');
    expect(res.stderr).toContain('checkout.spec.ts -g checkout payment authorizes the card');
    expect(res.stderr).not.toContain('reported nothing');
    expect(res.stderr).toContain(`verify: new test passed 2 of 2: ${file} > checkout > shows the total`);
    // Its first attempt fails in every run, the retry passes: 2 of 4.
    expect(res.stderr).toContain(`verify: new test failed 2 of 4: ${file} > checkout > payment > authorizes the card`);
    expect(res.stderr).toContain(`verify: new test failed 6 of 6: ${file} > checkout > sends the receipt`);
    expect(res.code).toBe(1);
  }, 180_000);

  it.skipIf(!hasPytest())('pytest: `python -m pytest <file>::<class>::<name>` in place of the test paths', async () => {
    const sample = path.join(root, 'py-sample');
    fs.mkdirSync(path.join(sample, 'tests'), { recursive: true });
    fs.writeFileSync(
      path.join(sample, 'tests/test_cart.py'),
      [
        'import os, pathlib',
        'def test_add():',
        '    assert 1 + 1 == 2',
        'class TestCoupon:',
        '    def test_apply(self):',
        "        p = pathlib.Path(os.environ['COUNTERS']) / 'py_apply'",
        '        n = int(p.read_text()) + 1 if p.exists() else 1',
        '        p.write_text(str(n))',
        "        assert n != 2, 'coupon failed on run 2'",
        '',
      ].join('\n'),
    );
    const pytest = ['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '-o', 'junit_family=xunit1', '--junitxml=reports/py.xml', 'tests'];
    const res = await runCliProcess(['run', '--junit', 'reports/py.xml', '--verify-new', '3', '--base-branch', 'main', '--', ...pytest], { cwd: sample, env: env('py-new', 'e000003'), timeoutMs: 180_000 });
    expect(res.stderr).toContain('verify: 2 new test(s) never seen on main: re-running each 3 time(s)');
    expect(res.stderr).toContain('--junitxml=reports/py.xml tests/test_cart.py::TestCoupon::test_apply');
    expect(res.stderr).not.toContain('reported nothing');
    expect(res.stderr).toContain('verify: new test passed 4 of 4: tests/test_cart.py > test_add');
    expect(res.stderr).toContain('verify: new test failed 1 of 4: tests/test_cart.py > TestCoupon > test_apply');
    expect(counter('py_apply')).toBe(4);
    expect(res.code).toBe(1);
  }, 180_000);
});

function hasPytest(): boolean {
  try {
    execFileSync('python3', ['-m', 'pytest', '--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
