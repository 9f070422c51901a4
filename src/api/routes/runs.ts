// GET /v1/runs and GET /v1/runs/:runId (docs/contract.md §6). What they answer is
// src/usecases/runs.ts, which the runs pages' procedures call too.
import { z } from 'zod';
import { UUID_RE } from '../../../client/src/contract/ids.js';
import type { ArtifactSigner } from '../../artifacts/s3.js';
import type { RunRepo } from '../../store/runs.js';
import { getRun, listRuns, runDetailSchema, runListSchema, runsQuerySchema } from '../../usecases/runs.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export function runRoutes(runs: RunRepo, signer: ArtifactSigner | null = null): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/runs',
      summary: 'List runs, newest first',
      tags: ['runs'],
      auth: { kind: 'token', anyOf: ['read'] },
      query: runsQuerySchema,
      response: runListSchema,
      handler: ({ query, principal }) => listRuns(runs, principal!.projectId, query),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/runs/:runId',
      summary: 'One run with its executions',
      tags: ['runs'],
      auth: { kind: 'token', anyOf: ['read'] },
      params: z.object({ runId: z.string().regex(UUID_RE) }),
      paramsNotFound: true,
      response: runDetailSchema,
      handler: ({ params, principal }) => getRun(runs, principal!.projectId, params.runId, signer),
    }),
  ];
}
