// GET /v1/health: project health over a window (docs/contract.md §6, §10). What it answers is
// src/usecases/project-health.ts, which the health page's procedure calls too.
import { healthQuerySchema, projectHealth, projectHealthSchema, type ProjectHealthDeps } from '../../usecases/project-health.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export function projectHealthRoutes(d: ProjectHealthDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/health',
      summary: 'Project health: flaky MTTR, introduced vs resolved, quarantine backlog, reliability and cost',
      tags: ['health'],
      auth: { kind: 'token', anyOf: ['read'] },
      query: healthQuerySchema,
      response: projectHealthSchema,
      handler: ({ query, principal }) => projectHealth(d, principal!.projectId, query.days, query.owner, Date.now()),
    }),
  ];
}
