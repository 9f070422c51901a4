// One lease forwarded to the gateway, whatever the transport (otlp_http, otlp_grpc): packed into
// requests, each sent in turn; a gateway's partial success is logged, a permanent refusal logged
// with the lease's receipts and thrown (the runtime splits the lease until the refused job fails
// alone, and the queue dead-letters it after SERVICE_QUEUE_MAX_ATTEMPTS).
//
// A forward does not mark the lease as written (the lease's sink, src/pipeline/lease-sink.ts
// `wrote`), even once the gateway accepted some of its requests. Nothing it sends is keyed by the
// lease: trace and span ids, and so the gateway's idempotency keys, derive from each job alone
// (./encode.ts), and a request never holds two parts of one trace, so the keys do not depend on how
// jobs are packed either. A lease frozen in this delivery that fails after a partial forward can
// therefore be unfrozen and split like one that wrote nothing: the halves re-send the same spans
// under the same keys and the gateway stores them once. Marking it written would keep it whole, so
// a job the gateway refuses for good would take its already-forwarded lease-mates to the dead list
// with it instead of failing alone. (In a pipeline that also stores, the clickhouse exporter's
// writes mark the lease, and it stays whole as it must.)
import type { Logger } from 'pino';
import type { WorkBatch } from '../../pipeline/work-batch.js';
import { packLease } from './encode.js';
import { PermanentExportError } from './retry.js';

/** Sends one request; resolves with what the gateway refused of it (its partial success), or null. */
export type SendRequest = (body: Uint8Array) => Promise<unknown>;

export async function forwardLease(name: string, batch: WorkBatch, maxRequestBytes: number, send: SendRequest, logger: Logger): Promise<void> {
  const requests = packLease(batch.items, maxRequestBytes);
  for (const req of requests) {
    try {
      const partialSuccess = await send(req.body);
      // Spans refused one by one are the gateway's partial success: logged, the rest is stored.
      if (partialSuccess !== null && partialSuccess !== undefined) logger.warn({ lease: batch.leaseId, partialSuccess }, `${name}: gateway refused some spans`);
    } catch (err) {
      if (err instanceof PermanentExportError) {
        logger.error(
          { err, lease: batch.leaseId, jobs: batch.items.map((i) => i.job.receiptId) },
          `${name}: gateway refused a request for good; the lease is split until the refused job fails alone, which is dead-lettered after SERVICE_QUEUE_MAX_ATTEMPTS`,
        );
      }
      throw err;
    }
  }
  logger.debug({ lease: batch.leaseId, requests: requests.length, jobs: batch.items.length }, `${name}: lease forwarded`);
}
