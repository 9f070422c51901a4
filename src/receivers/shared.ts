// What the three ingest receivers share: one route shape (token scope ingest, backpressure,
// decode → batches → durable enqueue → 202 with the receipt). The door's checks and the enqueue
// are src/ingest's; the route table that runs the route is the API's, reached through the Host.
import { z } from 'zod';
import type { IngestBatch, IngestSource } from '../../client/src/contract/batch.js';
import { errors } from '../errors/catalogue.js';
import { enqueueRequest, type UnstorableIssue } from '../ingest/enqueue.js';
import type { Host, Receiver } from '../pipeline/component.js';
import { defineRoute, type RouteContext } from '../pipeline/route-def.js';
import { countRefusedBeforeAccept } from '../telemetry/component-stats.js';

export const ingestReceiptSchema = z.object({
  receiptId: z.string().nullable(),
  acceptedExecutions: z.number().int(),
  deduplicated: z.boolean(),
}).meta({ id: 'IngestReceipt' });
export type IngestReceipt = z.infer<typeof ingestReceiptSchema>;

/** What a decode returns when the answer says more than the receipts. */
export interface DecodedRequest {
  batches: IngestBatch[];
  answer?: Record<string, unknown>;
}

export interface IngestRouteSpec {
  url: string;
  summary: string;
  source: IngestSource;
  /** For documentation; validation happens in `decode`, after the backpressure check. */
  body?: z.ZodType;
  consumes?: string[];
  response: z.ZodType;
  /** Whether a request that became several jobs answers with each job's receipt (`receipts`); default true. */
  listReceipts?: boolean;
  /**
   * Turns the decoded request into batches, or throws an ApiError (400/415). May add fields to the
   * 202 answer (`answer`: OTLP's partial success, for spans refused one by one).
   */
  decode(body: unknown, ctx: RouteContext<unknown, unknown, unknown>): Promise<IngestBatch[] | DecodedRequest>;
  /** The issue for a batch value the store cannot take (src/ingest/enqueue.ts `UnstorableIssue`). */
  unstorableIssue?: UnstorableIssue;
}

/** A hostile body nested deep enough to exhaust the stack while decoding is the sender's 400, not our 500. */
async function decodeGuarded(spec: IngestRouteSpec, body: unknown, ctx: RouteContext<unknown, unknown, unknown>): Promise<DecodedRequest> {
  try {
    const decoded = await spec.decode(body, ctx);
    return Array.isArray(decoded) ? { batches: decoded } : decoded;
  } catch (err) {
    if (err instanceof RangeError && err.message.includes('call stack')) {
      throw errors.invalidPayload([{ path: '', message: 'nested too deeply' }], 'the request body is nested too deeply');
    }
    throw err;
  }
}

export function ingestRoute(spec: IngestRouteSpec): Receiver {
  return {
    async start(host: Host) {
      if (!host.door) return; // worker-only role: nothing to serve
      const { http, ingest, admission } = host.door;
      http.add(defineRoute({
        method: 'POST',
        url: spec.url,
        summary: spec.summary,
        tags: ['ingest'],
        auth: { kind: 'token', anyOf: ['ingest'] },
        backpressure: true,
        consumes: spec.consumes,
        requestBodyDoc: spec.body,
        response: spec.response,
        successStatus: 202,
        async handler(ctx) {
          // Decode and enqueue in the HTTP thread's turns for ingest, between other requests' events.
          await admission.listener.turns.take();
          const { batches, answer } = await decodeGuarded(spec, ctx.body, ctx);
          // Batches never offered to `accept` are counted refused here (otelcol_receiver_refused_spans);
          // those offered are counted by the runtime's wrapper of `ingest` (telemetry/component-stats.ts).
          const receipts = await enqueueRequest(ingest, {
            projectId: ctx.principal!.projectId,
            source: spec.source,
            batches,
            admission: ctx.admission,
            unstorableIssue: spec.unstorableIssue,
            refused: (notOffered) => countRefusedBeforeAccept(ingest, notOffered, 'http'),
          });
          const first = receipts[0];
          return {
            receiptId: first?.receiptId ?? null,
            acceptedExecutions: receipts.reduce((n, r) => n + r.acceptedExecutions, 0),
            deduplicated: receipts.length > 0 && receipts.every((r) => r.deduplicated),
            ...(receipts.length > 1 && spec.listReceipts !== false ? { receipts } : {}),
            ...answer,
          };
        },
      }));
    },
    async shutdown() {},
  };
}
