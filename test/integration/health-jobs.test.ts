// Two jobs on one commit are not re-runs of each other (issue 39, defect 3): a Vitest job and a Jest
// job of the same commit, branch and trigger were counted as a whole-job re-run, overstating the
// health page's re-runs, CI minutes and cost. A run's resource now names its CI job (and matrix
// values); a re-run is the same job (name and matrix) on the same code again. Runs without a job
// name (older clients) keep the old key among themselves.
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { encodeOtlpRun } from '../../client/src/contract/otlp-encode.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const MIN = 60_000;
const CI_MINUTE = 0.5;

const sha = (n: number): string => `d00d${String(n).padStart(36, '0')}`;

interface JobOpts {
  name?: string;
  matrix?: Record<string, unknown>;
  commit: number;
  fail?: boolean;
}

function run(startedAt: number, wallMs: number, o: JobOpts): Record<string, unknown> {
  const title = o.name ?? 'unnamed';
  return nativeBatch({
    resource: {
      commitSha: sha(o.commit),
      branch: 'feature/jobs',
      trigger: 'pull_request',
      prNumber: 7,
      ...(o.name !== undefined ? { ciJobName: o.name } : {}),
      ...(o.matrix !== undefined ? { ciJobMatrix: o.matrix } : {}),
    },
    run: { status: o.fail ? 'failed' : 'passed', startedAt: new Date(startedAt).toISOString(), finishedAt: new Date(startedAt + wallMs).toISOString() },
    executions: [
      {
        filePath: `src/${title}.test.ts`,
        suite: 'jobs',
        title: `${title} works`,
        status: o.fail ? 'fail' : 'pass',
        startedAt,
        durationMs: 1_000,
        ...(o.fail ? { error: { message: 'boom' } } : {}),
      },
    ],
  });
}

describe('re-runs are counted per CI job', () => {
  let td: TestDaemon;
  let c: ReturnType<typeof createTRPCClient<AppRouter>>;
  const at = Date.now() - 4 * 3_600_000;

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_CI_MINUTE_COST: String(CI_MINUTE), SERVICE_COST_CURRENCY: 'EUR' } });
    await td.ingest(
      // Commit 1: a Vitest job and a Jest job, each run once: no re-run.
      run(at, 2 * MIN, { name: 'vitest', commit: 1, fail: true }),
      run(at + 1_000, 3 * MIN, { name: 'jest', commit: 1 }),
      // Commit 1: two legs of one matrix job (values in any key order, numbers or text): no re-run.
      run(at + 2_000, 4 * MIN, { name: 'e2e', matrix: { node: 20, os: 'ubuntu' }, commit: 1 }),
      run(at + 3_000, 4 * MIN, { name: 'e2e', matrix: { os: 'ubuntu', node: 22 }, commit: 1 }),
      // Commit 2: the same job twice: one re-run of 5 min.
      run(at + 10 * MIN, 2 * MIN, { name: 'vitest', commit: 2 }),
      run(at + 20 * MIN, 5 * MIN, { name: 'vitest', commit: 2 }),
      // Commit 2: the same matrix leg twice (keys in another order): one re-run of 6 min.
      run(at + 21 * MIN, 4 * MIN, { name: 'e2e', matrix: { node: 20, os: 'ubuntu' }, commit: 2 }),
      run(at + 30 * MIN, 6 * MIN, { name: 'e2e', matrix: { os: 'ubuntu', node: '20' }, commit: 2 }),
      // Commit 3: an older client names no job: two runs are one re-run of 7 min, as before.
      run(at + 40 * MIN, 1 * MIN, { commit: 3 }),
      run(at + 50 * MIN, 7 * MIN, { commit: 3 }),
    );
    c = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
  }, 120_000);
  afterAll(async () => td?.close());

  it('two jobs on one commit are no re-run; the same job (and matrix leg) again is one', async () => {
    const res = await td.request('GET', '/v1/health?days=7');
    expect(res.status, res.text).toBe(200);
    const h = res.json;
    expect(h.cost).toMatchObject({ currency: 'EUR', reRunCount: 3, reRunMs: 5 * MIN + 6 * MIN + 7 * MIN, rerunMs: 0 });
    expect(h.cost.ciSpend).toBeCloseTo(18 * CI_MINUTE, 4);
  });

  it('the pull request counts the same jobs: commit 1 is four jobs, and the failed Vitest job is not hidden by the newer passing ones', async () => {
    const gate = await td.request('GET', `/v1/runs/gate?commitSha=${sha(1)}`);
    expect(gate.status, gate.text).toBe(200);
    expect(gate.json.gate).toMatchObject({ jobs: 4, runStatus: 'failed' });
    // Commit 2: the same two jobs run twice each, two jobs; commit 3 (no job named): one.
    expect((await td.request('GET', `/v1/runs/gate?commitSha=${sha(2)}`)).json.gate).toMatchObject({ jobs: 2 });
    expect((await td.request('GET', `/v1/runs/gate?commitSha=${sha(3)}`)).json.gate).toMatchObject({ jobs: 1 });
  });

  it('breaks runs, re-runs and CI time down by job', async () => {
    const h = (await td.request('GET', '/v1/health?days=7')).json;
    const byJob = Object.fromEntries(
      (h.jobs as { name: string | null; matrix: Record<string, string> | null }[]).map((j) => [`${j.name ?? '-'} ${JSON.stringify(j.matrix)}`, j]),
    );
    expect(byJob['vitest null']).toEqual({ name: 'vitest', matrix: null, runs: 3, ciMs: 9 * MIN, reRunCount: 1, reRunMs: 5 * MIN });
    expect(byJob['jest null']).toEqual({ name: 'jest', matrix: null, runs: 1, ciMs: 3 * MIN, reRunCount: 0, reRunMs: 0 });
    expect(byJob['e2e {"node":"20","os":"ubuntu"}']).toEqual({ name: 'e2e', matrix: { node: '20', os: 'ubuntu' }, runs: 3, ciMs: 14 * MIN, reRunCount: 1, reRunMs: 6 * MIN });
    expect(byJob['e2e {"node":"22","os":"ubuntu"}']).toEqual({ name: 'e2e', matrix: { node: '22', os: 'ubuntu' }, runs: 1, ciMs: 4 * MIN, reRunCount: 0, reRunMs: 0 });
    expect(byJob['- null']).toEqual({ name: null, matrix: null, runs: 2, ciMs: 8 * MIN, reRunCount: 1, reRunMs: 7 * MIN });
    // Most CI time first.
    expect(h.jobs.map((j: { ciMs: number }) => j.ciMs)).toEqual([14, 9, 8, 4, 3].map((m) => m * MIN));
    // The procedure answers alike.
    const m = await c.health.metrics.query({ days: 7 });
    expect(m.jobs).toEqual(h.jobs);
  });

  it('the board charges a failed run only the re-run of its own job', async () => {
    // vitest failed on commit 1 and was never re-run; jest and e2e on the same commit are other jobs.
    const board = await c.flaky.board.query({ limit: 50 });
    const vitest = board.items.find((i) => i.title === 'vitest works');
    expect(vitest?.impact).toMatchObject({ failuresCaused: 1, minutesLost: 0 });
  });

  it('shows the job name and matrix on the run list and the run', async () => {
    const list = await td.request('GET', `/v1/runs?commitSha=${sha(2)}&limit=10`);
    expect(list.status, list.text).toBe(200);
    const jobs = list.json.items.map((r: { ciJobName: string | null; ciJobMatrix: unknown }) => [r.ciJobName, r.ciJobMatrix]);
    expect(jobs).toEqual([
      ['e2e', { node: '20', os: 'ubuntu' }],
      ['e2e', { node: '20', os: 'ubuntu' }],
      ['vitest', null],
      ['vitest', null],
    ]);
    const one = await td.request('GET', `/v1/runs/${list.json.items[0].id}`);
    expect(one.json).toMatchObject({ ciJobName: 'e2e', ciJobMatrix: { node: '20', os: 'ubuntu' } });
    const old = (await td.request('GET', `/v1/runs?commitSha=${sha(3)}&limit=10`)).json.items;
    expect(old.map((r: { ciJobName: unknown; ciJobMatrix: unknown }) => [r.ciJobName, r.ciJobMatrix])).toEqual([
      [null, null],
      [null, null],
    ]);
  });

  it('over OTLP the job is cicd.pipeline.task.name (and the matrix service.job.matrix)', async () => {
    const started = Date.now() - 3_600_000;
    const [body] = encodeOtlpRun({
      contractVersion: '0.1.0',
      idempotencyKey: 'otlp-job-name-0001',
      resource: { ciProvider: 'gitlab_ci', commitSha: sha(4), branch: 'main', trigger: 'push', ciJobName: 'test: [node, 20]', ciJobMatrix: { node: '20' } },
      run: { status: 'passed', startedAt: started, finishedAt: started + 1_000 },
      executions: [{ filePath: 'src/o.test.ts', suite: 'o', title: 'works', status: 'pass', attempt: 1, startedAt: started, durationMs: 10 }],
    });
    const res = await fetch(`${td.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${td.token}`, 'content-type': 'application/x-protobuf' },
      body: body!,
    });
    expect(res.status, await res.clone().text()).toBe(202);
    const item = await td.waitFor(async () => (await td.request('GET', `/v1/runs?commitSha=${sha(4)}`)).json.items[0]);
    expect(item).toMatchObject({ ciJobName: 'test: [node, 20]', ciJobMatrix: { node: '20' } });
  });
});
