import { z } from 'zod';
import { defineRoute, type AnyRouteDef } from '../route.js';
import type { StorageGuard } from '../../ingest/storage-guard.js';

const storageStatusSchema = z
  .object({
    state: z.enum(['ok', 'full']),
    reason: z.string().optional(),
    since: z.string().optional(),
    freeBytes: z.number().optional(),
  })
  .meta({ id: 'StorageStatus' });

export function healthRoutes(storage?: StorageGuard): AnyRouteDef[] {
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
  ];
}
