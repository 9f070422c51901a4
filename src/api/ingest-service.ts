// What every receiver does with a decoded batch: backpressure, then the durable enqueue.
import type { IngestBatch, IngestSource } from '../domain/batch.js';
import type { EnqueueResult, Queue } from '../queue/types.js';
import { errors } from './errors.js';

export class IngestService {
  constructor(
    private readonly queue: Queue,
    private readonly maxDepth: number,
  ) {}

  /** Pending + in-flight jobs at the limit → 503 (0 disables the limit). */
  checkBackpressure(): void {
    if (this.maxDepth > 0 && this.queue.depth() >= this.maxDepth) throw errors.backpressure();
  }

  /** Resolves once the job is durable on disk; a replayed idempotency key returns the first receipt (409 when that job is dead). */
  async accept(projectId: string, source: IngestSource, batch: IngestBatch): Promise<EnqueueResult> {
    const result = await this.queue.enqueue({ projectId, source, batch });
    if (result.dead) throw errors.deadLetter(result.receiptId);
    return result;
  }
}
