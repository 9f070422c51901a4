// What both composition roots (daemon.ts, agent.ts) open to accept test runs: the durable queue
// (under the data dir, or on NATS JetStream with SERVICE_QUEUE_URL), the storage guard in front of
// it, the ingest service the receivers hand batches to (all three from src/ingest but the queue),
// and the door checks for receivers that serve their own listener (OTLP/gRPC), wired to the API's
// authenticator and rate limiter. (An ingest-only process opens its own: src/main/ingest-process.ts.)
import path from 'node:path';
import type { Logger } from 'pino';
import { IngestService } from '../ingest/service.js';
import { StorageGuard } from '../ingest/storage-guard.js';
import type { ServerSettings } from '../config/daemon-env.js';
import type { NatsConnection } from 'nats';
import { EmbeddedQueue } from '../queue/embedded.js';
import type { Queue, RawLeaseSource } from '../queue/types.js';

export interface Intake {
  /** Either backend hands leases to the pipeline thread as bytes (RawLeaseSource). */
  queue: Queue & RawLeaseSource;
  /** The on-disk queue when it is the one in use. */
  embedded?: EmbeddedQueue;
  /** The process's NATS connection when the queue is on JetStream (the token snapshot shares it). */
  nats?: NatsConnection;
  storage: StorageGuard;
  ingest: IngestService;
  /** Why the process is not ready now (GET /ready), or null: the queue server is reachable. */
  unreadiness(): string | null;
  /** Closes the queue (and the NATS connection). */
  close(): Promise<void>;
}

export async function openIntake(settings: ServerSettings, logger: Logger): Promise<Intake> {
  if (settings.queue.url !== undefined) return openNatsIntake(settings, settings.queue.url, logger);
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
  return { queue, embedded: queue, storage, ingest: new IngestService(queue, settings.queue.maxDepth, storage), unreadiness: () => null, close: () => queue.close() };
}

/**
 * The queue on NATS JetStream (loaded only then): this process consumes its share of the
 * partitions. The storage guard still watches the data dir's disk (the worker's chDB writes there);
 * the stream's own limits answer for the queue's room.
 */
async function openNatsIntake(settings: ServerSettings, url: string, logger: Logger): Promise<Intake> {
  const { connectNats, natsUnreadiness, openNatsQueue } = await import('../queue/nats/connect.js');
  const nats = await connectNats(url, `flakehouse-${settings.role}`, logger, settings.queue.connectTimeoutMs);
  let queue;
  try {
    queue = await openNatsQueue(settings, nats, true, logger);
  } catch (err) {
    await nats.close();
    throw err;
  }
  const storage = new StorageGuard({
    dir: settings.dataDir,
    minFreeBytes: settings.minFreeBytes,
    logger: logger.child({ component: 'storage' }),
  });
  const q = queue;
  return {
    queue,
    nats,
    storage,
    ingest: new IngestService(queue, settings.queue.maxDepth, storage),
    unreadiness: () => natsUnreadiness(nats),
    async close() {
      await q.close();
      await nats.drain().catch(() => undefined);
    },
  };
}

// The door checks for receivers with their own listener, wired to the API's authenticator.
export { receiverWiring } from '../api/ingest-door.js';
