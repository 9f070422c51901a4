// One connection to NATS per process, shared by the queue, the token snapshot and (on a worker) its
// publisher: SERVICE_QUEUE_URL, reconnecting for ever (a NATS restart must not end a daemon; while
// it is away, enqueue fails and the door answers 503).
import { connect, Events, type KV, type NatsConnection } from 'nats';
import type { Logger } from 'pino';
import type { ServerSettings } from '../../config/daemon-env.js';
import { NatsQueue } from './queue.js';
import { openKv } from './streams.js';
import { snapshotBucketName } from '../../tokens/snapshot.js';

/**
 * Connects, waiting up to `waitMs` for a NATS that is not up yet (processes of one deployment
 * start in any order); then the error names SERVICE_QUEUE_URL and what NATS answered.
 */
export async function connectNats(url: string, name: string, logger: Logger, waitMs = 30_000): Promise<NatsConnection> {
  const servers = url.split(',').map((s) => s.trim());
  const deadline = Date.now() + waitMs;
  let nc: NatsConnection | undefined;
  for (let tries = 1; !nc; tries++) {
    try {
      const left = Math.max(1_000, deadline - Date.now());
      nc = await connect({ servers, name, maxReconnectAttempts: -1, reconnectTimeWait: 500, waitOnFirstConnect: false, timeout: Math.min(left, 10_000) });
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      if (Date.now() >= deadline) {
        throw new Error(`cannot reach NATS at ${url} (SERVICE_QUEUE_URL) after ${tries} ${tries === 1 ? 'try' : 'tries'} in ${waitMs} ms (SERVICE_QUEUE_CONNECT_TIMEOUT_MS): ${why}`, { cause: err });
      }
      if (tries === 1) logger.warn({ url, err: why, waitMs }, 'nats: not reachable yet; waiting for it (SERVICE_QUEUE_URL)');
      await new Promise((r) => setTimeout(r, Math.min(500, Math.max(0, deadline - Date.now()))));
    }
  }
  const connected = nc;
  void (async () => {
    for await (const s of connected.status()) {
      if (s.type === Events.Disconnect) {
        if (!disconnectedSince.has(connected)) disconnectedSince.set(connected, Date.now());
        logger.warn({ nats: s.type, data: JSON.stringify(s.data) }, 'nats: connection lost, reconnecting');
      } else if (s.type === Events.Error) {
        logger.warn({ nats: s.type, data: JSON.stringify(s.data) }, 'nats: connection error');
      } else if (s.type === Events.Reconnect) {
        disconnectedSince.delete(connected);
        logger.info({ nats: s.type, data: JSON.stringify(s.data) }, 'nats: reconnected');
      }
    }
  })();
  return connected;
}

/** When each connection lost its server (absent while connected). */
const disconnectedSince = new WeakMap<NatsConnection, number>();

/** Why this process is not ready for lack of NATS (for `GET /ready`), or null when it is connected. */
export function natsUnreadiness(nc: NatsConnection): string | null {
  if (nc.isClosed()) return 'the connection to NATS (SERVICE_QUEUE_URL) is closed';
  const since = disconnectedSince.get(nc);
  if (since === undefined) return null;
  return `NATS (SERVICE_QUEUE_URL) unreachable for ${Math.round((Date.now() - since) / 1000)} s; reconnecting`;
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
