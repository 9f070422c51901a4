// `otlp_http` exporter (alias `otlphttp`, as in the OpenTelemetry Collector): forwards what this
// daemon received to another Flakehouse (the gateway) as OTLP/HTTP protobuf test spans — agent
// mode (docs/pipeline.md "Agent mode").
//
// Delivery: the durable lmdb queue in front of the pipeline is the sending queue. A lease is acked
// only after the gateway accepted every request of it; a send that fails is retried here
// (`retry_on_failure`), then the exporter throws and the runtime hands the lease back to the queue,
// which retries it with backoff — across a gateway outage and across our own restart.
//
// Exactly once at the gateway: ids are derived from what we stored (./encode.ts), so a re-send
// after a timeout, a crash or a split lease carries the same idempotency key and is deduplicated.
//
// A permanent refusal (400, 401, 403, 409, 413, …) is not dropped: the exporter throws, the
// runtime splits the lease until the refused job fails alone, and after SERVICE_QUEUE_MAX_ATTEMPTS
// deliveries the queue parks it as dead (listed at GET /v1/admin/dead-jobs, requeueable from there).
import { defineExporter } from '../../pipeline/helpers/exporter.js';
import { otlpHttpConfigSchema, tracesUrl, type OtlpHttpConfig } from './config.js';
import { forwardLease } from '../shared/forward.js';
import { createSender } from './send.js';
import type { ExporterFactory } from '../../pipeline/component.js';

export { otlpHttpConfigSchema, type OtlpHttpConfig } from './config.js';
export { PermanentExportError, RetryableExportError } from './send.js';

export const otlpHttpExporterFactory: ExporterFactory<OtlpHttpConfig> = defineExporter({
  type: 'otlp_http',
  needsStore: false,
  description: 'forwards runs and their executions to another Flakehouse (or any OTLP/HTTP endpoint) as OTLP test spans; acked only once the gateway accepted them',
  configSchema: otlpHttpConfigSchema,
  // It reads each job's batch (after normalize) and its receipt: the `runs` slot.
  requires: ['runs'],
  startExecutions: (_host, cfg, { logger }) => {
    const url = tracesUrl(cfg);
    const sender = createSender(cfg, url, logger);
    logger.info({ url, compression: cfg.compression }, 'otlp_http: forwarding to the gateway');
    return {
      // The lease's sink is not used: a forward is keyed by the jobs, not the lease (./forward.ts).
      async exportBatch(batch) {
        await forwardLease('otlp_http', batch, cfg.max_request_bytes, async (body) => {
          const answer = await sender.send(body);
          return answer.includes('"partialSuccess"') ? answer.slice(0, 2000) : null;
        }, logger);
      },
    };
  },
});

/** The Collector's name for the same exporter. */
export const otlphttpExporterFactory: ExporterFactory<OtlpHttpConfig> = { ...otlpHttpExporterFactory, type: 'otlphttp' };
