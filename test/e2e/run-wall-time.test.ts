// Issue 39, defect 5d: the run `flakehouse run` reports lasts as long as the job did. The wrapped
// command sleeps before its JUnit file (no timestamps: read after the command), and `--retry-failed`
// re-runs a failing test, each re-run sleeping too: the stored run's duration covers the command and
// its re-runs (it was the 10 ms of the report's one test case), and the run page's procedure marks
// the re-run attempts `retry`.
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { runCliProcess } from '../helpers/process.js';
import { commitRepo } from '../helpers/git-repo.js';

const root = fs.mkdtempSync(path.join(tmpdir(), 'fh-e2e-wall-'));
const repo = path.join(root, 'repo');
const counters = path.join(root, 'counters');
const SLEEP_MS = 1500;
let td: TestDaemon;

/** `node suite.js [file title]`: sleeps SLEEP_MS, then writes a JUnit report without timestamps; `wobbly` fails its first run. */
const SUITE = `
const fs = require('fs'), path = require('path');
const [file, only] = process.argv.slice(2);
const titles = only ? [only] : ['steady', 'wobbly'];
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${SLEEP_MS});
let failed = false;
const cases = titles.map((t) => {
  const counter = path.join(process.env.COUNTERS, t);
  const n = (fs.existsSync(counter) ? Number(fs.readFileSync(counter, 'utf8')) : 0) + 1;
  fs.writeFileSync(counter, String(n));
  const fail = t === 'wobbly' && n === 1;
  failed = failed || fail;
  return '<testcase classname="cart" name="' + t + '" file="test/cart.test.js" time="0.01">' + (fail ? '<failure message="first run">boom</failure>' : '') + '</testcase>';
});
fs.mkdirSync('reports', { recursive: true });
fs.writeFileSync('reports/out.xml', '<?xml version="1.0"?><testsuite name="cart">' + cases.join('') + '</testsuite>');
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

describe('flakehouse run: the run lasts as long as the job', () => {
  it('the command and its --retry-failed re-run are inside the stored run; the re-run attempt is marked retry', async () => {
    const env: Record<string, string> = {
      HOME: process.env.HOME ?? root,
      SERVICE_ENDPOINT: td.url,
      SERVICE_TOKEN: td.token,
      SERVICE_BUFFER_DIR: path.join(root, 'buffer'),
      SERVICE_COMMIT_SHA: 'abc0001'.padEnd(40, '0'),
      SERVICE_BRANCH: 'feature/wall',
      COUNTERS: counters,
    };
    const rerun = `${JSON.stringify(process.execPath)} suite.js {file} {title}`;
    const res = await runCliProcess(['run', '--junit', 'reports/out.xml', '--retry-failed', '2', '--rerun', rerun, '--', process.execPath, 'suite.js'], { cwd: repo, env, timeoutMs: 120_000 });
    expect(res.stderr).toContain('retry: passed on a retry of the same code');
    await td.settled();
    const runs = await td.waitFor(async () => {
      const r = await td.request('GET', '/v1/runs?branch=feature%2Fwall');
      return r.json?.items?.length === 1 ? (r.json.items as { id: string; durationMs: number }[]) : undefined;
    }, 30_000);
    // The command's sleep and the re-run's: at least two of them.
    expect(runs[0]!.durationMs).toBeGreaterThanOrEqual(2 * SLEEP_MS);
    const trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
    const page = await trpc.run.get.query({ runId: runs[0]!.id });
    expect(page.durationMs).toBe(runs[0]!.durationMs);
    const wobbly = page.executions.filter((e) => e.title === 'wobbly').map((e) => [e.attempt, e.status, e.verify]);
    expect(wobbly).toEqual([
      [1, 'fail', null],
      [2, 'pass', 'retry'],
    ]);
  }, 150_000);
});
