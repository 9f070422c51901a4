// What /openapi.json says about each procedure (x-trpc) and the inputs the router validates with:
// one table, so the document and the router cannot drift. Inputs of procedures with a REST route
// run through that route's schema, so bounds, defaults and error paths are the same on both.
import { z } from 'zod';
import { RUN_STATUSES } from '../../../client/src/contract/batch.js';
import { projectSettingsPatchSchema } from '../../../client/src/contract/config/project-settings.js';
import { BOARD_SORTS } from '../../store/board.js';
import { SCOPES, type Scope } from '../../store/projects.js';
import { healthQuerySchema } from '../../usecases/project-health.js';
import { runsQuerySchema } from '../../usecases/runs.js';
import { flakyQuerySchema, testQuerySchema } from '../../usecases/test-schemas.js';
import { TEST_STATES } from '../../domain/score.js';

/** Absent input means "all defaults". */
function viaRest<T extends z.ZodType, R extends z.ZodType>(typed: T, rest: R) {
  return typed.transform((value, ctx): z.output<R> => {
    const r = rest.safeParse(value);
    if (r.success) return r.data;
    for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path, input: issue.input });
    return z.NEVER;
  });
}

export interface ProcedureDoc {
  type: 'query' | 'mutation';
  /** The scope a project token needs; `admin`: the admin token only; `signed-in`: any caller. */
  scope: Scope | 'admin' | 'signed-in';
  summary: string;
  /** The REST route answering with the same data, when there is one. */
  rest: string | null;
  input: z.ZodType;
}

const timestamp = z.union([z.string(), z.number()]);
const none = z.object({}).strict().optional();
const testId = z.string().min(1).max(100);
const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

const runsListInput = viaRest(
  z
    .object({
      branch: z.string().optional(),
      commitSha: z.string().optional(),
      prNumber: z.number().int().optional(),
      status: z.enum(RUN_STATUSES).optional(),
      since: timestamp.optional(),
      until: timestamp.optional(),
      cursor: z.string().optional(),
      limit: z.number().int().optional(),
    })
    .prefault({}),
  runsQuerySchema,
);
const testGetInput = viaRest(
  z.object({ testIdentityId: z.string(), historyLimit: z.number().int().optional() }),
  testQuerySchema.extend({ testIdentityId: z.string() }),
);
const flakyBoardInput = viaRest(
  z
    .object({
      limit: z.number().int().optional(),
      minScore: z.number().optional(),
      includeQuarantined: z.boolean().optional(),
      owner: z.string().optional(),
      suite: z.string().optional(),
      file: z.string().optional(),
      quarantined: z.boolean().optional(),
      state: z.enum(TEST_STATES).optional(),
      attention: z.boolean().optional(),
      branch: z.string().optional(),
      defaultBranch: z.boolean().optional(),
      days: z.number().int().optional(),
      sort: z.enum(BOARD_SORTS).optional(),
      offset: z.number().int().optional(),
      cursor: z.string().optional(),
    })
    .prefault({}),
  flakyQuerySchema,
);
const healthMetricsInput = viaRest(z.object({ days: z.number().int().optional(), owner: z.string().optional() }).prefault({}), healthQuerySchema);

const prOptions = { baseBranch: z.string().optional(), strictness: z.enum(['off', 'new', 'any']).optional() };
const prSummaryInput = z.union([
  z.object({ commitSha: z.string().min(1).max(40), ...prOptions }).strict(),
  z.object({ prNumber: z.number().int().min(1), ...prOptions }).strict(),
]);

export const PROCEDURES = {
  // The procedures SPEC.md names (docs/contract.md §6).
  'runs.list': { type: 'query', scope: 'read', summary: 'Runs, newest first, by cursor; filter by branch, commit, PR, status', rest: 'GET /v1/runs', input: runsListInput },
  'run.get': { type: 'query', scope: 'read', summary: 'One run with its executions', rest: 'GET /v1/runs/{runId}', input: z.object({ runId: z.string() }) },
  'test.get': { type: 'query', scope: 'read', summary: 'Score, reason codes, stitch history, recent executions', rest: 'GET /v1/tests/{testIdentityId}', input: testGetInput },
  'flaky.board': {
    type: 'query',
    scope: 'read',
    summary: 'Tests ranked by score (or another sort, impact among them), with each one\'s impact (failures caused, PRs blocked, CI minutes lost, cost), filtered by owner, suite, file, quarantine, state, needing attention, branch, days; paged by cursor',
    rest: 'GET /v1/flaky',
    input: flakyBoardInput,
  },
  'rca.get': { type: 'query', scope: 'read', summary: "An execution's root-cause report, or null", rest: 'GET /v1/executions/{executionId}/rca', input: z.object({ executionId: z.string() }) },
  'health.metrics': { type: 'query', scope: 'read', summary: 'Flaky MTTR, introduced vs resolved, quarantine backlog, cost', rest: 'GET /v1/health', input: healthMetricsInput },
  // The dashboard's (docs/dashboard.md).
  'session.me': { type: 'query', scope: 'signed-in', summary: 'Who is calling: project token (project, scopes) or admin', rest: 'GET /v1/session', input: none },
  'projects.list': { type: 'query', scope: 'admin', summary: 'Every project (the admin picks one with x-flakehouse-project)', rest: 'GET /v1/admin/projects', input: none },
  'test.history': {
    type: 'query',
    scope: 'read',
    summary: "A test's executions for its status strip, oldest first",
    rest: null,
    input: z.object({ testIdentityId: testId, limit: z.number().int().min(1).max(500).default(100) }),
  },
  'test.quarantineLog': {
    type: 'query',
    scope: 'read',
    summary: "A test's quarantine state, the latest decision with its reason, and its transitions over time",
    rest: null,
    input: z.object({ testIdentityId: testId, limit: z.number().int().min(1).max(1000).default(200) }),
  },
  'test.clusters': {
    type: 'query',
    scope: 'read',
    summary: "Error clusters of a test's failures, with counts and RCA",
    rest: null,
    input: z.object({ testIdentityId: testId, days: z.number().int().min(1).max(3650).default(90) }),
  },
  'test.quarantine': {
    type: 'mutation',
    scope: 'quarantine',
    summary: 'Quarantine a test, with a reason',
    rest: 'POST /v1/tests/{testIdentityId}/quarantine',
    input: z.object({ testIdentityId: testId, reason: z.string().max(200).optional() }),
  },
  'test.release': {
    type: 'mutation',
    scope: 'quarantine',
    summary: 'Release a test from quarantine, with a reason',
    rest: 'POST /v1/tests/{testIdentityId}/quarantine',
    input: z.object({ testIdentityId: testId, reason: z.string().max(200).optional() }),
  },
  'execution.get': {
    type: 'query',
    scope: 'read',
    summary: 'One execution: error, stack, attempts, artifacts (signed URLs), RCA',
    rest: null,
    input: z.object({ executionId: z.string().min(1).max(100) }),
  },
  'pr.summary': {
    type: 'query',
    scope: 'read',
    summary: "A commit's (or PR's latest commit's) summary and gate verdict, with the PR comments' markdown",
    rest: 'GET /v1/runs/summary',
    input: prSummaryInput,
  },
  'pr.commits': {
    type: 'query',
    scope: 'read',
    summary: "Every commit of a pull request, newest first, each with its gate verdict and its failed and flaky counts",
    rest: null,
    input: z.object({ prNumber: z.number().int().min(1), ...prOptions }).strict(),
  },
  'health.suites': {
    type: 'query',
    scope: 'read',
    summary: 'Suite health per UTC day from the daily rollups',
    rest: null,
    input: z
      .object({
        days: z.number().int().min(1).max(365).default(30),
        suite: z.string().min(1).max(500).optional(),
        /** One day (YYYY-MM-DD) instead of the last `days`. */
        day: z.string().regex(DAY_RE, 'expected YYYY-MM-DD').optional(),
      })
      .prefault({}),
  },
  'health.flakyTests': {
    type: 'query',
    scope: 'read',
    summary: 'Distinct tests with a flaky execution per UTC day, from the flaky_trends rollup (null on a day without executions)',
    rest: null,
    input: z.object({ days: z.number().int().min(1).max(365).default(30) }).prefault({}),
  },
  'flaky.slowed': {
    type: 'query',
    scope: 'read',
    summary: 'Of the given tests (a board page), those whose p50 duration regressed against the trailing baseline, with both medians',
    rest: null,
    input: z.object({ testIdentityIds: z.array(testId).max(200) }),
  },
  'test.trends': {
    type: 'query',
    scope: 'read',
    summary: "Where a test first flaked or broke (with the commit's GitHub link), and whether its p50 duration regressed against a trailing baseline",
    rest: null,
    input: z.object({ testIdentityId: testId }),
  },
  'clusters.list': {
    type: 'query',
    scope: 'read',
    summary: 'Error clusters by occurrences, with tests affected and RCA',
    rest: null,
    input: z.object({ days: z.number().int().min(1).max(3650).default(30), limit: z.number().int().min(1).max(500).default(50) }).prefault({}),
  },
  'settings.get': {
    type: 'query',
    scope: 'read',
    summary: "The project's effective policy, each key with its source (file, settings, env; env keys read-only)",
    rest: null,
    input: none,
  },
  'settings.update': {
    type: 'mutation',
    scope: 'admin',
    summary: "Change some of a project's settings (deep merge; null inherits again)",
    rest: 'PATCH /v1/admin/projects/{slug}/settings',
    input: z.object({ patch: projectSettingsPatchSchema }),
  },
  'channels.list': { type: 'query', scope: 'read', summary: 'Notification channels: environment, config (read-only) and settings ones', rest: null, input: none },
  'channels.sendTest': {
    type: 'mutation',
    scope: 'admin',
    summary: 'Send a test notification to one channel now, and say how it went',
    rest: null,
    input: z.object({ channelId: z.string().min(1).max(200) }),
  },
  'tokens.list': { type: 'query', scope: 'admin', summary: "The project's tokens (prefix, scopes, revoked), never the secret", rest: null, input: none },
  'tokens.create': {
    type: 'mutation',
    scope: 'admin',
    summary: 'Create a project token; the secret is in this answer only',
    rest: 'POST /v1/admin/projects/{slug}/tokens',
    input: z.object({ scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length) }),
  },
  'tokens.revoke': { type: 'mutation', scope: 'admin', summary: 'Revoke a token (its sessions end)', rest: 'DELETE /v1/admin/tokens/{id}', input: z.object({ tokenId: z.string().min(1).max(100) }) },
  'badges.get': { type: 'query', scope: 'read', summary: "The project's badge URLs and README snippets", rest: 'GET /v1/badges', input: none },
  'pipeline.graph': {
    type: 'query',
    scope: 'admin',
    summary: 'The running pipeline graph with per-component counters, queue depth, lag and dead jobs',
    rest: null,
    input: none,
  },
} as const satisfies Record<string, ProcedureDoc>;
