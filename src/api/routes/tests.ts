// Tests: GET /v1/tests/:id, GET /v1/flaky, POST /v1/tests/:id/quarantine, PUT /v1/codeowners.
// What they answer is src/usecases (flaky-board.ts, test-page.ts, quarantine-decision.ts), which the
// dashboard's procedures call too.
import { z } from 'zod';
import { UUID_RE } from '../../../client/src/contract/ids.js';
import type { CodeownersRepo } from '../../store/codeowners.js';
import { errors } from '../../errors/catalogue.js';
import { flakyBoard } from '../../usecases/flaky-board.js';
import { quarantineTest } from '../../usecases/quarantine-decision.js';
import { testPage } from '../../usecases/test-page.js';
import { bool, flakyBoardSchema, flakyQuerySchema, testDetailSchema, testQuerySchema } from '../../usecases/test-schemas.js';
import type { UseCaseDeps } from '../../usecases/deps.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

const testParams = z.object({ testIdentityId: z.string().regex(UUID_RE) });

/** The use cases' dependencies (src/usecases/deps.ts), and the codeowners file the upload replaces. */
export type TestRouteDeps = Pick<UseCaseDeps, 'board' | 'testPage' | 'decisions'> & { codeowners: Pick<CodeownersRepo, 'put'> };

export function testRoutes(d: TestRouteDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/flaky',
      summary: 'Scored tests, worst first',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['read'] },
      query: flakyQuerySchema,
      response: flakyBoardSchema,
      async handler({ query, principal }) {
        return flakyBoard(d.board, principal!.projectId, query);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/tests/:testIdentityId',
      summary: 'A test with its score, reason codes, stitch history and recent executions',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['read'] },
      params: testParams,
      paramsNotFound: true,
      query: testQuerySchema,
      response: testDetailSchema,
      async handler({ params, query, principal }) {
        return testPage(d.testPage, principal!.projectId, params.testIdentityId, query.historyLimit);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/tests/:testIdentityId/quarantine',
      summary: 'Quarantine, release, or hand a test back to the scorer',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['quarantine'] },
      params: testParams,
      paramsNotFound: true,
      body: z.object({ decision: z.enum(['quarantined', 'released', 'auto']), reason: z.string().max(200).optional() }),
      response: z.object({ quarantined: z.boolean(), override: z.enum(['quarantined', 'released']).nullable(), changed: z.boolean() }),
      handler: ({ params, body, principal }) => quarantineTest(d.decisions, principal!.projectId, params.testIdentityId, body.decision, body.reason),
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/codeowners',
      summary: 'Upload the CODEOWNERS file that attributes tests to owners',
      tags: ['tests'],
      auth: { kind: 'token', anyOf: ['ingest'] },
      query: z.object({ allowEmpty: bool.default(false) }),
      body: z.object({ content: z.string().max(200_000) }),
      response: z.object({ ok: z.literal(true) }),
      async handler({ query, body, principal }) {
        const content = body.content.trim();
        if (content.length > 200_000) throw errors.invalidBody('content exceeds 200,000 characters');
        // An empty upload is far more often a failed read on the client (a missing file piped
        // through jq) than a wish to drop every owner, so clearing has to be asked for by name.
        if (content.length === 0 && !query.allowEmpty) {
          throw errors.invalidPayload(
            [{ path: 'content', message: 'is empty' }],
            "content is empty: storing it would remove every owner from this project's tests; to clear the owners on purpose, send it with ?allowEmpty=true",
          );
        }
        await d.codeowners.put(principal!.projectId, content);
        return { ok: true as const };
      },
    }),
  ];
}
