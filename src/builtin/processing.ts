// The processors, exporters, connectors and extensions this build ships: what the pipeline thread
// builds (src/pipeline/thread/worker.ts), without the receivers (src/builtin/receivers.ts), which
// run on the thread that answers HTTP. A composition root, like daemon.ts: src/pipeline (the core)
// imports no plugin (.oxlintrc.json); this list, outside it, is where they meet the registry.
import { eventsConnectorFactory } from '../connectors/events.js';
import { routingConnectorFactory } from '../connectors/routing.js';
import { clickhouseExporterFactory } from '../exporters/clickhouse.js';
import { debugExporterFactory } from '../exporters/debug.js';
import { clickhouseStorageFactory } from '../extensions/clickhouse-storage.js';
import { fileStorageFactory } from '../extensions/file-storage.js';
import { notifyExporterFactory } from '../exporters/notify/index.js';
import { otlpExporterFactory, otlpGrpcExporterFactory } from '../exporters/otlp-grpc/index.js';
import { otlpHttpExporterFactory, otlphttpExporterFactory } from '../exporters/otlp-http/index.js';
import { rcaExporterFactory } from '../exporters/rca/index.js';
import { trackerExporterFactory } from '../exporters/tracker/index.js';
import { attributesProcessorFactory } from '../processors/attributes.js';
import { clusteringProcessorFactory } from '../processors/clustering.js';
import { filterProcessorFactory } from '../processors/filter.js';
import { identityProcessorFactory } from '../processors/identity.js';
import { memoryLimiterProcessorFactory } from '../processors/memory-limiter.js';
import { normalizeProcessorFactory } from '../processors/normalize.js';
import { quarantineProcessorFactory } from '../processors/quarantine.js';
import { rollupsProcessorFactory } from '../processors/rollups.js';
import { sampleProcessorFactory } from '../processors/sample.js';
import { scoringProcessorFactory } from '../processors/scoring.js';
import type { AnyFactory } from '../pipeline/component.js';
import type { ExtensionFactory } from '../pipeline/extension.js';
import { Registry, type ReceiverType } from '../pipeline/registry.js';

export const builtinProcessing: readonly AnyFactory[] = [
  memoryLimiterProcessorFactory,
  normalizeProcessorFactory,
  filterProcessorFactory,
  attributesProcessorFactory,
  sampleProcessorFactory,
  identityProcessorFactory,
  clusteringProcessorFactory,
  scoringProcessorFactory,
  quarantineProcessorFactory,
  rollupsProcessorFactory,
  clickhouseExporterFactory,
  debugExporterFactory,
  otlpHttpExporterFactory,
  otlphttpExporterFactory,
  otlpGrpcExporterFactory,
  otlpExporterFactory,
  notifyExporterFactory,
  rcaExporterFactory,
  trackerExporterFactory,
  eventsConnectorFactory,
  routingConnectorFactory,
] as AnyFactory[];

/** The extensions: components' durable state (file_storage) and the store's repositories (clickhouse_storage). */
export const builtinExtensions: readonly ExtensionFactory[] = [fileStorageFactory, clickhouseStorageFactory] as ExtensionFactory[];

/**
 * A registry of the processing components and extensions. `receivers`: the receiver types the
 * pipeline file may name, known by name and signals only (Registry.registerReceiverType): the
 * graph validates as on the thread that builds them, and nothing here can build one.
 */
export function processingRegistry(receivers: readonly ReceiverType[] = []): Registry {
  const r = new Registry();
  for (const t of receivers) r.registerReceiverType(t);
  for (const f of builtinProcessing) r.register(f);
  for (const e of builtinExtensions) r.registerExtension(e);
  return r;
}
