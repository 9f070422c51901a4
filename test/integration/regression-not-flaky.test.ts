// Never call a real break flaky, end to end (issue "evidence from the same code"): a regression on
// main, with PR branches forked before the break passing in between, is `broken` from its first
// failing main run and never a candidate; the gate calls the breaking commit a new failure and later
// commits "already broken on main since ed3d460", never a known flake. And a PR's new failure keeps
// blocking after other branches pass the test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const HOUR = 3_600_000;
const T0 = Date.now() - 10 * 24 * HOUR;
const TESTS = Array.from({ length: 30 }, (_, i) => `computes case ${i}`);
const EXPRESS = 'calculates express rate';
const NEWBIE = 'applies the loyalty discount';
/** The commit that breaks EXPRESS on main, as `flakehouse report` would send it (full sha). */
const BREAK = 'ed3d460'.padEnd(40, 'a');

type Status = 'pass' | 'fail';
let seq = 0;
const shaOf = (n: number): string => n.toString(16).padStart(7, '0').padEnd(40, 'b');

/** One CI run: every test passes unless `fail` names it; a failing test is retried twice (3 attempts). */
function ciRun(at: number, commitSha: string, resource: Record<string, unknown>, fail: readonly string[]): Record<string, unknown> {
  const executions: Record<string, unknown>[] = [];
  for (const title of [...TESTS, EXPRESS, NEWBIE]) {
    const status: Status = fail.includes(title) ? 'fail' : 'pass';
    const first = executions.length;
    executions.push({ filePath: 'src/shipping.test.ts', suite: 'shipping service', title, status, startedAt: at + executions.length, durationMs: 5, ...(status === 'fail' ? { error: { message: 'expected 12.5 to be 9.99' } } : {}) });
    if (status === 'fail') {
      for (const attempt of [2, 3]) executions.push({ filePath: 'src/shipping.test.ts', suite: 'shipping service', title, status: 'fail', attempt, retryOfIndex: first, startedAt: at + executions.length, durationMs: 5, error: { message: 'expected 12.5 to be 9.99' } });
    }
  }
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `regression-${process.pid}-${++seq}`,
    resource: { ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push', ...resource },
    run: { status: fail.length > 0 ? 'failed' : 'passed', startedAt: at },
    executions,
  };
}

const pr = (n: number, mergeBase?: string): Record<string, unknown> => ({ branch: `feat/${n}`, prNumber: n, baseBranch: 'main', trigger: 'pull_request', ...(mergeBase ? { mergeBase } : {}) });

describe('a real break is never called flaky', () => {
  let td: TestDaemon;
  const events: DomainEvent[] = [];
  let expressId = '';
  const mainShas: string[] = [];
  let run = 0;
  const at = (): number => T0 + run++ * 2 * HOUR;

  const state = async (): Promise<{ state: string; stateSince: { commitSha: string } | null; quarantined: boolean; score: number }> =>
    (await td.request('GET', `/v1/tests/${expressId}`)).json;

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_QUARANTINE_ENABLED: 'true' } });
    td.daemon.runtime.onEvent((e) => events.push(e));
    // Ten green main pushes; PR branches fork from them.
    for (let i = 0; i < 10; i++) {
      mainShas.push(shaOf(i + 1));
      await td.ingest(ciRun(at(), mainShas.at(-1)!, {}, []));
    }
    const detail = await td.request('GET', `/v1/runs/${(await td.request('GET', '/v1/runs?limit=1')).json.items[0].id}`);
    expressId = detail.json.executions.find((e: { title: string }) => e.title === EXPRESS).testIdentityId;
  }, 60_000);
  afterAll(async () => td?.close());

  it('is broken from its first failing main run, stays broken while older PR branches pass, never a candidate or quarantined', async () => {
    await td.ingest(ciRun(at(), BREAK, {}, [EXPRESS]));
    mainShas.push(BREAK);
    const first = await state();
    expect(first.state).toBe('broken');
    expect(first.stateSince?.commitSha).toBe(BREAK);

    // 20 more runs: PR branches forked before the break pass the test; main keeps failing it.
    for (let i = 0; i < 10; i++) {
      await td.ingest(ciRun(at(), shaOf(100 + i), pr(100 + i, mainShas[5]), []));
      mainShas.push(shaOf(200 + i));
      await td.ingest(ciRun(at(), mainShas.at(-1)!, {}, [EXPRESS]));
      const s = await state();
      expect(s).toMatchObject({ state: 'broken', quarantined: false });
      expect(s.stateSince?.commitSha).toBe(BREAK);
    }
    const board = await td.request('GET', '/v1/flaky?limit=100');
    const row = board.json.items.find((r: { testIdentityId: string }) => r.testIdentityId === expressId);
    expect(row).toMatchObject({ state: 'broken', quarantineCandidate: false, quarantined: false });
    expect(row.score).toBeLessThan(0.5);
    expect(events.some((e) => e.type === 'flaky.detected' && e.data.testIdentityId === expressId)).toBe(false);
    expect(events.some((e) => e.type === 'quarantine.changed' && e.data.testIdentityId === expressId)).toBe(false);
  }, 90_000);

  it('the gate calls the breaking commit a new failure and later main commits already broken since ed3d460, never a known flake', async () => {
    const onBreak = (await td.request('GET', `/v1/runs/gate?commitSha=${BREAK}&baseBranch=main`)).json.gate;
    const t0 = onBreak.tests.find((t: { title: string }) => t.title === EXPRESS);
    expect(t0.classification).toBe('new_failure');
    expect(onBreak.verdict).toBe('block');

    const later = (await td.request('GET', `/v1/runs/gate?commitSha=${mainShas.at(-1)}&baseBranch=main`)).json;
    const t1 = later.gate.tests.find((t: { title: string }) => t.title === EXPRESS);
    expect(t1).toMatchObject({ classification: 'broken_on_base', state: 'broken', knownFlake: false, brokenSince: { commitSha: BREAK } });
    expect(later.gate).toMatchObject({ newFailures: 0, brokenOnBase: 1, knownFlakes: 0 });
    expect(later.markdown).toContain('broken on `main` since ed3d460');
    expect(later.markdown).not.toMatch(/known flake \|/);

    // A PR forked after the break fails it too: already broken on main; one forked before the
    // break (merge base older than ed3d460) that fails it has a failure of its own: new.
    await td.ingest(ciRun(at(), shaOf(300), pr(300, mainShas.at(-2)), [EXPRESS]));
    const after = (await td.request('GET', `/v1/runs/gate?commitSha=${shaOf(300)}`)).json.gate;
    expect(after.tests[0]).toMatchObject({ title: EXPRESS, classification: 'broken_on_base' });
    expect(after.verdict).toBe('pass');
    await td.ingest(ciRun(at(), shaOf(301), pr(301, mainShas[3]), [EXPRESS]));
    const before = (await td.request('GET', `/v1/runs/gate?commitSha=${shaOf(301)}`)).json.gate;
    expect(before.tests[0]).toMatchObject({ title: EXPRESS, classification: 'new_failure' });
    expect(before.verdict).toBe('block');
  }, 60_000);

  it('is fixed since the fixing commit, and was never flaky', async () => {
    const fix = shaOf(400);
    await td.ingest(ciRun(at(), fix, {}, []));
    const s = await state();
    expect(s.state).toBe('fixed');
    expect(s.stateSince?.commitSha).toBe(fix);
    expect(events.some((e) => e.type === 'flaky.detected' && e.data.testIdentityId === expressId)).toBe(false);
  }, 30_000);

  it("a PR's new failure keeps blocking after other branches pass the test", async () => {
    const pr9 = shaOf(900);
    await td.ingest(ciRun(at(), pr9, pr(9, mainShas.at(-1)), [NEWBIE]));
    const gate = async (): Promise<{ verdict: string; tests: { title: string; classification: string; score: number }[] }> =>
      (await td.request('GET', `/v1/runs/gate?commitSha=${pr9}`)).json.gate;
    const blocked = await gate();
    expect(blocked.verdict).toBe('block');
    expect(blocked.tests.find((t) => t.title === NEWBIE)?.classification).toBe('new_failure');
    // Other branches (and main) pass the test afterwards.
    for (let i = 0; i < 4; i++) await td.ingest(ciRun(at(), shaOf(910 + i), pr(10 + i, mainShas.at(-1)), []));
    await td.ingest(ciRun(at(), shaOf(920), {}, []));
    const still = await gate();
    expect(still.verdict).toBe('block');
    const t = still.tests.find((x) => x.title === NEWBIE)!;
    expect(t.classification).toBe('new_failure');
    expect(t.score).toBeLessThan(0.5);
  }, 60_000);
});
