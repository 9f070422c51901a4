// The receipts KV: (project, idempotency key) → the receipt enqueue answered, whether the job is
// parked as dead, and the generation of the key (bumped when a dead job is dropped, so the same
// batch sent again is published under a new msgID the stream's duplicate window does not drop).
import type { KV } from 'nats';
import type { EnqueueResult } from '../types.js';
import { idempotencyHash } from './ids.js';
import { kvGetJson, kvPutJson } from './streams.js';

export interface ReceiptRecord {
  receiptId: string;
  acceptedExecutions: number;
  /** Jobs-stream seq of the job's current message. */
  seq: number;
  gen: number;
  dead?: true;
  /** Dropped: the key is free again (enqueue publishes a new job with gen + 1). */
  released?: true;
}

export class Receipts {
  constructor(private readonly kv: KV) {}

  static key(projectId: string, idempotencyKey: string): string {
    return idempotencyHash(projectId, idempotencyKey);
  }

  static msgId(key: string, gen: number): string {
    return gen === 0 ? key : `${key}:${gen}`;
  }

  get(key: string): Promise<ReceiptRecord | undefined> {
    return kvGetJson<ReceiptRecord>(this.kv, key);
  }

  put(key: string, rec: ReceiptRecord): Promise<void> {
    return kvPutJson(this.kv, key, rec);
  }

  async update(key: string, change: (rec: ReceiptRecord) => ReceiptRecord): Promise<void> {
    const rec = await this.get(key);
    if (rec) await this.put(key, change(rec));
  }

  /** What enqueue answers for a stored key; undefined when the key is free. */
  static answer(rec: ReceiptRecord | undefined): EnqueueResult | undefined {
    if (!rec || rec.released) return undefined;
    return { receiptId: rec.receiptId, acceptedExecutions: rec.acceptedExecutions, deduplicated: true, ...(rec.dead ? { dead: true as const } : {}) };
  }
}
