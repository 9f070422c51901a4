// The procedure API for dashboards (docs/contract.md §6): tRPC on fastify at
// /trpc, so a stock @trpc/client works (GET ?input=, POST, batching with ?batch=1). Each procedure
// calls the same function as its REST route, so both answer with the same data.
//
// Checks per call, as on REST: auth 401 → scope `read` 403 → rate limit 429 → input 400 → resolver.
// Every call of a batch counts once against the project's rate limit, as the same REST request
// would; otherwise batching would multiply the limit.
import { TRPCError, initTRPC, type TRPC_ERROR_CODE_KEY } from '@trpc/server';
import { fastifyTRPCPlugin, type CreateFastifyContextOptions, type FastifyTRPCPluginOptions } from '@trpc/server/adapters/fastify';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ArtifactSigner } from '../artifacts/s3.js';
import { RUN_STATUSES } from '../domain/batch.js';
import type { Scope, TokenPrincipal } from '../store/projects.js';
import type { RcaRepo } from '../store/rca.js';
import type { RunRepo } from '../store/runs.js';
import { requireAnyScope, type Authenticator } from './auth.js';
import { ApiError, errors, zodIssues, type ErrorIssue } from './errors.js';
import type { RateLimiter } from './rate-limit.js';
import { healthQuerySchema, projectHealth, type ProjectHealthDeps } from './routes/project-health.js';
import { rcaForExecution } from './routes/rca.js';
import { getRun, listRuns, runsQuerySchema } from './routes/runs.js';
import { flakyBoard, flakyQuerySchema, testPage, testQuerySchema, type TestRouteDeps } from './routes/tests.js';

export const TRPC_PREFIX = '/trpc';
/** Calls per batch; a dashboard page needs a handful. */
export const TRPC_MAX_BATCH = 50;

// Inputs as docs/contract.md §6 types them (what a client sends), then run through the REST routes' schemas so
// bounds, defaults and error paths are the same on both. Absent input means "all defaults".
function viaRest<T extends z.ZodType, R extends z.ZodType>(typed: T, rest: R) {
  return typed.transform((value, ctx): z.output<R> => {
    const r = rest.safeParse(value);
    if (r.success) return r.data;
    for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path, input: issue.input });
    return z.NEVER;
  });
}

const timestamp = z.union([z.string(), z.number()]);
const runsListInput = viaRest(
  z
    .object({
      branch: z.string().optional(),
      status: z.enum(RUN_STATUSES).optional(),
      since: timestamp.optional(),
      until: timestamp.optional(),
      cursor: z.string().optional(),
      limit: z.number().int().optional(),
    })
    .prefault({}),
  runsQuerySchema,
);
const runGetInput = z.object({ runId: z.string() });
const testGetInput = viaRest(
  z.object({ testIdentityId: z.string(), historyLimit: z.number().int().optional() }),
  testQuerySchema.extend({ testIdentityId: z.string() }),
);
const flakyBoardInput = viaRest(
  z.object({ limit: z.number().int().optional(), minScore: z.number().optional(), includeQuarantined: z.boolean().optional(), owner: z.string().optional() }).prefault({}),
  flakyQuerySchema,
);
const rcaGetInput = z.object({ executionId: z.string() });
const healthMetricsInput = viaRest(z.object({ days: z.number().int().optional(), owner: z.string().optional() }).prefault({}), healthQuerySchema);

export interface ProcedureDoc {
  type: 'query';
  scope: Scope;
  summary: string;
  /** The REST route answering with the same data. */
  rest: string;
  input: z.ZodType;
}

/** What /openapi.json says about the procedures; the router below is built from the same inputs. */
export const PROCEDURES = {
  'runs.list': { type: 'query', scope: 'read', summary: 'Runs, newest first, by cursor', rest: 'GET /v1/runs', input: runsListInput },
  'run.get': { type: 'query', scope: 'read', summary: 'One run with its executions', rest: 'GET /v1/runs/{runId}', input: runGetInput },
  'test.get': { type: 'query', scope: 'read', summary: 'Score, reason codes, stitch history, recent executions', rest: 'GET /v1/tests/{testIdentityId}', input: testGetInput },
  'flaky.board': { type: 'query', scope: 'read', summary: 'Tests ranked by score, optionally per owner', rest: 'GET /v1/flaky', input: flakyBoardInput },
  'rca.get': { type: 'query', scope: 'read', summary: "An execution's root-cause report, or null", rest: 'GET /v1/executions/{executionId}/rca', input: rcaGetInput },
  'health.metrics': { type: 'query', scope: 'read', summary: 'Flaky MTTR, introduced vs resolved, quarantine backlog, cost', rest: 'GET /v1/health', input: healthMetricsInput },
} as const satisfies Record<string, ProcedureDoc>;

export interface TrpcContext {
  /** The caller, authenticated once per HTTP request however many calls it batches. */
  principal(): Promise<TokenPrincipal>;
}

/** `data` of every procedure error: tRPC's own fields plus the REST body's `error` code and `issues`. */
export interface ProcedureErrorData {
  code: TRPC_ERROR_CODE_KEY;
  httpStatus: number;
  path?: string;
  error: string;
  issues?: ErrorIssue[];
}

const t = initTRPC.context<TrpcContext>().create({
  // Never a stack trace on the wire (docs/contract.md §5), whatever NODE_ENV says.
  isDev: false,
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    const data: ProcedureErrorData = { code: shape.data.code, httpStatus: shape.data.httpStatus, path: shape.data.path, error: codeOf(error) };
    if (cause instanceof ApiError) {
      if (cause.extra.issues) data.issues = cause.extra.issues;
      return { ...shape, data };
    }
    if (cause instanceof z.ZodError) return { ...shape, message: 'invalid input', data: { ...data, issues: zodIssues(cause) } };
    if (error.code === 'INTERNAL_SERVER_ERROR') return { ...shape, message: 'internal error', data };
    return { ...shape, data };
  },
});

function codeOf(error: TRPCError): string {
  if (error.cause instanceof ApiError) return error.cause.code;
  if (error.cause instanceof z.ZodError) return 'invalid_query';
  if (error.code === 'INTERNAL_SERVER_ERROR') return 'internal_error';
  return error.code.toLowerCase();
}

const STATUS_CODES: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
};

function toTrpcError(e: unknown): unknown {
  if (!(e instanceof ApiError)) return e;
  return new TRPCError({ code: STATUS_CODES[e.statusCode] ?? 'INTERNAL_SERVER_ERROR', message: e.message, cause: e });
}

export interface TrpcDeps {
  auth: Authenticator;
  rateLimiter: RateLimiter;
  runs: RunRepo;
  tests: Pick<TestRouteDeps, 'tests' | 'identities' | 'codeowners'>;
  health: ProjectHealthDeps;
  rca: RcaRepo;
  /** Signs artifact download URLs, as the REST routes do; null: refs without URLs. */
  artifacts: ArtifactSigner | null;
}

export function createAppRouter(d: TrpcDeps) {
  const read = t.procedure.use(async ({ ctx, next }) => {
    let principal: TokenPrincipal;
    try {
      principal = await ctx.principal();
      requireAnyScope(principal, ['read']);
      const wait = d.rateLimiter.hit(principal.projectId);
      if (wait > 0) throw errors.rateLimited(wait);
    } catch (e) {
      throw toTrpcError(e);
    }
    const result = await next({ ctx: { projectId: principal.projectId } });
    // The shared handlers throw ApiErrors (404 …): give them their tRPC code instead of a 500.
    if (!result.ok && result.error.cause instanceof ApiError) throw toTrpcError(result.error.cause);
    return result;
  });
  const tests = { ...d.tests, artifacts: d.artifacts };

  return t.router({
    runs: {
      list: read.input(PROCEDURES['runs.list'].input).query(({ ctx, input }) => listRuns(d.runs, ctx.projectId, input)),
    },
    run: {
      get: read.input(PROCEDURES['run.get'].input).query(({ ctx, input }) => getRun(d.runs, ctx.projectId, input.runId, d.artifacts)),
    },
    test: {
      get: read.input(PROCEDURES['test.get'].input).query(({ ctx, input }) => testPage(tests, ctx.projectId, input.testIdentityId, input.historyLimit)),
    },
    flaky: {
      board: read.input(PROCEDURES['flaky.board'].input).query(({ ctx, input }) => flakyBoard(tests, ctx.projectId, input)),
    },
    rca: {
      get: read.input(PROCEDURES['rca.get'].input).query(({ ctx, input }) => rcaForExecution(d.rca, ctx.projectId, input.executionId)),
    },
    health: {
      metrics: read.input(PROCEDURES['health.metrics'].input).query(({ ctx, input }) => projectHealth(d.health, ctx.projectId, input.days, input.owner, Date.now())),
    },
  });
}

/** The router's type, for `createTRPCClient<AppRouter>` in dashboards and tests. */
export type AppRouter = ReturnType<typeof createAppRouter>;

/** Serves the router at /trpc, in its own fastify context (the adapter parses bodies itself). */
export async function registerTrpc(fastify: FastifyInstance, router: AppRouter, auth: Authenticator): Promise<void> {
  const trpcOptions: FastifyTRPCPluginOptions<AppRouter>['trpcOptions'] = {
    router,
    allowMethodOverride: true, // docs/contract.md §6: queries also answer POST with a JSON body
    maxBatchSize: TRPC_MAX_BATCH,
    createContext({ req }: CreateFastifyContextOptions): TrpcContext {
      let principal: Promise<TokenPrincipal> | undefined;
      return { principal: () => (principal ??= auth.authenticate(req.headers.authorization)) };
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
