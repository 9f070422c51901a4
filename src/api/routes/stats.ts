// GET /v1/admin/stats: queue depth, dead jobs and worker counters, for operators and benchmarks.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { z } from 'zod';
import type { PipelineHandle } from '../../pipeline/runtime.js';
import type { Queue } from '../../queue/types.js';
import { defineRoute } from '../route.js';

export function statsRoute(queue: Queue, runtime: PipelineHandle) {
  // Event-loop delay is what an ingest ack waits behind: worth watching next to the queue depth.
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  return defineRoute({
    method: 'GET',
    url: '/v1/admin/stats',
    summary: 'Queue and worker counters of this process',
    tags: ['admin'],
    auth: { kind: 'admin' },
    response: z.object({
      queue: z.object({ pending: z.number(), inflight: z.number(), dead: z.number(), delayed: z.number() }),
      worker: z.object({
        stageMs: z.record(z.string(), z.number()),
        leases: z.number(),
        jobs: z.number(),
        executions: z.number(),
        failures: z.number(),
        eventsDelivered: z.number(),
        eventFailures: z.number(),
      }),
      memory: z.object({ rss: z.number(), heapUsed: z.number() }),
      eventLoopDelayMs: z.object({ p50: z.number(), p99: z.number(), max: z.number() }),
    }),
    async handler() {
      const m = process.memoryUsage();
      // The histogram records whole timer intervals; the delay is what exceeds the 10 ms resolution.
      const ms = (ns: number): number => Math.max(0, Math.round(ns / 1e4) / 100 - 10);
      const eventLoopDelayMs = { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) };
      return { queue: queue.stats(), worker: { ...runtime.stats }, memory: { rss: m.rss, heapUsed: m.heapUsed }, eventLoopDelayMs };
    },
  });
}
