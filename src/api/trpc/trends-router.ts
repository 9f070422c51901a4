// Procedures of the trends people look for (src/usecases/test-trends.ts).
import { flakyTestsPerDay, slowedTests, testTrends } from '../../usecases/test-trends.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';

export function trendsRouter(d: TrpcDeps, p: ProcedureKinds) {
  // Read inside each call: the router's shape is read without dependencies (the OpenAPI document).
  const trends = () => d.useCases.trends;
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
