// The `otlp_http` exporter's configuration, in the OpenTelemetry Collector's otlphttp shape so a
// Collector user's block reads the same here. Durations take the Collector's forms (`10s`,
// `500ms`, `5m`) or a number of milliseconds.
import { z } from 'zod';

const DURATION_RE = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$/;
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `10s`, `250ms`, `5m`, `1h`, or a number of milliseconds; 0 allowed (`max_elapsed_time: 0` is "no limit"). */
export const durationMs = z.union([
  z.number().nonnegative(),
  z.string().transform((text, ctx) => {
    const m = DURATION_RE.exec(text);
    if (!m) {
      ctx.addIssue({ code: 'custom', message: `not a duration: ${JSON.stringify(text)} (e.g. 10s, 500ms, 5m)` });
      return z.NEVER;
    }
    return Math.round(Number(m[1]) * UNIT_MS[m[2]!]!);
  }),
]);

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

export const otlpHttpConfigSchema = z
  .object({
    /** Base URL of the gateway; requests go to `<endpoint>/v1/traces` unless `traces_endpoint` says otherwise. */
    endpoint: z.string().url(),
    /** The full traces URL, as the Collector's `traces_endpoint` (overrides `endpoint` + `/v1/traces`). */
    traces_endpoint: z.string().url().optional(),
    ...forwardingFields,
  })
  .strict();

export type OtlpHttpConfig = z.infer<typeof otlpHttpConfigSchema>;
export type RetryConfig = z.infer<typeof retrySchema>;

/** Where requests go. */
export function tracesUrl(cfg: Pick<OtlpHttpConfig, 'endpoint' | 'traces_endpoint'>): string {
  return cfg.traces_endpoint ?? `${cfg.endpoint.replace(/\/+$/, '')}/v1/traces`;
}
