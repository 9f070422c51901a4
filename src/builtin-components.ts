// Every component (and extension) type this build ships, for the pipeline file to wire. A composition root, like
// daemon.ts: src/pipeline (the core) imports no receiver, processor, exporter or connector
// (.oxlintrc.json); this list, outside it, is where they meet the registry.
import { eventsConnectorFactory } from './connectors/events.js';
import { routingConnectorFactory } from './connectors/routing.js';
import { clickhouseExporterFactory } from './exporters/clickhouse.js';
import { debugExporterFactory } from './exporters/debug.js';
import { fileStorageFactory } from './extensions/file-storage.js';
import { notifyExporterFactory } from './exporters/notify/index.js';
import { otlpExporterFactory, otlpGrpcExporterFactory } from './exporters/otlp-grpc/index.js';
import { otlpHttpExporterFactory, otlphttpExporterFactory } from './exporters/otlp-http/index.js';
import { rcaExporterFactory } from './exporters/rca/index.js';
import { trackerExporterFactory } from './exporters/tracker/index.js';
import { attributesProcessorFactory } from './processors/attributes.js';
import { clusteringProcessorFactory } from './processors/clustering.js';
import { filterProcessorFactory } from './processors/filter.js';
import { identityProcessorFactory } from './processors/identity.js';
import { memoryLimiterProcessorFactory } from './processors/memory-limiter.js';
import { normalizeProcessorFactory } from './processors/normalize.js';
import { quarantineProcessorFactory } from './processors/quarantine.js';
import { rollupsProcessorFactory } from './processors/rollups.js';
import { sampleProcessorFactory } from './processors/sample.js';
import { scoringProcessorFactory } from './processors/scoring.js';
import { junitReceiverFactory } from './receivers/junit/index.js';
import { nativeReceiverFactory } from './receivers/native/index.js';
import { otlpReceiverFactory } from './receivers/otlp/index.js';
import type { AnyFactory } from './pipeline/component.js';
import { Registry } from './pipeline/registry.js';

export function builtinRegistry(): Registry {
  const r = new Registry();
  const all = [
    otlpReceiverFactory,
    junitReceiverFactory,
    nativeReceiverFactory,
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
  for (const f of all) r.register(f);
  r.registerExtension(fileStorageFactory);
  return r;
}
