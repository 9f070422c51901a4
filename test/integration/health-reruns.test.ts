// GET /v1/health's CI cost counts whole-job re-runs beside retried attempts (issue 31, defect 6): a
// commit run twice on the same branch and trigger bills the second run's wall time (less the
// retries inside it, already billed as retried attempts) as re-run minutes, in `cost.currency`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const MIN = 60_000;
const CI_MINUTE = 0.5;

describe('GET /v1/health: re-runs', () => {
  let td: TestDaemon;
  const at = Date.now() - 3 * 3_600_000;
  const commit = 'c0ffee0000000000000000000000000000000001';

  function run(startedAt: number, wallMs: number, retry: boolean, resource: object = {}): Record<string, unknown> {
    const ex: Record<string, unknown>[] = [
      { filePath: 'src/a.test.ts', suite: 'a', title: 'one', status: retry ? 'fail' : 'pass', startedAt, durationMs: 1_000 },
      { filePath: 'src/a.test.ts', suite: 'a', title: 'two', status: 'pass', startedAt: startedAt + 1, durationMs: 2_000 },
    ];
    if (retry) ex.push({ filePath: 'src/a.test.ts', suite: 'a', title: 'one', status: 'pass', attempt: 2, retryOfIndex: 0, startedAt: startedAt + 2, durationMs: 6_000 });
    return nativeBatch({
      resource: { commitSha: commit, branch: 'main', trigger: 'push', ...resource },
      run: { status: 'passed', startedAt: new Date(startedAt).toISOString(), finishedAt: new Date(startedAt + wallMs).toISOString() },
      executions: ex,
    });
  }

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_CI_MINUTE_COST: String(CI_MINUTE), SERVICE_COST_CURRENCY: 'EUR' } });
    await td.ingest(
      run(at, 2 * MIN, false), // the original
      run(at + 10 * MIN, 3 * MIN, true), // re-run of the same job: 3 min, 6 s of it a retry
      run(at + 20 * MIN, 4 * MIN, false, { trigger: 'schedule' }), // a nightly of the same commit: no re-run
      run(at + 30 * MIN, 5 * MIN, false, { commitSha: 'c0ffee0000000000000000000000000000000002' }), // another commit
    );
  });
  afterAll(async () => td?.close());

  it('bills the second run of a commit as re-run minutes, beside the retried attempts, in the configured currency', async () => {
    const h = (await td.request('GET', '/v1/health?days=7')).json;
    expect(h.cost).toMatchObject({ currency: 'EUR', rerunMs: 6_000, reRunCount: 1, reRunMs: 3 * MIN - 6_000 });
    expect(h.cost.ciSpend).toBeCloseTo(((6_000 + 3 * MIN - 6_000) / MIN) * CI_MINUTE, 4);
  });

  it('with an owner, bills the owner tests’ first attempts in the re-run', async () => {
    await td.request('PUT', '/v1/codeowners', { body: { content: '/src/ @acme/a\n' } });
    const h = (await td.request('GET', '/v1/health?days=7&owner=%40acme%2Fa')).json;
    expect(h.cost).toMatchObject({ reRunCount: 1, reRunMs: 3_000 });
  });
});
