// Issue 31's trends in the dashboard, in a project of its own (the shared seed stays as it is):
// the test page names the commit where a test first flaked (linked to GitHub), the commit a broken
// test broke at, and marks a test whose median duration regressed ("slowed: p50 1.2 s → 2.9 s");
// the health page charts flaky tests per day with a unit on its axis.
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { checkPage, rest, signedIn, world, type SignedIn } from './helpers/world.js';

const SLUG = 'trends';
const DAY = 86_400_000;
const NOW = Date.now() - 60_000;
const url = (...parts: string[]) => `/projects/${SLUG}/${parts.map(encodeURIComponent).join('/')}`;
const sha = (n: number) => `${String(n).padStart(7, '0')}${'e'.repeat(33)}`;
const RUN_DAYS = [34, 30, 26, 22, 20, 18, 14, 12, 10, 8, 6, 5, 4, 3, 2, 1, 0];
const FLAKY_DAYS = new Set([20, 12, 5]);

function batch(daysAgo: number): Record<string, unknown> {
  const at = NOW - daysAgo * DAY;
  const ex = (title: string, status: string, durationMs: number, extra: Record<string, unknown> = {}) => ({ filePath: 'src/trends.test.ts', suite: 'trends', title, status, startedAt: at, durationMs, ...extra });
  const flakes = FLAKY_DAYS.has(daysAgo);
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `trends-run-${daysAgo}`,
    resource: { ciProvider: 'github_actions', repository: 'acme/shop', commitSha: sha(100 - daysAgo), branch: 'main', trigger: 'push' },
    run: { status: daysAgo <= 3 ? 'failed' : 'passed', startedAt: at },
    executions: [
      ex('slows down', 'pass', daysAgo < 7 ? 2_900 : 1_200),
      ...(flakes ? [ex('wobbles', 'fail', 50, { error: { message: 'race' } }), ex('wobbles', 'pass', 50, { attempt: 2, retryOfIndex: 1 })] : [ex('wobbles', 'pass', 50)]),
      daysAgo <= 3 ? ex('breaks', 'fail', 20, { error: { message: 'broken for good' } }) : ex('breaks', 'pass', 20),
    ],
  };
}

async function seed(): Promise<{ token: string; ids: Record<string, string> }> {
  const { adminToken } = world();
  const created = await rest('POST', '/v1/admin/projects', { token: adminToken, body: { slug: SLUG } });
  expect([201, 409], created.text).toContain(created.status);
  const tok = await rest('POST', `/v1/admin/projects/${SLUG}/tokens`, { token: adminToken, body: { scopes: ['ingest', 'read'] } });
  expect(tok.status, tok.text).toBe(201);
  const token = String(tok.json.token);
  for (const d of RUN_DAYS) {
    const res = await rest('POST', '/v1/ingest', { token, body: batch(d) });
    expect([200, 202], res.text).toContain(res.status);
  }
  let items: { testIdentityId: string; title: string; state: string }[] = [];
  await expect
    .poll(
      async () => {
        items = (await rest('GET', '/v1/flaky?limit=100&minScore=0&includeQuarantined=true', { token })).json?.items ?? [];
        return items.map((t) => `${t.title}:${t.state}`).sort();
      },
      { timeout: 60_000, interval: 250 },
    )
    .toEqual(['breaks:broken', 'slows down:healthy', 'wobbles:flaky']);
  return { token, ids: Object.fromEntries(items.map((t) => [t.title, t.testIdentityId])) };
}

describe('trends on the test page and the health page', () => {
  let seeded: { token: string; ids: Record<string, string> };
  let ready: Promise<typeof seeded> | undefined;
  const open: SignedIn[] = [];
  beforeEach(async () => {
    seeded = await (ready ??= seed());
  });
  afterAll(async () => {
    for (const s of open) await s.close();
  });
  const session = async (): Promise<SignedIn> => {
    const s = await signedIn(seeded.token);
    open.push(s);
    return s;
  };

  it('a test whose median duration regressed carries a slowed marker with both medians', async () => {
    const s = await session();
    await s.page.goto(url('tests', seeded.ids['slows down']!));
    const marker = s.page.getByTestId('test-slowed');
    await expect.poll(() => marker.textContent()).toContain('slowed: p50 1.2 s → 2.9 s');
    expect(await s.page.getByTestId('test-first-flaked').count()).toBe(0);
    await checkPage(s, 'test-slowed');
  });

  it('a flaky test names the commit where it first flaked, linked to the commit on GitHub', async () => {
    const s = await session();
    await s.page.goto(url('tests', seeded.ids.wobbles!));
    const first = s.page.getByTestId('test-first-flaked');
    await expect.poll(() => first.textContent()).toContain(`first flaked at ${sha(80).slice(0, 10)}`);
    expect(await first.textContent()).toContain(new Date(NOW - 20 * DAY).toISOString().slice(0, 10));
    expect(await first.locator('a').getAttribute('href')).toBe(`https://github.com/acme/shop/commit/${sha(80)}`);
    expect(await s.page.getByTestId('test-slowed').count()).toBe(0);
  });

  it('a broken test names the commit it broke at', async () => {
    const s = await session();
    await s.page.goto(url('tests', seeded.ids.breaks!));
    const broke = s.page.getByTestId('test-broke-at');
    await expect.poll(() => broke.textContent()).toContain(`broke at ${sha(97).slice(0, 10)}`);
    expect(await broke.locator('a').getAttribute('href')).toBe(`https://github.com/acme/shop/commit/${sha(97)}`);
  });

  it('the board marks the slowed test, and no other', async () => {
    const s = await session();
    await s.page.goto(`${url('flaky')}?state=all`);
    const marks = s.page.getByTestId('board-slowed');
    await expect.poll(() => marks.count()).toBe(1);
    const row = s.page.locator('table.board tbody tr').filter({ has: marks });
    expect(await row.locator('td').first().textContent()).toContain('slows down');
    expect(await marks.getAttribute('title')).toContain('p50 1.2 s → 2.9 s');
  });

  it('the health page charts flaky tests per day, with "tests" on its axis', async () => {
    const s = await session();
    await s.page.goto(url('health'));
    const chart = s.page.getByTestId('flaky-per-day');
    await expect.poll(() => chart.locator('figcaption').textContent()).toContain('Flaky tests per day');
    // The y axis' label is drawn on the canvas (uPlot): the unit handed to it is on the figure's box.
    expect(await chart.getAttribute('data-unit')).toBe('tests');
    await expect.poll(() => chart.locator('canvas').count()).toBeGreaterThan(0);
    expect(await s.page.getByTestId('flaky-per-day-summary').textContent()).toContain('Peak 1 test in a day');
    await checkPage(s, 'health-flaky-per-day');
  });
});
