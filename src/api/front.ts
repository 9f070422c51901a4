// The HTTP side every serving process opens (src/main/process-parts.ts):
// self-telemetry (GET /metrics, the OTLP export) and the app whose requests it counts.
import type { Logger } from 'pino';
import type { ServerSettings } from '../config/daemon-env.js';
import type { PipelineGraph } from '../pipeline/graph.js';
import type { QueueStats } from '../queue/types.js';
import { executionsExporterIds } from '../telemetry/collector-metrics.js';
import { SelfTelemetry } from '../telemetry/self-telemetry.js';
import { buildApp, type App } from './app.js';
import type { RouteDeps } from './route.js';

export async function openFront(opts: {
  settings: ServerSettings;
  logger: Logger;
  deps: RouteDeps;
  /** The queue's counters, read at collection. */
  queueStats: () => QueueStats;
  graph: PipelineGraph;
  /** The exporters whose queue backlog /metrics reports; default the graph's (a reload updates the daemon's list in place). */
  queueExporters?: string[];
  /** Besides self-telemetry: who else counts each request (the daemon's pipeline page). */
  observe?: (r: { method: string; route: string; status: number; durationMs: number }) => void;
}): Promise<{ telemetry: SelfTelemetry; app: App }> {
  const { settings, logger } = opts;
  const telemetry = await SelfTelemetry.create({
    endpoint: settings.selfOtelEndpoint,
    intervalMs: settings.selfOtelIntervalMs,
    logger: logger.child({ component: 'self-telemetry' }),
    queue: opts.queueStats,
    queueExporters: opts.queueExporters ?? executionsExporterIds(opts.graph),
    queueCapacity: settings.queue.maxDepth,
  });
  const app = buildApp({
    logger,
    deps: opts.deps,
    door: settings.door,
    logRequests: settings.logRequests,
    observe: (r) => {
      telemetry.recordRequest(r);
      opts.observe?.(r);
    },
  });
  return { telemetry, app };
}
