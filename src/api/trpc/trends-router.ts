// Procedures of the trends people look for (src/usecases/test-trends.ts).
import { TestTrendsRepo } from '../../store/test-trends.js';
import { flakyTestsPerDay, slowedTests, testTrends, type TestTrendsDeps } from '../../usecases/test-trends.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';

export function trendsRouter(d: TrpcDeps, p: ProcedureKinds) {
  // Built at the first call: the router's shape is read without dependencies (the OpenAPI document).
  let deps: TestTrendsDeps | undefined;
  const trends = (): TestTrendsDeps => (deps ??= { trends: new TestTrendsRepo(d.store), tests: d.tests.tests, identities: d.tests.identities });
  return {
    flaky: {
      slowed: p.read.input(PROCEDURES['flaky.slowed'].input).query(({ ctx, input }) => slowedTests(trends(), ctx.projectId, input.testIdentityIds, Date.now())),
    },
    health: {
      flakyTests: p.read.input(PROCEDURES['health.flakyTests'].input).query(({ ctx, input }) => flakyTestsPerDay(trends(), ctx.projectId, input.days, Date.now())),
    },
    test: {
      trends: p.read.input(PROCEDURES['test.trends'].input).query(({ ctx, input }) => testTrends(trends(), ctx.projectId, input.testIdentityId, Date.now())),
    },
  };
}
