// `flakehouse serve` with a pipeline none of whose components needs the store (agent/mode.ts), as
// pipelines/agent.yaml: an OpenTelemetry-Collector-style agent that receives runs close to CI and
// forwards them to a gateway. The composition root beside daemon.ts, without what needs a
// database: no chDB or ClickHouse client, no projects or tokens table, no read API, no dashboard.
// It starts the durable queue under the data dir, the receivers' ingest routes behind the agent's
// bearer token (agent/auth.ts), /health, /metrics, /v1/admin/stats and the dead letters, and the
// processors and exporters on this same thread (docs/pipeline.md "Agent mode" says why).
//
// Nothing here may import the store, even transitively (test/e2e/agent-gateway.test.ts checks the
// process never maps chDB; the agent-rss bench measures what is loaded).
import type { Logger } from 'pino';
import type { App } from '../api/app.js';
import { deadJobRoutes } from '../api/routes/dead-jobs.js';
import type { ServerSettings } from '../config/daemon-env.js';
import type { LoadedServiceConfig } from '../config/service-yml.js';
import { redactLiteral } from '../domain/log-redaction.js';
import type { PipelineGraph } from '../pipeline/graph.js';
import { buildHost, pipelineSettings } from '../pipeline/host.js';
import { PipelineRuntime } from '../pipeline/runtime.js';
import type { Queue } from '../queue/types.js';
import { openIntake, receiverWiring } from './intake.js';
import type { ProjectRepo } from '../store/projects.js';
import type { SelfTelemetry } from '../telemetry/self-telemetry.js';
import { AGENT_PROJECT_ID, AgentAuthenticator, resolveAgentToken } from '../agent/auth.js';
import { addOperatorRoutes, addRoutes, listen, openDataDir, openServingFront } from './process-parts.js';
import { storeUsers } from '../agent/mode.js';
import { noStore, storelessExtensions, storelessProjectConfigs } from '../agent/no-store.js';

export { AGENT_PROJECT_ID } from '../agent/auth.js';

export interface AgentOptions {
  settings: ServerSettings;
  service: LoadedServiceConfig;
  logger: Logger;
  /** The loaded pipeline file (src/main/pipeline-file.ts `loadGraph`); every component must declare `needsStore: false`. */
  graph: PipelineGraph;
  /** Run the worker loop (default true). False leaves accepted jobs queued, for backpressure tests. */
  work?: boolean;
  /** Where a generated agent token is announced (stdout by default). */
  announce?: (line: string) => void;
  /** The rate limiter's clock (default Date.now). */
  rateLimitClock?: () => number;
}

export interface Agent {
  url: string;
  app: App;
  port: number;
  /** The on-disk queue, or NATS JetStream (SERVICE_QUEUE_URL). */
  queue: Queue;
  /** Receivers, processors and exporters, all on this thread. */
  runtime: PipelineRuntime;
  telemetry: SelfTelemetry;
  /** What senders present: `Authorization: Bearer <agentToken>`. */
  agentToken: string;
  /** For /metrics, /v1/admin/stats and the dead letters. */
  adminToken: string;
  /** Receivers' own listeners by name (`otlp:grpc` → `127.0.0.1:4317`). */
  listeners: ReadonlyMap<string, string>;
  close(): Promise<void>;
}

export async function startAgent(opts: AgentOptions): Promise<Agent> {
  const { settings, logger, graph } = opts;
  const users = storeUsers(graph);
  if (users.length > 0) throw new Error(`${graph.source}: cannot run as an agent: ${users.join(', ')} need the store`);
  const announce = opts.announce ?? ((line: string) => process.stdout.write(`${line}\n`));
  const { adminToken } = openDataDir(settings, logger);
  const agentToken = resolveAgentToken({ token: settings.agentToken, dataDir: settings.dataDir, announce, logger }).token;
  // Its form is the operator's: only its value can tell it apart in a log line.
  redactLiteral(agentToken);

  const intake = await openIntake(settings, logger);
  const { queue, storage, ingest } = intake;
  // `worker` (with the queue on NATS): processors and exporters only; `ingest` processes receive.
  const servesIngest = settings.role !== 'worker';
  const auth = new AgentAuthenticator(agentToken, adminToken);
  // Every sender is the agent's one principal: SERVICE_RATE_LIMIT_MAX is the budget of them all.
  const { app, telemetry, rateLimiter } = await openServingFront({
    settings,
    logger,
    auth,
    admitIngest: () => ingest.admit(),
    queue,
    graph,
    storage,
    ...(opts.rateLimitClock ? { rateLimitClock: opts.rateLimitClock } : {}),
  });
  // The dead letters' listing names each job's project by slug: here there is one.
  const oneProject = { list: async () => [{ id: AGENT_PROJECT_ID, slug: AGENT_PROJECT_ID }] } as unknown as ProjectRepo;
  addRoutes(app, deadJobRoutes({ queue, projects: oneProject }));

  // What receivers get: the route table, the ingest service and the HTTP routes' checks for those with their own listener (OTLP/gRPC).
  const { door, admission, listeners } = receiverWiring(app, auth, rateLimiter, ingest);
  const host = buildHost({
    logger,
    projectConfigs: storelessProjectConfigs(opts.service),
    extensions: storelessExtensions(),
    settings: pipelineSettings(settings),
    outbox: queue.outbox,
    ...(servesIngest ? { door } : {}),
  });
  // One thread, role `all`: the pipeline thread exists to keep the store's heavy processors off the
  // thread that answers HTTP; an agent's work (normalize, encode, post) is light, and a second
  // thread would load every module again (SERVICE_PIPELINE_THREAD does not apply here).
  const work = opts.work ?? true;
  const runtime = new PipelineRuntime({ graph, host, store: noStore(), queue, admission, work, role: 'all', pollIntervalMs: settings.queue.pollIntervalMs });
  addOperatorRoutes(app, telemetry, { queue, runtime, ...(work ? { worker: () => runtime.stats } : {}), receivers: () => runtime.receiverStats });
  await runtime.start();
  const { url, port, address } = await listen(app, settings);
  logger.info({ address, dataDir: settings.dataDir, pipeline: graph.source }, 'flakehouse agent listening (agent mode: no store)');

  let closing: Promise<void> | undefined;
  return {
    url,
    app,
    port,
    queue,
    runtime,
    telemetry,
    agentToken,
    adminToken,
    listeners,
    close() {
      // Stop accepting, finish the lease in hand (a forward in flight), flush the queue.
      closing ??= (async () => {
        await app.fastify.close();
        await runtime.shutdown();
        await telemetry.shutdown();
        await intake.close();
      })();
      return closing;
    },
  };
}
