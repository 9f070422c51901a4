// The retry loop the forwarding exporters share (otlp_http, otlp_grpc): one request is attempted
// until the gateway accepts it, refuses it for good, or `retry_on_failure` runs out. Which answers
// are retryable is the protocol's business (send.ts for HTTP, ../otlp-grpc/send.ts for gRPC); the
// backoff and the two outcomes the runtime acts on are the same for both.
import type { RetryConfig } from './forwarding-config.js';

/** The gateway refused the request for good: the runtime splits the lease, then dead-letters the job. */
export class PermanentExportError extends Error {
  constructor(
    /** The HTTP status, or the gRPC status code. */
    readonly status: number,
    body: string,
    protocol: 'HTTP' | 'gRPC' = 'HTTP',
  ) {
    super(`gateway refused the request: ${protocol} ${status} ${body.slice(0, 500)}`);
    this.name = 'PermanentExportError';
  }
}

/** Retries ran out (or are off); the lease goes back to our queue. */
export class RetryableExportError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryableExportError';
  }
}

/** One try: accepted, worth retrying (after at least `retryAfterMs` when the server said so), or refused for good. */
export type Attempt<T> =
  | { ok: true; value: T }
  | { ok: false; retryable: true; message: string; retryAfterMs?: number; cause?: unknown }
  | { ok: false; retryable: false; error: PermanentExportError };

export type Sleep = (ms: number) => Promise<void>;

/** Runs `attempt` with `retry`'s backoff; resolves with the accepted value, throws Permanent/RetryableExportError. */
export async function withRetry<T>(
  attempt: () => Promise<Attempt<T>>,
  retry: RetryConfig,
  onRetry: (n: number, waitMs: number, reason: string) => void,
  sleep: Sleep = defaultSleep,
): Promise<T> {
  const started = Date.now();
  for (let n = 1; ; n++) {
    const a = await attempt();
    if (a.ok) return a.value;
    if (!a.retryable) throw a.error;
    const wait = nextWait(retry, n, a.retryAfterMs);
    const elapsed = Date.now() - started;
    if (!retry.enabled || (retry.max_elapsed_time > 0 && elapsed + wait > retry.max_elapsed_time)) {
      throw new RetryableExportError(`${a.message}; gave up after ${n} attempt(s) in ${elapsed} ms (retry_on_failure), the lease goes back to the queue`, { cause: a.cause });
    }
    onRetry(n, wait, a.message);
    await sleep(wait);
  }
}

/** Exponential backoff with jitter, as the Collector's; a server's Retry-After (RetryInfo) wins when longer. */
export function nextWait(retry: RetryConfig, attempt: number, retryAfter?: number): number {
  const base = Math.min(retry.max_interval, retry.initial_interval * retry.multiplier ** (attempt - 1));
  const jitter = base * retry.randomization_factor * (Math.random() * 2 - 1);
  const backoff = Math.max(0, Math.round(base + jitter));
  return retryAfter !== undefined ? Math.max(backoff, retryAfter) : backoff;
}

export function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
