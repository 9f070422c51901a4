// GET /v1/executions/:executionId/rca (docs/contract.md §6): the execution's root-cause report, or
// `null` while it has none. An execution outside the token's project is unknown: 404, as for runs
// and tests, so another project's ids cannot be probed.
import { z } from 'zod';
import { rcaForExecution, rcaReportSchema } from '../../usecases/execution-rca.js';
import type { RcaRepo } from '../../store/rca.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

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
