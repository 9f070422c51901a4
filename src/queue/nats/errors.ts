// What NATS errors mean to the queue.
import { errors, type ApiError } from '../../errors.js';

/**
 * Whether a publish was refused because the stream is at its limits (max_msgs / max_bytes with
 * DiscardPolicy.New, or the server's JetStream storage is exhausted).
 */
export function isStreamFull(err: unknown): boolean {
  const api = (err as { api_error?: { err_code?: unknown; description?: unknown } } | null)?.api_error;
  const text = `${err instanceof Error ? err.message : String(err)} ${typeof api?.description === 'string' ? api.description : ''}`;
  // 10077 maximum messages exceeded; 10047 insufficient resources (JetStream storage).
  if (api?.err_code === 10077 || api?.err_code === 10047) return true;
  return /maximum (messages|bytes)|resource limits exceeded|insufficient resources|storage resources exceeded/i.test(text);
}

/** A refused publish as the door's 503 `backpressure`; any other error unchanged. */
export function mapPublishError(err: unknown): unknown {
  if (!isStreamFull(err)) return err;
  const e: ApiError = errors.backpressure();
  return Object.assign(e, { cause: err });
}

/** The server's "not found" answers (stream, consumer, message, KV key). */
export function isNotFound(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /not found|no message found/i.test(message);
}
