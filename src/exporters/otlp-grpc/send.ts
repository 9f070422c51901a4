// Sending one ExportTraceServiceRequest to the gateway's TraceService/Export, with the OTLP spec's
// gRPC retry rules (https://opentelemetry.io/docs/specs/otlp/#failures): CANCELLED,
// DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE and DATA_LOSS are retryable;
// RESOURCE_EXHAUSTED only when the status carries google.rpc.RetryInfo (the server says recovery
// is possible; our receiver adds it for a full queue, a rate limit or a full disk, not for a
// message too large). A RetryInfo delay is honoured as Retry-After is over HTTP. Every other code
// (INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, FAILED_PRECONDITION, INTERNAL, …) is
// permanent for this request. The loop and backoff are the forwarding exporters' (../shared/retry.ts).
import { Client, credentials, Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { EXPORT_PATH, readRetryDelaySec, traceServiceDefinition, type ExportTraceResponse } from '../../otlp/grpc-service.js';
import { errorText, PermanentExportError, withRetry, type Attempt, type Sleep } from '../shared/retry.js';
import type { OtlpGrpcConfig } from './config.js';

const RETRYABLE = new Set<number>([GrpcStatus.CANCELLED, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.ABORTED, GrpcStatus.OUT_OF_RANGE, GrpcStatus.UNAVAILABLE, GrpcStatus.DATA_LOSS]);
/** grpc-js's CompressionAlgorithms: identity 0, gzip 2. */
const COMPRESSION = { none: 0, gzip: 2 } as const;

export interface GrpcSender {
  /** Resolves with the gateway's answer once it accepted the request; throws Permanent/RetryableExportError. */
  send(body: Uint8Array): Promise<ExportTraceResponse>;
  close(): void;
}

/** The RetryInfo delay of a status's `grpc-status-details-bin`, in ms; undefined when there is none. */
export function retryInfoMs(err: Pick<ServiceError, 'metadata'>): number | undefined {
  const details = err.metadata?.get('grpc-status-details-bin')[0];
  if (!Buffer.isBuffer(details)) return undefined;
  try {
    const sec = readRetryDelaySec(details);
    return sec === undefined ? undefined : sec * 1000;
  } catch {
    return undefined; // not a google.rpc.Status: as if absent
  }
}

/** What one failed call means for the retry loop. */
export function classify(err: ServiceError): Exclude<Attempt<never>, { ok: true }> {
  const retryAfterMs = retryInfoMs(err);
  const name = GrpcStatus[err.code] ?? String(err.code);
  const message = `Export: ${name}: ${err.details}`;
  if (RETRYABLE.has(err.code) || (err.code === GrpcStatus.RESOURCE_EXHAUSTED && retryAfterMs !== undefined)) {
    return { ok: false, retryable: true, message, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), cause: err };
  }
  return { ok: false, retryable: false, error: new PermanentExportError(err.code, `${name}: ${err.details}`, 'gRPC') };
}

export function createGrpcSender(cfg: OtlpGrpcConfig, logger: Logger, sleep?: Sleep): GrpcSender {
  // The exporter's retry is the backoff that matters: the channel should not stay in
  // TRANSIENT_FAILURE (failing calls at once) longer than our next attempt after a gateway restart.
  const reconnectMax = Math.max(100, cfg.retry_on_failure.max_interval);
  const client = new Client(cfg.endpoint, credentials.createInsecure(), {
    'grpc.default_compression_algorithm': COMPRESSION[cfg.compression],
    'grpc.initial_reconnect_backoff_ms': Math.min(1000, reconnectMax),
    'grpc.max_reconnect_backoff_ms': reconnectMax,
  });
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(cfg.headers)) metadata.set(k.toLowerCase(), v);
  const def = traceServiceDefinition.Export;

  function attempt(body: Buffer): Promise<Attempt<ExportTraceResponse>> {
    return new Promise((resolve) => {
      client.makeUnaryRequest(EXPORT_PATH, def.requestSerialize, def.responseDeserialize, body, metadata.clone(), { deadline: Date.now() + cfg.timeout }, (err, res) => {
        if (err) resolve(classify(err));
        else resolve({ ok: true, value: (res as ExportTraceResponse | undefined) ?? {} });
      });
    });
  }

  return {
    async send(bytes) {
      const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      return withRetry(
        () => attempt(body).catch((err: unknown) => ({ ok: false, retryable: true, message: `Export: ${errorText(err)}`, cause: err }) as const),
        cfg.retry_on_failure,
        (n, waitMs, reason) => logger.debug({ attempt: n, waitMs, reason }, 'otlp_grpc: send failed, retrying'),
        sleep,
      );
    },
    close() {
      client.close();
    },
  };
}
