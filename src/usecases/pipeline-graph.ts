// The operators' pipeline page (the `pipeline.graph` procedure): the running pipeline file as
// receivers → processors → exporters, with what /v1/admin/stats and /metrics know of it
// (per-component time, worker counters, queue depth, processing lag, dead jobs).
import type { PipelineGraph } from '../pipeline/graph.js';
import type { PipelineHandle } from '../pipeline/runtime.js';
import type { Queue } from '../queue/types.js';
import type { ProjectRepo } from '../store/projects.js';

const DEAD_SHOWN = 20;

export interface PipelineGraphDeps {
  graph: PipelineGraph;
  runtime: PipelineHandle;
  queue: Pick<Queue, 'stats' | 'depth' | 'deadJobs'>;
  /** Answers per route since start (the API's request counter). */
  requests: { get(method: string, route: string): { requests: number; clientErrors: number; serverErrors: number } };
  projects: Pick<ProjectRepo, 'list'>;
  /** The ingest routes (the receivers' side of the page). */
  ingestRoutes: () => readonly { method: string; url: string }[];
}

export async function pipelineGraph(d: PipelineGraphDeps) {
  const { graph, runtime, queue, requests } = d;
  const stats = runtime.stats;
  const components = [...graph.components.entries()].map(([key, c]) => ({
    key,
    id: c.id,
    type: c.type,
    kind: c.kind,
    /** Milliseconds the worker spent in this component since start (receivers: none, they answer HTTP). */
    busyMs: Math.round(stats.stageMs[c.id] ?? 0),
  }));
  const slugs = new Map((await d.projects.list()).map((x) => [x.id, x.slug]));
  const dead = (await queue.deadJobs(DEAD_SHOWN)).map((j) => ({
    id: j.job.id,
    receiptId: j.job.receiptId,
    projectSlug: slugs.get(j.job.projectId) ?? null,
    source: j.job.source,
    attempts: j.job.attempts,
    lastError: j.error,
    diedAt: new Date(j.diedAt).toISOString(),
  }));
  const q = queue.stats();
  // The receivers' side: answers of the ingest routes (the route table's `ingest` tag) since start.
  const ingestRoutes = d.ingestRoutes().map((r) => ({ method: r.method, url: r.url, ...requests.get(r.method, r.url) }));
  return {
    source: graph.source,
    pipelines: graph.pipelines.map((x) => ({ id: x.id, signal: x.signal, receivers: x.receivers, processors: x.processors, exporters: x.exporters })),
    components,
    worker: {
      leases: stats.leases,
      jobs: stats.jobs,
      executions: stats.executions,
      failures: stats.failures,
      eventsDelivered: stats.eventsDelivered,
      eventFailures: stats.eventFailures,
      stageMs: Object.fromEntries(Object.entries(stats.stageMs).map(([k, v]) => [k, Math.round(v)])),
    },
    ingest: ingestRoutes,
    queue: { ...q, depth: queue.depth() },
    lag: {
      count: stats.lag.count,
      lastMs: stats.lag.count > 0 ? stats.lag.lastMs : null,
      meanMs: stats.lag.count > 0 ? Math.round(stats.lag.sumMs / stats.lag.count) : null,
      maxMs: stats.lag.count > 0 ? stats.lag.maxMs : null,
    },
    deadJobs: { count: q.dead, newest: dead },
  };
}
