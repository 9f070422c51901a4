// `routing` connector, after the Collector's routing connector: the exporter end of one executions
// pipeline and the receiver of others; each run of a lease goes on to the pipelines of the first
// route it matches (src/domain/routing.ts), else to `default_pipelines`. The routed pipelines run
// inside the same lease (src/pipeline/lease-tree.ts): their processors before the lease's plan is
// frozen, their exporters before it is acked, so routing keeps exactly-once.
import { z } from 'zod';
import { CI_PROVIDERS, TRIGGERS } from '../../client/src/contract/batch.js';
import { patternProblem, compileTextPattern } from '../domain/patterns.js';
import { compileRoutes, routeTargets, type RoutingConfig } from '../domain/routing.js';
import type { ConnectorFactory } from '../pipeline/component.js';

const textPattern = z
  .string()
  .min(1)
  .superRefine((p, ctx) => {
    const problem = patternProblem(p, compileTextPattern);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

// One pattern, or a list of them (any may match), as docs/pipeline.md shows: `branch: [main, "release/*"]`.
const patterns = z.union([textPattern, z.array(textPattern).min(1)], { error: 'a pattern or a non-empty list of patterns' });

const match = z
  .object({
    project: patterns.optional(),
    source: z.array(z.enum(['native', 'junit', 'otlp'])).min(1).optional(),
    branch: patterns.optional(),
    repository: patterns.optional(),
    ciProvider: z.array(z.enum(CI_PROVIDERS)).min(1).optional(),
    trigger: z.array(z.enum(TRIGGERS)).min(1).optional(),
    attributes: z.record(z.string().min(1), textPattern).optional(),
  })
  .strict()
  // An empty match would take every run: that is what default_pipelines is for.
  .refine((m) => Object.keys(m).length > 0, { message: 'a match needs at least one field (runs no route matches go to default_pipelines)' });

const pipelineList = z.array(z.string().min(1)).min(1);

export const routingConfigSchema: z.ZodType<RoutingConfig> = z
  .object({
    default_pipelines: pipelineList,
    table: z.array(z.object({ match, pipelines: pipelineList }).strict()).default([]),
  })
  .strict();

export const routingConnectorFactory: ConnectorFactory<RoutingConfig> = {
  kind: 'connector',
  type: 'routing',
  needsStore: false,
  description: 'sends each run of an executions pipeline on to other executions pipelines, by project, source, branch, CI or attribute',
  from: 'executions',
  to: 'executions',
  configSchema: routingConfigSchema,
  requires: ['runs'],
  routesTo: routeTargets,
  createRouter: compileRoutes,
};
