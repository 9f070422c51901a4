// Every page at 1280 px against the seeded history: it loads with no console error, shows what the
// REST API says (counts, scores, verdicts), passes axe with no serious or critical violation, and
// leaves a screenshot in test-results/screenshots/. With UPDATE_README_SCREENSHOTS=1 the board's and
// the test page's also replace docs/images/dashboard-{board,test}.png (the README's pictures); not by
// default, so a test run leaves the tree clean.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, SCREENSHOT_DIR } from './helpers/browser.js';
import { EVENT_TEXT } from '../../web/src/lib/state.js';
import { ARTIFACTS, BROKEN, BROKEN_FROM_RUN, BROKEN_MESSAGE, PR_NUMBER, RCA_ANSWER, RETRY_FLAKE, commitOf } from './helpers/seed.js';
import { checkPage, projectUrl, rest, restJson, signedIn, world, type SignedIn } from './helpers/world.js';

const score = (x: number): string => x.toFixed(2);

interface BoardItem {
  title: string;
  score: number;
  owners: string[];
  quarantined: boolean;
  quarantineCandidate: boolean;
  trend: string;
  state: string;
  stateSince: { commitSha: string; branch: string; at: string } | null;
  flakeRate: number;
  recentRuns: { runs: number; failed: number };
}

/** The raw share the board and the test page write beside a flake rate (web/src/lib/state.ts rawShare). */
const rawShare = (r: { runs: number; failed: number }): string => `raw ${Math.round((r.failed / r.runs) * 100)}%: ${r.failed} of ${r.runs} ${r.runs === 1 ? 'run' : 'runs'}`;

function updateReadmeImage(shot: string, image: string): void {
  if (process.env.UPDATE_README_SCREENSHOTS !== '1') return;
  mkdirSync(path.join(REPO_ROOT, 'docs/images'), { recursive: true });
  copyFileSync(path.join(SCREENSHOT_DIR, shot), path.join(REPO_ROOT, 'docs/images', image));
}

describe('pages as a project token sees them', () => {
  let s: SignedIn;
  beforeAll(async () => {
    s = await signedIn();
  });
  afterAll(async () => s?.close());

  it('/ goes to the project board', async () => {
    await s.page.goto('/');
    await s.page.waitForURL((u) => u.pathname === projectUrl('flaky'));
  });

  it('the flaky board: every test of GET /v1/flaky, in its order, with its state, score, owners and quarantine state', async () => {
    const board = (await restJson('/v1/flaky?limit=50')).items as BoardItem[];
    expect(board.length).toBeGreaterThan(10);
    // Every test: the board opens on those that need attention, `state=all` shows them all.
    await s.page.goto(`${projectUrl('flaky')}?state=all`);
    const rows = s.page.locator('table.board tbody tr');
    await expect.poll(() => rows.count()).toBe(board.length);
    // Cells by their data-label (the 390 px cards' labels), so a column added to the board moves nothing here.
    const labelled = await rows.evaluateAll((trs) =>
      trs.map((tr) => {
        const cells = (tr as unknown as { cells: ArrayLike<{ textContent: string | null; getAttribute(n: string): string | null }> }).cells;
        return Object.fromEntries(Array.from(cells, (c) => [c.getAttribute('data-label') ?? '', (c.textContent ?? '').trim().replace(/\s+/g, ' ')]));
      }),
    );
    const shown = labelled.map((c) => [c.Test, c.State, c.Score, c.Owners, c.Quarantine] as string[]);
    labelled.forEach((c, i) => {
      const trend = board[i]!.trend;
      // The trend word sits under the score.
      expect(c.Score, `row ${i} trend`).toContain(trend);
    });
    shown.forEach((cells, i) => {
      const want = board[i]!;
      expect(cells[0], `row ${i}`).toContain(want.title);
      expect(cells[1], `row ${i} state`).toMatch(new RegExp(`^${want.state}\\b`));
      if ((want.state === 'broken' || want.state === 'fixed') && want.stateSince) expect(cells[1], `row ${i} since`).toBe(`${want.state} since ${want.stateSince.commitSha.slice(0, 7)}`);
      expect(cells[2], `row ${i} score`).toContain(score(want.score));
      // The candidate pill follows quarantineCandidate, which is the flaky state and nothing else.
      expect(cells[2]!.includes('candidate'), `row ${i} candidate`).toBe(want.quarantineCandidate);
      expect(want.quarantineCandidate, `row ${i} candidate is flaky`).toBe(want.state === 'flaky');
      for (const owner of want.owners) expect(cells[3], `row ${i} owners`).toContain(owner);
      expect(cells[4], `row ${i} quarantine`).toContain(want.quarantined ? 'quarantined' : 'no');
    });
    // The seeded broken test reads "broken since" its first failing commit on main, and is no candidate;
    // the retry flake reads flaky, with how often it flakes, and is one.
    const at = (title: string): [BoardItem, string[]] => {
      const i = board.findIndex((r) => r.title === title);
      expect(i, title).toBeGreaterThanOrEqual(0);
      return [board[i]!, shown[i]!];
    };
    const [broken, brokenCells] = at(BROKEN.title);
    expect(broken).toMatchObject({ state: 'broken', quarantineCandidate: false, stateSince: { commitSha: commitOf(BROKEN_FROM_RUN), branch: 'main' } });
    expect(brokenCells[1]).toBe(`broken since ${commitOf(BROKEN_FROM_RUN).slice(0, 7)}`);
    expect(brokenCells[2]).not.toContain('candidate');
    const [flaky, flakyCells] = at(RETRY_FLAKE.title);
    expect(flaky).toMatchObject({ state: 'flaky', quarantineCandidate: true });
    // Beside the smoothed rate, the raw share of its recent runs with a failed attempt.
    expect(flaky.recentRuns.runs).toBeGreaterThan(0);
    expect(flakyCells[1]).toBe(`flaky in ${Math.round(flaky.flakeRate * 100)}% of runs (${rawShare(flaky.recentRuns)})`);
    expect(flakyCells[2]).toContain('candidate');
    // The two flaky tests are on top.
    expect(board.slice(0, 3).map((r) => r.title)).toEqual(expect.arrayContaining([RETRY_FLAKE.title]));
    await checkPage(s, 'board');
    updateReadmeImage('board.png', 'dashboard-board.png');
  });

  it('the test page: score, reason codes in words, owners, and a history strip ending with the newest execution', async () => {
    const id = world().seed.testIds[RETRY_FLAKE.title]!;
    const t = await restJson(`/v1/tests/${id}?historyLimit=200`);
    await s.page.goto(projectUrl('tests', id));
    await expect.poll(() => s.page.getByRole('heading', { level: 1 }).textContent()).toBe(RETRY_FLAKE.title);
    expect((await s.page.getByTestId('test-score').textContent())!.trim()).toBe(score(t.score));
    expect((await s.page.getByTestId('test-quarantine').textContent())!.trim()).toBe(t.quarantined ? 'quarantined' : 'not quarantined');
    // Its state beside the score: flaky, with the share of its runs that flake.
    expect(t.state).toBe('flaky');
    expect((await s.page.getByTestId('test-state').textContent())!.trim()).toBe('flaky');
    expect((await s.page.getByTestId('test-flake-rate').textContent())!.trim()).toBe(`Flakes in ${Math.round(t.flakeRate * 100)}% of its runs (${rawShare(t.recentRuns)}).`);
    expect(t.reasonCodes.length).toBeGreaterThan(0);
    for (const r of t.reasonCodes as { code: string }[]) await expect.poll(() => s.page.getByText(r.code, { exact: true }).count()).toBeGreaterThan(0);
    for (const owner of t.owners as string[]) expect(await s.page.getByText(owner).count()).toBeGreaterThan(0);
    const cells = s.page.locator('[data-testid="history-strip"] li a');
    await expect.poll(() => cells.count()).toBeGreaterThan(0);
    const hrefs = await cells.evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    expect(hrefs.length).toBeLessThanOrEqual(t.history.length);
    // Oldest → newest: the last cell is the newest execution REST knows.
    const ids = (t.history as { executionId: string }[]).map((h) => h.executionId);
    expect(hrefs.at(-1)).toBe(projectUrl('executions', ids.at(-1)!));
    for (const h of hrefs) expect(ids).toContain(h.split('/').at(-1));
    // A retry flake has failed or retried cells in the strip.
    expect(await s.page.locator('[data-testid="history-strip"] a.status-fail, [data-testid="history-strip"] a.status-flaky').count()).toBeGreaterThan(0);
    await checkPage(s, 'test');
    updateReadmeImage('test.png', 'dashboard-test.png');
  });

  it('the test page of a broken test: broken since its first failing commit on main, linked; "broke" in its log', async () => {
    const id = world().seed.testIds[BROKEN.title]!;
    const t = await restJson(`/v1/tests/${id}`);
    const sha = commitOf(BROKEN_FROM_RUN);
    expect(t).toMatchObject({ state: 'broken', stateSince: { commitSha: sha, branch: 'main' } });
    await s.page.goto(projectUrl('tests', id));
    await expect.poll(() => s.page.getByTestId('test-state').textContent()).toBe('broken');
    const since = s.page.getByTestId('test-state-since');
    expect((await since.textContent())!.replace(/\s+/g, ' ')).toContain(`failing since ${sha.slice(0, 10)} on main`);
    expect(await since.getByRole('link', { name: sha.slice(0, 10) }).getAttribute('href')).toBe(projectUrl('commits', sha));
    expect(await s.page.getByTestId('test-flake-rate').count()).toBe(0);
    expect(await s.page.getByTestId('test-held').count()).toBe(0);
    // The health log names the transition in words.
    const log = await rest('GET', `/trpc/test.quarantineLog?input=${encodeURIComponent(JSON.stringify({ testIdentityId: id }))}`);
    expect(log.status, log.text).toBe(200);
    const kinds = (log.json.result.data.events as { kind: keyof typeof EVENT_TEXT }[]).map((e) => e.kind);
    expect(kinds).toContain('broke');
    const table = s.page.getByRole('region', { name: 'State and quarantine transitions' });
    await expect.poll(async () => (await table.locator('tbody tr td:nth-child(2)').allTextContents()).sort()).toEqual(kinds.map((k) => EVENT_TEXT[k]).sort());
    await checkPage(s, 'test-broken');
  });

  it('the execution page: the error, the stack, the RCA report and the artifacts through signed URLs', async () => {
    const { brokenExecutionId, rcaSummary } = world().seed;
    const rca = await restJson(`/v1/executions/${brokenExecutionId}/rca`);
    expect(rca.summary).toBe(rcaSummary);
    const history = (await restJson(`/v1/tests/${world().seed.testIds[BROKEN.title]}?historyLimit=200`)).history as { executionId: string; artifacts: { name: string; url: string | null }[] }[];
    const refs = history.find((h) => h.executionId === brokenExecutionId)!.artifacts;
    expect(refs.map((a) => a.name).sort()).toEqual(ARTIFACTS.map((a) => a.name).sort());
    for (const a of refs) expect(a.url).toMatch(new RegExp(`^${world().artifactOrigin}/`));
    await s.page.goto(projectUrl('executions', brokenExecutionId));
    await expect.poll(() => s.page.getByRole('heading', { level: 1 }).textContent()).toBe(BROKEN.title);
    expect((await s.page.getByTestId('error-message').textContent())!.trim()).toBe(BROKEN_MESSAGE);
    expect(await s.page.getByText('at applyCoupon').count()).toBeGreaterThan(0);
    await expect.poll(() => s.page.getByText(RCA_ANSWER.summary).count()).toBeGreaterThan(0);
    expect(await s.page.getByText(RCA_ANSWER.suggestedAction).count()).toBeGreaterThan(0);
    // The screenshot is shown inline from the artifact store (the CSP lets its origin in) and decodes
    // to the uploaded picture; the trace is a download link.
    const img = s.page.getByRole('img', { name: 'Artifact failure.png' });
    await img.scrollIntoViewIfNeeded();
    const decoded = () =>
      img.evaluate((el) => {
        const i = el as unknown as { complete: boolean; naturalWidth: number; naturalHeight: number };
        return i.complete ? [i.naturalWidth, i.naturalHeight] : null;
      });
    await expect.poll(decoded).toEqual([24, 16]);
    expect(await img.getAttribute('src')).toMatch(new RegExp(`^${world().artifactOrigin}/`));
    const trace = s.page.getByRole('link', { name: 'trace.zip' });
    expect(await trace.getAttribute('download')).toBe('trace.zip');
    const download = await fetch((await trace.getAttribute('href'))!);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(ARTIFACTS.find((a) => a.name === 'trace.zip')!.body);
    await checkPage(s, 'execution');
  });

  it('the runs page lists GET /v1/runs; a run shows its counts', async () => {
    const runs = (await restJson('/v1/runs?limit=25')).items as { id: string; commitSha: string; status: string; counts: Record<string, number> }[];
    await s.page.goto(projectUrl('runs'));
    const rows = s.page.locator('main table tbody tr');
    await expect.poll(() => rows.count()).toBe(runs.length);
    await checkPage(s, 'runs');

    const pr = runs.find((r) => r.commitSha === world().seed.prCommit)!;
    await s.page.goto(projectUrl('runs', pr.id));
    await s.page.getByTestId('run-total').waitFor();
    for (const k of ['total', 'passed', 'failed', 'flaky', 'skipped']) expect((await s.page.getByTestId(`run-${k}`).textContent())!.trim(), k).toBe(String(pr.counts[k]));
    await checkPage(s, 'run');

    // Filtering by PR through the URL: only that PR's run.
    await s.page.goto(`${projectUrl('runs')}?prNumber=${PR_NUMBER}`);
    await expect.poll(() => rows.count()).toBe(1);
  });

  it('the pull request and commit pages: the verdict and counts of /v1/runs/gate and /v1/runs/summary', async () => {
    const { prCommit } = world().seed;
    const gate = await restJson(`/v1/runs/gate?commitSha=${prCommit}`);
    const summary = await restJson(`/v1/runs/summary?commitSha=${prCommit}`);
    expect(gate.gate.verdict).toBe('block');
    const brokenOnBase = (gate.gate.tests as { title: string; classification: string; brokenSince: { commitSha: string } }[]).find((t) => t.title === BROKEN.title)!;
    expect(brokenOnBase).toMatchObject({ classification: 'broken_on_base', brokenSince: { commitSha: commitOf(BROKEN_FROM_RUN) } });
    for (const [url, name] of [
      [projectUrl('pulls', String(PR_NUMBER)), 'pull'],
      [projectUrl('commits', prCommit), 'commit'],
    ] as const) {
      await s.page.goto(url);
      await expect.poll(() => s.page.getByTestId('gate-verdict').textContent()).toBe('Gate: blocked');
      expect((await s.page.getByTestId('summary-failed').textContent())!.trim()).toBe(String(summary.summary.failed));
      expect((await s.page.getByTestId('summary-flaky').textContent())!.trim()).toBe(String(summary.summary.flaky));
      // The PR comment's markdown, as CI would post it.
      await expect.poll(() => s.page.getByTestId('pr-markdown').textContent()).toContain('<!-- service:pr-comment -->');
      // The test broken on main fails here too: already broken on main since its first failing commit there.
      const row = s.page.locator('main table tbody tr').filter({ hasText: BROKEN.title });
      const cell = row.getByTestId('gate-broken-on-base');
      expect((await cell.textContent())!.replace(/\s+/g, ' ').trim()).toBe(`already broken on ${gate.gate.baseBranch} since ${brokenOnBase.brokenSince.commitSha.slice(0, 10)}`);
      expect(await cell.getByRole('link').getAttribute('href')).toBe(projectUrl('commits', brokenOnBase.brokenSince.commitSha));
      await checkPage(s, name);
    }
  });

  it('the health page: the backlog and cost of GET /v1/health, with charts; the suites tab', async () => {
    const health = await restJson('/v1/health');
    await s.page.goto(projectUrl('health'));
    await expect.poll(() => s.page.getByTestId('quarantine-backlog').textContent()).toBe(String(health.quarantine.currentBacklog));
    // MTTR counts state transitions: open are the tests flaky or broken now, as the board has them.
    const board = (await restJson('/v1/flaky?limit=100')).items as BoardItem[];
    expect(health.mttr.openCount).toBe(board.filter((r) => r.state === 'flaky' || r.state === 'broken').length);
    const mttr = s.page.locator('article', { has: s.page.getByTestId('mttr-mean') });
    expect((await mttr.textContent())!).toContain(`${health.mttr.resolvedCount} fixed, ${health.mttr.openCount} flaky or broken now`);
    await expect.poll(() => s.page.locator('.uplot').count()).toBeGreaterThan(0);
    await checkPage(s, 'health');

    await s.page.goto(projectUrl('suites'));
    await expect.poll(() => s.page.locator('main table tbody tr').count()).toBeGreaterThan(0);
    await checkPage(s, 'suites');
  });

  it('the clusters page: the broken test’s cluster with its occurrences and its RCA', async () => {
    const clusters = await rest('GET', `/trpc/clusters.list?input=${encodeURIComponent('{}')}`);
    expect(clusters.status).toBe(200);
    const mine = (clusters.json.result.data.items as { clusterId: string; occurrences: number; testsAffected: number; errorMessage: string }[]).find((c) => c.errorMessage.includes('expected cart total'))!;
    // Every failure of the broken test has the one message: the cluster counts what its history shows
    // (runs 18…24 on main, the reruns of 20 and 24, the PR's run).
    const history = (await restJson(`/v1/tests/${world().seed.testIds[BROKEN.title]}?historyLimit=200`)).history as { status: string }[];
    expect(history.filter((h) => h.status === 'fail')).toHaveLength(10);
    expect(mine.occurrences).toBe(10);
    expect(mine.testsAffected).toBe(1);
    await s.page.goto(projectUrl('clusters'));
    const card = s.page.locator(`#cluster-${mine.clusterId}`);
    await expect.poll(() => card.getByTestId('cluster-occurrences').textContent()).toBe(String(mine.occurrences));
    expect((await card.getByTestId('cluster-tests').textContent())!.trim()).toBe(String(mine.testsAffected));
    expect(await card.getByText(RCA_ANSWER.summary).count()).toBeGreaterThan(0);
    await checkPage(s, 'clusters');
  });

  it('the settings page opens for a project token (policy, channels, badges)', async () => {
    await s.page.goto(projectUrl('settings'));
    await s.page.locator('#policy-h').waitFor();
    await checkPage(s, 'settings');
  });
});

describe('pages as the admin sees them', () => {
  let s: SignedIn;
  beforeAll(async () => {
    s = await signedIn(world().adminToken);
  });
  afterAll(async () => s?.close());

  it('/ is the project picker', async () => {
    await s.page.goto('/');
    await expect.poll(() => s.page.getByRole('link', { name: world().projectSlug }).count()).toBeGreaterThan(0);
    await checkPage(s, 'projects');
  });

  it('settings: every policy key with its source, and the tokens', async () => {
    const tokens = await rest('GET', `/trpc/tokens.list`, { token: world().adminToken, headers: { 'x-flakehouse-project': world().projectSlug } });
    await s.page.goto(projectUrl('settings'));
    await s.page.locator('#policy-h').waitFor();
    await expect.poll(() => s.page.getByText('quarantine.enabled').count()).toBeGreaterThan(0);
    expect(tokens.status, tokens.text).toBe(200);
    const items = tokens.json.result.data.items as { prefix: string }[];
    // The bootstrap token and the read token global-setup made, at least (other files add more).
    expect(items.length).toBeGreaterThanOrEqual(2);
    const rows = s.page.locator('#tokens table tbody tr');
    await expect.poll(() => rows.count()).toBe(items.length);
    for (const t of items) expect(await rows.filter({ hasText: t.prefix }).count(), t.prefix).toBe(1);
    await checkPage(s, 'settings-admin');
  });

  it('the pipeline: the graph of pipelines/default.yaml, queue depth and dead jobs', async () => {
    await s.page.goto('/pipeline');
    await expect.poll(() => s.page.getByTestId('queue-depth').textContent()).toBe('0');
    expect((await s.page.getByTestId('dead-jobs').textContent())!.trim()).toBe('0');
    for (const id of ['native', 'junit', 'otlp', 'scoring', 'clickhouse', 'rca']) expect(await s.page.getByText(id, { exact: true }).count(), id).toBeGreaterThan(0);
    await checkPage(s, 'pipeline');
  });
});
