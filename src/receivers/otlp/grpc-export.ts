// One OTLP/gRPC Export call, in the order the HTTP ingest route checks (src/api/route.ts): token,
// scope and rate limit → size → queue depth → decode → storable values → durable enqueue. The
// answer comes only once every job of the request is on disk, as the HTTP route's 202.
import type { Metadata } from '@grpc/grpc-js';
import { LIMITS } from '../../domain/batch.js';
import { errors } from '../../errors.js';
import type { IngestDoor, IngestPort } from '../../pipeline/component.js';
import { enqueueRequest } from '../../ingest/enqueue.js';
import { decodeOtlpProtobuf, OtlpDecodeError, type OtlpTraceRequest } from './decode.js';
import { batchesOfRequest, otlpUnstorableIssue } from './request.js';
import type { ExportTraceResponse } from '../../otlp/grpc-service.js';

export interface ExportDeps {
  door: IngestDoor;
  ingest: IngestPort;
}

function firstString(metadata: Metadata, key: string): string | undefined {
  const v = metadata.get(key)[0];
  return typeof v === 'string' ? v : undefined;
}

/** Throws the API's errors (ApiError); grpc-status.ts turns them into statuses. */
export async function exportTraces(bytes: Buffer, metadata: Metadata, deps: ExportDeps): Promise<ExportTraceResponse> {
  const { projectId } = await deps.door.authenticate(firstString(metadata, 'authorization'));
  // HTTP's caps: 16 MiB inflated is grpc-js's max_receive_message_length (it counts the
  // decompressed bytes); 8 MiB on the wire is checked here, where an uncompressed message's
  // bytes are the wire's (a compressed one was under 16 MiB framed, as a gzip body under 8 is).
  const encoding = firstString(metadata, 'grpc-encoding') ?? 'identity';
  if (encoding === 'identity' && bytes.length > LIMITS.bodyBytes) {
    throw errors.payloadTooLarge(`request message exceeds ${LIMITS.bodyBytes} bytes`);
  }
  const admission = deps.door.admit();
  try {
    let req: OtlpTraceRequest;
    try {
      req = decodeOtlpProtobuf(bytes);
    } catch (err) {
      if (err instanceof OtlpDecodeError) {
        throw errors.invalidPayload([{ path: err.path ?? '', message: err.message }], `invalid OTLP request: ${err.message}`);
      }
      throw err;
    }
    const { batches, partialSuccess } = batchesOfRequest(req);
    await enqueueRequest(deps.ingest, { projectId, source: 'otlp', batches, admission, unstorableIssue: otlpUnstorableIssue });
    return partialSuccess ? { partialSuccess } : {};
  } catch (err) {
    // A hostile message nested deep enough to exhaust the stack while mapping is the sender's fault.
    if (err instanceof RangeError && err.message.includes('call stack')) {
      throw errors.invalidPayload([{ path: '', message: 'nested too deeply' }], 'the request is nested too deeply');
    }
    throw err;
  } finally {
    admission.close();
  }
}
