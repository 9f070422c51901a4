// The trends people look for (issue 31): flaky tests per day (the health page's `health.flakyTests`),
// and per test where it first flaked or broke and whether its median duration regressed (the test
// page's `test.trends`; `flaky.slowed` for the board's rows).
import { githubCommitUrl } from '../domain/commit-url.js';
import { BASELINE_DAYS, RECENT_DAYS, durationRegression, durationWindows } from '../domain/duration-regression.js';
import { UUID_RE } from '../../client/src/contract/ids.js';
import { toIso } from '../../client/src/contract/time.js';
import type { IdentityRepo } from '../store/identities.js';
import type { TestTrendsRepo } from '../store/test-trends.js';
import type { TestRepo } from '../store/tests.js';
import { errors } from '../errors/catalogue.js';

const DAY_MS = 86_400_000;
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export interface TestTrendsDeps {
  trends: TestTrendsRepo;
  tests: Pick<TestRepo, 'pageState'>;
  identities: Pick<IdentityRepo, 'get'>;
}

/** Which of `testIdentityIds` got slower: the median of the recent days against the baseline before them. */
export async function slowedTests(d: TestTrendsDeps, projectId: string, testIdentityIds: readonly string[], now: number) {
  const ids = [...new Set(testIdentityIds.filter((t) => UUID_RE.test(t)).map((t) => t.toLowerCase()))];
  const windows = await d.trends.durationWindowsMany(projectId, ids, { ...durationWindows(now), now });
  const items = [];
  for (const [testIdentityId, w] of windows) {
    const r = durationRegression(w);
    if (r.slowed) items.push({ testIdentityId, recentP50Ms: r.recentP50Ms, baselineP50Ms: r.baselineP50Ms });
  }
  return { recentDays: RECENT_DAYS, baselineDays: BASELINE_DAYS, items };
}

/** Flaky tests per day over the last `days` days, today included. */
export async function flakyTestsPerDay(d: TestTrendsDeps, projectId: string, days: number, now: number) {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const fromDay = dayOf(today - (days - 1) * DAY_MS);
  const toDay = dayOf(today);
  return { fromDay, toDay, unit: 'tests' as const, days: await d.trends.flakyTestsPerDay(projectId, fromDay, toDay) };
}

/** Where the test first flaked, the commit it broke with, and whether it got slower; 404 for an unknown test. */
export async function testTrends(d: TestTrendsDeps, projectId: string, testIdentityId: string, now: number) {
  if (!UUID_RE.test(testIdentityId)) throw errors.notFound('test not found');
  const id = testIdentityId.toLowerCase();
  if (!(await d.identities.get(projectId, id))) throw errors.notFound('test not found');
  const repo = d.trends;
  const [state, first, windows] = await Promise.all([
    d.tests.pageState(projectId, id),
    repo.firstFlake(projectId, id),
    repo.durationWindows(projectId, id, { ...durationWindows(now), now }),
  ]);
  const since = state?.state === 'broken' ? (state.stateSince ?? null) : null;
  // The state keeps a commit's first 12 digits: the test's own execution there has the full sha.
  const brokeAt = since?.commitSha ? await repo.firstAtCommit(projectId, id, since.commitSha) : null;
  const [firstSource, brokeSource] = await Promise.all([
    first ? repo.runSource(projectId, first.runId) : null,
    brokeAt ? repo.runSource(projectId, brokeAt.runId) : null,
  ]);
  const brokeSha = brokeAt?.commitSha ?? since?.commitSha ?? '';
  return {
    testIdentityId: id,
    /** The earliest execution that flaked (flaky, or passed on a retry). */
    firstFlaked: first
      ? { commitSha: first.commitSha, branch: first.branch, at: toIso(first.at), runId: first.runId, executionId: first.executionId, commitUrl: githubCommitUrl(firstSource, first.commitSha) }
      : null,
    /** The commit a broken test began failing with (its state's since-commit). */
    broke: since && brokeSha ? { commitSha: brokeSha, branch: since.branch, at: toIso(since.at), commitUrl: githubCommitUrl(brokeSource, brokeSha) } : null,
    /** Median duration of the last RECENT_DAYS against the BASELINE_DAYS before them. */
    duration: { recentDays: RECENT_DAYS, baselineDays: BASELINE_DAYS, ...durationRegression(windows) },
  };
}
