// The last steps of every ingest request, over HTTP (src/receivers/shared.ts) or a receiver's own
// listener (OTLP/gRPC): every batch checked storable, a queue slot held for each, then each batch
// handed to the ingest port (IngestService.accept: the durable enqueue) in order.
import type { IngestBatch, IngestSource } from '../../client/src/contract/batch.js';
import { sanitizeBatch, UnstorableError } from '../../client/src/contract/storable.js';
import type { EnqueueResult } from '../queue/types.js';
import type { IngestPort, IngestSlots } from '../pipeline/component.js';
import { errors, type ErrorIssue } from '../errors/catalogue.js';

/**
 * The issue for a batch value the store cannot take, when the batch path alone would not tell the
 * sender where it came from (JUnit: which testcase; OTLP: which trace and span).
 */
export type UnstorableIssue = (err: UnstorableError, batch: IngestBatch) => ErrorIssue;

/**
 * Every batch of a request is checked (and its strings normalised) before any is enqueued: a
 * request is refused whole or accepted whole, and nothing accepted can fail in the worker for its
 * values (client/src/contract/storable.ts).
 */
export function checkStorable(batches: readonly IngestBatch[], spec: { unstorableIssue?: UnstorableIssue | undefined } = {}): void {
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

export interface EnqueueRequest {
  projectId: string;
  source: IngestSource;
  batches: readonly IngestBatch[];
  /** The queue slots the request took at the door: one per batch is held before the first is enqueued. */
  admission?: IngestSlots | undefined;
  unstorableIssue?: UnstorableIssue | undefined;
  /** Called when the request fails with the batches never offered to `accept` (the runtime counts those offered). */
  refused?(batches: readonly IngestBatch[]): void;
}

/**
 * Checks every batch storable, holds a queue slot for each (503/413 when they do not fit), then
 * enqueues them one after the other; resolves with their receipts once all are durable. Throws the
 * catalogue's errors (src/errors/catalogue.ts).
 */
export async function enqueueRequest(ingest: IngestPort, req: EnqueueRequest): Promise<EnqueueResult[]> {
  const receipts: EnqueueResult[] = [];
  let offered = 0;
  try {
    checkStorable(req.batches, req);
    // A request that becomes several jobs holds a slot for each before the first is enqueued.
    req.admission?.need(req.batches.length);
    for (const b of req.batches) {
      offered++;
      receipts.push(await ingest.accept(req.projectId, req.source, b, req.admission));
    }
  } catch (err) {
    req.refused?.(req.batches.slice(offered));
    throw err;
  }
  return receipts;
}
