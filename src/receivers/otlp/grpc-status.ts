// How an ingest refusal (the API's ApiError, the same the HTTP routes answer with) becomes a gRPC
// status, as the OTLP spec maps them: a client retries RESOURCE_EXHAUSTED only when the status
// carries RetryInfo, so only the refusals that say "retry later" (429, 503, 507) carry it; a
// message over the size caps (413) is RESOURCE_EXHAUSTED without it, final.
import type { ApiError } from '../../errors/catalogue.js';
import { retryStatusDetails } from '../../otlp/grpc-service.js';

/** The gRPC status codes this receiver answers with (grpc/doc/statuscodes.md). */
export const GrpcCode = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export interface GrpcStatus {
  code: number;
  details: string;
  /** google.rpc.Status with RetryInfo (`grpc-status-details-bin`), on the refusals a retry can help. */
  statusDetails?: Buffer;
}

/** The HTTP statuses whose Retry-After becomes RetryInfo; the rest are final. */
const RETRY_LATER = new Set([429, 503, 507]);

function codeOf(err: ApiError): number {
  switch (err.statusCode) {
    case 400:
      return GrpcCode.INVALID_ARGUMENT;
    case 415:
      // gRPC's word for a message compressed with an encoding the server does not take.
      return err.extra.body?.contentEncoding !== undefined ? GrpcCode.UNIMPLEMENTED : GrpcCode.INVALID_ARGUMENT;
    case 401:
      return GrpcCode.UNAUTHENTICATED;
    case 403:
      return GrpcCode.PERMISSION_DENIED;
    case 408:
      // The message did not arrive within SERVICE_REQUEST_TIMEOUT_MS; OTLP exporters retry it.
      return GrpcCode.DEADLINE_EXCEEDED;
    case 409:
      // A replayed key whose job was dead-lettered: sending it again will not help.
      return GrpcCode.FAILED_PRECONDITION;
    case 413:
    case 429:
    case 503:
    case 507:
      return GrpcCode.RESOURCE_EXHAUSTED;
    default:
      return GrpcCode.INTERNAL;
  }
}

/** The status for an ApiError; its code and message (and first issues) become the status details. */
export function grpcStatusOf(err: ApiError): GrpcStatus {
  const code = codeOf(err);
  const issues = err.extra.issues?.slice(0, 5).map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)) ?? [];
  // The issue usually is the message already (`path: message`); repeating it says nothing new.
  const extra = issues.filter((i) => !err.message.includes(i));
  const details = `${err.code}: ${[err.message, ...extra].join('; ')}`;
  if (!RETRY_LATER.has(err.statusCode)) return { code, details };
  const retryAfter = Number(err.extra.headers?.['retry-after'] ?? 1);
  return { code, details, statusDetails: retryStatusDetails(code, details, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 1) };
}

/**
 * A call whose message was still arriving when shutdown's drain ran out (SHUTDOWN_DRAIN_MS, as
 * HTTP's 503 not_ready): UNAVAILABLE, which OTLP exporters retry, with RetryInfo.
 */
export function grpcShuttingDown(): GrpcStatus {
  const details = 'not_ready: the server is shutting down; send the request again';
  return { code: GrpcCode.UNAVAILABLE, details, statusDetails: retryStatusDetails(GrpcCode.UNAVAILABLE, details, 5) };
}

/** Anything else is our fault: INTERNAL, without the internals (they go to the log). */
export function grpcInternalError(): GrpcStatus {
  return { code: GrpcCode.INTERNAL, details: 'internal error' };
}
