// pipeline.graph: the operators' page (src/usecases/pipeline-graph.ts).
import { pipelineGraph } from '../../usecases/pipeline-graph.js';
import type { ProcedureKinds } from './core.js';
import type { TrpcDeps } from './deps.js';
import { PROCEDURES } from './procedures.js';

export function pipelineRouter(d: TrpcDeps, p: ProcedureKinds) {
  return {
    pipeline: {
      graph: p.admin.input(PROCEDURES['pipeline.graph'].input).query(() => pipelineGraph({ ...d.pipeline, projects: d.useCases.projects, ingestRoutes: d.ingestRoutes })),
    },
  };
}
