// `otlp_grpc` exporter (alias `otlp`, as the OpenTelemetry Collector's OTLP/gRPC exporter):
// otlp_http's forwarding (../otlp-http/index.ts) over OTLP/gRPC, to a gateway whose otlp receiver
// enables `protocols.grpc` — agent mode (docs/pipeline.md "Agent mode").
//
// Only the transport differs: the requests are the same ExportTraceServiceRequest bytes with the
// same derived ids (../otlp-http/encode.ts), so a re-send is deduplicated at the gateway; the lease
// is acked only once the gateway answered OK to every request of it; retries share otlp_http's
// loop and backoff. A permanent status (INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, …)
// throws, so the runtime splits the lease until the refused job fails alone and the queue
// dead-letters it after SERVICE_QUEUE_MAX_ATTEMPTS.
import { defineExporter } from '../../pipeline/helpers/exporter.js';
import type { ExporterFactory } from '../../pipeline/component.js';
import { packLease } from '../otlp-http/encode.js';
import { PermanentExportError } from '../otlp-http/retry.js';
import { otlpGrpcConfigSchema, type OtlpGrpcConfig } from './config.js';
import { createGrpcSender } from './send.js';

export { otlpGrpcConfigSchema, type OtlpGrpcConfig } from './config.js';

export const otlpGrpcExporterFactory: ExporterFactory<OtlpGrpcConfig> = defineExporter({
  type: 'otlp_grpc',
  description: 'forwards runs and their executions to another Flakehouse (or any OTLP/gRPC endpoint) as OTLP test spans; acked only once the gateway accepted them',
  configSchema: otlpGrpcConfigSchema,
  // It reads each job's batch (after normalize) and its receipt: the `runs` slot.
  requires: ['runs'],
  startExecutions: (_host, cfg, { logger }) => {
    const sender = createGrpcSender(cfg, logger);
    logger.info({ endpoint: cfg.endpoint, compression: cfg.compression }, 'otlp_grpc: forwarding to the gateway');
    return {
      async exportBatch(batch) {
        const requests = packLease(batch.items, cfg.max_request_bytes);
        for (const req of requests) {
          try {
            const answer = await sender.send(req.body);
            // Spans refused one by one are the gateway's partial success: logged, the rest is stored.
            if (answer.partialSuccess) logger.warn({ lease: batch.leaseId, partialSuccess: answer.partialSuccess }, 'otlp_grpc: gateway refused some spans');
          } catch (err) {
            if (err instanceof PermanentExportError) {
              logger.error(
                { err, lease: batch.leaseId, jobs: batch.items.map((i) => i.job.receiptId) },
                'otlp_grpc: gateway refused a request for good; the lease is split until the refused job fails alone, which is dead-lettered after SERVICE_QUEUE_MAX_ATTEMPTS',
              );
            }
            throw err;
          }
        }
        logger.debug({ lease: batch.leaseId, requests: requests.length, jobs: batch.items.length }, 'otlp_grpc: lease forwarded');
      },
      async shutdown() {
        sender.close();
      },
    };
  },
});

/** The Collector's name for the same exporter. */
export const otlpExporterFactory: ExporterFactory<OtlpGrpcConfig> = { ...otlpGrpcExporterFactory, type: 'otlp' };
