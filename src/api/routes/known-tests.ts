// POST /v1/tests/known: the route of the use case src/usecases/known-tests.ts.
import { knownTestsOnBranch, knownTestsRequestSchema, knownTestsResponseSchema, type KnownTestsDeps } from '../../usecases/known-tests.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export function knownTestRoutes(d: KnownTestsDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/tests/known',
      summary: 'Which of these tests (by fingerprint) the server has seen on a branch: `flakehouse run --verify-new` re-runs the others',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['ingest', 'read'] },
      body: knownTestsRequestSchema,
      response: knownTestsResponseSchema,
      handler: ({ body, principal }) => knownTestsOnBranch(d, principal!.projectId, body),
    }),
  ];
}
