// POST /v1/splits: the route of the use case src/usecases/test-splits.ts.
import { splitPlan, splitRequestSchema, splitResponseSchema, type SplitDeps } from '../../usecases/test-splits.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export function splitRoutes(d: SplitDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/splits',
      summary: "The plan of a build's test shards, balanced by the files' recent durations; the first call of a build stores it, later ones read it",
      tags: ['splits'],
      auth: { kind: 'token', anyOf: ['ingest'] },
      body: splitRequestSchema,
      response: splitResponseSchema,
      handler: ({ body, principal }) => splitPlan(d, principal!.projectId, body),
    }),
  ];
}
