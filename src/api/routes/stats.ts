// GET /v1/admin/stats: queue depth, dead jobs and worker counters, for operators and benchmarks.
import { z } from 'zod';
import type { PipelineRuntime } from '../../pipeline/runtime.js';
import type { Queue } from '../../queue/types.js';
import { defineRoute } from '../route.js';

export function statsRoute(queue: Queue, runtime: PipelineRuntime) {
  return defineRoute({
    method: 'GET',
    url: '/v1/admin/stats',
    summary: 'Queue and worker counters of this process',
    tags: ['admin'],
    auth: { kind: 'admin' },
    response: z.object({
      queue: z.object({ pending: z.number(), inflight: z.number(), dead: z.number(), delayed: z.number() }),
      worker: z.object({
        leases: z.number(),
        jobs: z.number(),
        executions: z.number(),
        failures: z.number(),
        eventsDelivered: z.number(),
        eventFailures: z.number(),
      }),
      memory: z.object({ rss: z.number(), heapUsed: z.number() }),
    }),
    async handler() {
      const m = process.memoryUsage();
      return { queue: queue.stats(), worker: { ...runtime.stats }, memory: { rss: m.rss, heapUsed: m.heapUsed } };
    },
  });
}
