// The procedure API for dashboards (docs/contract.md §6, docs/dashboard.md): tRPC on fastify at
// /trpc, so a stock @trpc/client works (GET ?input=, POST, batching with ?batch=1). Each procedure
// with a REST route calls the same function as that route, so both answer with the same data.
// The router is assembled from its areas in src/api/trpc/; checks per call are in trpc/core.ts.
import { fastifyTRPCPlugin, type CreateFastifyContextOptions, type FastifyTRPCPluginOptions } from '@trpc/server/adapters/fastify';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors/catalogue.js';
import { checkCsrf, type CallerAuth } from './session/caller.js';
import { PROJECT_HEADER, procedureKinds, t, type TrpcContext } from './trpc/core.js';
import type { TrpcDeps } from './trpc/deps.js';
import { pipelineRouter } from './trpc/pipeline-router.js';
import { projectRouter } from './trpc/project-router.js';
import { runsRouter } from './trpc/runs-router.js';
import { testsRouter } from './trpc/tests-router.js';
import { trendsRouter } from './trpc/trends-router.js';

export { PROCEDURES, type ProcedureDoc } from './trpc/procedures.js';
export type { ProcedureErrorData, TrpcContext } from './trpc/core.js';
export type { TrpcDeps } from './trpc/deps.js';

export const TRPC_PREFIX = '/trpc';
/** Calls per batch; a dashboard page needs a handful. */
export const TRPC_MAX_BATCH = 50;

export function createAppRouter(d: TrpcDeps) {
  const p = procedureKinds(d);
  const tests = testsRouter(d, p);
  const runs = runsRouter(d, p);
  const project = projectRouter(d, p);
  const trends = trendsRouter(d, p);
  return t.router({
    ...runs,
    ...project,
    ...pipelineRouter(d, p),
    flaky: { ...tests.flaky, ...trends.flaky },
    execution: tests.execution,
    clusters: tests.clusters,
    test: { ...tests.test, ...trends.test },
    // Both areas add to `health`: metrics and suites; flaky tests per day.
    health: { ...runs.health, ...trends.health },
  });
}

/** The router's type, for `createTRPCClient<AppRouter>` in dashboards and tests. */
export type AppRouter = ReturnType<typeof createAppRouter>;

/** Serves the router at /trpc, in its own fastify context (the adapter parses bodies itself). */
export async function registerTrpc(fastify: FastifyInstance, router: AppRouter, callers: CallerAuth): Promise<void> {
  const trpcOptions: FastifyTRPCPluginOptions<AppRouter>['trpcOptions'] = {
    router,
    allowMethodOverride: true, // docs/contract.md §6: queries also answer POST with a JSON body
    maxBatchSize: TRPC_MAX_BATCH,
    createContext({ req }: CreateFastifyContextOptions): TrpcContext {
      let caller: ReturnType<TrpcContext['caller']> | undefined;
      const header = req.headers[PROJECT_HEADER];
      return {
        caller: () => (caller ??= callers.caller(req)),
        projectSlug: typeof header === 'string' && header !== '' ? header : undefined,
        checkCsrf: (session) => checkCsrf(req, session),
      };
    },
    // The headers REST sends with the same errors: Retry-After on 429, WWW-Authenticate on 401.
    responseMeta({ errors: failures }) {
      const headers: Record<string, string> = {};
      for (const e of failures) if (e.cause instanceof ApiError) Object.assign(headers, e.cause.extra.headers);
      return { headers };
    },
    onError({ error, req }) {
      if (error.code === 'INTERNAL_SERVER_ERROR') req.log.error({ err: error.cause ?? error }, 'procedure failed');
    },
  };
  await fastify.register(fastifyTRPCPlugin, { prefix: TRPC_PREFIX, trpcOptions });
}
