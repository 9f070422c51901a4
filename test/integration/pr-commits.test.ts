// pr.commits: every commit of a pull request, newest first, each with the verdict GET /v1/runs/gate
// gives it and its failed and flaky counts; another PR's and the base branch's runs are not in it;
// a PR without runs lists none. run.get carries the CI job URL, the repository and the commit's
// GitHub page for the run page's links.
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const T0 = Date.parse('2026-11-10T08:00:00Z');
const HOUR = 3_600_000;
const sha = (c: string) => c.repeat(40);
const JOB = 'https://github.com/acme/shop/actions/runs/1/job/2';

/** A run of `commit` with `fail` failing (plus a passing test), on PR `pr` (none: main). */
function run(key: string, commit: string, at: number, opts: { pr?: number; fail?: boolean; flaky?: boolean; gitlab?: boolean } = {}): Record<string, unknown> {
  const executions: Record<string, unknown>[] = [{ filePath: 'src/a.test.ts', suite: 'a', title: 'passes', status: 'pass', startedAt: at, durationMs: 10 }];
  if (opts.fail) executions.push({ filePath: 'src/a.test.ts', suite: 'a', title: 'breaks', status: 'fail', startedAt: at + 1, durationMs: 10, error: { message: 'boom' } });
  else executions.push({ filePath: 'src/a.test.ts', suite: 'a', title: 'breaks', status: 'pass', startedAt: at + 1, durationMs: 10 });
  if (opts.flaky) {
    executions.push({ filePath: 'src/a.test.ts', suite: 'a', title: 'wobbles', status: 'fail', startedAt: at + 2, durationMs: 10, error: { message: 'timeout' } });
    executions.push({ filePath: 'src/a.test.ts', suite: 'a', title: 'wobbles', status: 'pass', attempt: 2, retryOfIndex: 2, startedAt: at + 3, durationMs: 10 });
  }
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `pr-commits-${key}`,
    resource: {
      ciProvider: opts.gitlab ? 'gitlab_ci' : 'github_actions',
      commitSha: commit,
      repository: 'acme/shop',
      ...(opts.gitlab ? {} : { ciJobUrl: JOB }),
      branch: opts.pr ? `feature/${opts.pr}` : 'main',
      trigger: opts.pr ? 'pull_request' : 'push',
      ...(opts.pr ? { prNumber: opts.pr, baseBranch: 'main' } : {}),
    },
    run: { status: opts.fail ? 'failed' : 'passed', startedAt: at, finishedAt: at + 60_000 },
    executions,
  };
}

describe('pr.commits', () => {
  let td: TestDaemon;
  let c: ReturnType<typeof createTRPCClient<AppRouter>>;
  beforeAll(async () => {
    td = await startTestDaemon();
    await td.ingest(
      run('main-1', sha('0'), T0, {}),
      run('main-2', sha('9'), T0 + HOUR, { gitlab: true }),
      // PR 5: a failing first commit (re-run once), a flaky second one, a passing third.
      run('pr5-a', sha('a'), T0 + 2 * HOUR, { pr: 5, fail: true }),
      run('pr5-a-rerun', sha('a'), T0 + 2 * HOUR + 600_000, { pr: 5, fail: true }),
      run('pr5-b', sha('b'), T0 + 3 * HOUR, { pr: 5, flaky: true }),
      run('pr5-c', sha('c'), T0 + 4 * HOUR, { pr: 5 }),
      run('pr6-d', sha('d'), T0 + 5 * HOUR, { pr: 6, fail: true }),
    );
    c = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
  }, 120_000);
  afterAll(async () => td?.close());

  it('lists every commit of the PR, newest first, each with the gate verdict GET /v1/runs/gate gives it', async () => {
    const res = await c.pr.commits.query({ prNumber: 5 });
    expect(res.prNumber).toBe(5);
    expect(res.more).toBe(false);
    expect(res.commits.map((x) => [x.commitSha, x.runs, x.gate?.verdict, x.failed, x.flaky])).toEqual([
      [sha('c'), 1, 'pass', 0, 0],
      // A test flaking with no history on main is new to the gate: it blocks at the default strictness.
      [sha('b'), 1, 'block', 0, 1],
      [sha('a'), 2, 'block', 1, 0],
    ]);
    for (const x of res.commits) {
      const gate = (await td.request('GET', `/v1/runs/gate?commitSha=${x.commitSha}`)).json.gate;
      expect(x.gate).toEqual({ verdict: gate.verdict, baseBranch: 'main', strictness: gate.strictness, newFailures: gate.newFailures, knownFlakes: gate.knownFlakes, quarantined: gate.quarantined, brokenOnBase: gate.brokenOnBase, countsText: gate.countsText });
      expect([x.runStatus, x.complete, x.status, x.failed, x.flaky]).toEqual([gate.runStatus, gate.complete, gate.status, gate.failed, gate.flaky]);
    }
    expect(res.commits[2]).toMatchObject({ firstRunAt: new Date(T0 + 2 * HOUR).toISOString(), lastRunAt: new Date(T0 + 2 * HOUR + 600_000).toISOString(), gate: { newFailures: 1 } });
    // Strictness passes through to the gate: `off` never blocks.
    expect((await c.pr.commits.query({ prNumber: 5, strictness: 'off' })).commits.map((x) => x.gate?.verdict)).toEqual(['pass', 'pass', 'pass']);
    expect((await c.pr.commits.query({ prNumber: 6 })).commits.map((x) => x.commitSha)).toEqual([sha('d')]);
    expect(await c.pr.commits.query({ prNumber: 99 })).toEqual({ prNumber: 99, commits: [], more: false });
  });

  it('run.get carries the CI job URL, the repository and the commit on GitHub (GitHub runs only)', async () => {
    const runs = (await td.request('GET', '/v1/runs?limit=100')).json.items as { id: string; commitSha: string }[];
    const get = (s: string) => c.run.get.query({ runId: runs.find((r) => r.commitSha === s)!.id });
    expect(await get(sha('c'))).toMatchObject({ ciJobUrl: JOB, repository: 'acme/shop', commitUrl: `https://github.com/acme/shop/commit/${sha('c')}` });
    expect(await get(sha('9'))).toMatchObject({ ciJobUrl: null, repository: 'acme/shop', commitUrl: null });
    const rest = (await td.request('GET', `/v1/runs/${runs.find((r) => r.commitSha === sha('c'))!.id}`)).json;
    expect(rest).toMatchObject({ ciJobUrl: JOB, commitUrl: `https://github.com/acme/shop/commit/${sha('c')}` });
  });
});
