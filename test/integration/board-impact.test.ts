// The board's impact (issue 31): per test, the runs it failed, the PRs those runs blocked, the CI
// minutes it lost (its retried attempts plus its share of the whole-job re-runs of the runs it
// failed) and their cost in the configured currency; `sort=impact` ranks by it (store/board-impact.ts).
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const MIN = 60_000;
const CI_MINUTE = 0.5;

type Exec = Record<string, unknown>;
const exec = (title: string, status: 'pass' | 'fail', startedAt: number, durationMs: number, extra: Exec = {}): Exec => ({
  filePath: `src/${title}.test.ts`,
  suite: 'shop',
  title,
  status,
  startedAt,
  durationMs,
  ...(status === 'fail' ? { error: { message: `${title} failed` } } : {}),
  ...extra,
});

/** `checkout` fails both attempts (1 s, then a 4 s retry); `other` fails once when `otherFails`; `coupon` passes on a 5 min retry when `couponRetry`. */
function run(at: number, commit: string, prNumber: number, opts: { checkoutFails: boolean; otherFails?: boolean; couponRetry?: boolean; wallMs?: number }) {
  const ex: Exec[] = [
    exec('checkout', opts.checkoutFails ? 'fail' : 'pass', at, 1_000),
    exec('other', opts.otherFails ? 'fail' : 'pass', at + 1, 1_000),
    exec('coupon', opts.couponRetry ? 'fail' : 'pass', at + 2, 1_000),
  ];
  if (opts.checkoutFails) ex.push(exec('checkout', 'fail', at + 3, 4_000, { attempt: 2, retryOfIndex: 0 }));
  if (opts.couponRetry) ex.push(exec('coupon', 'pass', at + 4, 5 * MIN, { attempt: 2, retryOfIndex: 2 }));
  return nativeBatch({
    resource: { commitSha: commit.padEnd(40, '0'), branch: `feature/${prNumber}`, trigger: 'pull_request', prNumber, baseBranch: 'main' },
    run: {
      status: opts.checkoutFails || opts.otherFails ? 'failed' : 'passed',
      startedAt: new Date(at).toISOString(),
      finishedAt: new Date(at + (opts.wallMs ?? 2 * MIN)).toISOString(),
    },
    executions: ex,
  });
}

describe('the board: impact', () => {
  let td: TestDaemon;
  let c: ReturnType<typeof createTRPCClient<AppRouter>>;
  const at = Date.now() - 5 * 3_600_000;

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_CI_MINUTE_COST: String(CI_MINUTE), SERVICE_COST_CURRENCY: 'EUR' } });
    await td.ingest(
      run(at, 'c1', 1, { checkoutFails: true, otherFails: true }), // PR 1: checkout and other fail it…
      run(at + 10 * MIN, 'c1', 1, { checkoutFails: false, wallMs: 6 * MIN }), // …and the job is re-run: 6 min, 3 each
      run(at + 20 * MIN, 'c2', 1, { checkoutFails: true, couponRetry: true }), // PR 1 again; coupon passes on retry
      run(at + 30 * MIN, 'c3', 2, { checkoutFails: true }), // PR 2
    );
    c = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
  }, 120_000);
  afterAll(async () => td?.close());

  it('counts failures caused, PRs blocked, minutes lost (retries + re-run share) and cost in the currency', async () => {
    const board = await c.flaky.board.query({ limit: 50 });
    const byTitle = Object.fromEntries(board.items.map((i) => [i.title, i.impact]));
    // 3 retries of 4 s, plus half of the 6 min re-run of the run it failed with `other`.
    const checkoutMin = (3 * 4_000 + 3 * MIN) / MIN;
    expect(byTitle.checkout).toEqual({ failuresCaused: 3, prsBlocked: 2, minutesLost: checkoutMin, cost: checkoutMin * CI_MINUTE, currency: 'EUR' });
    expect(byTitle.other).toEqual({ failuresCaused: 1, prsBlocked: 1, minutesLost: 3, cost: 1.5, currency: 'EUR' });
    // Passed on retry: no failure caused, the retry's 5 min lost.
    expect(byTitle.coupon).toEqual({ failuresCaused: 0, prsBlocked: 0, minutesLost: 5, cost: 2.5, currency: 'EUR' });
  });

  it('sort=impact ranks by minutes lost, on the procedure and (opt-in) on GET /v1/flaky', async () => {
    const board = await c.flaky.board.query({ limit: 50, sort: 'impact' });
    expect(board.items.map((i) => i.title)).toEqual(['coupon', 'checkout', 'other']);
    const paged = await c.flaky.board.query({ limit: 1, sort: 'impact', offset: 1 });
    expect(paged.items.map((i) => [i.title, i.impact?.failuresCaused])).toEqual([['checkout', 3]]);

    const rest = await td.request('GET', '/v1/flaky?sort=impact&limit=50');
    expect(rest.status, rest.text).toBe(200);
    expect(rest.json.items.map((i: { title: string }) => i.title)).toEqual(['coupon', 'checkout', 'other']);
    expect(rest.json.items[1].impact).toMatchObject({ failuresCaused: 3, prsBlocked: 2, currency: 'EUR' });
    // REST's default is unchanged: no impact read, none shown.
    const plain = await td.request('GET', '/v1/flaky?limit=50');
    expect(plain.json.items.every((i: Record<string, unknown>) => !('impact' in i))).toBe(true);
  });

  it('reads impact over the board\'s days window', async () => {
    // days=1 still holds them (5 h ago): the same ranking as the default 30 days.
    const board = await c.flaky.board.query({ limit: 50, days: 1, sort: 'impact' });
    expect(board.items[0]?.impact?.minutesLost).toBe(5);
  });

  it('is fast enough for the board (timed)', async () => {
    const t0 = performance.now();
    await c.flaky.board.query({ limit: 50, sort: 'impact' });
    const sorted = performance.now() - t0;
    const t1 = performance.now();
    await c.flaky.board.query({ limit: 50 });
    const paged = performance.now() - t1;
    console.log(`flaky.board sort=impact ${sorted.toFixed(0)} ms; default sort with page impact ${paged.toFixed(0)} ms`);
    expect(sorted).toBeLessThan(2_000);
  });
});
