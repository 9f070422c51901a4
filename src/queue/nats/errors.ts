// What NATS errors mean to the queue.
import { errors, type ApiError } from '../../errors/catalogue.js';

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

/**
 * Whether NATS could not be reached or did not answer: a timeout, no responders (no JetStream
 * leader while the server restarts), a connection closed, reconnecting or draining.
 */
export function isUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && ['TIMEOUT', '503', 'CONNECTION_CLOSED', 'CONNECTION_DRAINING', 'CONNECTION_REFUSED', 'DISCONNECT', 'CONNECTION_TIMEOUT'].includes(code)) return true;
  const message = err instanceof Error ? err.message : String(err);
  return /timeout|no responders|connection (closed|draining|refused)|disconnect/i.test(message);
}

/** An unreachable queue server as the door's 503 `queue_unavailable`; any other error unchanged. */
export function mapUnavailable(err: unknown): unknown {
  if (!isUnavailable(err)) return err;
  return Object.assign(errors.queueUnavailable(), { cause: err });
}

/** The server's "not found" answers (stream, consumer, message, KV key). */
export function isNotFound(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /not found|no message found/i.test(message);
}
