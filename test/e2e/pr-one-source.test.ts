// Issue 39, defect 4: every count and status a pull request shows comes from one computed summary.
// A commit with two jobs (a native run that failed, and a newer JUnit upload of another job that
// passed, same shard): one new failure, one known flake (flaky on main, established) and one
// quarantined test. The header status is the gate's verdict over every job (each job's latest
// run), never the newest run's "passed"; GET /v1/runs/summary, GET /v1/runs/gate (JSON and
// markdown), the dashboard's procedures (pr.summary, pr.commits) and the real CLI (`gate`,
// `gate --json`, `summary`) carry the same numbers: 1 new failure, 2 known flakes (1 quarantined).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { runCli, type CliResult } from '../helpers/process.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const PR = 39;
const sha = (): string => randomBytes(20).toString('hex');
/** The one sentence of the counts, the same on every surface. */
const COUNTS = '1 new failure, 2 known flakes (1 quarantined)';
const FIGURES = { newFailures: 1, brokenOnBase: 0, knownFlakes: 2, quarantined: 1, failed: 3, flaky: 0, countsText: COUNTS };

/** One native run of `spec` (`fail>pass`: failed, then passed on a retry). */
function run(commitSha: string, at: number, spec: Record<string, string>, resource: object, status: string): Record<string, unknown> {
  const executions: Record<string, unknown>[] = [];
  for (const [title, outcome] of Object.entries(spec)) {
    const first = executions.length;
    outcome.split('>').forEach((s, k) => {
      executions.push({
        filePath: 'src/shop.test.ts',
        suite: 'shop',
        title,
        status: s,
        attempt: k + 1,
        ...(k > 0 ? { retryOfIndex: first } : {}),
        startedAt: at + executions.length * 10,
        durationMs: 12,
        ...(s === 'fail' ? { error: { message: `${title}: expected 200, got 500` } } : {}),
      });
    });
  }
  return nativeBatch({ resource: { commitSha, branch: 'main', trigger: 'push', ...resource }, run: { status, startedAt: new Date(at).toISOString() }, executions });
}

describe('one source for what a pull request shows (issue 39, defect 4)', () => {
  let td: TestDaemon;
  let trpc: ReturnType<typeof createTRPCClient<AppRouter>>;
  const work = mkdtempSync(path.join(tmpdir(), 'fh-pr-one-source-'));
  const commit = sha();
  const pr = { branch: 'feature/one-source', baseBranch: 'main', prNumber: PR, trigger: 'pull_request', repository: 'acme/shop' };

  function cli(args: string[]): Promise<CliResult> {
    return runCli(args, { cwd: work, env: { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token } });
  }

  beforeAll(async () => {
    td = await startTestDaemon();
    trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
    // Main's last five days: `known` failed and passed on a retry in three of five runs (an
    // established flake); `newbie` and `quar` always passed.
    const outcomes = ['fail>pass', 'pass', 'fail>pass', 'pass', 'fail>pass'];
    await td.ingest(...outcomes.map((o, i) => run(sha(), Date.now() - (5 - i) * DAY, { known: o, newbie: 'pass', quar: 'pass' }, {}, 'passed')));
    // Job 1 (native, older): three failures. Job 2 (a JUnit upload of another job, newer, same
    // shard 0): passed. The newest run alone says "passed".
    await td.ingest(run(commit, Date.now() - 2 * HOUR, { known: 'fail', newbie: 'fail', quar: 'fail', steady: 'pass' }, { ...pr, ciRunId: 'unit-1' }, 'failed'));
    const xml = `<testsuite name="api" timestamp="${new Date(Date.now() - HOUR).toISOString().slice(0, 19)}"><testcase classname="api" name="lists orders" time="0.2"/><testcase classname="api" name="shows an order" time="0.1"/></testsuite>`;
    const up = await td.request('POST', '/v1/ingest/junit', { body: { idempotencyKey: `one-source-${commit}`, resource: { ciProvider: 'github_actions', ciRunId: 'e2e-1', commitSha: commit, ...pr }, xml } });
    expect(up.status, up.text).toBe(202);
    await td.waitFor(async () => (await td.request('GET', `/v1/runs/summary?commitSha=${commit}`)).json?.summary?.totalTests === 6, 30_000);
    // `quar` is quarantined by a person.
    const g = await td.request('GET', `/v1/runs/gate?commitSha=${commit}`);
    const quar = (g.json.gate.tests as { title: string; testIdentityId: string }[]).find((t) => t.title === 'quar')!;
    const q = await td.request('POST', `/v1/tests/${quar.testIdentityId}/quarantine`, { body: { decision: 'quarantined', reason: 'issue 39' } });
    expect(q.status, q.text).toBe(200);
  }, 120_000);

  afterAll(async () => {
    await td?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('the gate JSON and markdown: blocked, never "passed", with the same counts', async () => {
    const res = await td.request('GET', `/v1/runs/gate?commitSha=${commit}`);
    expect(res.status).toBe(200);
    const g = res.json.gate;
    expect(g.tests.map((t: { title: string; classification: string }) => [t.title, t.classification])).toEqual([
      ['newbie', 'new_failure'],
      ['known', 'known_flake'],
      ['quar', 'quarantined'],
    ]);
    // Every job's latest run: the older job failed, so the jobs did not pass.
    expect(g).toMatchObject({ verdict: 'block', status: 'blocked', runStatus: 'failed', jobs: 2, ...FIGURES });
    const md: string = res.json.markdown;
    expect(md).toContain(`blocked — ${COUNTS}`);
    expect(md).toContain('status blocked');
    expect(md).not.toMatch(/\b(run|status) passed\b/);
  });

  it('the summary: the same status and counts as the gate', async () => {
    const res = await td.request('GET', `/v1/runs/summary?commitSha=${commit}`);
    expect(res.status).toBe(200);
    expect(res.json.summary).toMatchObject({ status: 'blocked', verdict: 'block', runStatus: 'failed', jobs: 2, ...FIGURES });
    const md: string = res.json.markdown;
    expect(md).toContain(COUNTS);
    expect(md).toContain('status blocked');
    expect(md).not.toMatch(/\b(run|status) passed\b/);
  });

  it('the PR page’s procedures: the header reads the gate’s status and counts, the table agrees with them', async () => {
    const page = await trpc.pr.summary.query({ prNumber: PR });
    expect(page.commitSha).toBe(commit);
    expect(page.gate).toMatchObject({ status: 'blocked', verdict: 'block', ...FIGURES });
    // The table's rows, by the gate's classification, add up to the header's counts.
    const classes = page.gate!.tests.map((t) => t.classification);
    expect(classes.filter((c) => c === 'known_flake' || c === 'quarantined')).toHaveLength(page.gate!.knownFlakes);
    expect(classes.filter((c) => c === 'quarantined')).toHaveLength(page.gate!.quarantined!);
    expect(classes.filter((c) => c === 'new_failure')).toHaveLength(page.gate!.newFailures);
    expect(page.summary).toMatchObject({ status: 'blocked', ...FIGURES });
    expect(page.gateMarkdown).toContain(COUNTS);
    const commits = await trpc.pr.commits.query({ prNumber: PR });
    expect(commits.commits).toHaveLength(1);
    expect(commits.commits[0]).toMatchObject({ commitSha: commit, status: 'blocked', failed: 3, flaky: 0, gate: { verdict: 'block', newFailures: 1, knownFlakes: 2, quarantined: 1, brokenOnBase: 0, countsText: COUNTS } });
  });

  it('the CLI: `gate`, `gate --json` and `summary` print the same counts', async () => {
    const text = await cli(['gate', '--commit', commit, '--base', 'main']);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain(`Flakehouse gate: BLOCKED — ${COUNTS}`);
    expect(text.stdout).toContain('status blocked');
    expect(text.stdout).not.toMatch(/\b(run|status) passed\b/);

    const json = await cli(['gate', '--json', '--commit', commit]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ verdict: 'block', status: 'blocked', ...FIGURES });

    const summary = await cli(['summary', '--commit', commit]);
    expect(summary.code).toBe(0);
    expect(summary.stdout).toContain(COUNTS);
    expect(summary.stdout).toContain('status blocked');
    expect(summary.stdout).not.toMatch(/\b(run|status) passed\b/);
  });
});
