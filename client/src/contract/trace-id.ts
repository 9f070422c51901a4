import { randomBytes } from 'node:crypto';

/** A W3C trace id (32 lower-case hex digits): a run's trace, and its idempotency key by default. */
export function newTraceId(): string {
  return randomBytes(16).toString('hex');
}
