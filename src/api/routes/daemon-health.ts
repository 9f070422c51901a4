import { z } from 'zod';
import { defineRoute, type AnyRouteDef } from '../route.js';
import { errors } from '../../errors/catalogue.js';
import type { StorageGuard } from '../../ingest/storage-guard.js';

const storageStatusSchema = z
  .object({
    state: z.enum(['ok', 'full']),
    reason: z.string().optional(),
    since: z.string().optional(),
    freeBytes: z.number().optional(),
  })
  .meta({ id: 'StorageStatus' });

/**
 * `/health` is liveness (the process runs; never 503 for a condition a restart cannot cure);
 * `/ready` is readiness: 503 `not_ready` while the process cannot do its work, e.g. NATS is away,
 * so a load balancer sends to the others. `unreadiness` says why, or null when ready.
 */
export function healthRoutes(storage?: StorageGuard, unreadiness: () => string | null = () => null): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/health',
      // Liveness: 200 with the fixed fields even when storage is full. Restarting does not free a
      // disk (and a liveness probe answering 503 gets the process restarted in a loop), while reads
      // keep working; `storage` tells operators, and ingest answers 507 meanwhile.
      summary: 'Liveness probe; `storage.state` is `full` while ingest answers 507',
      tags: ['meta'],
      auth: { kind: 'none' },
      response: z.object({ status: z.literal('ok'), service: z.literal('api'), storage: storageStatusSchema.optional() }),
      async handler() {
        return { status: 'ok', service: 'api', ...(storage ? { storage: storage.status() } : {}) };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/ready',
      summary: 'Readiness probe: 503 `not_ready` while the process cannot do its work (its queue server is unreachable)',
      tags: ['meta'],
      auth: { kind: 'none' },
      response: z.object({ status: z.literal('ready'), service: z.literal('api') }),
      async handler() {
        const reason = unreadiness();
        if (reason !== null) throw errors.notReady(reason);
        return { status: 'ready' as const, service: 'api' as const };
      },
    }),
  ];
}
