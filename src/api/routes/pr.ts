// Pull-request routes for CI: GET /v1/runs/summary (the PR comment) and GET /v1/runs/gate (the
// merge gate) (docs/contract.md §6). What they answer is src/usecases/pr-commit.ts, which the
// dashboard's procedures call too.
import { gateQuerySchema, gateResponseSchema, summaryQuerySchema, summaryResponseSchema } from '../../../client/src/contract/pr-schemas.js';
import { commitGate, commitSummary, type PrCommitDeps } from '../../usecases/pr-commit.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export function prRoutes(d: PrCommitDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/runs/summary',
      summary: 'Failing and flaky tests of a commit, merged over its shards and reruns, with a PR comment',
      tags: ['runs'],
      auth: { kind: 'token', anyOf: ['ingest', 'read'] },
      query: summaryQuerySchema,
      response: summaryResponseSchema,
      handler: ({ query, principal }) => commitSummary(d, principal!.projectId, query.commitSha),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/runs/gate',
      summary: 'Merge gate: failures of a commit that are new, already broken on the base branch, known flakes or quarantined',
      tags: ['runs'],
      auth: { kind: 'token', anyOf: ['ingest', 'read'] },
      query: gateQuerySchema,
      response: gateResponseSchema,
      handler: ({ query, principal }) => commitGate(d, principal!.projectId, query),
    }),
  ];
}
