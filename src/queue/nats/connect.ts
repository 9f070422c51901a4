// One connection to NATS per process, shared by the queue, the token snapshot and (on a worker) its
// publisher: SERVICE_QUEUE_URL, reconnecting for ever (a NATS restart must not end a daemon; while
// it is away, enqueue fails and the door answers 503).
import { connect, Events, type KV, type NatsConnection } from 'nats';
import type { Logger } from 'pino';
import type { ServerSettings } from '../../config/daemon-env.js';
import { NatsQueue } from './queue.js';
import { openKv } from './streams.js';
import { snapshotBucketName } from '../../tokens/snapshot.js';

export async function connectNats(url: string, name: string, logger: Logger): Promise<NatsConnection> {
  const servers = url.split(',').map((s) => s.trim());
  const nc = await connect({ servers, name, maxReconnectAttempts: -1, reconnectTimeWait: 500, waitOnFirstConnect: false });
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === Events.Disconnect || s.type === Events.Error) logger.warn({ nats: s.type, data: JSON.stringify(s.data) }, 'nats: connection lost, reconnecting');
      else if (s.type === Events.Reconnect) logger.info({ nats: s.type, data: JSON.stringify(s.data) }, 'nats: reconnected');
    }
  })();
  return nc;
}

/** The project tokens' snapshot bucket (src/tokens/snapshot.ts), created by whichever process comes first. */
export function openTokenBucket(connection: NatsConnection, prefix: string): Promise<KV> {
  return openKv(connection.jetstream(), snapshotBucketName(prefix), { history: 1 });
}

/** The queue on JetStream for this process: `consume` false in an ingest process (it enqueues only). */
export function openNatsQueue(settings: ServerSettings, connection: NatsConnection, consume: boolean, logger: Logger): Promise<NatsQueue> {
  return NatsQueue.open({
    connection,
    prefix: settings.queue.prefix,
    partitions: settings.queue.partitions,
    visibilityMs: settings.queue.visibilityMs,
    maxAttempts: settings.queue.maxAttempts,
    baseBackoffMs: settings.queue.retryBackoffMs,
    leaseTtlMs: settings.queue.leaseTtlMs,
    ...(settings.queue.maxBytes > 0 ? { maxBytes: settings.queue.maxBytes } : {}),
    consume,
    logger: logger.child({ component: 'queue' }),
  });
}
