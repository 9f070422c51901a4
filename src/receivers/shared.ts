// What the three ingest receivers share: one route shape (token scope ingest, backpressure,
// decode → batches → durable enqueue → 202 with the receipt).
import { z } from 'zod';
import type { IngestBatch, IngestSource } from '../domain/batch.js';
import type { Host, Receiver } from '../pipeline/component.js';
import type { RouteContext } from '../api/route.js';

export const ingestReceiptSchema = z.object({
  receiptId: z.string().nullable(),
  acceptedExecutions: z.number().int(),
  deduplicated: z.boolean(),
}).meta({ id: 'IngestReceipt' });
export type IngestReceipt = z.infer<typeof ingestReceiptSchema>;

export interface IngestRouteSpec {
  url: string;
  summary: string;
  source: IngestSource;
  /** For documentation; validation happens in `decode`, after the backpressure check. */
  body?: z.ZodType;
  consumes?: string[];
  response: z.ZodType;
  /** Turns the decoded request into batches, or throws an ApiError (400/415). */
  decode(body: unknown, ctx: RouteContext<unknown, unknown, unknown>): Promise<IngestBatch[]>;
}

export function ingestRoute(spec: IngestRouteSpec): Receiver {
  return {
    async start(host: Host) {
      const http = host.http;
      const ingest = host.ingest;
      if (!http || !ingest) return; // worker-only role: nothing to serve
      http.add({
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
          const batches = await spec.decode(ctx.body, ctx);
          const projectId = ctx.principal!.projectId;
          const receipts = [];
          for (const b of batches) receipts.push(await ingest.accept(projectId, spec.source, b));
          const first = receipts[0];
          return {
            receiptId: first?.receiptId ?? null,
            acceptedExecutions: receipts.reduce((n, r) => n + r.acceptedExecutions, 0),
            deduplicated: receipts.length > 0 && receipts.every((r) => r.deduplicated),
            ...(receipts.length > 1 ? { receipts } : {}),
          };
        },
      });
    },
    async shutdown() {},
  };
}
