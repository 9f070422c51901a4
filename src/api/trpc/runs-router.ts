// Procedures of the runs pages, the commit/PR page, RCA and project health.
import { gateQuerySchema } from '../../domain/pr-schemas.js';
import { toIso } from '../../domain/time.js';
import { PrSummaryRepo } from '../../store/pr-summary.js';
import { SuiteHealthRepo } from '../../store/suite-health.js';
import { errors } from '../../errors.js';
import { projectHealth } from '../../usecases/project-health.js';
import { rcaForExecution } from '../../usecases/execution-rca.js';
import { getRun, listRuns, runsQuerySchema } from '../routes/runs.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';
import { commitGate, commitSummary, type PrCommitDeps } from '../../usecases/pr-commit.js';

const DAY_MS = 86_400_000;
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
/** Commits of one PR the PR page lists with their verdicts (each is one gate computation). */
export const PR_COMMITS_MAX = 20;
const ratio = (n: number, of: number): number => (of > 0 ? Math.round((n / of) * 10_000) / 10_000 : 0);

export function runsRouter(d: TrpcDeps, p: ProcedureKinds) {
  // Built at the first call: the router's shape is read without dependencies (the OpenAPI document).
  let pr: PrCommitDeps | undefined;
  const prDeps = (): PrCommitDeps =>
    (pr ??= {
      prSummary: new PrSummaryRepo(d.store),
      tests: d.tests.tests,
      codeowners: d.tests.codeowners,
      minSamples: async (id) => (await d.projectConfigs.get(id)).config.flaky.minSamples,
    });
  // The gate's query as GET /v1/runs/gate reads it (an unknown strictness is `new`).
  const gate = (projectId: string, query: { commitSha: string; baseBranch?: string; strictness?: string }) => commitGate(prDeps(), projectId, gateQuerySchema.parse(query));

  return {
    runs: {
      list: p.read.input(PROCEDURES['runs.list'].input).query(({ ctx, input }) => listRuns(d.runs, ctx.projectId, input)),
    },
    run: {
      get: p.read.input(PROCEDURES['run.get'].input).query(({ ctx, input }) => getRun(d.runs, ctx.projectId, input.runId, d.artifacts)),
    },
    rca: {
      get: p.read.input(PROCEDURES['rca.get'].input).query(({ ctx, input }) => rcaForExecution(d.rca, ctx.projectId, input.executionId)),
    },
    health: {
      metrics: p.read.input(PROCEDURES['health.metrics'].input).query(({ ctx, input }) => projectHealth(d.health, ctx.projectId, input.days, input.owner, Date.now())),
      suites: p.read.input(PROCEDURES['health.suites'].input).query(async ({ ctx, input }) => {
        const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
        const fromDay = input.day ?? dayOf(today - (input.days - 1) * DAY_MS);
        const toDay = input.day ?? dayOf(today);
        const days = await new SuiteHealthRepo(d.store).days(ctx.projectId, { fromDay, toDay, suite: input.suite });
        const totals = new Map<string, { executions: number; failed: number; flaky: number; durationMs: number }>();
        for (const r of days) {
          const t = totals.get(r.suite) ?? { executions: 0, failed: 0, flaky: 0, durationMs: 0 };
          t.executions += r.executions;
          t.failed += r.failed;
          t.flaky += r.flaky;
          t.durationMs += r.durationMs;
          totals.set(r.suite, t);
        }
        const suites = [...totals]
          .map(([suite, t]) => ({ suite, ...t, failRate: ratio(t.failed, t.executions), flakyRate: ratio(t.flaky, t.executions) }))
          .sort((a, b) => b.flakyRate + b.failRate - (a.flakyRate + a.failRate) || a.suite.localeCompare(b.suite));
        return {
          fromDay,
          toDay,
          suites,
          days: days.map((r) => ({ ...r, failRate: ratio(r.failed, r.executions), flakyRate: ratio(r.flaky, r.executions) })),
        };
      }),
    },
    pr: {
      // Each commit's verdict is GET /v1/runs/gate's, four commits at a time.
      commits: p.read.input(PROCEDURES['pr.commits'].input).query(async ({ ctx, input }) => {
        const rows = await prDeps().prSummary.prCommits(ctx.projectId, input.prNumber, PR_COMMITS_MAX + 1);
        const shown = rows.slice(0, PR_COMMITS_MAX);
        const commits = await mapLimit(shown, 4, async (c) => {
          const g = await gate(ctx.projectId, { commitSha: c.commitSha, baseBranch: input.baseBranch, strictness: input.strictness });
          const gt = g.found ? g.gate : null;
          // The gate's one summary (src/domain/pr-summary.ts prTally): the same status and counts as the commit's page and its comments.
          return {
            commitSha: c.commitSha,
            runs: c.runs,
            firstRunAt: toIso(c.firstRunAt),
            lastRunAt: toIso(c.lastRunAt),
            runStatus: gt?.runStatus ?? null,
            complete: gt?.complete ?? false,
            status: gt?.status ?? null,
            failed: gt?.failed ?? 0,
            flaky: gt?.flaky ?? 0,
            gate: gt
              ? {
                  verdict: gt.verdict,
                  baseBranch: gt.baseBranch,
                  strictness: gt.strictness,
                  newFailures: gt.newFailures,
                  knownFlakes: gt.knownFlakes,
                  quarantined: gt.quarantined ?? 0,
                  countsText: gt.countsText ?? '',
                  brokenOnBase: gt.brokenOnBase,
                }
              : null,
          };
        });
        return { prNumber: input.prNumber, commits, more: rows.length > PR_COMMITS_MAX };
      }),
      summary: p.read.input(PROCEDURES['pr.summary'].input).query(async ({ ctx, input }) => {
        let commitSha: string;
        if ('prNumber' in input) {
          const latest = (await listRuns(d.runs, ctx.projectId, runsQuerySchema.parse({ prNumber: input.prNumber, limit: 1 }))).items[0];
          if (!latest) throw errors.notFound(`no run of PR #${input.prNumber} was ingested`);
          commitSha = latest.commitSha;
        } else commitSha = input.commitSha;
        const query = { commitSha, baseBranch: input.baseBranch, strictness: input.strictness };
        // The very functions of GET /v1/runs/summary and /v1/runs/gate: the page shows what the PR comments say.
        const [s, g] = await Promise.all([commitSummary(prDeps(), ctx.projectId, commitSha), gate(ctx.projectId, query)]);
        return { commitSha, prNumber: s.summary.prNumber, summary: s.summary, summaryMarkdown: s.markdown, gate: g.found ? g.gate : null, gateMarkdown: g.found ? g.markdown : null };
      }),
    },
  };
}

/** `f` over `items` with at most `n` calls in flight; the answers in the items' order. */
async function mapLimit<T, R>(items: readonly T[], n: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}
