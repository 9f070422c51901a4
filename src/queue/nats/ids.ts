// Receipt ids and idempotency-key hashes of the NATS queue.
import { createHash } from 'node:crypto';
import { stableUuid } from '../../../client/src/contract/ids.js';

/**
 * The receipt (and job) id of the batch sent under (project, idempotency key), generation `gen`
 * (bumped when a dead job is dropped, so the same batch sent again is a new job). A function of
 * what the client sent and of durable state keyed by it, never of server metadata: a restarted or
 * re-created stream, a redelivery or a new consumer gives the same id, so the run ids and the
 * writes keyed by it deduplicate. It is also written into the message at publish.
 */
export function receiptIdFor(projectId: string, idempotencyKey: string, gen: number): string {
  return stableUuid('nats-receipt', projectId, idempotencyKey, String(gen));
}

/**
 * The id of a message published before ids were written into messages: the stream's creation
 * time and the seq. Only for draining such messages after an upgrade; a server restart can report
 * another creation time, which is why new messages carry their id.
 */
export function legacyReceiptIdFromSeq(streamCreatedMs: number, seq: number): string {
  const time = Math.max(0, Math.floor(streamCreatedMs)).toString(16).padStart(12, '0').slice(-12);
  // 18 hex digits for the seq: 3 after the version nibble, 3 after the variant nibble, 12 at the end.
  const s = Math.max(0, Math.floor(seq)).toString(16).padStart(18, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-8${s.slice(0, 3)}-8${s.slice(3, 6)}-${s.slice(6, 18)}`;
}

/** The receipts KV key and the base of the publish msgID for (project, idempotency key). */
export function idempotencyHash(projectId: string, idempotencyKey: string): string {
  return createHash('sha256').update(`${projectId}\n${idempotencyKey}`).digest('hex');
}
