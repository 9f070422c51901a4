// The run page starts with what failed and the PR page lists every commit of the PR, in a project
// of their own ("run-pr"): a PR run of 200 passing tests, one flaky (failed, then passed on a
// retry) and one failing on both attempts, with its CI job URL and a GitHub repository; a second,
// passing commit of the same PR; and a main run from GitLab CI (its owner/name is not GitHub's).
// The run page shows the failing test as its first row, attempts grouped per test, the passing
// tests collapsed behind "200 passed", links to the CI job, commit and PR, is short (not one row
// per execution) and does not scroll sideways at 1280 and 390 px. The PR page lists both commits,
// newest first, each with its gate verdict; its tests are a table at 1280 px and cards at 390 px.
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { horizontalOverflow } from './helpers/browser.js';
import { tableLayout } from './helpers/cards.js';
import { DESKTOP, PHONE, checkPage, rest, signedIn, world, type SignedIn } from './helpers/world.js';

const SLUG = 'run-pr';
const HOUR = 3_600_000;
const PR = 7;
const REPO = 'acme/shop';
const JOB_URL = 'https://github.com/acme/shop/actions/runs/9001/job/77';
const C1 = 'a1'.repeat(20);
const C2 = 'b2'.repeat(20);
const C3 = 'c3'.repeat(20);
const FAILING = { filePath: 'src/checkout/coupon.test.ts', suite: 'coupon', title: 'rejects an expired coupon at checkout' };
const FLAKY = { filePath: 'src/checkout/webhook.test.ts', suite: 'webhook', title: 'retries the payment webhook after a timeout' };
/** The only test of C1's second job (another CI run, newer, passed): the newest run alone would say "passed". */
const OTHER_JOB = { filePath: 'src/e2e/checkout.e2e.ts', suite: 'e2e', title: 'checks out a cart end to end' };
const PASSING = Array.from({ length: 200 }, (_, i) => ({
  filePath: `src/features/area-${i % 10}/behaviour-${i}.test.ts`,
  suite: `area ${i % 10}`,
  title: `keeps behaviour ${i} of area ${i % 10} working as documented`,
}));

const url = (...parts: (string | number)[]) => `/projects/${SLUG}/${parts.map((p) => encodeURIComponent(String(p))).join('/')}`;

function batches(): Record<string, unknown>[] {
  const base = Date.now() - 5 * HOUR;
  const at1 = base + HOUR;
  const ex: Record<string, unknown>[] = [];
  const push = (t: object, status: string, extra: Record<string, unknown> = {}) => {
    ex.push({ ...t, status, startedAt: at1 + ex.length, durationMs: 20 + (ex.length % 7), ...extra });
    return ex.length - 1;
  };
  PASSING.forEach((t, i) => {
    if (i === 5) {
      const first = push(FLAKY, 'fail', { error: { message: 'TimeoutError: webhook did not answer within 2000 ms' } });
      push(FLAKY, 'pass', { attempt: 2, retryOfIndex: first });
    }
    if (i === 150) {
      const first = push(FAILING, 'fail', { error: { message: 'AssertionError: expected the coupon to be rejected' } });
      push(FAILING, 'fail', { attempt: 2, retryOfIndex: first, error: { message: 'AssertionError: expected the coupon to be rejected' } });
    }
    push(t, 'pass');
  });
  const prResource = (sha: string) => ({ ciProvider: 'github_actions', commitSha: sha, branch: 'feature/coupons', baseBranch: 'main', prNumber: PR, trigger: 'pull_request', repository: REPO });
  const at2 = base + 2 * HOUR;
  const at3 = base;
  return [
    {
      contractVersion: '0.1.0',
      idempotencyKey: 'run-pr-c1',
      resource: { ...prResource(C1), ciJobUrl: JOB_URL, ciRunId: '9001' },
      run: { status: 'failed', startedAt: at1, finishedAt: at1 + 120_000 },
      executions: ex,
    },
    {
      contractVersion: '0.1.0',
      idempotencyKey: 'run-pr-c1-e2e',
      resource: { ...prResource(C1), ciRunId: '9002' },
      run: { status: 'passed', startedAt: at1 + 180_000, finishedAt: at1 + 240_000 },
      executions: [{ ...OTHER_JOB, status: 'pass', startedAt: at1 + 180_000, durationMs: 40 }],
    },
    {
      contractVersion: '0.1.0',
      idempotencyKey: 'run-pr-c2',
      resource: prResource(C2),
      run: { status: 'passed', startedAt: at2, finishedAt: at2 + 60_000 },
      executions: [FAILING, FLAKY, PASSING[0]!].map((t, i) => ({ ...t, status: 'pass', startedAt: at2 + i, durationMs: 30 })),
    },
    {
      contractVersion: '0.1.0',
      idempotencyKey: 'run-pr-c3',
      resource: { ciProvider: 'gitlab_ci', commitSha: C3, branch: 'main', trigger: 'push', repository: 'acme/shop' },
      run: { status: 'passed', startedAt: at3, finishedAt: at3 + 60_000 },
      executions: PASSING.slice(0, 2).map((t, i) => ({ ...t, status: 'pass', startedAt: at3 + i, durationMs: 30 })),
    },
  ];
}

interface Seeded {
  token: string;
  runs: Record<string, string>;
}

async function seed(): Promise<Seeded> {
  const { adminToken } = world();
  const created = await rest('POST', '/v1/admin/projects', { token: adminToken, body: { slug: SLUG } });
  expect([201, 409], created.text).toContain(created.status);
  const tok = await rest('POST', `/v1/admin/projects/${SLUG}/tokens`, { token: adminToken, body: { scopes: ['ingest', 'read'] } });
  expect(tok.status, tok.text).toBe(201);
  const token = String(tok.json.token);
  const all = batches();
  for (const b of all) {
    const res = await rest('POST', '/v1/ingest', { token, body: b });
    expect([200, 202], res.text).toContain(res.status);
  }
  let items: { id: string; commitSha: string; counts: { total: number } }[] = [];
  await expect
    .poll(
      async () => {
        items = (await rest('GET', '/v1/runs?limit=100', { token })).json?.items ?? [];
        return items.map((r) => `${r.commitSha.slice(0, 2)}:${r.counts.total}`).sort();
      },
      { timeout: 60_000, interval: 250 },
    )
    .toEqual(['a1:1', 'a1:202', 'b2:3', 'c3:2']);
  const runs: Record<string, string> = {};
  // C1's run is its 202-test one (not its second job's).
  for (const r of items) if (r.counts.total > 1) runs[r.commitSha] = r.id;
  return { token, runs };
}

describe('the run page and the PR page', () => {
  let seeded: Seeded;
  let ready: Promise<Seeded> | undefined;
  const open: SignedIn[] = [];
  // Seeded by the first test (expect.poll needs a test around it), once.
  beforeEach(async () => {
    seeded = await (ready ??= seed());
  });
  afterAll(async () => {
    for (const s of open) await s.close();
  });
  const session = async (viewport = DESKTOP): Promise<SignedIn> => {
    const s = await signedIn(seeded.token, viewport);
    open.push(s);
    return s;
  };

  it('a run of 200 passing tests and 1 failing: the failing test first, attempts per test, passing tests collapsed, short, no sideways scrolling at 1280 px', async () => {
    const s = await session();
    await s.page.goto(url('runs', seeded.runs[C1]!));
    const firstRow = s.page.locator('main table tbody tr').first();
    await expect.poll(() => firstRow.textContent(), { timeout: 20_000 }).toContain(FAILING.title);
    // Its two attempts are in its one row, each linked to its execution.
    const failingRows = s.page.locator('main table tbody tr').filter({ hasText: FAILING.title });
    expect(await failingRows.count()).toBe(1);
    expect(await firstRow.locator('a[href*="/executions/"]').count()).toBe(2);
    expect(await firstRow.textContent()).toContain('expected the coupon to be rejected');
    // The flaky test next, one row for its two attempts.
    const secondRow = s.page.locator('main table tbody tr').nth(1);
    expect(await secondRow.textContent()).toContain(FLAKY.title);
    expect(await s.page.locator('main table tbody tr').filter({ hasText: FLAKY.title }).count()).toBe(1);
    // The passing tests behind a toggle, closed.
    const toggle = s.page.getByText('200 passed', { exact: false }).first();
    await expect.poll(() => toggle.isVisible()).toBe(true);
    expect(await s.page.getByText(PASSING[0]!.title).first().isVisible()).toBe(false);
    const height = await s.page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollHeight: number } } }).document.documentElement.scrollHeight);
    console.log(`run page height at 1280 px: ${height}`);
    expect(height).toBeLessThan(3000);
    expect(await horizontalOverflow(s.page)).toBe(0);
    await checkPage(s, 'run-1280');
    // Opened, the passing tests are there, one row each.
    await toggle.click();
    await expect.poll(() => s.page.getByText(PASSING[199]!.title).first().isVisible()).toBe(true);
    expect(await horizontalOverflow(s.page)).toBe(0);
  });

  it('the run page links to the CI job, the commit on GitHub and the PR', async () => {
    const s = await session();
    await s.page.goto(url('runs', seeded.runs[C1]!));
    const job = s.page.getByRole('link', { name: /CI job/ });
    await expect.poll(() => job.count()).toBe(1);
    expect(await job.getAttribute('href')).toBe(JOB_URL);
    expect(await s.page.locator(`a[href="https://github.com/${REPO}/commit/${C1}"]`).count()).toBeGreaterThan(0);
    expect(await s.page.locator(`a[href="${url('pulls', PR)}"]`).count()).toBeGreaterThan(0);

    // A GitLab CI run: its repository is not on GitHub, so the sha without a GitHub link; no CI job link without its URL.
    await s.page.goto(url('runs', seeded.runs[C3]!));
    await expect.poll(() => s.page.getByText('2 passed', { exact: false }).first().isVisible()).toBe(true);
    expect(await s.page.locator('a[href^="https://github.com/"]').count()).toBe(0);
    expect(await s.page.getByRole('link', { name: /CI job/ }).count()).toBe(0);
    expect(await s.page.locator('main').textContent()).toContain(C3.slice(0, 7));
  });

  it('the run page at 390 px: the failing test first, no sideways scrolling', async () => {
    const s = await session(PHONE);
    await s.page.goto(url('runs', seeded.runs[C1]!));
    const firstRow = s.page.locator('main table tbody tr').first();
    await expect.poll(() => firstRow.textContent(), { timeout: 20_000 }).toContain(FAILING.title);
    expect(await horizontalOverflow(s.page)).toBe(0);
    await checkPage(s, 'run-390');
  });

  it('the PR page lists both commits, newest first, each with its verdict; the latest expanded', async () => {
    const s = await session();
    await s.page.goto(url('pulls', PR));
    const commits = s.page.getByTestId('pr-commit');
    await expect.poll(() => commits.count(), { timeout: 20_000 }).toBe(2);
    const newest = commits.nth(0);
    const first = commits.nth(1);
    expect(await newest.textContent()).toContain(C2.slice(0, 7));
    expect(await newest.getByTestId('pr-commit-verdict').textContent()).toBe('pass');
    expect(await first.textContent()).toContain(C1.slice(0, 7));
    expect(await first.getByTestId('pr-commit-verdict').textContent()).toBe('blocked');
    expect(await first.textContent()).toMatch(/1 failed/);
    // The latest commit is expanded with its gate verdict; the older one opens on demand.
    expect(await newest.getAttribute('open')).not.toBeNull();
    expect(await first.getAttribute('open')).toBeNull();
    await expect.poll(() => newest.getByTestId('gate-verdict').textContent()).toBe('Gate: pass');
    await first.locator('summary').click();
    await expect.poll(() => first.getByTestId('gate-verdict').textContent()).toBe('Gate: blocked');
    expect(await first.textContent()).toContain(FAILING.title);
    // The header agrees with the gate (issue 39): C1's second job passed after its first failed,
    // and the status is the gate's over both jobs, never the newest run's "passed"; its counts
    // are the gate's JSON's, in the sentence its markdown says them, and the commit list's too.
    const gate = (await rest('GET', `/v1/runs/gate?commitSha=${C1}`, { token: seeded.token })).json.gate;
    expect(gate).toMatchObject({ verdict: 'block', status: 'blocked', runStatus: 'failed', jobs: 2, newFailures: 2, knownFlakes: 0, quarantined: 0, failed: 1, flaky: 1 });
    const counts = '2 new failures';
    expect((await rest('GET', `/v1/runs/gate?commitSha=${C1}`, { token: seeded.token })).json.markdown).toContain(`blocked — ${counts}`);
    expect(await first.getByTestId('pr-status').textContent()).toBe('blocked');
    expect(await first.getByTestId('gate-counts').textContent()).toBe(counts);
    expect(await first.getByTestId('pr-commit-counts').textContent()).toContain(counts);
    expect(await first.getByTestId('summary-failed').textContent()).toBe(String(gate.failed));
    expect(await first.getByTestId('summary-flaky').textContent()).toBe(String(gate.flaky));
    expect(await first.textContent()).not.toMatch(/\b(run|status) passed\b/);
    // The table's gate column: as many rows per classification as the header counts.
    expect(await first.locator('tr[data-classification="new_failure"]').count()).toBe(gate.newFailures);
    expect(await newest.getByTestId('pr-status').textContent()).toBe('passed');
    // Its failing and flaky tests: an ordinary table with its header at 1280 px, within the page.
    expect(await tableLayout(first.locator('table'))).toEqual({ rows: 2, rowDisplay: ['table-row'], headerShown: true, outside: [], unlabelled: [] });
    expect(await horizontalOverflow(s.page)).toBe(0);
    await checkPage(s, 'pr-1280');
  });

  it('the PR page at 390 px: the failing and flaky tests as cards with their labels, no sideways scrolling', async () => {
    const s = await session(PHONE);
    await s.page.goto(url('pulls', PR));
    const commits = s.page.getByTestId('pr-commit');
    await expect.poll(() => commits.count(), { timeout: 20_000 }).toBe(2);
    const first = commits.nth(1);
    await first.locator('summary').click();
    await expect.poll(() => first.getByTestId('gate-verdict').textContent()).toBe('Gate: blocked');
    const table = first.locator('table');
    expect(await table.textContent()).toContain(FAILING.title);
    expect(await tableLayout(table)).toEqual({ rows: 2, rowDisplay: ['block'], headerShown: false, outside: [], unlabelled: [] });
    expect(await horizontalOverflow(s.page)).toBe(0);
    await checkPage(s, 'pr-390');
  });
});
