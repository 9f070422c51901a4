// Issue 31's trends against real chDB: flaky tests per day from the flaky_trends rollup, where a
// test first flaked or broke (linked to GitHub), and a median-duration regression against the
// trailing baseline, from executions seeded over days with explicit startedAt.
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const DAY = 86_400_000;
const NOW = Date.now();
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const sha = (n: number) => `${String(n).padStart(7, '0')}${'c'.repeat(33)}`;

/** One run `daysAgo` days back: `steady` passes (slower in the last week), `wobbly` flakes on the given days, `gone` fails from day 3 on. */
function run(daysAgo: number, flakes: boolean): Record<string, unknown> {
  const at = NOW - daysAgo * DAY;
  const ex = (title: string, status: string, durationMs: number, extra: Record<string, unknown> = {}) => ({ filePath: 'src/trend.test.ts', suite: 'trend', title, status, startedAt: at, durationMs, ...extra });
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `trend-run-${daysAgo}`,
    resource: { ciProvider: 'github_actions', repository: 'acme/shop', commitSha: sha(100 - daysAgo), branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: at },
    executions: [
      ex('steady', 'pass', daysAgo < 7 ? 2_900 : 1_200),
      ex('quick', 'pass', daysAgo < 7 ? 30 : 10),
      ...(flakes ? [ex('wobbly', 'fail', 50, { error: { message: 'race' } }), ex('wobbly', 'pass', 50, { attempt: 2, retryOfIndex: 2 })] : [ex('wobbly', 'pass', 50)]),
      daysAgo <= 3 ? ex('gone', 'fail', 20, { error: { message: 'broken for good' } }) : ex('gone', 'pass', 20),
    ],
  };
}

const FLAKY_DAYS = new Set([20, 12, 5]);
const RUN_DAYS = [34, 30, 26, 22, 20, 18, 14, 12, 10, 8, 6, 5, 4, 3, 2, 1, 0];

describe('trends', () => {
  let td: TestDaemon;
  let c: ReturnType<typeof createTRPCClient<AppRouter>>;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    td = await startTestDaemon();
    await td.ingest(...RUN_DAYS.map((d) => run(d, FLAKY_DAYS.has(d))));
    c = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
    const board = (await td.request('GET', '/v1/flaky?limit=100&minScore=0&includeQuarantined=true')).json.items as { testIdentityId: string; title: string }[];
    for (const t of board) ids[t.title] = t.testIdentityId;
  }, 120_000);

  afterAll(async () => td?.close());

  it('health.flakyTests counts distinct flaky tests per day from the rollup, a gap on days without runs', async () => {
    const h = await c.health.flakyTests.query({ days: 30 });
    expect(h.unit).toBe('tests');
    expect(h.days).toHaveLength(30);
    expect(h.toDay).toBe(dayOf(NOW));
    const byDay = new Map(h.days.map((d) => [d.day, d.flakyTests]));
    expect(byDay.get(dayOf(NOW - 20 * DAY))).toBe(1);
    expect(byDay.get(dayOf(NOW - 5 * DAY))).toBe(1);
    expect(byDay.get(dayOf(NOW - 6 * DAY))).toBe(0);
    expect(byDay.get(dayOf(NOW - 7 * DAY))).toBeNull();
    expect(h.days.reduce((a, d) => a + (d.flakyTests ?? 0), 0)).toBe(3);
  });

  it('test.trends names the commit where a test first flaked, linked to GitHub', async () => {
    const t = await c.test.trends.query({ testIdentityId: ids.wobbly! });
    expect(t.firstFlaked).toMatchObject({ commitSha: sha(80), branch: 'main', commitUrl: `https://github.com/acme/shop/commit/${sha(80)}` });
    expect(Date.parse(t.firstFlaked!.at)).toBe(NOW - 20 * DAY);
    expect(t.broke).toBeNull();
    expect((await c.test.trends.query({ testIdentityId: ids.steady! })).firstFlaked).toBeNull();
  });

  it('test.trends names the commit a broken test broke at', async () => {
    const t = await c.test.trends.query({ testIdentityId: ids.gone! });
    expect(t.broke).toMatchObject({ commitSha: sha(97), commitUrl: `https://github.com/acme/shop/commit/${sha(97)}` });
  });

  it('flags a duration regression: p50 of the last 7 days ≥ 1.5× and ≥ +200 ms over the trailing 28 days', async () => {
    const steady = await c.test.trends.query({ testIdentityId: ids.steady! });
    expect(steady.duration).toMatchObject({ slowed: true, recentP50Ms: 2_900, baselineP50Ms: 1_200, recentDays: 7, baselineDays: 28 });
    expect(steady.duration.recentSamples).toBe(7);
    // Runs 34 days back sit in the baseline; none older is read.
    expect(steady.duration.baselineSamples).toBe(10);
    // 3× slower but only +20 ms: not a regression.
    const quick = await c.test.trends.query({ testIdentityId: ids.quick! });
    expect(quick.duration).toMatchObject({ slowed: false, recentP50Ms: 30, baselineP50Ms: 10 });
    // The board asks for its page's tests at once: only the regressed one comes back.
    const board = await c.flaky.slowed.query({ testIdentityIds: Object.values(ids) });
    expect(board.items).toEqual([{ testIdentityId: ids.steady, recentP50Ms: 2_900, baselineP50Ms: 1_200 }]);
  });
});
