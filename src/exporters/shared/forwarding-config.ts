// The keys every forwarding exporter takes (otlp_http, otlp_grpc): shared pieces of exporters, not
// a component (no exporter imports another: .oxlintrc.json, test/unit/import-boundaries.test.ts).
import { z } from 'zod';
import { durationMs } from '../../config/duration.js';

const retrySchema = z
  .object({
    enabled: z.boolean().default(true),
    // The Collector's defaults (configretry.NewDefaultBackOffConfig).
    initial_interval: durationMs.default(5_000),
    max_interval: durationMs.default(30_000),
    /** 0: retry in the exporter without limit. Keep it (plus `timeout`) under SERVICE_QUEUE_VISIBILITY_MS. */
    max_elapsed_time: durationMs.default(300_000),
    multiplier: z.number().min(1).default(1.5),
    randomization_factor: z.number().min(0).max(1).default(0.5),
  })
  .strict();

/**
 * The keys every forwarding exporter takes (otlp_http, otlp_grpc), as the Collector's exporters
 * share confighttp/configgrpc's headers, compression, timeout and exporterhelper's retry and queue.
 */
export const forwardingFields = {
  /** HTTP headers, or gRPC metadata (`authorization: "Bearer …"`). */
  headers: z.record(z.string(), z.string()).default({}),
  compression: z.enum(['gzip', 'none']).default('gzip'),
  timeout: durationMs.default(10_000),
  retry_on_failure: retrySchema.default({
    enabled: true,
    initial_interval: 5_000,
    max_interval: 30_000,
    max_elapsed_time: 300_000,
    multiplier: 1.5,
    randomization_factor: 0.5,
  }),
  // Accepted for the Collector's shape and otherwise ignored: the durable lmdb queue in front of
  // the pipeline is the sending queue. A lease is acked only once the gateway accepted every
  // request of it, so a failed send is retried from our queue, across a gateway outage and
  // across our own restart.
  sending_queue: z
    .object({ enabled: z.boolean().optional(), num_consumers: z.number().int().optional(), queue_size: z.number().int().optional(), storage: z.string().optional() })
    .strict()
    .optional(),
  /** Encoded bytes per request before another is started (the gateway takes 8 MiB bodies / messages). */
  max_request_bytes: z.number().int().min(1024).default(4 * 1024 * 1024),
};

export type RetryConfig = z.infer<typeof retrySchema>;
