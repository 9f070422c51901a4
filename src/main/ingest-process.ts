// `flakehouse serve --role ingest`: the receivers alone, for running any number of them behind a
// load balancer (README "Scaling out"). The composition root beside daemon.ts and agent.ts, with
// no storage at all: batches go to the queue on NATS JetStream (202 once the stream acknowledged
// the publish), project tokens are checked against the snapshot the workers publish to JetStream
// KV (src/tokens/snapshot.ts), and nothing is processed here. /health, /metrics and
// /v1/admin/stats (admin token) are served; the query API and the dashboard are the workers'.
//
// Nothing here may import the store or the pipeline's processors, even transitively
// (test/unit/import-boundaries.test.ts).
import type { NatsConnection } from 'nats';
import type { Logger } from 'pino';
import type { App } from '../api/app.js';
import type { ServerSettings } from '../config/daemon-env.js';
import type { LoadedServiceConfig } from '../config/service-yml.js';
import { receiverWiring } from '../api/ingest-door.js';
import { IngestService } from '../ingest/service.js';
import type { PipelineGraph } from '../pipeline/graph.js';
import { buildHost, pipelineSettings } from '../pipeline/host.js';
import { PipelineRuntime } from '../pipeline/runtime.js';
import { connectNats, natsUnreadiness, openNatsQueue, openTokenBucket } from '../queue/nats/connect.js';
import type { NatsQueue } from '../queue/nats/queue.js';
import { addOperatorRoutes, listen, openDataDir, openServingFront } from './process-parts.js';
import { storelessExtensions, storelessProjectConfigs } from '../agent/no-store.js';
import { TokenSnapshot } from '../tokens/snapshot.js';
import { SnapshotAuthenticator } from '../tokens/snapshot-authenticator.js';

export interface IngestProcessOptions {
  settings: ServerSettings;
  service: LoadedServiceConfig;
  logger: Logger;
  /** The pipeline file's graph: its receivers are served here, nothing else of it runs. */
  graph: PipelineGraph;
  /** The rate limiter's clock (default Date.now). */
  rateLimitClock?: () => number;
}

export interface IngestProcess {
  url: string;
  app: App;
  port: number;
  queue: NatsQueue;
  tokens: TokenSnapshot;
  /** Receivers' own listeners by name (`otlp:grpc` → `127.0.0.1:4317`). */
  listeners: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

export async function startIngestProcess(opts: IngestProcessOptions): Promise<IngestProcess> {
  const { settings, logger, graph } = opts;
  if (!settings.queue.url) throw new Error('the ingest role needs SERVICE_QUEUE_URL (NATS JetStream)');
  const { adminToken } = openDataDir(settings, logger);

  const nc: NatsConnection = await connectNats(settings.queue.url, 'flakehouse-ingest', logger, settings.queue.connectTimeoutMs);
  let queue: NatsQueue | undefined;
  let tokens: TokenSnapshot | undefined;
  try {
    queue = await openNatsQueue(settings, nc, false, logger);
    const kv = await openTokenBucket(nc, settings.queue.prefix);
    tokens = new TokenSnapshot(kv, logger.child({ component: 'tokens' }));
    await tokens.start();
  } catch (err) {
    await queue?.close().catch(() => undefined);
    await nc.close();
    throw err;
  }
  if (tokens.size === 0) logger.warn('no project tokens in the snapshot yet: a worker publishes them when it starts');

  const auth = new SnapshotAuthenticator(tokens, adminToken);
  // No storage guard: nothing is written here; the stream's limits answer 503 when NATS is full.
  const ingest = new IngestService(queue, settings.queue.maxDepth);
  const q = queue;
  const { app, telemetry, rateLimiter } = await openServingFront({
    settings,
    logger,
    auth,
    admitIngest: () => ingest.admit(),
    queue,
    graph,
    unreadiness: () => natsUnreadiness(nc),
    ...(opts.rateLimitClock ? { rateLimitClock: opts.rateLimitClock } : {}),
  });

  const { door, admission, listeners } = receiverWiring(app, auth, rateLimiter, ingest);
  const host = buildHost({
    logger,
    projectConfigs: storelessProjectConfigs(opts.service),
    extensions: storelessExtensions(),
    settings: pipelineSettings(settings),
    outbox: queue.outbox,
    door,
  });
  // Receivers only: the processors and exporters of the graph run on the workers.
  const receivers = new PipelineRuntime({ graph, host, queue, admission, work: false, role: 'receivers', pollIntervalMs: settings.queue.pollIntervalMs });
  addOperatorRoutes(app, telemetry, { queue, runtime: receivers, receivers: () => receivers.receiverStats });
  await receivers.start();
  const { url, port, address } = await listen(app, settings);
  logger.info({ address, queue: settings.queue.url, prefix: settings.queue.prefix, tokens: tokens.size }, 'flakehouse ingest listening (role ingest: no storage)');

  let closing: Promise<void> | undefined;
  const snapshot = tokens;
  return {
    url,
    app,
    port,
    queue,
    tokens,
    listeners,
    close() {
      closing ??= (async () => {
        await app.fastify.close();
        await receivers.shutdown();
        await telemetry.shutdown();
        snapshot.stop();
        await q.close();
        await nc.drain().catch(() => undefined);
      })();
      return closing;
    },
  };
}
