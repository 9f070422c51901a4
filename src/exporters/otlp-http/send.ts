// Sending one request to the gateway, with the OTLP/HTTP spec's retry rules
// (https://opentelemetry.io/docs/specs/otlp/#failures-1): 429, 502, 503 and 504 are retryable and
// may carry Retry-After; so are network errors and timeouts (the gateway is down or restarting).
// Every other status is permanent for this request. We add 507 (our gateway's "disk full, try
// later", src/domain/storage-errors.ts) to the retryable ones: it says nothing about the data.
// The loop and backoff are ./retry.ts, shared with the otlp_grpc exporter.
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Logger } from 'pino';
import type { OtlpHttpConfig } from './config.js';
import { errorText, PermanentExportError, withRetry, type Attempt, type Sleep } from '../shared/retry.js';

export { nextWait, PermanentExportError, RetryableExportError } from '../shared/retry.js';

const gzipAsync = promisify(gzip);
const RETRYABLE = new Set([429, 502, 503, 504, 507]);

export interface Sender {
  /** Resolves with the gateway's answer once it accepted the request; throws Permanent/RetryableExportError. */
  send(body: Uint8Array): Promise<string>;
}

export function createSender(cfg: OtlpHttpConfig, url: string, logger: Logger, sleep?: Sleep): Sender {
  const headers: Record<string, string> = { ...cfg.headers, 'content-type': 'application/x-protobuf' };
  if (cfg.compression === 'gzip') headers['content-encoding'] = 'gzip';

  async function attempt(payload: Uint8Array): Promise<Attempt<string>> {
    let res: Response;
    try {
      res = await fetch(url, { method: 'POST', headers, body: payload, signal: AbortSignal.timeout(cfg.timeout) });
    } catch (err) {
      return { ok: false, retryable: true, message: `POST ${url}: ${errorText(err)}`, cause: err };
    }
    const text = await res.text().catch(() => '');
    if (res.ok) return { ok: true, value: text };
    if (RETRYABLE.has(res.status)) {
      return { ok: false, retryable: true, message: `POST ${url}: HTTP ${res.status}`, retryAfterMs: retryAfterMs(res.headers.get('retry-after')) };
    }
    return { ok: false, retryable: false, error: new PermanentExportError(res.status, text) };
  }

  return {
    async send(body) {
      const payload = cfg.compression === 'gzip' ? await gzipAsync(body) : body;
      return withRetry(
        () => attempt(payload),
        cfg.retry_on_failure,
        (n, waitMs, reason) => logger.debug({ attempt: n, waitMs, reason }, 'otlp_http: send failed, retrying'),
        sleep,
      );
    },
  };
}

/** Retry-After: delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
