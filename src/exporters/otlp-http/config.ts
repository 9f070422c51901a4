// The `otlp_http` exporter's configuration, in the OpenTelemetry Collector's otlphttp shape so a
// Collector user's block reads the same here. Durations take the Collector's forms (`10s`,
// `500ms`, `5m`) or a number of milliseconds.
import { z } from 'zod';
import { forwardingFields } from '../shared/forwarding-config.js';

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

/** Where requests go. */
export function tracesUrl(cfg: Pick<OtlpHttpConfig, 'endpoint' | 'traces_endpoint'>): string {
  return cfg.traces_endpoint ?? `${cfg.endpoint.replace(/\/+$/, '')}/v1/traces`;
}
