// The `otlp` receiver's configuration, in the OpenTelemetry Collector's shape:
//   protocols: { grpc: { endpoint: 127.0.0.1:4317 }, http: {} }
// Absent `protocols` means OTLP/HTTP only, as before gRPC existed (pipelines/default.yaml keeps
// working); present, only the protocols it names are served, as in the Collector.
import { z } from 'zod';

/**
 * SERVICE_HOST defaults to loopback, so the gRPC default does too: exposing port 4317 on every
 * interface is the operator's choice (`endpoint: 0.0.0.0:4317`), not a side effect of `grpc: {}`.
 */
export const DEFAULT_GRPC_ENDPOINT = '127.0.0.1:4317';

export interface Endpoint {
  /** Without brackets for IPv6 (`::1`). */
  host: string;
  /** 0 takes a free port (tests); the bound one is announced through Host.listeners. */
  port: number;
}

// host:port, the host a name, an IPv4 address, or a bracketed IPv6 address ([::]:4317).
const ENDPOINT_RE = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/;

export function parseEndpoint(value: string): Endpoint | undefined {
  const m = ENDPOINT_RE.exec(value);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65535) return undefined;
  return { host: m[1] ?? m[2]!, port };
}

const endpointSchema = z
  .string()
  .refine((v) => parseEndpoint(v) !== undefined, { message: 'expected host:port, e.g. 127.0.0.1:4317 or [::1]:4317 (port 0-65535)' });

// A YAML key with no value (`grpc:`) is null: the Collector reads it as "enabled, defaults".
const orEmpty = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === null ? {} : v), schema);

const grpcSchema = z.object({ endpoint: endpointSchema.default(DEFAULT_GRPC_ENDPOINT) }).strict();
// OTLP/HTTP is served on the daemon's HTTP listener (SERVICE_HOST:SERVICE_PORT, path /v1/traces): nothing to set.
const httpSchema = z.object({}).strict();

export const otlpConfigSchema = z
  .object({
    protocols: orEmpty(
      z
        .object({ grpc: orEmpty(grpcSchema).optional(), http: orEmpty(httpSchema).optional() })
        .strict()
        .refine((p) => p.grpc !== undefined || p.http !== undefined, { message: 'enable at least one of grpc, http' }),
    ).optional(),
  })
  .strict();

export type OtlpConfig = z.infer<typeof otlpConfigSchema>;

/** Which listeners a config asks for. */
export function enabledProtocols(config: OtlpConfig): { http: boolean; grpc: Endpoint | undefined } {
  if (!config.protocols) return { http: true, grpc: undefined };
  const grpc = config.protocols.grpc ? parseEndpoint(config.protocols.grpc.endpoint) : undefined;
  return { http: config.protocols.http !== undefined, grpc };
}
