// Receipt ids and idempotency-key hashes of the NATS queue.
import { createHash } from 'node:crypto';

/**
 * The receipt (and job) id of the message stored at `seq` in a jobs stream created at
 * `streamCreatedMs`: UUID-shaped (version 8 layout), deterministic (a duplicate publish, which
 * answers the original seq, yields the original receipt) and sortable (the stream's creation time,
 * then the seq, both big-endian).
 */
export function receiptIdFromSeq(streamCreatedMs: number, seq: number): string {
  const time = Math.max(0, Math.floor(streamCreatedMs)).toString(16).padStart(12, '0').slice(-12);
  // 18 hex digits for the seq: 3 after the version nibble, 3 after the variant nibble, 12 at the end.
  const s = Math.max(0, Math.floor(seq)).toString(16).padStart(18, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-8${s.slice(0, 3)}-8${s.slice(3, 6)}-${s.slice(6, 18)}`;
}

/** The receipts KV key and the base of the publish msgID for (project, idempotency key). */
export function idempotencyHash(projectId: string, idempotencyKey: string): string {
  return createHash('sha256').update(`${projectId}\n${idempotencyKey}`).digest('hex');
}
