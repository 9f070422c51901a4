// `otlp` receiver: POST /v1/traces, OTLP/HTTP with protobuf or JSON bodies, gzip allowed
// (docs/contract.md §4). A run is one trace; a request may carry several.
import { z } from 'zod';
import type { ReceiverFactory } from '../../pipeline/component.js';
import { errors } from '../../api/errors.js';
import { ingestReceiptSchema, ingestRoute } from '../shared.js';
import { decodeOtlpJson, decodeOtlpProtobuf, OtlpDecodeError, type OtlpTraceRequest, type RejectedSpan } from './decode.js';
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

/**
 * OTLP partial success (ExportTracePartialSuccess in its JSON form): how many spans were refused
 * and why, the first few by path. Absent when every span was taken, as the spec asks.
 */
export function partialSuccessOf(rejected: readonly RejectedSpan[]): { rejectedSpans: number; errorMessage: string } | undefined {
  if (rejected.length === 0) return undefined;
  const named = rejected.slice(0, MAX_NAMED_REJECTIONS).map((r) => `${r.path}: ${r.message}`);
  const more = rejected.length > MAX_NAMED_REJECTIONS ? `; and ${rejected.length - MAX_NAMED_REJECTIONS} more` : '';
  return {
    rejectedSpans: rejected.length,
    errorMessage: `${rejected.length} span${rejected.length === 1 ? '' : 's'} rejected: ${named.join('; ')}${more}`,
  };
}

export const partialSuccessSchema = z.object({ rejectedSpans: z.number().int(), errorMessage: z.string() });

const PROTOBUF_TYPES = ['application/x-protobuf', 'application/protobuf', 'application/octet-stream'];

export const otlpReceiverFactory: ReceiverFactory<Record<string, never>> = {
  kind: 'receiver',
  type: 'otlp',
  description: 'POST /v1/traces: OTLP/HTTP traces (protobuf or JSON, gzip)',
  signals: ['executions'],
  configSchema: z.object({}).strict(),
  create: () =>
    ingestRoute({
      url: '/v1/traces',
      summary: 'Ingest test runs as OTLP/HTTP traces',
      source: 'otlp',
      consumes: ['application/x-protobuf', 'application/json'],
      body: z.object({ resourceSpans: z.array(z.unknown()).optional() }),
      response: ingestReceiptSchema.extend({
        receipts: z.array(ingestReceiptSchema).optional(),
        // Spans refused one by one (invalid ids, an unknown test status, ending before starting).
        partialSuccess: partialSuccessSchema.optional(),
      }),
      async decode(body, ctx) {
        const contentType = String(ctx.request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        let req: OtlpTraceRequest;
        try {
          if (PROTOBUF_TYPES.includes(contentType)) {
            if (!Buffer.isBuffer(body)) throw new OtlpDecodeError('expected a protobuf body');
            req = decodeOtlpProtobuf(body);
          } else if (contentType === 'application/json') {
            req = decodeOtlpJson(body);
          } else {
            throw errors.unsupportedContentType(contentType, ['application/x-protobuf', 'application/json']);
          }
        } catch (err) {
          if (err instanceof OtlpDecodeError) {
            throw errors.invalidPayload([{ path: err.path ?? '', message: err.message }], `invalid OTLP request: ${err.message}`);
          }
          throw err;
        }
        const mapped = mapOtlpToBatches(req, { now: Date.now() });
        const partialSuccess = partialSuccessOf([...req.rejected, ...mapped.rejected]);
        return { batches: mapped.batches, ...(partialSuccess ? { answer: { partialSuccess } } : {}) };
      },
      unstorableIssue(err, batch) {
        // The batch path (`executions.2.attempt`) is the mapped run; say which trace and span it came from.
        const exec = /^executions\.(\d+)\./.exec(err.path);
        const spanId = exec ? batch.executions[Number(exec[1])]?.spanId : undefined;
        const from = spanId ? `span ${spanId} of trace ${batch.run.traceId ?? ''}` : `trace ${batch.run.traceId ?? ''}`;
        const field = err.path.slice(err.path.lastIndexOf('.') + 1);
        const attr = SOURCE_ATTRIBUTES[exec ? field : err.path];
        return { path: err.path, message: `${err.reason} (in ${from}${attr ? `, attribute ${attr}` : ''})` };
      },
    }),
};

