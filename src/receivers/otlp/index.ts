// `otlp` receiver: OTLP traces over HTTP (POST /v1/traces, protobuf or JSON bodies, gzip allowed)
// and, when `protocols.grpc` is set, over gRPC (TraceService/Export on its own port), docs/contract.md
// §4. A run is one trace; a request may carry several. Both protocols share decode.ts, map.ts and
// request.ts, so they store the same runs.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Host, Receiver, ReceiverFactory } from '../../pipeline/component.js';
import { errors } from '../../errors/catalogue.js';
import { ingestReceiptSchema, ingestRoute } from '../shared.js';
import { decodeOtlpJson, decodeOtlpProtobuf, OtlpDecodeError, type OtlpTraceRequest } from './decode.js';
import { enabledProtocols, otlpConfigSchema, type Endpoint, type OtlpConfig } from './config.js';
import { batchesOfRequest, otlpUnstorableIssue, partialSuccessSchema } from './request.js';

export { partialSuccessOf, partialSuccessSchema } from './request.js';

const PROTOBUF_TYPES = ['application/x-protobuf', 'application/protobuf', 'application/octet-stream'];

export const otlpReceiverFactory: ReceiverFactory<OtlpConfig> = {
  kind: 'receiver',
  type: 'otlp',
  needsStore: false,
  description: 'OTLP traces: POST /v1/traces (OTLP/HTTP protobuf or JSON, gzip); TraceService/Export over gRPC with protocols.grpc',
  signals: ['executions'],
  configSchema: otlpConfigSchema,
  create(config, settings) {
    const { http, grpc } = enabledProtocols(config);
    const parts: Receiver[] = [];
    if (http) parts.push(httpReceiver());
    if (grpc) parts.push(lazyGrpcReceiver(settings.id, grpc, settings.logger));
    return {
      async start(host: Host) {
        for (const p of parts) await p.start(host);
      },
      async shutdown() {
        await Promise.all(parts.map((p) => p.shutdown()));
      },
    };
  },
};

/** The gRPC listener (src/receivers/otlp/grpc.ts), loaded only when `protocols.grpc` is set. */
function lazyGrpcReceiver(id: string, endpoint: Endpoint, logger: Logger): Receiver {
  let receiver: Receiver | undefined;
  return {
    async start(host: Host) {
      const { otlpGrpcReceiver } = await import('./grpc.js');
      receiver = otlpGrpcReceiver(id, endpoint, logger);
      await receiver.start(host);
    },
    async shutdown() {
      await receiver?.shutdown();
    },
  };
}

function httpReceiver(): Receiver {
  return ingestRoute({
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
      const { batches, partialSuccess } = batchesOfRequest(req);
      return { batches, ...(partialSuccess ? { answer: { partialSuccess } } : {}) };
    },
    unstorableIssue: otlpUnstorableIssue,
  });
}

