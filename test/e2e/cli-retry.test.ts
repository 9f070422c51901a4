// `flakehouse run --retry-failed N` as CI runs it: the real CLI process wrapping a real test
// command against a real daemon (issue 38). Only the failing tests are re-run, with the `--rerun`
// template (the runner adapters are the same as --verify-new's, run for real in cli-verify.test.ts),
// until one passes, at most N times; the attempts join the run, marked `flakehouse.verify: retry`, so
// the gate has same-code evidence: a flaky test that failed once on a PR and passed its retry is a
// known flake there, and one that failed once without the retry is unproven.
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { runCliProcess, type CliResult } from '../helpers/process.js';
import { commitRepo } from '../helpers/git-repo.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'fh-e2e-retry-'));
const repo = path.join(root, 'repo');
const counters = path.join(root, 'counters');
let td: TestDaemon;

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

const RERUN = `${JSON.stringify(process.execPath)} suite.js {file} {title}`;
let shaSeq = 0;
const nextSha = (): string => (0xa00000 + shaSeq++).toString(16).padEnd(40, '0');
const counter = (title: string): number => (fs.existsSync(path.join(counters, title)) ? Number(fs.readFileSync(path.join(counters, title), 'utf8')) : 0);

function run(args: string[], branch: string, sha: string, extra: Record<string, string> = {}): Promise<CliResult> {
  const env: Record<string, string> = {
    HOME: process.env.HOME ?? root,
    SERVICE_ENDPOINT: td.url,
    SERVICE_TOKEN: td.token,
    SERVICE_BUFFER_DIR: path.join(root, 'buffer'),
    SERVICE_COMMIT_SHA: sha,
    SERVICE_BRANCH: branch,
    COUNTERS: counters,
    ...extra,
  };
  return runCliProcess(['run', '--junit', 'reports/out.xml', ...args, '--', process.execPath, 'suite.js'], { cwd: repo, env, timeoutMs: 180_000 });
}

async function gate(sha: string): Promise<any> {
  await td.settled();
  return td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs/gate?commitSha=${sha}&baseBranch=main`);
    return res.status === 200 && res.json.found ? res.json.gate : undefined;
  }, 30_000);
}

describe('flakehouse run --retry-failed', () => {
  it('re-runs only the failing tests until they pass (bounded), in the same run; the gate reads the proof', async () => {
    const TESTS = 'wobbly,steady,broken';
    // main: five clean runs; then another branch where `wobbly` fails once and passes its retry (one flaky event).
    for (let i = 0; i < 5; i++) expect((await run([], 'main', nextSha(), { TESTS })).code).toBe(0);
    const w = await run(['--retry-failed', '2', '--rerun', RERUN], 'feature/w', nextSha(), { TESTS, FAIL_wobbly: String(counter('wobbly') + 1) });
    expect(w.stderr).toContain('retry: 1 failing test(s): retrying each up to 2 time(s) until it passes');

    // A PR where `wobbly` fails once and `broken` always: without a retry, wobbly's failure is unproven.
    const bare = nextSha();
    const prEnv = { TESTS, SERVICE_BASE_BRANCH: 'main' };
    expect((await run([], 'feature/x', bare, { ...prEnv, FAIL_wobbly: String(counter('wobbly') + 1), FAIL_broken: 'always' })).code).toBe(1);
    const g0 = await gate(bare);
    expect(g0.tests.find((t: any) => t.title === 'wobbly')).toMatchObject({ state: 'flaky', classification: 'new_failure', flakeProof: 'unproven' });

    // The same with --retry-failed 3: wobbly is re-run once (its retry passes), broken 3 times, steady never.
    const proven = nextSha();
    const before = { wobbly: counter('wobbly'), steady: counter('steady'), broken: counter('broken') };
    const r = await run(['--retry-failed', '3', '--rerun', RERUN], 'feature/x', proven, { ...prEnv, FAIL_wobbly: String(before.wobbly + 1), FAIL_broken: 'always' });
    expect(r.code).toBe(1); // the command's own code: the gate decides
    expect({ wobbly: counter('wobbly') - before.wobbly, steady: counter('steady') - before.steady, broken: counter('broken') - before.broken }).toEqual({ wobbly: 2, steady: 1, broken: 4 });
    expect(r.stderr).toMatch(/retry: passed on a retry of the same code \(0 failed retries before\): .*wobbly/);
    expect(r.stderr).toMatch(/retry: failed every retry \(3\): .*broken/);
    const g = await gate(proven);
    expect(g.tests.find((t: any) => t.title === 'wobbly')).toMatchObject({ status: 'flaky', classification: 'known_flake', flakeProof: 'same_code' });
    expect(g.tests.find((t: any) => t.title === 'broken')).toMatchObject({ status: 'fail', classification: 'new_failure' });

    // Stored as such: one run, the retries marked, and kept out of the daily rollup.
    const store = td.daemon.store;
    const rows = await store.query<{ title: string; attempt: number; status: string; verify: string }>(
      `SELECT title, attempt, status, JSONExtractString(attributes, 'flakehouse.verify') AS verify FROM ${store.table('executions')}
       WHERE commit_sha = {sha:String} ORDER BY title, attempt`,
      { sha: proven },
    );
    expect(rows.map((x) => `${x.title}#${x.attempt}:${x.status}:${x.verify}`)).toEqual([
      'broken#1:fail:',
      'broken#2:fail:retry',
      'broken#3:fail:retry',
      'broken#4:fail:retry',
      'steady#1:pass:',
      'wobbly#1:fail:',
      'wobbly#2:pass:retry',
    ]);
  }, 240_000); // nine CLI processes, each a real test command and a report: about 20 s on a quiet machine

  it('more failing tests than --retry-max-tests: none is retried', async () => {
    const sha = nextSha();
    const before = counter('a');
    const r = await run(['--retry-failed', '3', '--retry-max-tests', '1', '--rerun', RERUN], 'feature/y', sha, { TESTS: 'a,b', FAIL_a: 'always', FAIL_b: 'always' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('retry: 2 tests failed, more than --retry-max-tests 1: none retried');
    expect(counter('a') - before).toBe(1);
  }, 60_000);
});
