// How an ingest refusal (the API's ApiError, the same the HTTP routes answer with) becomes a gRPC
// status, as the OTLP spec maps them: a client retries RESOURCE_EXHAUSTED only when the status
// carries RetryInfo, so only the refusals that say "retry later" (429, 503, 507) carry it.
import { Metadata, status as GrpcStatus, type ServerErrorResponse } from '@grpc/grpc-js';
import type { ApiError } from '../../errors.js';
import { retryStatusDetails } from '../../otlp/grpc-service.js';

/** The HTTP statuses whose Retry-After becomes RetryInfo; the rest are final. */
const RETRY_LATER = new Set([429, 503, 507]);

function codeOf(statusCode: number): GrpcStatus {
  switch (statusCode) {
    case 400:
    case 415:
      return GrpcStatus.INVALID_ARGUMENT;
    case 401:
      return GrpcStatus.UNAUTHENTICATED;
    case 403:
      return GrpcStatus.PERMISSION_DENIED;
    case 409:
      // A replayed key whose job was dead-lettered: sending it again will not help.
      return GrpcStatus.FAILED_PRECONDITION;
    case 413:
    case 429:
    case 503:
    case 507:
      return GrpcStatus.RESOURCE_EXHAUSTED;
    default:
      return GrpcStatus.INTERNAL;
  }
}

/** The status for an ApiError; its message (and first issues) become the status details. */
export function grpcErrorOf(err: ApiError): ServerErrorResponse {
  const code = codeOf(err.statusCode);
  const issues = err.extra.issues?.slice(0, 5).map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)) ?? [];
  // The issue usually is the message already (`path: message`); repeating it says nothing new.
  const extra = issues.filter((i) => !err.message.includes(i));
  const details = `${err.code}: ${[err.message, ...extra].join('; ')}`;
  const metadata = new Metadata();
  if (RETRY_LATER.has(err.statusCode)) {
    const retryAfter = Number(err.extra.headers?.['retry-after'] ?? 1);
    metadata.set('grpc-status-details-bin', retryStatusDetails(code, details, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 1));
  }
  return Object.assign(new Error(details), { code, details, metadata });
}

/** Anything else is our fault: INTERNAL, without the internals (they go to the log). */
export function grpcInternalError(): ServerErrorResponse {
  return Object.assign(new Error('internal error'), { code: GrpcStatus.INTERNAL, details: 'internal error' });
}
