// Procedures of the runs pages, the commit/PR page, RCA and project health.
import { PrSummaryRepo } from '../../store/pr-summary.js';
import { SuiteHealthRepo } from '../../store/suite-health.js';
import { projectHealth } from '../../usecases/project-health.js';
import { rcaForExecution } from '../../usecases/execution-rca.js';
import { getRun, listRuns } from '../../usecases/runs.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';
import { prCommits, prPage, type PrCommitDeps } from '../../usecases/pr-commit.js';
import { suiteHealth } from '../../usecases/suite-health.js';

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
  let suiteDeps: { suiteHealth: SuiteHealthRepo } | undefined;
  const suites = () => (suiteDeps ??= { suiteHealth: new SuiteHealthRepo(d.store) });

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
      suites: p.read.input(PROCEDURES['health.suites'].input).query(({ ctx, input }) => suiteHealth(suites(), ctx.projectId, input, Date.now())),
    },
    pr: {
      commits: p.read.input(PROCEDURES['pr.commits'].input).query(({ ctx, input }) => prCommits(prDeps(), ctx.projectId, input.prNumber, input)),
      summary: p.read
        .input(PROCEDURES['pr.summary'].input)
        .query(({ ctx, input }) => prPage(prDeps(), ctx.projectId, 'prNumber' in input ? { prNumber: input.prNumber } : { commitSha: input.commitSha }, input)),
    },
  };
}
