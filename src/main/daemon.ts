// `flakehouse serve`: API and worker in one process on the embedded default (chDB + on-disk
// queue under the data dir), or a ClickHouse server by URL.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { buildApp, type App } from '../api/app.js';
import { openApiRoute } from '../api/openapi.js';
import { rcaRoutes } from '../api/routes/rca.js';
import { PROCEDURES, TRPC_MAX_BATCH, TRPC_PREFIX, createAppRouter, registerTrpc } from '../api/trpc.js';
import { setupDashboard, setupSessions } from '../api/dashboard/setup.js';
import { RequestCounts } from '../api/request-counts.js';
import { Authenticator } from '../api/auth.js';
import { adminRoutes } from '../api/routes/admin.js';
import { deadJobRoutes } from '../api/routes/dead-jobs.js';
import { settingsRoutes } from '../api/routes/settings.js';
import { ProjectConfigs } from '../config/resolved-project-config.js';
import { RetentionSweeper } from '../pipeline/retention-sweeper.js';
import { runRoutes } from '../api/routes/runs.js';
import type { S3Settings } from '../artifacts/s3.js';
import type { ServerSettings } from '../config/daemon-env.js';
import type { LoadedServiceConfig } from '../config/service-yml.js';
import { DEFAULT_PIPELINE, displayName, loadGraph } from './pipeline-file.js';
import { builtinRegistry } from '../builtin/components.js';
import { PipelineRuntime, type PipelineHandle } from '../pipeline/runtime.js';
import { readPipelineFile, reloadRefusal, ReloadablePipeline, type ReloadResult } from '../pipeline/reload.js';
import { buildHost, pipelineSettings } from '../pipeline/host.js';
import { ServiceExtensions } from '../pipeline/extensions.js';
import { PipelineThread } from '../pipeline/thread/threaded.js';
import type { Queue } from '../queue/types.js';
import { openIntake, receiverWiring } from './intake.js';
import type { NatsConnection } from 'nats';
import { TokenSnapshotPublisher } from '../tokens/snapshot.js';
import { openStore, type OpenedStore } from '../store/client.js';
import { migrate } from '../store/migrate.js';
import { ProjectRepo, SCOPES } from '../store/projects.js';
import type { SelfTelemetry } from '../telemetry/self-telemetry.js';
import { executionsExporterIds } from '../telemetry/collector-metrics.js';
import { testRoutes } from '../api/routes/tests.js';
import { quarantineListRoutes } from '../api/routes/quarantine-list.js';
import { prRoutes } from '../api/routes/pr.js';
import { badgeRoutes } from '../api/routes/badge.js';
import { projectHealthRoutes } from '../api/routes/project-health.js';
import { notificationRoutes } from '../api/routes/notifications.js';
import { artifactRoutes } from '../api/routes/artifacts.js';
import { exportRoutes, RunningExports } from '../api/routes/export.js';
import { splitRoutes } from '../api/routes/splits.js';
import { knownTestRoutes } from '../api/routes/known-tests.js';
import { SqlEndpoint } from '../api/routes/clickhouse.js';
import { identityMergeRoutes } from '../api/routes/identity-merge.js';
import { mergeJUnitTwinsAtStartup, type TwinMergeDeps } from '../usecases/junit-twin-merge.js';
import { buildApiDeps } from './api-deps.js';
import { addOperatorRoutes, listen, openDataDir, openServingFront } from './process-parts.js';

// Moved to ./pipeline-file.ts (the agent loads the graph without this module); re-exported here.
export { DEFAULT_PIPELINE, loadGraph } from './pipeline-file.js';

export interface DaemonOptions {
  settings: ServerSettings;
  service: LoadedServiceConfig;
  logger: Logger;
  /** Pipeline file; default pipelines/default.yaml of this package. */
  pipelineFile?: string;
  /** Embedded chDB path; default <data dir>/chdb. (Tests share one per process: chDB binds one path per process.) */
  chdbPath?: string;
  /** Run the worker loops (default true). False leaves accepted jobs queued, for backpressure tests. */
  work?: boolean;
  /** Where the first-start token is announced (stdout by default). */
  announce?: (line: string) => void;
  /** The rate limiter's clock (default Date.now); tests fix it inside a window. */
  rateLimitClock?: () => number;
  /** The dashboard sessions' clock (default Date.now); tests move it past an expiry. */
  sessionClock?: () => number;
  /** The built dashboard (default web/dist of this package). */
  dashboardDir?: string;
}

export interface Daemon {
  url: string;
  /** The HTTP application: its route table and what fastify registered (tests check /openapi.json against both). */
  app: App;
  port: number;
  store: OpenedStore;
  /** The on-disk queue, or NATS JetStream (SERVICE_QUEUE_URL). */
  queue: Queue;
  /** The processing pipeline (its own thread by default): events and counters. */
  runtime: PipelineHandle;
  /** Self-telemetry: GET /metrics and the OTLP export (SERVICE_SELF_OTEL_ENDPOINT). */
  telemetry: SelfTelemetry;
  /** The retention sweep; null in a process that runs no worker. */
  retention: RetentionSweeper | null;
  adminToken: string;
  bootstrapToken: string | null;
  /** The SQL endpoint's own listener (SERVICE_SQL_PORT), when set. */
  sqlUrl?: string;
  /** Receivers' own listeners by name (`otlp/grpc` → `127.0.0.1:4317`), with the bound port. */
  listeners: ReadonlyMap<string, string>;
  /**
   * Re-reads the pipeline file (SIGHUP): swaps processors, exporters and connectors for the new
   * file's once the lease in hand has finished; refused, the running graph kept, when the file is
   * invalid or changes receivers (src/pipeline/reload.ts).
   */
  reloadPipeline(): Promise<ReloadResult>;
  close(): Promise<void>;
}

/** The S3 parts, loaded only with a store configured: the AWS SDK is some 0.05 s of every start. */
async function openS3(settings: S3Settings | undefined, work: boolean) {
  if (!settings) return { artifacts: null, artifactInventory: null, artifactPruner: null };
  const [{ openArtifactStore }, { s3Inventory }, { openArtifactPruner }] = await Promise.all([
    import('../artifacts/s3.js'),
    import('../project-export/artifacts.js'),
    import('../artifacts/prune.js'),
  ]);
  // Retention is worker work: only a process that processes leases prunes.
  return { artifacts: openArtifactStore(settings), artifactInventory: s3Inventory(settings), artifactPruner: work ? openArtifactPruner(settings) : null };
}

export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const { settings, logger } = opts;
  const announce = opts.announce ?? ((line: string) => process.stdout.write(`${line}\n`));
  const graph = loadGraph(opts.pipelineFile);
  // The running graph as /metrics and the dashboard show it: updated in place by a reload.
  const queueExporters = executionsExporterIds(graph);
  const { adminToken } = openDataDir(settings, logger);

  const store = await openStore({
    chdbPath: opts.chdbPath ?? path.join(settings.dataDir, 'chdb'),
    url: settings.clickhouse.url,
    user: settings.clickhouse.user,
    password: settings.clickhouse.password,
    database: settings.clickhouse.database,
    cluster: settings.clickhouse.cluster,
  });
  const applied = await migrate(store);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');

  const projects = new ProjectRepo(store);
  const bootstrapToken = await bootstrap(projects, settings.dataDir, announce);

  const intake = await openIntake(settings, logger);
  const { queue, storage, ingest } = intake;
  // With the queue on NATS, the workers publish the project tokens for ingest-only processes.
  const tokenPublisher = intake.nats ? await startTokenPublisher(intake.nats, settings.queue.prefix, projects, logger) : undefined;
  // `worker`: the pipeline, the query API and the dashboard; the receivers run in `ingest` processes.
  const servesIngest = settings.role !== 'worker';
  const auth = new Authenticator(projects, adminToken);
  const requestCounts = new RequestCounts();
  const { app, telemetry, rateLimiter } = await openServingFront({
    settings,
    logger,
    auth,
    admitIngest: () => ingest.admit(),
    queue,
    graph,
    queueExporters,
    storage,
    unreadiness: () => intake.unreadiness(),
    ...(opts.rateLimitClock ? { rateLimitClock: opts.rateLimitClock } : {}),
    observe: (r) => requestCounts.record(r),
  });
  const dashboard = {
    ...settings.dashboard,
    s3: settings.s3,
    ...(opts.sessionClock ? { now: opts.sessionClock } : {}),
    ...(opts.dashboardDir ? { distDir: opts.dashboardDir } : {}),
  };
  // Bearer tokens, or a dashboard session cookie (parsed for every request, so registered first).
  const callers = await setupSessions(app, auth, dashboard);
  // Per-project policy for the pipeline and the API: service.yml < project settings < environment.
  const projectConfigs = new ProjectConfigs(store, opts.service, logger);
  const work = opts.work ?? true;
  const { artifacts, artifactInventory, artifactPruner } = await openS3(settings.s3, work);
  const runningExports = new RunningExports();
  // Every operation's dependencies, once: the REST routes and the procedures take their parts.
  const { useCases, repos } = buildApiDeps({
    store,
    projects,
    projectConfigs,
    service: opts.service.config,
    outbox: queue.outbox,
    artifacts,
    // A revoked token is refused at once: its cached principal forgotten, its dashboard sessions ended.
    onRevoked: (tokenId) => {
      auth.forget(tokenId);
      callers.sessions?.endToken(tokenId);
    },
    publicApiUrl: settings.publicApiUrl,
    notifications: settings.notifications,
    ai: settings.ai,
  });
  // Legacy JUnit twins already stored (src/usecases/junit-twin-merge.ts): merged with no lease in progress.
  const twinMerge: TwinMergeDeps = { store, tests: repos.tests, identities: repos.identities, outbox: queue.outbox, exclusive: (f) => runtime.exclusive(f) };
  for (const r of [
    ...runRoutes(useCases.runs, artifacts),
    ...rcaRoutes(useCases.rca),
    ...testRoutes({ ...useCases, codeowners: repos.codeowners }),
    ...quarantineListRoutes(useCases.quarantineList),
    ...artifactRoutes({ signer: artifacts, projectArtifactsEnabled: async (id) => (await projectConfigs.get(id)).config.artifacts.enabled }),
    ...prRoutes(useCases.prCommit),
    ...projectHealthRoutes(useCases.health),
    ...adminRoutes(projects, useCases.tokens),
    ...identityMergeRoutes({ ...twinMerge, projects }),
    ...deadJobRoutes({ queue, projects }),
    ...settingsRoutes(useCases.settings),
    ...notificationRoutes(repos.channels),
    ...badgeRoutes({ projects, badges: useCases.badges, facts: useCases.badgeFacts }),
    ...exportRoutes({ store, artifacts: artifactInventory, running: runningExports }),
    ...splitRoutes(useCases.splits),
    ...knownTestRoutes(useCases.knownTests),
  ]) {
    app.routes.add(r);
  }

  const componentSettings = pipelineSettings(settings);
  // What receivers get: the route table, the ingest service and the HTTP routes' checks for those with their own listener.
  const { door, admission, listeners } = receiverWiring(app, auth, rateLimiter, ingest);
  // Extensions (file_storage) run where processors and exporters do: here only without the pipeline thread.
  const threaded = settings.pipelineThread;
  const extensions = threaded ? undefined : new ServiceExtensions(graph.extensions, { dataDir: settings.dataDir, logger, store });
  const host = buildHost({
    logger,
    projectConfigs,
    settings: componentSettings,
    outbox: queue.outbox,
    ...(servesIngest ? { door } : {}),
    ...(extensions ? { extensions } : {}),
  });
  // Receivers serve HTTP on this thread; processors and exporters run on the pipeline thread,
  // which reaches the store and the queue through this one, or (SERVICE_PIPELINE_THREAD=false) on
  // this thread as a runtime of their own, which a reload swaps (src/pipeline/reload.ts).
  const receivers = new PipelineRuntime({ graph, host, queue, admission, work: false, role: 'receivers', pollIntervalMs: settings.queue.pollIntervalMs });
  const local = threaded
    ? undefined
    : new ReloadablePipeline(graph, extensions!.guard((g) => new PipelineRuntime({ graph: g, host, store, queue, work, role: 'processing', pollIntervalMs: settings.queue.pollIntervalMs })));
  const pipeline = threaded
    ? new PipelineThread({
        store,
        queue,
        logger,
        data: {
          pipelineFile: path.resolve(opts.pipelineFile ?? DEFAULT_PIPELINE),
          displayName: displayName(opts.pipelineFile),
          service: opts.service,
          settings: componentSettings,
          logLevel: logger.level,
          store: { database: store.database, embedded: store.embedded },
          work,
          pollIntervalMs: settings.queue.pollIntervalMs,
          receivers: builtinRegistry().receiverTypes(),
        },
      })
    : undefined;
  const runtime: PipelineHandle = pipeline ?? local!;
  // The SQL endpoint runs here, on the thread that holds the store, also when the pipeline has its own.
  const sql = settings.sql.enabled
    ? new SqlEndpoint({
        store,
        projects,
        auth,
        limits: settings.sql,
        maxConcurrent: settings.sql.maxConcurrent,
        logger: logger.child({ component: 'sql' }),
      })
    : undefined;
  let sqlApp: App | undefined;
  if (sql) {
    for (const r of sql.routes('/clickhouse')) app.routes.add(r);
    sql.acceptAnyBody(app.fastify, '/clickhouse');
    if (settings.sql.port !== undefined) {
      sqlApp = buildApp({ logger, deps: { auth, rateLimiter, admitIngest: () => ingest.admit() }, door: settings.door, logRequests: settings.logRequests });
      for (const r of sql.routes('')) sqlApp.routes.add(r);
      sql.acceptAnyBody(sqlApp.fastify, '');
    }
  }
  // The worker's counters as the pipeline reports them (mirrored from its thread), read at collection.
  addOperatorRoutes(app, telemetry, { queue, runtime, ...(work ? { worker: () => runtime.stats } : {}), receivers: () => receivers.receiverStats });
  app.routes.add(openApiRoute(() => app.routes.routes, { procedures: { path: TRPC_PREFIX, maxBatch: TRPC_MAX_BATCH, list: PROCEDURES } }));
  const pipelineView = { graph, runtime, queue, requests: requestCounts };
  const router = createAppRouter({
    useCases,
    rateLimiter,
    ingestRoutes: () => app.routes.routes.filter((r) => r.tags?.includes('ingest')),
    pipeline: pipelineView,
  });
  await registerTrpc(app.fastify, router, callers);
  await setupDashboard(app, callers, { auth, projects }, dashboard);
  await extensions?.start();
  await receivers.start();
  await local?.start();
  await pipeline?.start();
  // Retention is worker work: only a process that processes leases sweeps.
  const retention = work
    ? new RetentionSweeper({
        store,
        logger: logger.child({ component: 'retention' }),
        listProjects: () => projects.list(),
        projectConfig: (projectId) => projectConfigs.get(projectId),
        exclusive: (f) => runtime.exclusive(f),
        artifacts: artifactPruner,
        intervalMs: settings.retentionSweepMs,
      })
    : null;
  retention?.start();
  // Once per start, in the background: every project's stored legacy JUnit twins merged (worker work,
  // like retention; idempotent, so a second start merges nothing).
  let closingTwins = false;
  const startupTwinMerge = work
    ? mergeJUnitTwinsAtStartup({
        ...twinMerge,
        listProjects: () => projects.list(),
        logger: logger.child({ component: 'identity' }),
        stopping: () => closingTwins,
      })
    : null;
  const { url, port, address } = await listen(app, settings);
  const sqlPort = sqlApp && settings.sql.port !== undefined ? await listenSql(sqlApp, settings.sql.port, settings.host) : undefined;
  logger.info({ address, dataDir: settings.dataDir, embedded: store.embedded, config: opts.service.file }, 'flakehouse listening');

  let closing: Promise<void> | undefined;
  // Reloads run one at a time.
  let reloads: Promise<unknown> = Promise.resolve();
  const pipelineFile = path.resolve(opts.pipelineFile ?? DEFAULT_PIPELINE);
  return {
    url,
    app,
    port,
    store,
    queue,
    runtime,
    telemetry,
    retention,
    adminToken,
    bootstrapToken,
    ...(sqlPort !== undefined ? { sqlUrl: `http://127.0.0.1:${sqlPort}` } : {}),
    listeners,
    reloadPipeline() {
      const run = reloads.then(async (): Promise<ReloadResult> => {
        if (closing) return { ok: false, error: 'the daemon is shutting down' };
        const read = readPipelineFile(pipelineFile, builtinRegistry(), displayName(opts.pipelineFile));
        if (!read.ok) return read;
        const refusal = reloadRefusal(pipelineView.graph, read.graph);
        if (refusal) return { ok: false, error: refusal };
        // On the pipeline thread, the thread reads the file again, checks it the same way and swaps.
        const result = local ? await local.reload(read.graph) : await pipeline!.reload();
        if (result.ok) {
          pipelineView.graph = read.graph;
          queueExporters.splice(0, queueExporters.length, ...executionsExporterIds(read.graph));
        }
        return result;
      });
      reloads = run.catch(() => undefined);
      return run;
    },
    close() {
      // Stop accepting, finish the lease in hand, flush the queue, close storage.
      closing ??= (async () => {
        // Stops accepting first; an export in progress is cut short rather than awaited.
        const stopped = app.fastify.close();
        const sqlStopped = sqlApp?.fastify.close();
        runningExports.abortAll();
        sql?.abortAll();
        await stopped;
        await sqlStopped;
        closingTwins = true;
        await startupTwinMerge;
        await retention?.stop();
        await pipeline?.shutdown();
        await local?.shutdown();
        await receivers.shutdown();
        await extensions?.shutdown();
        // After the worker stopped: the last export carries its final numbers.
        await telemetry.shutdown();
        await tokenPublisher?.stop();
        await intake.close();
        await store.close();
        projectConfigs.close();
        artifacts?.close();
        artifactInventory?.close();
        artifactPruner?.close();
      })();
      return closing;
    },
  };
}

async function listenSql(sqlApp: App, port: number, host: string): Promise<number> {
  await sqlApp.fastify.listen({ port, host });
  return (sqlApp.fastify.server.address() as { port: number }).port;
}

/** On an empty data dir: project `default` and one token with every scope, printed once. */
async function bootstrap(projects: ProjectRepo, dataDir: string, announce: (line: string) => void): Promise<string | null> {
  if ((await projects.list()).length > 0) return null;
  const project = await projects.create('default', 'Default project');
  const { token } = await projects.createToken(project.id, [...SCOPES]);
  const file = path.join(dataDir, 'bootstrap-token');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  announce('');
  announce(`Flakehouse: created project "default" and a token with scopes ${SCOPES.join(', ')}:`);
  announce('');
  announce(`  SERVICE_TOKEN=${token}`);
  announce('');
  announce(`It is shown once and saved to ${file} (mode 0600).`);
  announce('');
  return token;
}

/** Publishes the live project tokens to JetStream KV for `ingest` processes (src/tokens/snapshot.ts). */
async function startTokenPublisher(nats: NatsConnection, prefix: string, projects: ProjectRepo, logger: Logger): Promise<TokenSnapshotPublisher> {
  const { openTokenBucket } = await import('../queue/nats/connect.js');
  const kv = await openTokenBucket(nats, prefix);
  const publisher = new TokenSnapshotPublisher(kv, projects, { logger: logger.child({ component: 'tokens' }) });
  await publisher.start();
  return publisher;
}
