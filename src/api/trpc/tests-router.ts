// Procedures of the flaky board, the test page and the execution page.
import { flakyBoard } from '../../usecases/flaky-board.js';
import { testPage } from '../../usecases/test-page.js';
import { quarantineTest } from '../../usecases/quarantine-decision.js';
import { testClusters, testHistory, testQuarantineLog } from '../../usecases/test-activity.js';
import { errorClusters } from '../../usecases/error-clusters.js';
import { executionDetail } from '../../usecases/execution-detail.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';

export function testsRouter(d: TrpcDeps, p: ProcedureKinds) {
  // Read inside each call: the router's shape is read without dependencies (the OpenAPI document).
  const u = () => d.useCases;
  return {
    flaky: {
      // The dashboard's board: every page with its impact, in the project's cost currency.
      board: p.read.input(PROCEDURES['flaky.board'].input).query(({ ctx, input }) => flakyBoard(u().board, ctx.projectId, input, { impact: true })),
    },
    test: {
      get: p.read.input(PROCEDURES['test.get'].input).query(({ ctx, input }) => testPage(u().testPage, ctx.projectId, input.testIdentityId, input.historyLimit)),
      history: p.read.input(PROCEDURES['test.history'].input).query(({ ctx, input }) => testHistory(u().activity, ctx.projectId, input.testIdentityId, input.limit)),
      quarantineLog: p.read.input(PROCEDURES['test.quarantineLog'].input).query(({ ctx, input }) => testQuarantineLog(u().activity, ctx.projectId, input.testIdentityId, input.limit)),
      clusters: p.read.input(PROCEDURES['test.clusters'].input).query(({ ctx, input }) => testClusters(u().activity, ctx.projectId, input.testIdentityId, input.days, Date.now())),
      quarantine: p.quarantine
        .input(PROCEDURES['test.quarantine'].input)
        .mutation(({ ctx, input }) => quarantineTest(u().decisions, ctx.projectId, input.testIdentityId, 'quarantined', input.reason)),
      release: p.quarantine
        .input(PROCEDURES['test.release'].input)
        .mutation(({ ctx, input }) => quarantineTest(u().decisions, ctx.projectId, input.testIdentityId, 'released', input.reason)),
    },
    execution: {
      get: p.read.input(PROCEDURES['execution.get'].input).query(({ ctx, input }) => executionDetail(u().execution, ctx.projectId, input.executionId)),
    },
    clusters: {
      list: p.read.input(PROCEDURES['clusters.list'].input).query(({ ctx, input }) => errorClusters(u().activity, ctx.projectId, input.days, input.limit, Date.now())),
    },
  };
}
