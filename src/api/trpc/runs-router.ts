// Procedures of the runs pages, the commit/PR page, RCA and project health.
import { projectHealth } from '../../usecases/project-health.js';
import { rcaForExecution } from '../../usecases/execution-rca.js';
import { getRun, listRuns } from '../../usecases/runs.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';
import { prCommits, prPage } from '../../usecases/pr-commit.js';
import { suiteHealth } from '../../usecases/suite-health.js';

export function runsRouter(d: TrpcDeps, p: ProcedureKinds) {
  // Read inside each call: the router's shape is read without dependencies (the OpenAPI document).
  const u = () => d.useCases;
  return {
    runs: {
      list: p.read.input(PROCEDURES['runs.list'].input).query(({ ctx, input }) => listRuns(u().runs, ctx.projectId, input)),
    },
    run: {
      get: p.read.input(PROCEDURES['run.get'].input).query(({ ctx, input }) => getRun(u().runs, ctx.projectId, input.runId, u().artifacts)),
    },
    rca: {
      get: p.read.input(PROCEDURES['rca.get'].input).query(({ ctx, input }) => rcaForExecution(u().rca, ctx.projectId, input.executionId)),
    },
    health: {
      metrics: p.read.input(PROCEDURES['health.metrics'].input).query(({ ctx, input }) => projectHealth(u().health, ctx.projectId, input.days, input.owner, Date.now())),
      suites: p.read.input(PROCEDURES['health.suites'].input).query(({ ctx, input }) => suiteHealth(u().suites, ctx.projectId, input, Date.now())),
    },
    pr: {
      commits: p.read.input(PROCEDURES['pr.commits'].input).query(({ ctx, input }) => prCommits(u().prCommit, ctx.projectId, input.prNumber, input)),
      summary: p.read
        .input(PROCEDURES['pr.summary'].input)
        .query(({ ctx, input }) => prPage(u().prCommit, ctx.projectId, 'prNumber' in input ? { prNumber: input.prNumber } : { commitSha: input.commitSha }, input)),
    },
  };
}
