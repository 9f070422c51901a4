// The pipeline thread: processors, exporters, connectors and their loops, off the thread that
// answers HTTP. Ingest acknowledgements then never wait behind a lease being processed; the
// store and the queue stay on the main thread and are reached through `remote.ts`. It loads no
// receiver: its registry knows the receiver types by name (PipelineThreadData.receivers), enough
// to check a pipeline file that lists them.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { ProjectConfigs } from '../../config/resolved-project-config.js';
import type { LoadedServiceConfig } from '../../config/service-yml.js';
import type { DomainEvent } from '../../domain/events.js';
import { createLogger } from '../../telemetry/logger.js';
import { processingRegistry } from '../../builtin/processing.js';
import type { PipelineSettings } from '../component.js';
import type { ReceiverType } from '../registry.js';
import { loadPipelineFile, type PipelineGraph } from '../graph.js';
import { buildHost } from '../host.js';
import { ServiceExtensions } from '../extensions.js';
import { readPipelineFile, ReloadablePipeline } from '../reload.js';
import { PipelineRuntime } from '../runtime.js';
import type { MainCalls, ToMain, WorkerCalls } from './protocol.js';
import { remoteQueue, remoteStore } from './remote.js';
import { RpcClient, serveRpc } from './rpc.js';
import { startHeapTrim } from './heap-trim.js';

/** Niceness of the pipeline thread (0 is the HTTP thread's; 19 the lowest). */
const PIPELINE_NICE = 10;

export interface PipelineThreadData {
  pipelineFile: string;
  /** How config errors name the file. */
  displayName: string;
  service: LoadedServiceConfig;
  settings: PipelineSettings;
  logLevel: string;
  /** The main thread's store, as the proxy names it. */
  store: { database: string; embedded: boolean };
  work: boolean;
  pollIntervalMs: number;
  /** The receiver types the main thread builds (Registry.receiverTypes): named in the pipeline file, never built here. */
  receivers: ReceiverType[];
  /** Whether delivered events go to the main thread from the start (WorkerCalls.relayEvents changes it). */
  relayEvents: boolean;
}

const port = parentPort;
if (!port) throw new Error('worker.ts runs as a worker thread');
const data = workerData as PipelineThreadData;
lowerThreadPriority(PIPELINE_NICE);
startHeapTrim(); // garbage collected before V8's large-machine limits let it pile up (./heap-trim.ts)
const post = (m: ToMain): void => port.postMessage(m);

// Log lines go to the main thread, which writes them to its own destination (one stream, in order
// per thread, captured the same way in tests).
const logger = createLogger(data.logLevel, { write: (line: string) => post({ kind: 'log', line }) });
const rpc = new RpcClient<MainCalls>(port);
const store = remoteStore(rpc, data.store.database, data.store.embedded);
const queue = remoteQueue(rpc);
const graph = loadPipelineFile(data.pipelineFile, processingRegistry(data.receivers), data.displayName);
// Extensions (file_storage) run here, with the processors and exporters: started before them, shut down after.
// The repositories extension (clickhouse_storage) is built over this thread's store proxy; the
// runtime gets the store for its lease sink; components get no store.
const extensions = new ServiceExtensions(graph.extensions, { dataDir: data.settings.dataDir, logger, store });
const host = buildHost({ logger, projectConfigs: new ProjectConfigs(store, data.service, logger), settings: data.settings, outbox: queue.outbox, extensions });
const build = (graph: PipelineGraph): PipelineRuntime =>
  new PipelineRuntime({ graph, role: 'processing', host, store, queue, work: data.work, pollIntervalMs: data.pollIntervalMs });
const runtime = new ReloadablePipeline(graph, extensions.guard(build));

// Delivered events go to the main thread only while something there listens (PipelineThread.onEvent:
// tests, in-process embedders), and in one message per turn: a lease of new tests delivers tens of
// thousands (identity.created, score.updated), and a message each cost this thread 1.7 s of
// postMessage in a 15-second saturating ingest, for a main thread with no listener.
let relayEvents = data.relayEvents;
let pendingEvents: DomainEvent[] = [];
const flushEvents = (): void => {
  if (pendingEvents.length === 0) return;
  const events = pendingEvents;
  pendingEvents = [];
  post({ kind: 'events', events });
};
runtime.onEvent((event) => {
  if (!relayEvents) return;
  if (pendingEvents.push(event) === 1) setImmediate(flushEvents);
});

// Counters go to the main thread (GET /v1/admin/stats) a few times a second while busy.
let lastSent = '';
const statsTimer = setInterval(() => {
  const json = JSON.stringify(runtime.stats);
  if (json !== lastSent) {
    lastSent = json;
    post({ kind: 'stats', stats: runtime.stats });
  }
}, 250);

// Maintenance on the main thread (retention dropping a partition) that must not interleave with a
// lease's writes: `pause` holds the lease loop until the main thread calls `resume`.
const resumers = new Map<number, () => void>();
let stopped: Promise<void> | undefined;
serveRpc<WorkerCalls>(port, {
  pause: (id) =>
    new Promise<void>((paused) => {
      void runtime.exclusive(
        () =>
          new Promise<void>((resume) => {
            resumers.set(id, resume);
            paused();
          }),
      );
    }),
  resume: (id) => {
    resumers.get(id)?.();
    resumers.delete(id);
  },
  relayEvents: (on) => {
    relayEvents = on;
    if (!on) pendingEvents = [];
  },
  reload: async () => {
    const read = readPipelineFile(data.pipelineFile, processingRegistry(data.receivers), data.displayName);
    return read.ok ? runtime.reload(read.graph) : read;
  },
  shutdown: () =>
    (stopped ??= runtime
      .shutdown()
      .catch((err: unknown) => logger.error({ err }, 'pipeline shutdown failed'))
      .then(() => extensions.shutdown())
      .catch((err: unknown) => logger.error({ err }, 'extensions shutdown failed'))
      .finally(() => {
        clearInterval(statsTimer);
        flushEvents();
        post({ kind: 'stats', stats: runtime.stats });
      })),
});

try {
  await extensions.start();
  await runtime.start();
  post({ kind: 'ready' });
} catch (err) {
  post({ kind: 'fatal', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
}

/**
 * The pipeline thread yields the CPU to the thread answering HTTP: on a 2-core machine the
 * processors, chDB and the HTTP thread all want a core, and an ack that waits for the scheduler
 * waits as long as one behind a lease. Lowered priority only decides who runs first when both
 * are ready; when HTTP is quiet the pipeline has the cores to itself. (Linux: `setpriority` on a
 * thread id applies to that thread alone; elsewhere this is skipped.)
 */
function lowerThreadPriority(nice: number): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, nice);
  } catch {
    // Not Linux, or not permitted: same behaviour, default priority.
  }
}
