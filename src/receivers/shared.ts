// What the three ingest receivers share: one route shape (token scope ingest, backpressure,
// decode → batches → durable enqueue → 202 with the receipt).
import { z } from 'zod';
import type { IngestBatch, IngestSource } from '../domain/batch.js';
import type { Host, Receiver } from '../pipeline/component.js';
import { defineRoute, type RouteContext } from '../api/route.js';
import { errors, type ErrorIssue } from '../api/errors.js';
import { sanitizeBatch, UnstorableError } from '../domain/storable.js';
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
  /**
   * The issue for a batch value the store cannot take, when the batch path alone would not tell
   * the sender where it came from (JUnit: which testcase; OTLP: which trace and span).
   */
  unstorableIssue?(err: UnstorableError, batch: IngestBatch): ErrorIssue;
}

/**
 * Every batch of a request is checked (and its strings normalised) before any is enqueued: a
 * request is refused whole or accepted whole, and nothing accepted can fail in the worker for its
 * values (src/domain/storable.ts).
 */
export function checkStorable(batches: readonly IngestBatch[], spec: Pick<IngestRouteSpec, 'unstorableIssue'> = {}): void {
  for (const b of batches) {
    try {
      sanitizeBatch(b);
    } catch (err) {
      if (!(err instanceof UnstorableError)) throw err;
      const issue = spec.unstorableIssue?.(err, b) ?? { path: err.path, message: err.reason };
      throw errors.invalidPayload([issue], `${issue.path}: ${issue.message}`);
    }
  }
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
      const http = host.http;
      const ingest = host.ingest;
      if (!http || !ingest) return; // worker-only role: nothing to serve
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
          const { batches, answer } = await decodeGuarded(spec, ctx.body, ctx);
          const projectId = ctx.principal!.projectId;
          const receipts = [];
          // Batches never offered to `accept` are counted refused here (otelcol_receiver_refused_spans);
          // those offered are counted by the runtime's wrapper of `ingest` (telemetry/component-stats.ts).
          let offered = 0;
          try {
            checkStorable(batches, spec);
            // A request that becomes several jobs holds a slot for each before the first is enqueued.
            ctx.admission?.need(batches.length);
            for (const b of batches) {
              offered++;
              receipts.push(await ingest.accept(projectId, spec.source, b, ctx.admission));
            }
          } catch (err) {
            countRefusedBeforeAccept(ingest, batches.slice(offered), 'http');
            throw err;
          }
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
