// Sending one request to the gateway, with the OTLP/HTTP spec's retry rules
// (https://opentelemetry.io/docs/specs/otlp/#failures-1): 429, 502, 503 and 504 are retryable and
// may carry Retry-After; so are network errors and timeouts (the gateway is down or restarting).
// Every other status is permanent for this request. We add 507 (our gateway's "disk full, try
// later", src/domain/storage-errors.ts) to the retryable ones: it says nothing about the data.
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Logger } from 'pino';
import type { OtlpHttpConfig, RetryConfig } from './config.js';

const gzipAsync = promisify(gzip);
const RETRYABLE = new Set([429, 502, 503, 504, 507]);

/** The gateway refused the request for good (4xx other than 429, 5xx other than 502/503/504/507). */
export class PermanentExportError extends Error {
  constructor(
    readonly status: number,
    body: string,
  ) {
    super(`gateway refused the request: HTTP ${status} ${body.slice(0, 500)}`);
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

type Attempt = { ok: true; body: string } | { ok: false; retryable: true; message: string; retryAfterMs?: number; cause?: unknown } | { ok: false; retryable: false; status: number; body: string };

export interface Sender {
  /** Resolves with the gateway's answer once it accepted the request; throws Permanent/RetryableExportError. */
  send(body: Uint8Array): Promise<string>;
}

export function createSender(cfg: OtlpHttpConfig, url: string, logger: Logger, sleep: (ms: number) => Promise<void> = defaultSleep): Sender {
  const headers: Record<string, string> = { ...cfg.headers, 'content-type': 'application/x-protobuf' };
  if (cfg.compression === 'gzip') headers['content-encoding'] = 'gzip';

  async function attempt(payload: Uint8Array): Promise<Attempt> {
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(cfg.timeout) });
    } catch (err) {
      return { ok: false, retryable: true, message: `POST ${url}: ${errorText(err)}`, cause: err };
    }
    const text = await res.text().catch(() => '');
    if (res.ok) return { ok: true, body: text };
    if (RETRYABLE.has(res.status)) {
      return { ok: false, retryable: true, message: `POST ${url}: HTTP ${res.status}`, retryAfterMs: retryAfterMs(res.headers.get('retry-after')) };
    }
    return { ok: false, retryable: false, status: res.status, body: text };
  }

  return {
    async send(body) {
      const payload = cfg.compression === 'gzip' ? await gzipAsync(body) : body;
      const retry = cfg.retry_on_failure;
      const started = Date.now();
      for (let n = 1; ; n++) {
        const a = await attempt(payload);
        if (a.ok) return a.body;
        if (!a.retryable) throw new PermanentExportError(a.status, a.body);
        const wait = nextWait(retry, n, a.retryAfterMs);
        const elapsed = Date.now() - started;
        if (!retry.enabled || (retry.max_elapsed_time > 0 && elapsed + wait > retry.max_elapsed_time)) {
          throw new RetryableExportError(`${a.message}; gave up after ${n} attempt(s) in ${elapsed} ms (retry_on_failure), the lease goes back to the queue`, { cause: a.cause });
        }
        logger.debug({ attempt: n, waitMs: wait, reason: a.message }, 'otlp_http: send failed, retrying');
        await sleep(wait);
      }
    },
  };
}

/** Exponential backoff with jitter, as the Collector's; a server's Retry-After wins when longer. */
export function nextWait(retry: RetryConfig, attempt: number, retryAfter?: number): number {
  const base = Math.min(retry.max_interval, retry.initial_interval * retry.multiplier ** (attempt - 1));
  const jitter = base * retry.randomization_factor * (Math.random() * 2 - 1);
  const backoff = Math.max(0, Math.round(base + jitter));
  return retryAfter !== undefined ? Math.max(backoff, retryAfter) : backoff;
}

/** Retry-After: delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
