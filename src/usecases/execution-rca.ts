// An execution's root-cause report (GET /v1/executions/:executionId/rca, the `rca.get` procedure),
// or null while it has none. An execution outside the caller's project is unknown: 404, as for runs
// and tests, so another project's ids cannot be probed.
import { z } from 'zod';
import { UUID_RE } from '../../client/src/contract/ids.js';
import type { RcaReport, RcaRepo } from '../store/rca.js';
import { errors } from '../errors/catalogue.js';

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

