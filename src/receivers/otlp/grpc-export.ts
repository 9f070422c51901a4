// One OTLP/gRPC Export call once its caller passed the door (src/ingest/door.ts: token, scope and
// rate limit from the metadata, a body slot, the size caps while its message was read), in the
// order the HTTP ingest route checks the rest (src/api/route.ts): queue depth and memory → decode →
// storable values → durable enqueue. The answer comes only once every job of the request is on
// disk, as the HTTP route's 202.
import { errors } from '../../errors/catalogue.js';
import type { IngestDoor, IngestPort } from '../../pipeline/component.js';
import { enqueueRequest } from '../../ingest/enqueue.js';
import { decodeOtlpProtobuf, OtlpDecodeError, type OtlpTraceRequest } from './decode.js';
import { batchesOfRequest, otlpUnstorableIssue } from './request.js';
import type { ExportTraceResponse } from '../../otlp/grpc-service.js';

export interface ExportDeps {
  door: IngestDoor;
  ingest: IngestPort;
}

/** Throws the API's errors (ApiError); grpc-status.ts turns them into statuses. `bytes`: the message, inflated. */
export async function exportTraces(bytes: Buffer, projectId: string, deps: ExportDeps): Promise<ExportTraceResponse> {
  const admission = deps.door.admit();
  try {
    // Decode and enqueue in the thread's turns for ingest, as the HTTP ingest route does.
    await deps.door.listener.turns.take();
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
