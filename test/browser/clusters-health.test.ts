// Clusters and health as a team lead reads them (issue 31, defects 5 and 6), at 1280 and 390 px, on a
// project of their own (so the shared seed stays as the other files expect it): a cluster's error is
// a clamped monospace block, not a heading, its counts read in the right number, its example names
// its test; health's cost carries its currency and its parts (retried attempts, re-runs), a 7-day
// period exists, the pass-rate line has gaps where a day had too few executions or none, flaky
// tests per day follows the period; no page scrolls sideways, health's table is cards at 390 px.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { horizontalOverflow } from './helpers/browser.js';
import { tableLayout } from './helpers/cards.js';
import { checkPage, DESKTOP, PHONE, rest, signedIn, world, type SignedIn } from './helpers/world.js';

const SLUG = 'clusters-health';
const DAY = 86_400_000;
const INVOICE = { filePath: 'src/invoice/render.test.ts', suite: 'invoice', title: 'renders the invoice' };
const LEDGER_READ = { filePath: 'src/ledger/io.test.ts', suite: 'ledger', title: 'reads the ledger' };
const LEDGER_WRITE = { filePath: 'src/ledger/io.test.ts', suite: 'ledger', title: 'writes the ledger' };
const STABLE = ['adds', 'subtracts', 'rounds', 'formats'].map((title) => ({ filePath: 'src/math.test.ts', suite: 'math', title }));
// A snapshot diff as test runners print it: 30 lines, one of them very long.
const LONG_ERROR = [
  'AssertionError: expected the rendered invoice to match its snapshot',
  '- Expected',
  '+ Received',
  ...Array.from({ length: 27 }, (_, i) => `${i % 2 ? '+' : '-'}   <td class="line-item">Item ${i}: ${'widget '.repeat(i === 5 ? 40 : 3)}</td>`),
].join('\n');
const CONN_ERROR = 'Error: read ECONNRESET while talking to ledger-db:5432';

const url = (...parts: string[]): string => `/projects/${SLUG}/${parts.join('/')}`;
/** Health's table of the numbers behind the weekly chart. */
const weeklyTable = (s: SignedIn) => s.page.getByRole('region', { name: 'Tests turning flaky or broken, and fixed, per week' }).locator('table');

interface Cluster {
  clusterId: string;
  occurrences: number;
  testsAffected: number;
  errorMessage: string;
  exampleTestId: string;
}

describe('clusters and health', () => {
  let token = '';
  const open: SignedIn[] = [];
  const now = Date.now();
  const today = Math.floor(now / DAY) * DAY;
  const at = Math.max(today + 60_000, now - 3 * 3_600_000);
  const twoDaysAgo = today - 2 * DAY + 10 * 3_600_000;
  let clusters: Cluster[] = [];

  function batch(key: string, commitSha: string, startedAt: number, wallMs: number, executions: Record<string, unknown>[]): Record<string, unknown> {
    return {
      contractVersion: '0.1.0',
      idempotencyKey: key,
      resource: { ciProvider: 'github_actions', commitSha, branch: 'main', trigger: 'push', repository: 'shop/ledger' },
      run: { status: executions.some((e) => e.status === 'fail') ? 'failed' : 'passed', startedAt, finishedAt: startedAt + wallMs },
      executions: executions.map((e, i) => ({ durationMs: 200, ...e, startedAt: startedAt + i })),
    };
  }

  beforeAll(async () => {
    const w = world();
    const created = await rest('POST', '/v1/admin/projects', { token: w.adminToken, body: { slug: SLUG } });
    expect([201, 409], created.text).toContain(created.status);
    const t = await rest('POST', `/v1/admin/projects/${SLUG}/tokens`, { token: w.adminToken, body: { scopes: ['ingest', 'read'] } });
    expect(t.status, t.text).toBe(201);
    token = String(t.json.token);
    const commitA = 'a11ce00000000000000000000000000000000001';
    const batches = [
      // Two days ago: two executions, too few for a pass rate (a gap, not 100 % or 0 %).
      batch('clusters-health-old', 'b0b0000000000000000000000000000000000002', twoDaysAgo, 60_000, STABLE.slice(0, 2).map((s) => ({ ...s, status: 'pass' }))),
      // Today: one cluster of one test (the long snapshot diff), one of two tests (the reset).
      batch('clusters-health-today', commitA, at, 3 * 60_000, [
        ...STABLE.map((s) => ({ ...s, status: 'pass' })),
        { ...INVOICE, status: 'fail', error: { message: LONG_ERROR } },
        { ...LEDGER_READ, status: 'fail', error: { message: CONN_ERROR } },
        { ...LEDGER_WRITE, status: 'fail', error: { message: CONN_ERROR } },
      ]),
      // The same job run again on the same commit ten minutes later: a whole-job re-run of 2 minutes.
      batch('clusters-health-rerun', commitA, at + 10 * 60_000, 2 * 60_000, [...STABLE, INVOICE, LEDGER_READ, LEDGER_WRITE].map((s) => ({ ...s, status: 'pass' }))),
    ];
    for (const b of batches) {
      const res = await rest('POST', '/v1/ingest', { token, body: b });
      expect(res.status, res.text).toBe(202);
    }
    // The signature processor clusters the failures shortly after the batches are stored.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const res = await rest('GET', `/trpc/clusters.list?input=${encodeURIComponent('{}')}`, { token });
      clusters = res.status === 200 ? (res.json.result.data.items as Cluster[]) : [];
      if (clusters.map((c) => c.testsAffected).sort().join() === '1,2') break;
      if (Date.now() > deadline) throw new Error(`clusters: ${JSON.stringify(clusters)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  });
  afterAll(async () => {
    for (const s of open) await s.close();
  });

  for (const viewport of [DESKTOP, PHONE]) {
    it(`clusters at ${viewport.width} px: the error a clamped monospace block, counts in the right number, the example named`, async () => {
      const s = await signedIn(token, viewport);
      open.push(s);
      await s.page.goto(url('clusters'));
      const invoice = clusters.find((c) => c.testsAffected === 1)!;
      const ledger = clusters.find((c) => c.testsAffected === 2)!;
      const one = s.page.locator(`#cluster-${invoice.clusterId}`);
      const two = s.page.locator(`#cluster-${ledger.clusterId}`);
      await one.waitFor().catch(async (e) => {
        await s.page.screenshot({ path: `test-results/screenshots/debug-${viewport.width}.png`, fullPage: true });
        console.log(JSON.stringify(s.problems));
        throw e;
      });

      // Singular and plural.
      const text = async (l: typeof one): Promise<string> => ((await l.locator('header small').textContent()) ?? '').replace(/\s+/g, ' ');
      expect(await text(one)).toMatch(/^1 occurrence · 1 test affected/);
      expect(await text(two)).toMatch(/^2 occurrences · 2 tests affected/);

      // The error: monospace, not the heading; its first lines only, the rest one click away.
      const heading = one.getByRole('heading');
      expect(((await heading.textContent()) ?? '').length).toBeLessThanOrEqual(121);
      const pre = one.getByTestId('cluster-error');
      expect(await pre.evaluate((el) => (el.ownerDocument.defaultView as unknown as { getComputedStyle(e: unknown): { fontFamily: string } }).getComputedStyle(el).fontFamily)).toMatch(/mono|courier|consolas/i);
      expect(await pre.textContent()).toBe(LONG_ERROR);
      const box = await one.boundingBox();
      expect(box!.height, 'a cluster card stays short').toBeLessThan(400);
      const show = one.getByRole('button', { name: 'Show the whole error' });
      await show.click();
      await expect.poll(async () => (await one.boundingBox())!.height).toBeGreaterThan(box!.height + 100);
      await one.getByRole('button', { name: 'Show less' }).click();

      // The example names its test, linked to the test's page, and its file.
      const example = one.getByTestId('cluster-example');
      expect(await example.textContent()).toContain(`${INVOICE.suite} › ${INVOICE.title}`);
      expect(await example.textContent()).toContain(INVOICE.filePath);
      expect(await example.getByRole('link', { name: `${INVOICE.suite} › ${INVOICE.title}` }).getAttribute('href')).toBe(url('tests', invoice.exampleTestId));

      // No sideways scrolling of the page.
      expect(await s.page.evaluate(() => { const d = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement; return d.scrollWidth <= d.clientWidth; })).toBe(true);
      if (viewport === PHONE) await checkPage(s, 'clusters-390');
    });
  }

  it('health at 1280 px: cost in a currency with its parts, a 7-day period, gaps in the pass-rate line, units on the charts', async () => {
    const s = await signedIn(token, DESKTOP);
    open.push(s);
    const asked: { reliabilityTrend: { day: string; passRate: number | null }[]; cost: Record<string, number | string> }[] = [];
    s.page.on('response', async (res) => {
      // The client batches its queries: /trpc/a,b?batch=1 answers an array in the same order.
      const u = new URL(res.url());
      if (!u.pathname.startsWith('/trpc/')) return;
      const names = decodeURIComponent(u.pathname.slice('/trpc/'.length)).split(',');
      if (!names.includes('health.metrics')) return;
      try {
        const body = await res.json();
        const answer = Array.isArray(body) ? body[names.indexOf('health.metrics')] : body;
        asked.push(answer.result.data);
      } catch {
        // not JSON: the test fails on what is missing
      }
    });
    await s.page.goto(url('health'));
    const cost = s.page.getByTestId('cost-total');
    await cost.waitFor();
    // Chromium's locale is en-US: USD, the default `cost.currency`, is written "$".
    expect((await cost.textContent())!.trim()).toMatch(/^\$\d+\.\d{2}$/);
    const parts = ((await s.page.getByTestId('cost-parts').textContent()) ?? '').replace(/\s+/g, ' ');
    expect(parts).toMatch(/retried attempts [\d.]+ min, re-runs 2 min \(1 job run again\)/);
    // Flaky tests per day follows the period: 90 days by default.
    const flakyPerDay = s.page.getByTestId('flaky-per-day');
    await expect.poll(() => flakyPerDay.getAttribute('data-days')).toBe('90');

    // The 7-day option, and what it asks for.
    await s.page.getByLabel('Period').selectOption('7');
    await s.page.waitForURL((u) => u.searchParams.get('days') === '7');
    await expect.poll(() => asked.length).toBeGreaterThanOrEqual(2);
    const week = asked.at(-1)!;
    const dayText = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
    // Two executions two days ago: no rate (null), not 100 %.
    expect(week.reliabilityTrend.find((d) => d.day === dayText(twoDaysAgo))?.passRate).toBeNull();
    expect(week.reliabilityTrend.find((d) => d.day === dayText(at))?.passRate).toBeGreaterThan(0);
    expect(week.cost).toMatchObject({ currency: 'USD', reRunCount: 1, reRunMs: 2 * 60_000 });

    // The chart: 7 days, 6 of them gaps (no data, or too few executions), with a unit on its axis.
    const rate = s.page.locator('figure.chart', { has: s.page.locator('figcaption', { hasText: 'Reliability' }) });
    await expect.poll(() => rate.getAttribute('data-gaps')).toBe('6');
    // Flaky tests per day: the same 7 days.
    await expect.poll(() => flakyPerDay.getAttribute('data-days')).toBe('7');
    expect(await flakyPerDay.locator('figcaption').textContent()).toContain('last 7 days');
    // Units: on the axis (drawn on the canvas; named by data-unit) and in the values under the cursor.
    const units: [string, string, RegExp][] = [
      ['Reliability', '%', /^\d+(\.\d)?%$/],
      ['Executions per day', 'executions', /^\d+ executions$/],
      ['Quarantine backlog', 'tests', /^\d+ tests$/],
    ];
    for (const [caption, unit, value] of units) {
      const fig = s.page.locator('figure.chart', { has: s.page.locator('figcaption', { hasText: caption }) });
      expect(await fig.getAttribute('data-unit'), caption).toBe(unit);
      const over = fig.locator('.u-over');
      await over.scrollIntoViewIfNeeded();
      const b = (await over.boundingBox())!;
      // The last day (today) has data in every chart: hover near the right edge.
      await s.page.mouse.move(b.x + b.width - 2, b.y + b.height / 2);
      await expect.poll(() => fig.locator('.u-legend .u-series').nth(1).locator('.u-value').textContent(), { message: caption }).toMatch(value);
    }
    // The numbers behind the charts: an ordinary table; nothing scrolls sideways.
    await s.page.getByText('The numbers behind the charts').click();
    expect(await tableLayout(weeklyTable(s))).toMatchObject({ rowDisplay: ['table-row'], headerShown: true, outside: [], unlabelled: [] });
    expect(await horizontalOverflow(s.page)).toBe(0);
    await checkPage(s, 'health-1280');
  });

  it('health at 390 px: no sideways scrolling, the weekly numbers as cards with their labels', async () => {
    const s = await signedIn(token, PHONE);
    open.push(s);
    await s.page.goto(url('health'));
    await s.page.getByTestId('cost-total').waitFor();
    await expect.poll(() => s.page.getByTestId('flaky-per-day').getAttribute('data-days')).toBe('90');
    await s.page.getByText('The numbers behind the charts').click();
    const weekly = await tableLayout(weeklyTable(s));
    expect(weekly.rows).toBeGreaterThan(0);
    expect(weekly).toMatchObject({ rowDisplay: ['block'], headerShown: false, outside: [], unlabelled: [] });
    expect(await horizontalOverflow(s.page)).toBe(0);
    await checkPage(s, 'health-390');
  });
});
