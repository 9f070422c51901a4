// What OTLP/HTTP and OTLP/gRPC share once a request is decoded: its batches (one per trace part),
// the spans refused one by one (partial success), and how a refusal of a batch value names the
// trace and span it came from. One mapping, so both protocols store the same runs.
import { z } from 'zod';
import type { IngestBatch } from '../../../client/src/contract/batch.js';
import type { UnstorableError } from '../../../client/src/contract/storable.js';
import type { ErrorIssue } from '../../errors/catalogue.js';
import type { PartialSuccess } from '../../otlp/proto.js';
import type { OtlpTraceRequest, RejectedSpan } from './decode.js';
import { mapOtlpToBatches } from './map.js';

/** The attributes a batch field is mapped from (map.ts), named in refusals. */
const SOURCE_ATTRIBUTES: Record<string, string> = {
  'resource.prNumber': 'vcs.change.id or vcs.pr_number',
  'resource.shardIndex': 'test.shard.index',
  'resource.shardTotal': 'test.shard.total',
  attempt: 'test.attempt',
  params: 'test.params',
};

/** Rejections named in a partial success's message; the count covers them all. */
const MAX_NAMED_REJECTIONS = 5;

export type { PartialSuccess };

/**
 * OTLP partial success (ExportTracePartialSuccess in its JSON form): how many spans were refused
 * and why, the first few by path. Absent when every span was taken, as the spec asks.
 */
export function partialSuccessOf(rejected: readonly RejectedSpan[]): PartialSuccess | undefined {
  if (rejected.length === 0) return undefined;
  const named = rejected.slice(0, MAX_NAMED_REJECTIONS).map((r) => `${r.path}: ${r.message}`);
  const more = rejected.length > MAX_NAMED_REJECTIONS ? `; and ${rejected.length - MAX_NAMED_REJECTIONS} more` : '';
  return {
    rejectedSpans: rejected.length,
    errorMessage: `${rejected.length} span${rejected.length === 1 ? '' : 's'} rejected: ${named.join('; ')}${more}`,
  };
}

export const partialSuccessSchema = z.object({ rejectedSpans: z.number().int(), errorMessage: z.string() });

/** A decoded request as batches to enqueue, and the partial success to answer with (if any span was refused). */
export function batchesOfRequest(req: OtlpTraceRequest, now = Date.now()): { batches: IngestBatch[]; partialSuccess: PartialSuccess | undefined } {
  const mapped = mapOtlpToBatches(req, { now });
  return { batches: mapped.batches, partialSuccess: partialSuccessOf([...req.rejected, ...mapped.rejected]) };
}

/** The batch path (`executions.2.attempt`) is the mapped run; the issue says which trace and span it came from. */
export function otlpUnstorableIssue(err: UnstorableError, batch: IngestBatch): ErrorIssue {
  const exec = /^executions\.(\d+)\./.exec(err.path);
  const spanId = exec ? batch.executions[Number(exec[1])]?.spanId : undefined;
  const from = spanId ? `span ${spanId} of trace ${batch.run.traceId ?? ''}` : `trace ${batch.run.traceId ?? ''}`;
  const field = err.path.slice(err.path.lastIndexOf('.') + 1);
  const attr = SOURCE_ATTRIBUTES[exec ? field : err.path];
  return { path: err.path, message: `${err.reason} (in ${from}${attr ? `, attribute ${attr}` : ''})` };
}
