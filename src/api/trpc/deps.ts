// What the procedures need from the daemon: the use cases' dependencies, built once by the
// composition root (src/main/api-deps.ts) and shared with the REST routes, plus what only the
// procedure API has (the limiter it checks per call, the pipeline page's view).
import type { PipelineGraph } from '../../pipeline/graph.js';
import type { PipelineHandle } from '../../pipeline/runtime.js';
import type { Queue } from '../../queue/types.js';
import type { UseCaseDeps } from '../../usecases/deps.js';
import type { RateLimiter } from '../rate-limit.js';
import type { RequestCounts } from '../request-counts.js';
import type { AnyRouteDef } from '../route.js';

export interface TrpcDeps {
  useCases: UseCaseDeps;
  rateLimiter: RateLimiter;
  /** The ingest routes (the pipeline page's receivers' side). */
  ingestRoutes: () => readonly Pick<AnyRouteDef, 'method' | 'url'>[];
  pipeline: { graph: PipelineGraph; runtime: PipelineHandle; queue: Pick<Queue, 'stats' | 'depth' | 'deadJobs'>; requests: RequestCounts };
}
