// Issue 39, defects 5 and 6, as people see them, in a project of its own ("one-day") whose whole
// history is today: the health charts draw today's single point as a dot and label their x axis
// with today's date (it read 2027 to 2029); the runs table fits 1280 px with long branch names, its
// commit hashes on one line, and scrolls inside its own box at 390 px; a run `flakehouse run
// --verify-new` re-ran 12 times is shown as a verification with its verdict and labelled attempts,
// its duration the job's wall time; the board's columns have plain names whose definitions show on
// keyboard focus, flakes tied on score are ranked by CI minutes lost, the raw share sits beside the
// flake rate; the test page names its reasons in words; the runs table and the run page name the
// run's CI job and matrix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { horizontalOverflow } from './helpers/browser.js';
import { DESKTOP, PHONE, checkPage, rest, signedIn, world, type SignedIn } from './helpers/world.js';

const SLUG = 'one-day';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const url = (...parts: string[]): string => `/projects/${SLUG}/${parts.join('/')}`;
const STABLE = Array.from({ length: 8 }, (_, i) => ({ filePath: 'src/cart.test.ts', suite: 'cart', title: `keeps the cart total right, case ${i + 1}` }));
const TIED = ['a', 'b', 'c'].map((x) => ({ filePath: 'src/pay.test.ts', suite: 'pay', title: `charges the card, variant ${x}` }));
const NEW = { filePath: 'src/coupon.test.ts', suite: 'coupon', title: 'splits a coupon across items' };
const LONG_BRANCH = 'feature/checkout-payments-platform/retry-and-idempotency-handling-with-webhook-replay';
/** The series colour of a chart's first series (web/src/ui/chart.tsx COLORS[0]). */
const FIRST_SERIES_RGB = [0x1e, 0x6f, 0xd9];

function sha(n: number): string {
  return `${String(n).padStart(6, '0')}${'ab12cd'.repeat(6)}`.slice(0, 40);
}

interface Exec extends Record<string, unknown> {
  status: string;
}

describe('a project whose history is one day: charts, tables at 1280 and 390 px, verified tests, definitions', () => {
  let token = '';
  const open: SignedIn[] = [];
  const now = Date.now();
  const today = Math.floor(now / DAY) * DAY;
  // Every run today, before now (a few minutes past midnight still works: they are minutes apart).
  const first = Math.max(today + 60_000, now - 6 * HOUR);
  const step = Math.max(1000, Math.floor((now - 60_000 - first) / 8));
  const todayLabel = new Date(today).toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
  let verifyRunId = '';

  function batch(key: string, r: number, branch: string, executions: Exec[], wallMs = 60_000, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const at = first + r * step;
    const failed = executions.some((e, i) => e.status === 'fail' && !executions.some((x) => x.retryOfIndex === i));
    return {
      contractVersion: '0.1.0',
      idempotencyKey: key,
      resource: { ciProvider: 'github_actions', commitSha: sha(r), branch, trigger: 'push', repository: 'shop/one-day', ...extra },
      run: { status: failed ? 'failed' : 'passed', startedAt: at, finishedAt: at + wallMs },
      executions: executions.map((e, i) => ({ durationMs: 150, startedAt: at + i, ...e })),
    };
  }

  beforeAll(async () => {
    const w = world();
    const created = await rest('POST', '/v1/admin/projects', { token: w.adminToken, body: { slug: SLUG } });
    expect([201, 409], created.text).toContain(created.status);
    const tok = await rest('POST', `/v1/admin/projects/${SLUG}/tokens`, { token: w.adminToken, body: { scopes: ['ingest', 'read', 'quarantine'] } });
    expect(tok.status, tok.text).toBe(201);
    token = String(tok.json.token);
    const batches: Record<string, unknown>[] = [];
    // Six main runs: the three tied flakes fail their first attempt and pass the retry in runs 1, 3
    // and 5, alike, except the retries' durations (a: 1 s, b: 40 s, c: 12 s): tied on score, not on impact.
    const retryMs: Record<string, number> = { a: 1000, b: 40_000, c: 12_000 };
    for (let r = 0; r < 6; r++) {
      const ex: Exec[] = STABLE.map((t) => ({ ...t, status: 'pass' }));
      for (const t of TIED) {
        if (r % 2 === 0) {
          ex.push({ ...t, status: 'fail', error: { message: 'card processor timed out' } });
          ex.push({ ...t, status: 'pass', attempt: 2, retryOfIndex: ex.length - 1, durationMs: retryMs[t.title.at(-1)!]! });
        } else ex.push({ ...t, status: 'pass' });
      }
      batches.push(batch(`one-day-main-${r}`, r, r === 5 ? LONG_BRANCH : 'main', ex, 397_000));
    }
    // The PR run `flakehouse run --verify-new 12` reported: the new test's own attempt and 12 re-runs
    // (the 3rd failed), marked flakehouse.verify=new; the run ends after its last re-run, 6 minutes in.
    const pr: Exec[] = STABLE.map((t) => ({ ...t, status: 'pass' }));
    pr.push({ ...NEW, status: 'pass', durationMs: 900, attributes: { 'flakehouse.verify': 'new' } });
    for (let i = 1; i <= 12; i++) {
      pr.push({
        ...NEW,
        status: i === 3 ? 'fail' : 'pass',
        attempt: i + 1,
        retryOfIndex: pr.length - 1,
        startedAt: first + 6 * step + 22_000 + i * 28_000,
        durationMs: 900,
        attributes: { 'flakehouse.verify': 'new' },
        ...(i === 3 ? { error: { message: 'expected 3 items to share the coupon' } } : {}),
      });
    }
    // Reported as `flakehouse run` reports it: from the command's start to after its last re-run.
    batches.push(batch('one-day-pr', 6, 'feature/coupons', pr, 22_000 + 12 * 28_000 + 900, { prNumber: 9, baseBranch: 'main', trigger: 'pull_request', ciJobName: 'unit', ciJobMatrix: { node: '22' } }));
    for (const b of batches) {
      const res = await rest('POST', '/v1/ingest', { token, body: b });
      expect([200, 202], res.text).toContain(res.status);
    }
    // Processed and scored: every run listed, the three tied tests flaky (polled: a condition, not a sleep).
    const want = JSON.stringify({ runs: batches.length, flaky: TIED.map(() => 'flaky') });
    let seen = '';
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 250))) {
      const runs = (await rest('GET', '/v1/runs?limit=100', { token })).json?.items as { id: string; branch: string }[] | undefined;
      const board = (await rest('GET', '/v1/flaky?limit=100&minScore=0.01', { token })).json?.items as { title: string; state: string }[] | undefined;
      verifyRunId = runs?.find((r) => r.branch === 'feature/coupons')?.id ?? '';
      seen = JSON.stringify({ runs: runs?.length, flaky: TIED.map((t) => board?.find((i) => i.title === t.title)?.state) });
      if (seen === want) break;
    }
    expect(seen).toBe(want);
  });

  afterAll(async () => {
    for (const s of open) await s.close();
  });
  const session = async (viewport = DESKTOP): Promise<SignedIn> => {
    const s = await signedIn(token, viewport);
    open.push(s);
    return s;
  };

  /** Pixels of `rgb` (± 8 per channel) on the chart's canvas: what uPlot drew in the series' colour. */
  async function seriesPixels(page: Page, title: string): Promise<number> {
    const canvas = page.locator('figure.chart', { hasText: title }).locator('canvas').first();
    await canvas.waitFor();
    return canvas.evaluate((el, rgb) => {
      const c = el as unknown as { width: number; height: number; getContext(k: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } };
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i]! - rgb[0]!) <= 8 && Math.abs(d[i + 1]! - rgb[1]!) <= 8 && Math.abs(d[i + 2]! - rgb[2]!) <= 8 && d[i + 3]! > 200) n++;
      return n;
    }, FIRST_SERIES_RGB);
  }

  it("the health page: today's single point is a dot, and the x axis is today's date", async () => {
    const health = (await rest('GET', '/v1/health', { token })).json as { reliabilityTrend: { day: string; passRate: number | null; total: number }[] };
    expect(health.reliabilityTrend).toHaveLength(1);
    expect(health.reliabilityTrend[0]!.passRate).not.toBeNull();
    const s = await session();
    await s.page.goto(url('health'));
    const reliability = s.page.locator('figure.chart', { hasText: 'Reliability' });
    await expect.poll(() => reliability.getAttribute('data-points')).toBe('1');
    // The lone pass rate is drawn: a dot of the series' colour (nothing was drawn before).
    await expect.poll(() => seriesPixels(s.page, 'Reliability')).toBeGreaterThan(20);
    const executions = s.page.locator('figure.chart', { hasText: 'Executions per day' });
    await expect.poll(() => seriesPixels(s.page, 'Executions per day')).toBeGreaterThan(20);
    // The axis labels the day the data is on, and nothing else (it read 2027, 2028, 2029).
    await expect.poll(() => executions.getAttribute('data-x-labels')).toBe(todayLabel);
    // Its x scale is today, half a day either side (uPlot made it 1000 days from today).
    const day = today / 1000;
    expect((await executions.getAttribute('data-x-range'))!.split(',').map(Number)).toEqual([day - 43_200, day + 43_200]);
    expect((await reliability.getAttribute('data-x-labels'))!.split('|')).toContain(todayLabel);
    await checkPage(s, 'one-day-health');
  });

  it('the runs table fits 1280 px: no sideways scrolling, commit hashes on one line, durations readable', async () => {
    const s = await session();
    await s.page.goto(url('runs'));
    const table = s.page.locator('table.runs');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(7);
    const box = s.page.getByRole('region', { name: 'Runs' });
    expect(await box.evaluate((e) => e.scrollWidth - e.clientWidth)).toBe(0);
    expect(await horizontalOverflow(s.page)).toBe(0);
    // Every commit cell is one line: its hash does not wrap.
    const heights = await table.locator('tbody a.sha code').evaluateAll((els) =>
      els.map((e) => {
        const r = (e as unknown as { getClientRects(): ArrayLike<unknown> }).getClientRects();
        return r.length;
      }),
    );
    expect(heights.every((n) => n === 1), `line boxes per commit: ${heights.join(',')}`).toBe(true);
    // The PR run names its CI job under its branch.
    expect(await table.getByTestId('run-job').allTextContents()).toEqual(['job unit (node 22)']);
    // The 397 s runs read "6 m 37 s", the verify run its wall time, not its reporters' 21.9 s.
    expect(await table.locator('tbody td.num', { hasText: '6 m 37 s' }).count()).toBe(6);
    await checkPage(s, 'one-day-runs');
  });

  it('at 390 px the runs table scrolls inside its own box, never the page', async () => {
    const s = await session(PHONE);
    await s.page.goto(url('runs'));
    await expect.poll(() => s.page.locator('table.runs tbody tr').count()).toBe(7);
    expect(await horizontalOverflow(s.page)).toBe(0);
    const box = s.page.getByRole('region', { name: 'Runs' });
    expect(await box.evaluate((e) => e.scrollWidth > e.clientWidth)).toBe(true);
    await checkPage(s, 'one-day-runs-390');
  });

  it('the run page: the new test verified 13 times is a verification with its verdict, attempts labelled, the run its wall time', async () => {
    const s = await session();
    await s.page.goto(url('runs', verifyRunId));
    const verified = s.page.locator('section[aria-label="Verified by flakehouse run (1)"]');
    await verified.waitFor();
    // Not a flake: no "Flaky" section lists it.
    expect(await s.page.getByRole('heading', { name: /^Flaky: failed, then passed/ }).count()).toBe(0);
    const row = verified.locator('tbody tr');
    expect((await row.getByTestId('verify-verdict').textContent())!.replace(/\s+/g, ' ')).toContain('new test failed 1 of 13: blocks the gate');
    const labels = await row.locator('ol.attempts li a').allTextContents();
    expect(labels).toEqual(Array.from({ length: 13 }, (_, i) => `run ${i + 1} of 13`));
    // The job's wall time as reported, the runs list's figure: to the end of its last re-run (22 s + 12 × 28 s + 0.9 s).
    const subtitle = (await s.page.locator('hgroup p').textContent())!;
    expect(subtitle).toContain('5 m 59 s');
    // The CI job it ran in, with its matrix.
    expect(await s.page.getByTestId('run-job').textContent()).toBe(' · job unit (node 22)');
    await checkPage(s, 'one-day-run');
  });

  it('the board: plain column names whose definitions show on keyboard focus; ties on score ranked by CI minutes lost; the raw share beside the flake rate', async () => {
    const s = await session();
    await s.page.goto(url('flaky'));
    // The three tied flakes (the new test that flaked in its verification is on the board too).
    const rows = s.page.locator('table.board tbody tr').filter({ hasText: 'charges the card' });
    await expect.poll(() => rows.count()).toBe(3);
    for (const name of ['Passed on retry', 'Result changes', 'Failed runs', 'PRs blocked', 'CI minutes lost', 'Last flaked']) {
      expect(await s.page.getByRole('columnheader', { name, exact: true }).count(), name).toBe(1);
    }
    // Tab onto a header's term: its definition shows and is the term's description.
    const term = s.page.locator('table.board thead .term').filter({ hasText: 'CI minutes lost' });
    await term.focus();
    const tip = s.page.locator('.term-tip');
    await expect.poll(() => tip.isVisible()).toBe(true);
    expect(await tip.textContent()).toContain('retried attempts');
    expect(await term.getAttribute('aria-describedby')).toBe(await tip.getAttribute('id'));
    await term.press('Escape');
    await expect.poll(() => tip.isVisible()).toBe(false);
    // Its header's name stays the column's name while the definition shows.
    await term.hover();
    await expect.poll(() => tip.isVisible()).toBe(true);
    expect(await s.page.getByRole('columnheader', { name: 'CI minutes lost', exact: true }).count()).toBe(1);

    // Tied on score (1.00 or not), ranked by CI minutes lost: b (40 s retries), c (12 s), a (1 s).
    const board = ((await rest('GET', '/v1/flaky?limit=100&minScore=0.01', { token })).json.items as { title: string; score: number; recentRuns: { runs: number; failed: number } }[]).filter((i) => i.title.startsWith('charges the card'));
    expect(new Set(board.map((i) => i.score)).size).toBe(1);
    const titles = await rows.locator('td.title-cell > a').allTextContents();
    expect(titles).toEqual(['b', 'c', 'a'].map((x) => `charges the card, variant ${x}`));
    const lost = await rows.locator('td[data-label="CI minutes lost"]').allTextContents();
    expect(lost.map(Number)).toEqual([...lost.map(Number)].sort((x, y) => y - x));
    // The raw share: 3 of its 6 runs had a failed attempt.
    expect(board[0]!.recentRuns).toEqual({ runs: 6, failed: 3 });
    expect(await rows.first().getByTestId('board-raw-rate').textContent()).toBe('(raw 50%: 3 of 6 runs)');
    expect(await horizontalOverflow(s.page)).toBe(0);
    await checkPage(s, 'one-day-board');
  });

  it('the test page: reasons in words with their definitions, the raw share beside the flake rate', async () => {
    const board = ((await rest('GET', '/v1/flaky?limit=100&minScore=0.01', { token })).json.items as { testIdentityId: string; title: string }[]).filter((i) => i.title.startsWith('charges the card'));
    const t = (await rest('GET', `/v1/tests/${board[0]!.testIdentityId}`, { token })).json as { reasonCodes: { code: string }[]; flakeRate: number };
    const s = await session();
    await s.page.goto(url('tests', board[0]!.testIdentityId));
    await s.page.getByTestId('test-flake-rate').waitFor();
    expect((await s.page.getByTestId('test-flake-rate').textContent())!.trim()).toBe(`Flakes in ${Math.round(t.flakeRate * 100)}% of its runs (raw 50%: 3 of 6 runs).`);
    const reasons = s.page.getByTestId('reason');
    expect(await reasons.count()).toBe(t.reasonCodes.length);
    expect(t.reasonCodes.map((r) => r.code)).toContain('PASS_ON_RERUN');
    const retry = reasons.filter({ has: s.page.locator('dt strong', { hasText: /^Passed on a retry$/ }) });
    expect(await retry.count()).toBe(1);
    // The term is named in words; its definition is its description, reachable by keyboard.
    const term = retry.locator('dt .term');
    await term.focus();
    await expect.poll(() => s.page.locator('.term-tip').textContent()).toContain('retried in the same run');
    expect(await term.getAttribute('aria-describedby')).toBe(await s.page.locator('.term-tip').getAttribute('id'));
    await checkPage(s, 'one-day-test');
  });
});
