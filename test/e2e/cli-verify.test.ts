// `flakehouse run --verify-new` / `--verify-fix` as CI runs them: the real CLI process wrapping a
// real test command against a real daemon. A new test (never run on the base branch) is re-run
// with the `--rerun` template; one that fails 1 of 10 runs makes `run` exit non-zero and the PR
// gate block it as a new failure ("new test failed 1 of 10"); one that passes every run neither.
// A `Fixes-flaky:` trailer in the HEAD commit makes `run` re-run that test 20 times: all pass →
// "fix verified" in the output and the PR comment; a failure → "fix not verified", non-zero.
// The counts are proved here, with a runner that costs a Node start per run; each real runner's
// adapter (which test it re-runs, and how its results come back) is proved in a file of its own,
// with one re-run per test: test/e2e/cli-verify-{vitest,jest,playwright,pytest}.test.ts.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliProcess, type CliResult } from '../helpers/process.js';
import { commitRepo } from '../helpers/git-repo.js';
import { useVerifyBench } from '../helpers/verify-cli.js';

const bench = useVerifyBench('verify');
const repo = path.join(bench.root, 'repo');
const { env, counter } = bench;

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

beforeAll(() => {
  commitRepo(repo, { 'suite.js': SUITE }, 'the suite');
});

const RERUN = `${JSON.stringify(process.execPath)} suite.js {file} {title}`;

function run(args: string[], e: Record<string, string>, cwd = repo): Promise<CliResult> {
  return runCliProcess(['run', '--junit', 'reports/out.xml', ...args, '--', process.execPath, 'suite.js'], { cwd, env: e, timeoutMs: 180_000 });
}

async function gate(sha: string): Promise<any> {
  await bench.td.settled();
  return bench.td.waitFor(async () => {
    const res = await bench.td.request('GET', `/v1/runs/gate?commitSha=${sha}&baseBranch=main`);
    return res.status === 200 && res.json.found ? res.json : undefined;
  }, 30_000);
}

describe('flakehouse run --verify-new', () => {
  it('a new test failing 1 of 10 runs exits non-zero and blocks the gate as a new failure', async () => {
    // The base branch knows test A.
    const base = await run([], env('main', 'a000001', { TESTS: 'A' }), repo);
    expect(base.code, base.stderr).toBe(0);
    await bench.td.settled();

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
    const summary = (await bench.td.request('GET', '/v1/runs/summary?commitSha=b000001')).json;
    expect(summary.markdown).toContain('🆕 new test failed 1 of 10');

    // The CLI's own gate command reads the same.
    const cliGate = await runCliProcess(['gate', '--commit', 'b000001', '--base', 'main'], { cwd: repo, env: env('feature-b', 'b000001') });
    expect(cliGate.stdout + cliGate.stderr).toContain('new test failed 1 of 10');
    expect(cliGate.code).not.toBe(0);
  }, 240_000);

  it('a new test that passes every run exits 0 and does not block; too many new tests: none re-run', async () => {
    // Two re-runs: the count of 10 is the test above's; this one is about the verdict.
    const res = await run(['--verify-new', '2', '--rerun', RERUN, '--base-branch', 'main'], env('feature-c', 'c000001', { TESTS: 'A,C' }));
    expect(res.stderr).toContain('verify: new test passed 3 of 3: test/cart.test.js > cart > C');
    expect(res.code, res.stderr).toBe(0);
    expect(counter('C')).toBe(3);
    await bench.td.settled();
    const g = await bench.td.request('GET', '/v1/runs/gate?commitSha=c000001&baseBranch=main');
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
    // Each re-run waits 0.6 s before it runs the test (a slow test, the behaviour under test): a
    // budget of 1 s runs out after a re-run or two of the 50.
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
    await bench.td.settled();
    const summary = await bench.td.waitFor(async () => {
      const r = await bench.td.request('GET', `/v1/runs/summary?commitSha=${sha}`);
      return r.status === 200 ? r.json : undefined;
    }, 30_000);
    expect(summary.summary.fixes).toEqual([expect.objectContaining({ title: 'G', runs: 20, failed: 0, verified: true })]);
    expect(summary.markdown).toContain('✅ fix verified: passed 20 of 20 re-runs — cart › G');
  }, 240_000);

  it('a failure among the re-runs (--verify-fix-runs 8) → "fix not verified: failed 1 of 8", non-zero', async () => {
    // The default of 20 is the test above's; 8 re-runs prove the verdict and that the count is settable.
    const sha = commit('Try again\n\nFixes-flaky: H\n');
    const res = await run(['--verify-fix', '--verify-fix-runs', '8', '--rerun', RERUN], env('fix-h', sha, { TESTS: 'A,H', FAIL_H: '7' }));
    expect(res.stderr).toContain('verify: 1 test(s) named in Fixes-flaky: re-running each 8 time(s)');
    expect(res.stderr).toContain('verify: fix not verified: failed 1 of 8: test/cart.test.js > cart > H');
    expect(res.code, res.stderr).toBe(1);
    expect(counter('H')).toBe(9);
    await bench.td.settled();
    const summary = await bench.td.waitFor(async () => {
      const r = await bench.td.request('GET', `/v1/runs/summary?commitSha=${sha}`);
      return r.status === 200 && r.json.summary?.fixes?.length > 0 ? r.json : undefined;
    }, 30_000);
    expect(summary.summary.fixes).toEqual([expect.objectContaining({ title: 'H', runs: 8, failed: 1, verified: false })]);
    expect(summary.markdown).toContain('❌ fix not verified: failed 1 of 8 re-runs');
  }, 240_000);
});
