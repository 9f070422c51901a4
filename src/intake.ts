// What both composition roots (daemon.ts, agent.ts) open to accept test runs: the durable queue
// under the data dir, the storage guard in front of it, the ingest service the receivers hand
// batches to, and the door checks for receivers that serve their own listener (OTLP/gRPC): the
// same token, scope, rate limit and queue slot as the HTTP ingest routes' onRequest (src/api/route.ts).
import path from 'node:path';
import type { Logger } from 'pino';
import { requireAnyScope } from './api/auth.js';
import { errors } from './api/errors.js';
import { IngestService } from './api/ingest-service.js';
import type { RateLimiter } from './api/rate-limit.js';
import { StorageGuard } from './api/storage-guard.js';
import type { ServerSettings } from './config/daemon-env.js';
import type { IngestDoor } from './pipeline/component.js';
import { EmbeddedQueue } from './queue/embedded.js';

export interface Intake {
  queue: EmbeddedQueue;
  storage: StorageGuard;
  ingest: IngestService;
}

export function openIntake(settings: ServerSettings, logger: Logger): Intake {
  const queue = EmbeddedQueue.open({
    path: path.join(settings.dataDir, 'queue'),
    visibilityMs: settings.queue.visibilityMs,
    maxAttempts: settings.queue.maxAttempts,
    baseBackoffMs: settings.queue.retryBackoffMs,
    maxBytes: settings.queue.maxBytes,
    logger: logger.child({ component: 'queue' }),
  });
  const recovered = queue.stats();
  if (recovered.pending > 0) logger.info({ pending: recovered.pending }, 'queue recovered jobs from disk');
  const storage = new StorageGuard({
    dir: settings.dataDir,
    minFreeBytes: settings.minFreeBytes,
    logger: logger.child({ component: 'storage' }),
    queueHasRoom: () => queue.hasRoom(),
  });
  return { queue, storage, ingest: new IngestService(queue, settings.queue.maxDepth, storage) };
}

/** Who a token is (the API's or the agent's authenticator says). */
type Principal = Parameters<typeof requireAnyScope>[0];

/** The ingest routes' door checks, for receivers with their own listener. */
export function ingestDoor(
  auth: { authenticate(header: string | undefined): Promise<Principal> },
  rateLimiter: RateLimiter,
  ingest: IngestService,
): IngestDoor {
  return {
    async authenticate(authorization) {
      const principal = await auth.authenticate(authorization);
      requireAnyScope(principal, ['ingest']);
      const wait = rateLimiter.hit(principal.projectId);
      if (wait > 0) throw errors.rateLimited(wait);
      return principal;
    },
    admit: () => ingest.admit(),
  };
}
