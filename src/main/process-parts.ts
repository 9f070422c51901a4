// The steps every serving process takes the same way, whatever its role (src/main/daemon.ts: the
// full daemon or a worker; agent.ts; ingest-process.ts): the data dir and the admin token, the
// HTTP front with its self-telemetry and operator routes, and listening. Each composition root
// adds what its role has (the store and the read API, the agent's token, the NATS token snapshot).
import { mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import { resolveAdminToken } from '../agent/auth.js';
import { openFront } from '../api/front.js';
import { RateLimiter } from '../api/rate-limit.js';
import type { App } from '../api/app.js';
import type { AnyRouteDef, RouteDeps } from '../api/route.js';
import { healthRoutes } from '../api/routes/daemon-health.js';
import { metricsRoute } from '../api/routes/metrics.js';
import { statsRoute } from '../api/routes/stats.js';
import type { ServerSettings } from '../config/daemon-env.js';
import { redactLiteral } from '../domain/log-redaction.js';
import type { StorageGuard } from '../ingest/storage-guard.js';
import type { PipelineGraph } from '../pipeline/graph.js';
import type { PipelineHandle, WorkerStats } from '../pipeline/runtime.js';
import type { ReceiverStats } from '../telemetry/component-stats.js';
import type { Queue } from '../queue/types.js';
import type { SelfTelemetry } from '../telemetry/self-telemetry.js';

/**
 * Creates the data dir and returns the admin token: SERVICE_ADMIN_TOKEN, else one kept in
 * <data dir>/admin-token (0600) for the local CLI. Its form is the operator's, so only its value can
 * tell it apart in a log line: it is redacted from here on.
 */
export function openDataDir(settings: ServerSettings, logger: Logger): { adminToken: string } {
  mkdirSync(settings.dataDir, { recursive: true });
  const adminToken = resolveAdminToken({ token: settings.adminToken, dataDir: settings.dataDir, logger });
  redactLiteral(adminToken);
  return { adminToken };
}

/**
 * The HTTP front: self-telemetry, the app (with the process's auth), the rate limiter and the
 * health routes (/health, /ready with the process's own readiness).
 */
export async function openServingFront(opts: {
  settings: ServerSettings;
  logger: Logger;
  auth: RouteDeps['auth'];
  admitIngest: RouteDeps['admitIngest'];
  queue: Pick<Queue, 'stats'>;
  graph: PipelineGraph;
  storage?: StorageGuard;
  unreadiness?: () => string | null;
  rateLimitClock?: () => number;
  /** The exporters whose queue backlog /metrics reports; default the graph's. */
  queueExporters?: string[];
  /** Besides self-telemetry: who else counts each request (the daemon's pipeline page). */
  observe?: (r: { method: string; route: string; status: number; durationMs: number }) => void;
}): Promise<{ app: App; telemetry: SelfTelemetry; rateLimiter: RateLimiter }> {
  const { settings } = opts;
  const rateLimiter = new RateLimiter(settings.rateLimit.max, settings.rateLimit.windowMs, opts.rateLimitClock);
  const { telemetry, app } = await openFront({
    settings,
    logger: opts.logger,
    deps: { auth: opts.auth, rateLimiter, admitIngest: opts.admitIngest },
    queueStats: () => opts.queue.stats(),
    graph: opts.graph,
    ...(opts.observe ? { observe: opts.observe } : {}),
    ...(opts.queueExporters ? { queueExporters: opts.queueExporters } : {}),
  });
  addRoutes(app, healthRoutes(opts.storage, opts.unreadiness));
  return { app, telemetry, rateLimiter };
}

export function addRoutes(app: App, routes: Iterable<AnyRouteDef>): void {
  for (const r of routes) app.routes.add(r);
}

/**
 * GET /v1/admin/stats and GET /metrics, and the counters /metrics reads: the worker's (when this
 * process works leases) and the receivers'.
 */
export function addOperatorRoutes(
  app: App,
  telemetry: SelfTelemetry,
  p: { queue: Queue; runtime: PipelineHandle; worker?: () => WorkerStats; receivers: () => ReceiverStats },
): void {
  app.routes.add(statsRoute(p.queue, p.runtime));
  app.routes.add(metricsRoute(telemetry));
  if (p.worker) telemetry.attachWorker(p.worker);
  telemetry.attachReceivers(p.receivers);
}

/** Listens on SERVICE_HOST:SERVICE_PORT (0: a free port); the loopback URL and the bound port. */
export async function listen(app: App, settings: ServerSettings): Promise<{ url: string; port: number; address: string }> {
  const address = await app.fastify.listen({ port: settings.port, host: settings.host });
  const port = (app.fastify.server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, port, address };
}
