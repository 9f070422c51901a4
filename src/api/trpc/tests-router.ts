// Procedures of the flaky board, the test page and the execution page.
import { ClusterRepo } from '../../store/clusters.js';
import { ExecutionRepo } from '../../store/executions.js';
import { QuarantineLogRepo } from '../../store/quarantine-log.js';
import { flakyBoard } from '../../usecases/flaky-board.js';
import { testPage } from '../../usecases/test-page.js';
import { quarantineTest } from '../../usecases/quarantine-decision.js';
import { testClusters, testHistory, testQuarantineLog, type TestActivityDeps } from '../../usecases/test-activity.js';
import { errorClusters } from '../../usecases/error-clusters.js';
import { executionDetail, type ExecutionDetailDeps } from '../../usecases/execution-detail.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';

export function testsRouter(d: TrpcDeps, p: ProcedureKinds) {
  const tests = { ...d.tests, artifacts: d.artifacts };
  const boardDeps = { ...d.tests, cost: async (projectId: string) => (await d.projectConfigs.get(projectId)).config.cost };
  const decisions = () => ({ tests: d.tests.tests, identities: d.tests.identities, outbox: d.outbox });

  // Built at the first call: the router's shape is read without dependencies (the OpenAPI document).
  let activityDeps: TestActivityDeps | undefined;
  const activity = (): TestActivityDeps =>
    (activityDeps ??= { tests: d.tests.tests, identities: d.tests.identities, quarantineLog: new QuarantineLogRepo(d.store), clusters: new ClusterRepo(d.store) });
  let executionDeps: ExecutionDetailDeps | undefined;
  const execution = (): ExecutionDetailDeps => (executionDeps ??= { executions: new ExecutionRepo(d.store), rca: d.rca, artifacts: d.artifacts });

  return {
    flaky: {
      // The dashboard's board: every page with its impact, in the project's cost currency.
      board: p.read.input(PROCEDURES['flaky.board'].input).query(({ ctx, input }) => flakyBoard(boardDeps, ctx.projectId, input, { impact: true })),
    },
    test: {
      get: p.read.input(PROCEDURES['test.get'].input).query(({ ctx, input }) => testPage(tests, ctx.projectId, input.testIdentityId, input.historyLimit)),
      history: p.read.input(PROCEDURES['test.history'].input).query(({ ctx, input }) => testHistory(activity(), ctx.projectId, input.testIdentityId, input.limit)),
      quarantineLog: p.read.input(PROCEDURES['test.quarantineLog'].input).query(({ ctx, input }) => testQuarantineLog(activity(), ctx.projectId, input.testIdentityId, input.limit)),
      clusters: p.read.input(PROCEDURES['test.clusters'].input).query(({ ctx, input }) => testClusters(activity(), ctx.projectId, input.testIdentityId, input.days, Date.now())),
      quarantine: p.quarantine
        .input(PROCEDURES['test.quarantine'].input)
        .mutation(({ ctx, input }) => quarantineTest(decisions(), ctx.projectId, input.testIdentityId, 'quarantined', input.reason)),
      release: p.quarantine
        .input(PROCEDURES['test.release'].input)
        .mutation(({ ctx, input }) => quarantineTest(decisions(), ctx.projectId, input.testIdentityId, 'released', input.reason)),
    },
    execution: {
      get: p.read.input(PROCEDURES['execution.get'].input).query(({ ctx, input }) => executionDetail(execution(), ctx.projectId, input.executionId)),
    },
    clusters: {
      list: p.read.input(PROCEDURES['clusters.list'].input).query(({ ctx, input }) => errorClusters(activity(), ctx.projectId, input.days, input.limit, Date.now())),
    },
  };
}
