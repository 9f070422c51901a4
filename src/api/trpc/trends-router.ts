// Procedures of the trends people look for (issue 31): flaky tests per day (health page), and per
// test where it first flaked or broke and whether its median duration regressed (test page).
import { githubCommitUrl } from '../../domain/commit-url.js';
import { BASELINE_DAYS, RECENT_DAYS, durationRegression, durationWindows } from '../../domain/duration-regression.js';
import { UUID_RE } from '../../domain/ids.js';
import { toIso } from '../../domain/time.js';
import { TestTrendsRepo } from '../../store/test-trends.js';
import { errors } from '../../errors.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';

const DAY_MS = 86_400_000;
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export function trendsRouter(d: TrpcDeps, p: ProcedureKinds) {
  const repo = new TestTrendsRepo(d.store);
  return {
    flaky: {
      slowed: p.read.input(PROCEDURES['flaky.slowed'].input).query(async ({ ctx, input }) => {
        const ids = [...new Set(input.testIdentityIds.filter((t) => UUID_RE.test(t)).map((t) => t.toLowerCase()))];
        const now = Date.now();
        const windows = await repo.durationWindowsMany(ctx.projectId, ids, { ...durationWindows(now), now });
        const items = [];
        for (const [testIdentityId, w] of windows) {
          const r = durationRegression(w);
          if (r.slowed) items.push({ testIdentityId, recentP50Ms: r.recentP50Ms, baselineP50Ms: r.baselineP50Ms });
        }
        return { recentDays: RECENT_DAYS, baselineDays: BASELINE_DAYS, items };
      }),
    },
    health: {
      flakyTests: p.read.input(PROCEDURES['health.flakyTests'].input).query(async ({ ctx, input }) => {
        const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
        const fromDay = dayOf(today - (input.days - 1) * DAY_MS);
        const toDay = dayOf(today);
        return { fromDay, toDay, unit: 'tests' as const, days: await repo.flakyTestsPerDay(ctx.projectId, fromDay, toDay) };
      }),
    },
    test: {
      trends: p.read.input(PROCEDURES['test.trends'].input).query(async ({ ctx, input }) => {
        if (!UUID_RE.test(input.testIdentityId)) throw errors.notFound('test not found');
        const id = input.testIdentityId.toLowerCase();
        if (!(await d.tests.identities.get(ctx.projectId, id))) throw errors.notFound('test not found');
        const now = Date.now();
        const [state, first, windows] = await Promise.all([
          d.tests.tests.pageState(ctx.projectId, id),
          repo.firstFlake(ctx.projectId, id),
          repo.durationWindows(ctx.projectId, id, { ...durationWindows(now), now }),
        ]);
        const since = state?.state === 'broken' ? (state.stateSince ?? null) : null;
        // The state keeps a commit's first 12 digits: the test's own execution there has the full sha.
        const brokeAt = since?.commitSha ? await repo.firstAtCommit(ctx.projectId, id, since.commitSha) : null;
        const [firstSource, brokeSource] = await Promise.all([
          first ? repo.runSource(ctx.projectId, first.runId) : null,
          brokeAt ? repo.runSource(ctx.projectId, brokeAt.runId) : null,
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
      }),
    },
  };
}
