// `otlp_grpc` exporter (alias `otlp`, as the OpenTelemetry Collector's OTLP/gRPC exporter):
// otlp_http's forwarding (../otlp-http/index.ts) over OTLP/gRPC, to a gateway whose otlp receiver
// enables `protocols.grpc` — agent mode (docs/pipeline.md "Agent mode").
//
// Only the transport differs: the requests are the same ExportTraceServiceRequest bytes with the
// same derived ids (../shared/encode.ts), so a re-send is deduplicated at the gateway; the lease
// is acked only once the gateway answered OK to every request of it; retries share otlp_http's
// loop and backoff. A permanent status (INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, …)
// throws, so the runtime splits the lease until the refused job fails alone and the queue
// dead-letters it after SERVICE_QUEUE_MAX_ATTEMPTS.
import { defineExporter } from '../../pipeline/helpers/exporter.js';
import type { ExporterFactory } from '../../pipeline/component.js';
import { forwardLease } from '../shared/forward.js';
import { otlpGrpcConfigSchema, type OtlpGrpcConfig } from './config.js';

export { otlpGrpcConfigSchema, type OtlpGrpcConfig } from './config.js';

export const otlpGrpcExporterFactory: ExporterFactory<OtlpGrpcConfig> = defineExporter({
  type: 'otlp_grpc',
  needsStore: false,
  description: 'forwards runs and their executions to another Flakehouse (or any OTLP/gRPC endpoint) as OTLP test spans; acked only once the gateway accepted them',
  configSchema: otlpGrpcConfigSchema,
  // It reads each job's batch (after normalize) and its receipt: the `runs` slot.
  requires: ['runs'],
  startExecutions: async (_host, cfg, { logger }) => {
    // @grpc/grpc-js is loaded by a pipeline that forwards over gRPC, not with the component list.
    const { createGrpcSender } = await import('./send.js');
    const sender = createGrpcSender(cfg, logger);
    logger.info({ endpoint: cfg.endpoint, compression: cfg.compression }, 'otlp_grpc: forwarding to the gateway');
    return {
      // The lease's sink is not used: a forward is keyed by the jobs, not the lease (../shared/forward.ts).
      async exportBatch(batch) {
        await forwardLease('otlp_grpc', batch, cfg.max_request_bytes, async (body) => (await sender.send(body)).partialSuccess ?? null, logger);
      },
      async shutdown() {
        sender.close();
      },
    };
  },
});

/** The Collector's name for the same exporter. */
export const otlpExporterFactory: ExporterFactory<OtlpGrpcConfig> = { ...otlpGrpcExporterFactory, type: 'otlp' };
