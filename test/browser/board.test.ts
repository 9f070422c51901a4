// The board as people use it: it opens on the tests that need attention (flaky, broken or
// quarantined) and "all tests" shows the rest; branch and time-range filters travel in the URL and
// match the API's answer; quarantine a test from it with a reason and find the decision on the
// test page and in the API; a person's quarantine of a broken test reads "broken, held by a person";
// a read-only token gets no quarantine button; 390 px and 1280 px wide without horizontal page
// overflow, with the long names of a real project (helpers/wide.ts), before and after a quarantine:
// at 1280 px the table needs no scrolling inside its box, at 390 px each row is a card.
import { afterAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { horizontalOverflow } from './helpers/browser.js';
import { BROKEN, COMMIT_FLAKE, NEW_FAILURE, PR_BRANCH, RETRY_FLAKE } from './helpers/seed.js';
import { WIDE_BROKEN, WIDE_FLAKY, WIDE_LEGACY, WIDE_RECENT, wideProject, wideUrl } from './helpers/wide.js';
import { DESKTOP, PHONE, checkPage, projectUrl, rest, restJson, signedIn, world, type SignedIn } from './helpers/world.js';

/** The table's box: what it would scroll sideways (0: nothing). */
async function boxOverflow(page: Page): Promise<number> {
  return page.locator('.table-scroll').evaluate((e) => e.scrollWidth - e.clientWidth);
}

/** Rows whose cells are cut off: a cell (or the row) reaching past the viewport's right edge, or empty. */
async function cutRows(page: Page, selector: string): Promise<string[]> {
  const width = page.viewportSize()!.width;
  return page.locator(selector).evaluateAll(
    (rows, w) =>
      rows.flatMap((tr) => {
        const cells = Array.from((tr as unknown as { querySelectorAll(s: string): ArrayLike<{ getBoundingClientRect(): { right: number; width: number; height: number } }> }).querySelectorAll('td'));
        const bad = cells.some((c) => {
          const r = c.getBoundingClientRect();
          return r.right > w + 0.5 || r.width === 0 || r.height === 0;
        });
        return bad ? [String((tr as unknown as { textContent: string | null }).textContent).slice(0, 60)] : [];
      }),
    width,
  );
}

const titlesOf = (items: { title: string }[]) => items.map((i) => i.title).sort();

const ROWS = 'table.board tbody tr';

describe('the flaky board', () => {
  const open: SignedIn[] = [];
  afterAll(async () => {
    for (const s of open) await s.close();
  });
  const session = async (token?: string, viewport = DESKTOP): Promise<SignedIn> => {
    const s = await signedIn(token, viewport);
    open.push(s);
    return s;
  };

  it('quarantines a test from the board with a reason; the test page and the API show it', async () => {
    const s = await session();
    const id = world().seed.testIds[COMMIT_FLAKE.title]!;
    expect((await restJson(`/v1/tests/${id}`)).quarantined).toBe(false);
    await s.page.goto(projectUrl('flaky'));
    await s.page.getByRole('button', { name: `Quarantine ${COMMIT_FLAKE.title}` }).click();
    const dialog = s.page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.getByRole('textbox').fill('flips on reruns of the same commit; tracked in SHOP-123');
    await dialog.getByRole('button', { name: 'Quarantine' }).click();
    await dialog.waitFor({ state: 'hidden' });
    // The board reloads with the new state.
    const row = s.page.locator(ROWS).filter({ hasText: COMMIT_FLAKE.title });
    await expect.poll(() => row.locator('td.quarantine').textContent()).toContain('quarantined');

    const t = await restJson(`/v1/tests/${id}`);
    expect(t).toMatchObject({ quarantined: true, quarantineOverride: 'quarantined', quarantineReason: 'flips on reruns of the same commit; tracked in SHOP-123' });

    await row.getByRole('link', { name: COMMIT_FLAKE.title }).click();
    await s.page.waitForURL((u) => u.pathname === projectUrl('tests', id));
    await expect.poll(() => s.page.getByTestId('test-quarantine').textContent()).toBe('quarantined');
    // The decision log on the test page carries the reason.
    await expect.poll(() => s.page.getByText('tracked in SHOP-123').count()).toBeGreaterThan(0);
    await checkPage(s, 'test-quarantined');

    // Filtering on quarantined tests only: exactly what the API lists as quarantined.
    const quarantined = ((await restJson('/v1/flaky?limit=100')).items as { title: string; quarantined: boolean }[]).filter((i) => i.quarantined).map((i) => i.title);
    await s.page.goto(`${projectUrl('flaky')}?quarantined=true`);
    await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(quarantined.sort());
  });

  it('a broken test a person quarantined reads "broken, held by a person" on its page; handed back, it does not', async () => {
    const s = await session();
    const id = world().seed.testIds[BROKEN.title]!;
    expect((await restJson(`/v1/tests/${id}`)).state).toBe('broken');
    const decide = (decision: 'quarantined' | 'released' | 'auto') => rest('POST', `/v1/tests/${id}/quarantine`, { body: { decision, reason: 'hold until the coupon fix lands' } });
    expect((await decide('quarantined')).status).toBe(200);
    try {
      expect(await restJson(`/v1/tests/${id}`)).toMatchObject({ state: 'broken', quarantined: true, quarantineOverride: 'quarantined' });
      await s.page.goto(projectUrl('tests', id));
      await expect.poll(() => s.page.getByTestId('test-quarantine').textContent()).toBe('quarantined');
      expect((await s.page.getByTestId('test-held').textContent())!).toContain('broken, held by a person');
      expect((await s.page.getByTestId('test-state').textContent())!.trim()).toBe('broken');
      await checkPage(s, 'test-broken-held');
    } finally {
      // Released, then handed back to the scorer (a hand-back keeps the state it finds): not
      // quarantined and no person's decision, as the other files expect the seed.
      expect((await decide('released')).status).toBe(200);
      expect((await decide('auto')).status).toBe(200);
    }
    expect(await restJson(`/v1/tests/${id}`)).toMatchObject({ quarantined: false, quarantineOverride: null });
    await s.page.reload();
    await expect.poll(() => s.page.getByTestId('test-quarantine').textContent()).toBe('not quarantined');
    expect(await s.page.getByTestId('test-held').count()).toBe(0);
  });

  it('filters by owner through the form and the URL, matching GET /v1/flaky?owner=', async () => {
    const s = await session();
    // The board's default view: what needs attention, as the opt-in REST param filters it.
    const want = ((await restJson('/v1/flaky?limit=100&owner=@shop/payments&attention=true')).items as { title: string }[]).map((i) => i.title);
    expect(want.length).toBeGreaterThan(0);
    await s.page.goto(projectUrl('flaky'));
    await s.page.locator(ROWS).first().waitFor();
    await s.page.getByLabel('Owner').fill('@shop/payments');
    await s.page.getByRole('button', { name: 'Apply filters' }).click();
    await s.page.waitForURL((u) => u.searchParams.get('owner') === '@shop/payments');
    await expect.poll(async () => s.page.locator(`${ROWS} td:first-child a`).allTextContents()).toEqual(want);
    // The URL alone gives the same board (shareable).
    const again = await session();
    await again.page.goto(s.page.url());
    await expect.poll(async () => again.page.locator(`${ROWS} td:first-child a`).allTextContents()).toEqual(want);
    expect([...s.problems, ...again.problems]).toEqual([]);
  });

  it('filters by state through the State select, matching GET /v1/flaky?state=', async () => {
    const s = await session();
    const want = ((await restJson('/v1/flaky?limit=100&state=broken')).items as { title: string }[]).map((i) => i.title);
    expect(want.length).toBeGreaterThan(0);
    await s.page.goto(projectUrl('flaky'));
    await s.page.locator(ROWS).first().waitFor();
    await s.page.getByLabel('State').selectOption('broken');
    await s.page.waitForURL((u) => u.searchParams.get('state') === 'broken');
    await expect.poll(async () => s.page.locator(`${ROWS} td:first-child a`).allTextContents()).toEqual(want);
    const states = await s.page.locator(`${ROWS} td.state-cell`).allTextContents();
    expect(states.every((t) => t.startsWith('broken'))).toBe(true);
    expect(s.problems).toEqual([]);
  });

  it('a read-only token sees the board without quarantine buttons', async () => {
    const s = await session(world().readToken);
    await s.page.goto(projectUrl('flaky'));
    await s.page.locator(ROWS).first().waitFor();
    expect(await s.page.getByRole('button', { name: /^(Quarantine|Release) / }).count()).toBe(0);
    expect(s.problems).toEqual([]);
  });

  it('opens on the tests that need attention; "all tests" shows the healthy ones too', async () => {
    const s = await session();
    const attention = titlesOf((await restJson('/v1/flaky?limit=100&attention=true')).items);
    const all = titlesOf((await restJson('/v1/flaky?limit=100')).items);
    expect(attention).toEqual(expect.arrayContaining([RETRY_FLAKE.title, COMMIT_FLAKE.title, BROKEN.title]));
    expect(attention).not.toContain('logs in');
    await s.page.goto(projectUrl('flaky'));
    await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(attention);
    const states = await s.page.locator(`${ROWS} td.state-cell`).allTextContents();
    const quarantined = await s.page.locator(`${ROWS} td.quarantine`).allTextContents();
    expect(states.every((t, i) => /^(flaky|broken)/.test(t) || quarantined[i]!.startsWith('quarantined'))).toBe(true);
    expect(await s.page.getByLabel('State').inputValue()).toBe('');
    // The filter for all: in the URL, and the healthy tests are there.
    await s.page.getByLabel('State').selectOption('all');
    await s.page.waitForURL((u) => u.searchParams.get('state') === 'all');
    await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(all);
    expect(all).toContain('logs in');
    await checkPage(s, 'board-all-tests');
  });

  it('filters by branch (default, any, a named one) through the form and the URL, matching GET /v1/flaky', async () => {
    const s = await session();
    const onDefault = titlesOf((await restJson('/v1/flaky?limit=100&defaultBranch=true')).items);
    const onPr = titlesOf((await restJson(`/v1/flaky?limit=100&branch=${encodeURIComponent(PR_BRANCH)}`)).items);
    expect(onDefault).not.toContain(NEW_FAILURE.title);
    expect(onPr).toContain(NEW_FAILURE.title);
    await s.page.goto(`${projectUrl('flaky')}?state=all`);
    await expect.poll(async () => s.page.locator(`${ROWS} td:first-child a`).allTextContents()).toContain(NEW_FAILURE.title);
    await s.page.getByLabel('Branch').selectOption('@default');
    await s.page.waitForURL((u) => u.searchParams.get('branch') === '@default');
    await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(onDefault);
    // A named branch: typed, applied, and the URL alone gives the same board.
    await s.page.getByLabel('Branch').selectOption('named');
    await s.page.getByRole('textbox', { name: 'Branch name' }).fill(PR_BRANCH);
    await s.page.getByRole('button', { name: 'Apply filters' }).click();
    await s.page.waitForURL((u) => u.searchParams.get('branch') === PR_BRANCH);
    await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(onPr);
    const again = await session();
    await again.page.goto(s.page.url());
    await expect.poll(async () => (await again.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(onPr);
    expect(await again.page.getByRole('textbox', { name: 'Branch name' }).inputValue()).toBe(PR_BRANCH);
    expect([...s.problems, ...again.problems]).toEqual([]);
  });

  it('filters by time range: tests not run in the last 7 days drop out', async () => {
    const { token } = await wideProject();
    const s = await session(token);
    await s.page.goto(`${wideUrl('flaky')}?state=all`);
    const everything = titlesOf([...WIDE_FLAKY, WIDE_BROKEN, ...WIDE_RECENT, ...WIDE_LEGACY]);
    await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(everything);
    await s.page.getByLabel('Seen in').selectOption('7d');
    await s.page.waitForURL((u) => u.searchParams.get('range') === '7d');
    await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(titlesOf(WIDE_RECENT));
    expect(titlesOf((await restJson('/v1/flaky?limit=100&days=7', token)).items)).toEqual(titlesOf(WIDE_RECENT));
    await s.page.getByLabel('Seen in').selectOption('30d');
    await s.page.waitForURL((u) => u.searchParams.get('range') === '30d');
    await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(everything);
    expect(s.problems).toEqual([]);
  });

  for (const [name, viewport] of [
    ['390 px', PHONE],
    ['1280 px', DESKTOP],
  ] as const) {
    it(`renders at ${name} without horizontal page overflow, every column readable, before and after a quarantine`, async () => {
      // The default project's whole board.
      const d = await session(undefined, viewport);
      await d.page.goto(`${projectUrl('flaky')}?state=all`);
      await d.page.locator(ROWS).first().waitFor();
      await d.page.waitForLoadState('networkidle');
      expect(await d.page.locator(ROWS).count()).toBeGreaterThan(10);
      expect(await horizontalOverflow(d.page)).toBeLessThanOrEqual(0);
      expect(await boxOverflow(d.page)).toBeLessThanOrEqual(0);
      expect(await cutRows(d.page, ROWS)).toEqual([]);
      await checkPage(d, `board-${viewport.width}`);

      // A project with long titles, paths, suites and owner handles.
      const { token } = await wideProject();
      const s = await session(token, viewport);
      await s.page.goto(wideUrl('flaky'));
      await s.page.locator(ROWS).first().waitFor();
      await s.page.waitForLoadState('networkidle');
      expect(await horizontalOverflow(s.page)).toBeLessThanOrEqual(0);
      expect(await boxOverflow(s.page)).toBeLessThanOrEqual(0);
      expect(await cutRows(s.page, ROWS)).toEqual([]);
      await expect.poll(async () => (await s.page.locator(`${ROWS} td:first-child a`).allTextContents()).sort()).toEqual(titlesOf([...WIDE_FLAKY, WIDE_BROKEN]));
      await checkPage(s, `board-wide-${viewport.width}`);

      // Quarantined from the board: the row gets the pill and a Release button, and still fits.
      const target = WIDE_FLAKY[viewport.width === PHONE.width ? 0 : 1]!;
      await s.page.getByRole('button', { name: `Quarantine ${target.title}` }).click();
      const dialog = s.page.getByRole('dialog');
      await dialog.getByRole('textbox').fill('times out on the shared runners; tracked in PAY-77');
      await dialog.getByRole('button', { name: 'Quarantine' }).click();
      await dialog.waitFor({ state: 'hidden' });
      const row = s.page.locator(ROWS).filter({ hasText: target.title });
      await expect.poll(() => row.locator('td.quarantine').textContent()).toContain('quarantined');
      await s.page.waitForLoadState('networkidle');
      expect(await horizontalOverflow(s.page)).toBeLessThanOrEqual(0);
      expect(await boxOverflow(s.page)).toBeLessThanOrEqual(0);
      expect(await cutRows(s.page, ROWS)).toEqual([]);
      await checkPage(s, `board-wide-quarantined-${viewport.width}`);
      const id = ((await restJson('/v1/flaky?limit=100', token)).items as { title: string; testIdentityId: string }[]).find((i) => i.title === target.title)!.testIdentityId;
      for (const decision of ['released', 'auto']) expect((await rest('POST', `/v1/tests/${id}/quarantine`, { token, body: { decision, reason: 'back to the scorer' } })).status).toBe(200);
    });
  }

  for (const [name, viewport] of [
    ['390 px', PHONE],
    ['1280 px', DESKTOP],
  ] as const) {
    it(`the suites page at ${name}: no horizontal page overflow, every column readable`, async () => {
      const { token } = await wideProject();
      const s = await session(token, viewport);
      await s.page.goto(wideUrl('suites'));
      const rows = 'main table tbody tr';
      await expect.poll(() => s.page.locator(rows).count()).toBe(2);
      await s.page.waitForLoadState('networkidle');
      expect(await horizontalOverflow(s.page)).toBeLessThanOrEqual(0);
      expect(await boxOverflow(s.page)).toBeLessThanOrEqual(0);
      expect(await cutRows(s.page, rows)).toEqual([]);
      // The last column (mean duration) is there, on screen, in every row.
      expect(await s.page.locator(`${rows} td:last-child`).allTextContents()).toHaveLength(2);
      await checkPage(s, `suites-wide-${viewport.width}`);
    });
  }
});
