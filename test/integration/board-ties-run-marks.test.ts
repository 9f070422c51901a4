// Issue 39, defects 5d and 6 (the data behind the dashboard): flaky tests tied on score rank by
// their impact (CI minutes lost) on the board's default sort; the board and the test page carry the
// raw counts behind the smoothed flake rate (recentRuns); the run page's procedure marks the attempts
// `flakehouse run` made itself (flakehouse.verify) and gives the run's wall time, its re-runs included.
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const HOUR = 3_600_000;
const T0 = Date.now() - 12 * HOUR;
const STABLE = [1, 2, 3, 4, 5].map((i) => ({ filePath: 'src/stable.test.ts', suite: 'stable', title: `stays green ${i}` }));
const TIED = ['a', 'b', 'c'].map((x) => ({ filePath: 'src/tied.test.ts', suite: 'tied', title: `flakes alike ${x}` }));
const RUNS = 6;

/** Run r: the tied tests fail their first attempt and pass the retry on odd runs; `retryMs` is each one's retried attempt's duration. */
function run(r: number, retryMs: (title: string) => number): Record<string, unknown> {
  const at = T0 + r * HOUR;
  const executions: Record<string, unknown>[] = STABLE.map((t, i) => ({ ...t, status: 'pass', startedAt: at + i, durationMs: 10 }));
  for (const t of TIED) {
    if (r % 2 === 1) {
      executions.push({ ...t, status: 'fail', startedAt: at + 10, durationMs: 100, error: { message: 'timeout' } });
      executions.push({ ...t, status: 'pass', attempt: 2, retryOfIndex: executions.length - 1, startedAt: at + 20, durationMs: retryMs(t.title) });
    } else executions.push({ ...t, status: 'pass', startedAt: at + 10, durationMs: 100 });
  }
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `issue39-tied-${r}`,
    resource: { ciProvider: 'github_actions', commitSha: `${'e'.repeat(33)}${String(r).padStart(7, '0')}`, branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: at, finishedAt: at + 60_000 },
    executions,
  };
}

type Client = ReturnType<typeof createTRPCClient<AppRouter>>;
let td: TestDaemon;
let trpc: Client;

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
}, 60_000);

afterAll(async () => {
  await td?.close();
});

interface Item {
  testIdentityId: string;
  title: string;
  score: number;
  flakeRate: number;
  recentRuns: { runs: number; failed: number };
  impact?: { minutesLost: number };
}

describe('the board: ties on score rank by impact; raw counts beside the flake rate', () => {
  it('three flakes with the same score are ranked by CI minutes lost, on GET /v1/flaky and flaky.board', async () => {
    // Runs 1..5 alike (1 s retries), so the tests tie; their ids known, run 6 gives the retries
    // durations in the reverse of their id order (the old tie-break), so only impact can rank them so.
    await td.ingest(...Array.from({ length: RUNS - 1 }, (_, i) => run(i + 1, () => 1000)));
    await td.settled();
    const first = (await td.request('GET', '/v1/flaky?limit=50&minScore=0.01')).json.items as Item[];
    const ids = TIED.map((t) => first.find((i) => i.title === t.title)!.testIdentityId);
    const byId = [...TIED.map((t, n) => ({ title: t.title, id: ids[n]! }))].sort((a, b) => a.id.localeCompare(b.id));
    // The last by id loses the most time: 30 s, 20 s, 10 s of retry.
    const extra = new Map(byId.map((t, n) => [t.title, (n + 1) * 10_000]));
    await td.ingest(run(RUNS + 1, (title) => extra.get(title)!));
    await td.settled();

    const board = (await td.request('GET', '/v1/flaky?limit=50&minScore=0.01')).json.items as Item[];
    const tied = board.filter((i) => i.title.startsWith('flakes alike'));
    expect(tied).toHaveLength(3);
    expect(new Set(tied.map((i) => i.score)).size, 'the three scores tie').toBe(1);
    expect(tied.map((i) => i.title)).toEqual([...byId].reverse().map((t) => t.title));

    const dash = (await trpc.flaky.board.query({ limit: 50, minScore: 0.01 })).items as Item[];
    const dashTied = dash.filter((i) => i.title.startsWith('flakes alike'));
    expect(dashTied.map((i) => i.title)).toEqual(tied.map((i) => i.title));
    const lost = dashTied.map((i) => i.impact!.minutesLost);
    expect(lost).toEqual([...lost].sort((a, b) => b - a));
    expect(lost[0]).toBeGreaterThan(lost[2]!);
  }, 120_000);

  it('each test carries the raw counts behind its flake rate: runs with a failed attempt of its graded runs', async () => {
    const board = (await td.request('GET', '/v1/flaky?limit=50')).json.items as Item[];
    const flake = board.find((i) => i.title === TIED[0]!.title)!;
    // Runs 1..5 and 7: the odd ones (4 of 6) failed, then passed on a retry.
    expect(flake.recentRuns).toEqual({ runs: RUNS, failed: 4 });
    expect(flake.flakeRate).not.toBe(4 / 6);
    const stable = board.find((i) => i.title === STABLE[0]!.title)!;
    expect(stable.recentRuns.failed).toBe(0);
    expect(stable.recentRuns.runs).toBeGreaterThan(0);
    const page = (await td.request('GET', `/v1/tests/${flake.testIdentityId}`)).json as Item;
    expect(page.recentRuns).toEqual({ runs: RUNS, failed: 4 });
    const viaTrpc = await trpc.test.get.query({ testIdentityId: flake.testIdentityId });
    expect(viaTrpc.recentRuns).toEqual({ runs: RUNS, failed: 4 });
  });
});

describe('the run page: verification attempts marked; the run as long as the job', () => {
  it("flakehouse run --verify-new's re-runs: each attempt marked `new`; the run page's duration is the runs list's", async () => {
    const at = T0 + 10 * HOUR;
    const NEW = { filePath: 'src/new.test.ts', suite: 'new', title: 'is brand new' };
    const executions: Record<string, unknown>[] = [
      { ...STABLE[0]!, status: 'pass', startedAt: at, durationMs: 10 },
      { ...NEW, status: 'pass', startedAt: at + 100, durationMs: 900, attributes: { 'flakehouse.verify': 'new' } },
    ];
    // 12 re-runs, 28 s apart, the 3rd fails: they end 6 minutes after the command's reporters did.
    for (let i = 1; i <= 12; i++) {
      executions.push({
        ...NEW,
        status: i === 3 ? 'fail' : 'pass',
        attempt: i + 1,
        retryOfIndex: executions.length - 1,
        startedAt: at + 22_000 + i * 28_000,
        durationMs: 900,
        attributes: { 'flakehouse.verify': 'new' },
        ...(i === 3 ? { error: { message: 'flaky new test' } } : {}),
      });
    }
    await td.ingest({
      contractVersion: '0.1.0',
      idempotencyKey: 'issue39-verify-new',
      resource: { ciProvider: 'github_actions', commitSha: 'f'.repeat(40), branch: 'feature/new', trigger: 'pull_request', prNumber: 7, baseBranch: 'main' },
      // As `flakehouse run` reported it before counting its re-runs: the reporters' 21.9 s.
      run: { status: 'passed', startedAt: at, finishedAt: at + 21_900 },
      executions,
    });
    await td.settled();
    const runs = (await td.request('GET', '/v1/runs?branch=feature%2Fnew')).json.items as { id: string; durationMs: number }[];
    expect(runs).toHaveLength(1);
    const r = await trpc.run.get.query({ runId: runs[0]!.id });
    // One duration for a run, the stored one (flakehouse run now reports the job's wall time, e2e
    // run-wall-time.test.ts): the page never says another figure than the list.
    expect(r.durationMs).toBe(runs[0]!.durationMs);
    const rest = (await td.request('GET', `/v1/runs/${runs[0]!.id}`)).json;
    expect(rest).toEqual(JSON.parse(JSON.stringify(r)));
    const marks = r.executions.filter((e) => e.title === NEW.title).map((e) => e.verify);
    expect(marks).toEqual(Array.from({ length: 13 }, () => 'new'));
    expect(r.executions.find((e) => e.title === STABLE[0]!.title)!.verify).toBeNull();
  });
});
