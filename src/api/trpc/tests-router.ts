// Procedures of the flaky board, the test page and the execution page.
import { z } from 'zod';
import { artifactViews } from '../../artifacts/links.js';
import { UUID_RE } from '../../domain/ids.js';
import { effectiveQuarantine } from '../../domain/quarantine.js';
import { toIso } from '../../domain/time.js';
import { ClusterRepo } from '../../store/clusters.js';
import { ExecutionRepo } from '../../store/executions.js';
import { QuarantineLogRepo } from '../../store/quarantine-log.js';
import { errors } from '../../errors.js';
import { flakyBoard } from '../../usecases/flaky-board.js';
import { testPage } from '../../usecases/test-page.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';
import { restHandler } from './rest-handler.js';

const quarantineAnswer = z.object({ quarantined: z.boolean(), override: z.enum(['quarantined', 'released']).nullable(), changed: z.boolean() });

export function testsRouter(d: TrpcDeps, p: ProcedureKinds) {
  const tests = { ...d.tests, artifacts: d.artifacts };
  const boardDeps = { ...d.tests, cost: async (projectId: string) => (await d.projectConfigs.get(projectId)).config.cost };
  const quarantine = restHandler(() => d.routes(), 'POST', '/v1/tests/:testIdentityId/quarantine', quarantineAnswer);

  /** The identity's id when it is this project's test; 404 otherwise (as the test page). */
  async function knownTest(projectId: string, testIdentityId: string): Promise<string> {
    if (!UUID_RE.test(testIdentityId)) throw errors.notFound('test not found');
    const id = testIdentityId.toLowerCase();
    if (!(await d.tests.identities.get(projectId, id))) throw errors.notFound('test not found');
    return id;
  }

  return {
    flaky: {
      // The dashboard's board: every page with its impact, in the project's cost currency.
      board: p.read.input(PROCEDURES['flaky.board'].input).query(({ ctx, input }) => flakyBoard(boardDeps, ctx.projectId, input, { impact: true })),
    },
    test: {
      get: p.read.input(PROCEDURES['test.get'].input).query(({ ctx, input }) => testPage(tests, ctx.projectId, input.testIdentityId, input.historyLimit)),
      history: p.read.input(PROCEDURES['test.history'].input).query(async ({ ctx, input }) => {
        const id = await knownTest(ctx.projectId, input.testIdentityId);
        const rows = await d.tests.tests.history(ctx.projectId, id, input.limit);
        return {
          testIdentityId: id,
          items: rows.map((r) => ({
            executionId: r.executionId,
            runId: r.runId,
            status: r.status,
            attempt: r.attempt,
            startedAt: r.startedAt,
            commitSha: r.commitSha,
            branch: r.branch,
            durationMs: r.durationMs,
            errorMessage: r.errorMessage,
            hasRca: r.hasRca,
          })),
        };
      }),
      quarantineLog: p.read.input(PROCEDURES['test.quarantineLog'].input).query(async ({ ctx, input }) => {
        const id = await knownTest(ctx.projectId, input.testIdentityId);
        const [state, overrides, events] = await Promise.all([
          d.tests.tests.pageState(ctx.projectId, id),
          d.tests.tests.overrides(ctx.projectId, [id]),
          new QuarantineLogRepo(d.store).events(ctx.projectId, id, input.limit),
        ]);
        const override = overrides.get(id) ?? null;
        const eff = effectiveQuarantine(state?.auto ?? null, override);
        return {
          testIdentityId: id,
          quarantined: eff.quarantined,
          reason: eff.reason,
          /** The scorer's own state (what `auto` hands back to). */
          auto: { quarantined: state?.auto.autoQuarantined ?? false, reason: state?.auto.reason || null, since: state?.auto.quarantinedAt ? toIso(state.auto.quarantinedAt) : null },
          /** A person's latest decision, with its reason. */
          decision: override ? { override: override.override, reason: override.reason || null, decidedAt: toIso(override.decidedAt) } : null,
          events,
        };
      }),
      clusters: p.read.input(PROCEDURES['test.clusters'].input).query(async ({ ctx, input }) => {
        const id = await knownTest(ctx.projectId, input.testIdentityId);
        return { items: await new ClusterRepo(d.store).list(ctx.projectId, { testId: id, days: input.days, limit: 100, now: Date.now() }) };
      }),
      quarantine: p.quarantine
        .input(PROCEDURES['test.quarantine'].input)
        .mutation(({ ctx, input }) => quarantine(ctx.principal, { params: { testIdentityId: input.testIdentityId }, body: { decision: 'quarantined', reason: input.reason } })),
      release: p.quarantine
        .input(PROCEDURES['test.release'].input)
        .mutation(({ ctx, input }) => quarantine(ctx.principal, { params: { testIdentityId: input.testIdentityId }, body: { decision: 'released', reason: input.reason } })),
    },
    execution: {
      get: p.read.input(PROCEDURES['execution.get'].input).query(async ({ ctx, input }) => {
        const e = UUID_RE.test(input.executionId) ? await new ExecutionRepo(d.store).get(ctx.projectId, input.executionId.toLowerCase()) : null;
        if (!e) throw errors.notFound('execution not found');
        const [artifacts, rca] = await Promise.all([artifactViews(ctx.projectId, e.artifacts, d.artifacts), d.rca.get(ctx.projectId, e.id)]);
        return { ...e, artifacts, rca };
      }),
    },
    clusters: {
      list: p.read
        .input(PROCEDURES['clusters.list'].input)
        .query(async ({ ctx, input }) => ({ items: await new ClusterRepo(d.store).list(ctx.projectId, { days: input.days, limit: input.limit, now: Date.now() }) })),
    },
  };
}
