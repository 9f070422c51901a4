// What every receiver does with a decoded batch: admission (processors' door checks such as the
// memory_limiter's, then queue depth), then the durable enqueue, unless its key is stored already,
// behind the storage check.
import type { IngestBatch, IngestSource } from '../../client/src/contract/batch.js';
import type { AdmissionCheck } from '../pipeline/component.js';
import { isOutOfSpace } from '../domain/storage-errors.js';
import type { EnqueueResult, NewJob, Queue } from '../queue/types.js';
import { errors } from '../errors/catalogue.js';
import type { StorageGuard } from './storage-guard.js';

/**
 * The queue slots one request holds from the door until its jobs are enqueued: counted with the
 * queue's depth, so requests in flight cannot all pass a check that only some of them fit.
 */
export class IngestAdmission {
  private held = 0;

  constructor(private readonly service: IngestService) {}

  /** Holds `total` slots in all (one was taken at the door); throws 503 (or 413) when they do not fit. */
  need(total: number): void {
    if (total <= this.held) return;
    this.service.take(total - this.held);
    this.held = total;
  }

  release(n = 1): void {
    const k = Math.min(n, this.held);
    this.held -= k;
    this.service.giveBack(k);
  }

  /** Releases what is still held (the request failed before enqueueing everything). */
  close(): void {
    this.release(this.held);
  }
}

export class IngestService {
  /** Slots held by requests between the door and the end of their enqueue. */
  private reserved = 0;
  /** Processors' door checks (memory_limiter), added by the runtime that builds the receivers. */
  private readonly checks: AdmissionCheck[] = [];

  constructor(
    private readonly queue: Queue,
    private readonly maxDepth: number,
    private readonly storage?: StorageGuard,
  ) {}

  /** A processor's door check (RuntimeOptions.admission): consulted by every admit() after it. */
  addCheck(check: AdmissionCheck): void {
    this.checks.push(check);
  }

  /**
   * At the door, synchronously, before any await: 503 memory_limited while a door check refuses
   * (the memory_limiter above its soft limit), before a queue slot is taken; 503 when pending + in-flight jobs + slots held
   * by requests on their way in reach the depth (0 disables the limit); else the request holds one
   * slot until its enqueue settles. Storage is checked later, per batch (accept): a replay of a
   * stored key is answered even while storage is full, and only its key tells it apart.
   */
  admit(): IngestAdmission {
    if (this.checks.length > 0) {
      const now = Date.now();
      for (const check of this.checks) {
        const refusal = check.refuse(now);
        if (refusal) throw errors.memoryLimited(refusal.retryAfterSec);
      }
    }
    const admission = new IngestAdmission(this);
    admission.need(1);
    return admission;
  }

  /** @internal IngestAdmission's side of the count. */
  take(n: number): void {
    if (this.maxDepth <= 0) return void (this.reserved += n);
    // A request that alone needs more slots than the queue has would be refused forever.
    if (n > this.maxDepth) {
      throw errors.payloadTooLarge(
        `this request becomes ${n} jobs and the queue holds at most ${this.maxDepth} (SERVICE_MAX_QUEUE_DEPTH); send it in smaller requests`,
      );
    }
    if (this.queue.depth() + this.reserved + n > this.maxDepth) throw errors.backpressure();
    this.reserved += n;
  }

  /** @internal */
  giveBack(n: number): void {
    this.reserved -= n;
  }

  /**
   * Resolves once the job is durable on disk; a replayed idempotency key returns the first receipt
   * (409 when that job is dead), also while storage is full: it writes nothing. A new batch meets
   * the storage check (507 while full) and, out of space, 507. Releases one of `admission`'s slots
   * when the enqueue settles (the job is then counted in the queue's depth, or was never added).
   */
  async accept(projectId: string, source: IngestSource, batch: IngestBatch, admission?: IngestAdmission): Promise<EnqueueResult> {
    let result: EnqueueResult;
    try {
      result = (await this.queue.accepted(projectId, batch.idempotencyKey)) ?? (await this.write({ projectId, source, batch }));
    } finally {
      admission?.release(1);
    }
    if (result.dead) throw errors.deadLetter(result.receiptId);
    return result;
  }

  /**
   * A batch whose key was not stored: refused while storage is full. The check comes only here, so
   * a replay never takes the one write per interval that tests whether space came back.
   */
  private async write(job: NewJob): Promise<EnqueueResult> {
    this.storage?.check();
    let result: EnqueueResult;
    try {
      result = await this.queue.enqueue(job);
    } catch (err) {
      if (!isOutOfSpace(err)) throw err;
      this.storage?.writeFailed(err);
      throw errors.insufficientStorage(err instanceof Error ? err.message : String(err));
    }
    if (!result.deduplicated) this.storage?.writeSucceeded();
    return result;
  }
}
