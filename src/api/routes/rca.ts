// GET /v1/executions/:executionId/rca (docs/contract.md §6): the execution's root-cause report, or
// `null` while it has none. An execution outside the token's project is unknown: 404, as for runs
// and tests, so another project's ids cannot be probed.
import { z } from 'zod';
import { UUID_RE } from '../../domain/ids.js';
import type { RcaReport, RcaRepo } from '../../store/rca.js';
import { errors } from '../../errors.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export const rcaReportSchema = z
  .object({
    id: z.string(),
    executionId: z.string(),
    signatureId: z.string().nullable(),
    clusterId: z.string().nullable(),
    summary: z.string(),
    likelyCause: z.string(),
    suggestedAction: z.string(),
    confidence: z.number().min(0).max(1),
    similarPast: z.array(z.object({ rcaId: z.string(), executionId: z.string(), summary: z.string(), createdAt: z.string() })),
    llmModel: z.string(),
    tokenCost: z.number(),
    createdAt: z.string(),
  })
  .meta({ id: 'RcaReport' });

/** The report, null when there is none, or 404 when the execution is not this project's. */
export async function rcaForExecution(rca: RcaRepo, projectId: string, executionId: string): Promise<RcaReport | null> {
  if (!UUID_RE.test(executionId)) throw errors.notFound('execution not found');
  const id = executionId.toLowerCase();
  if (!(await rca.executionExists(projectId, id))) throw errors.notFound('execution not found');
  return rca.get(projectId, id);
}

export function rcaRoutes(rca: RcaRepo): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/executions/:executionId/rca',
      summary: "An execution's root-cause report, or null when there is none",
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['read'] },
      params: z.object({ executionId: z.string() }),
      response: rcaReportSchema.nullable(),
      async handler({ params, principal }) {
        return rcaForExecution(rca, principal!.projectId, params.executionId);
      },
    }),
  ];
}
