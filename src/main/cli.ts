// The server's `flakehouse` (what bin/flakehouse.js and the CLI build run, and `npm start`): a
// composition root. The client's commands are the client's own (client/src/cli/main.ts, the same
// the client package `flakehouse` ships); this adds what only the server does: `serve`,
// `validate`, the server's settings in `config`, and `config --project`'s storage fallback. The
// server modules load only when their command runs: `report` and the other client commands start
// without the engine, fastify or the pipeline.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { main as clientMain, redactToken, type CliHost, type EffectiveValue } from '../../client/src/cli/main.js';
import type { CliIo } from '../../client/src/cli/io.js';
import { cliVersion } from '../../client/src/cli/version.js';
import { effectiveAiRca, redactAiSettings } from '../config/ai.js';
import { loadServerSettings } from '../config/daemon-env.js';
import { redactIntegrationSettings } from '../config/integrations.js';
import { loadServiceConfig } from '../config/service-yml.js';
// Type-only: the pipeline graph and the daemon load when `serve` and `validate` run.
import type { PipelineConfigError } from '../pipeline/graph.js';
import type { ReloadResult } from '../pipeline/reload.js';
import type { Daemon } from './daemon.js';

const SERVER_USAGE = `  serve [--pipeline FILE] [--role all|ingest|worker]
                                   run the API and the worker (embedded chDB + on-disk queue by default); a
                                   pipeline that needs no store (pipelines/agent.yaml) runs as an agent, without one;
                                   --role ingest|worker splits them over processes sharing SERVICE_QUEUE_URL (NATS)
  validate [FILE]                  check a pipeline file (default pipelines/default.yaml) without starting anything`;

const SERVER: CliHost = {
  commands: { serve, validate },
  usage: SERVER_USAGE,
  // The server's package (flakehouse-server), not the client's: the nearest package.json above this module.
  version: () => cliVersion(path.dirname(fileURLToPath(import.meta.url))),
  describeServer(env, cwd, loaded) {
    const server = loadServerSettings(env, cwd);
    // Keys whose configured value this instance does not apply (`ai.rca` without an AI provider).
    const rca = effectiveAiRca(loaded.config.ai.rca, server.ai);
    const effective: Record<string, EffectiveValue> = rca.reason ? { 'ai.rca': { value: rca.value, reason: rca.reason } } : {};
    return {
      effective,
      server: {
        ...server,
        adminToken: server.adminToken ? redactToken(server.adminToken) : undefined,
        agentToken: server.agentToken ? redactToken(server.agentToken) : undefined,
        clickhouse: { ...server.clickhouse, password: server.clickhouse.password ? '[redacted]' : undefined },
        s3: server.s3 && { ...server.s3, secretAccessKey: server.s3.secretAccessKey ? '[redacted]' : undefined, sessionToken: server.s3.sessionToken ? '[redacted]' : undefined },
        ...redactIntegrationSettings(server),
        ai: redactAiSettings(server.ai),
      },
    };
  },
  // Straight from storage: a server module, loaded only here.
  async storedSettings(env, cwd, slug, service) {
    const { readStoredProjectSettings } = await import('./stored-project-settings.js');
    return await readStoredProjectSettings(loadServerSettings(env, cwd), slug, service);
  },
  isUsageError: isPipelineConfigError,
};

/** `flakehouse …` with the server's commands: exit 0 ok, 1 failure, 2 usage or configuration error. */
export function main(argv: string[], env?: NodeJS.ProcessEnv, cwd?: string, io?: CliIo): Promise<number> {
  return clientMain(argv, env, cwd, io, SERVER);
}

/** `instanceof PipelineConfigError` without loading the pipeline graph to ask. */
function isPipelineConfigError(err: unknown): err is PipelineConfigError {
  return err instanceof Error && err.name === 'PipelineConfigError';
}

async function serve(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  const { values } = parseArgs({ args, options: { pipeline: { type: 'string' }, role: { type: 'string' } }, strict: true });
  // --role is SERVICE_ROLE, checked (and named in errors) as the variable is.
  const settings = loadServerSettings(values.role !== undefined ? { ...env, SERVICE_ROLE: values.role } : env, cwd);
  const service = loadServiceConfig({ env, cwd });
  const logger = (await import('../telemetry/logger.js')).createLogger(settings.logLevel);
  const pipelineFile = values.pipeline ? path.resolve(cwd, values.pipeline) : undefined;
  // SIGHUP re-reads the pipeline file (Daemon.reloadPipeline; docs/pipeline.md "Reload"). Installed
  // before the server listens (SIGHUP's default ends the process); one during the start waits for it.
  const hup: { reload?: () => Promise<ReloadResult>; whileStarting: boolean } = { whileStarting: false };
  const onHup = (): void => {
    if (!hup.reload) {
      hup.whileStarting = true;
      return;
    }
    const file = pipelineFile ?? 'pipelines/default.yaml';
    hup.reload().then(
      (r) => (r.ok ? logger.info({ file }, 'pipeline reloaded') : logger.error({ file, error: r.error }, 'pipeline reload refused')),
      (err: unknown) => logger.error({ file, err }, 'pipeline reload refused'),
    );
  };
  process.on('SIGHUP', onHup);
  // Loaded here, not at the top: the reporter commands run in every CI job and should not pay for
  // loading the server (the engine, fastify, the pipeline) on each start. The graph decides which
  // server: one whose components all declare needsStore: false runs as an agent, with no database
  // (src/main/agent.ts; docs/pipeline.md "Agent mode"), and never loads the daemon's modules.
  const graph = (await import('./pipeline-file.js')).loadGraph(pipelineFile, cwd, env);
  const { storeUsers } = await import('../agent/mode.js');
  const needStore = storeUsers(graph);
  let daemon: { url: string; close(): Promise<void> };
  let stopHeapTrim = (): void => undefined;
  const heapTrim = await import('../pipeline/thread/heap-trim.js');
  // Before any thread of the server starts: V8 lets each heap grow to 1.5x what was live, not 4x.
  heapTrim.limitHeapGrowth();
  if (settings.role === 'ingest') {
    // Receivers only: no store, no pipeline; tokens from the snapshot the workers publish (README "Scaling out").
    const { startIngestProcess } = await import('./ingest-process.js');
    daemon = await startIngestProcess({ settings, service, logger, graph });
    io.stdout.write(`Flakehouse ingest is listening on ${daemon.url} (queue: ${settings.queue.url})\n`);
  } else if (needStore.length === 0) {
    logger.info({ pipeline: graph.source }, 'agent mode: no component of the pipeline needs the store; starting without a database');
    const { startAgent } = await import('./agent.js');
    daemon = await startAgent({ settings, service, logger, graph });
    io.stdout.write(`Flakehouse agent (agent mode, no database) is listening on ${daemon.url} (data: ${settings.dataDir})\n`);
  } else {
    logger.debug({ pipeline: graph.source, storeUsers: needStore }, 'components that need the store: starting the daemon');
    const { startDaemon } = await import('./daemon.js');
    // The dashboard is built on the first start when install did not build it (docs/dashboard.md).
    if (settings.dashboard.enabled) await (await import('../api/dashboard/build.js')).ensureDashboardBuilt(logger);
    daemon = await startDaemon({ settings, service, logger, pipelineFile });
    // The HTTP thread's garbage collected before V8's large-machine limits let it pile up (issue 40).
    stopHeapTrim = heapTrim.startHeapTrim(heapTrim.MAIN_THREAD_HEAP_TRIM);
    io.stdout.write(`Flakehouse is listening on ${daemon.url} (data: ${settings.dataDir})\n`);
    if (settings.dashboard.enabled) io.stdout.write(`Dashboard: ${daemon.url}/ (sign in with a token)\n`);
  }
  const running = daemon as Partial<Pick<Daemon, 'reloadPipeline'>>;
  hup.reload = running.reloadPipeline ? () => running.reloadPipeline!() : () => Promise.resolve({ ok: false, error: 'agent mode does not reload its pipeline file: restart it' });
  if (hup.whileStarting) onHup();
  return await new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      process.off('SIGHUP', onHup);
      stopHeapTrim();
      logger.info({ signal }, 'shutting down: finishing the job in hand');
      daemon.close().then(
        () => {
          logger.info('stopped');
          resolve(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

async function validate(args: string[], env: NodeJS.ProcessEnv, cwd: string, io: CliIo): Promise<number> {
  const file = args[0] ? path.resolve(cwd, args[0]) : undefined;
  const { loadGraph } = await import('./daemon.js');
  const graph = loadGraph(file, cwd, env);
  io.stdout.write(`${graph.source}: valid (${graph.pipelines.map((p) => p.id).join(', ')})\n`);
  return 0;
}
