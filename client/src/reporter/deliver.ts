// HTTP delivery with bounded retries: network errors, 408, 429 and 5xx are retried with
// exponential backoff (honouring Retry-After up to a cap); any other answer is final. The whole
// thing is bounded so a dead server costs CI seconds, not minutes.

export interface HttpRequest {
  method: 'POST' | 'PUT';
  url: string;
  headers: Record<string, string>;
  body: Uint8Array | string;
}

export interface RetryPolicy {
  /** Tries in all, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** A longer Retry-After is waited only this long (then the next try, or giving up, follows). */
  maxRetryAfterMs: number;
  /** Per try. */
  timeoutMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 8_000,
  maxRetryAfterMs: 30_000,
  timeoutMs: 30_000,
};

export type DeliveryOutcome =
  | { ok: true; status: number; body: unknown; attempts: number }
  | {
      ok: false;
      /** True when trying again later may work (network, 429, 5xx): the run is worth buffering. */
      retryable: boolean;
      status?: number;
      /** The server's `error` code when it sent one. */
      code?: string;
      message: string;
      attempts: number;
    };

export interface DeliverDeps {
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Told about each retry, so the user sees why the report takes a moment. */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

export async function deliver(req: HttpRequest, policy: RetryPolicy = DEFAULT_RETRY_POLICY, deps: DeliverDeps = {}): Promise<DeliveryOutcome> {
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const random = deps.random ?? Math.random;
  let last: Extract<DeliveryOutcome, { ok: false }> = { ok: false, retryable: true, message: 'not sent', attempts: 0 };
  for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
    let retryAfter: string | null = null;
    try {
      const res = await fetch(req.url, {
        method: req.method,
        headers: req.headers,
        body: req.body,
        signal: AbortSignal.timeout(policy.timeoutMs),
        redirect: 'error',
      });
      const text = await res.text();
      const body = parseJson(text);
      if (res.ok) return { ok: true, status: res.status, body, attempts: attempt };
      const code = errorCode(body);
      const detail = errorMessage(body) ?? (text.trim().slice(0, 200) || res.statusText);
      last = {
        ok: false,
        retryable: isRetryableStatus(res.status),
        status: res.status,
        ...(code !== undefined ? { code } : {}),
        message: `${res.status}${code ? ` ${code}` : ''}${detail && detail !== code ? `: ${detail}` : ''}`,
        attempts: attempt,
      };
      retryAfter = res.headers.get('retry-after');
    } catch (err) {
      last = { ok: false, retryable: true, message: networkMessage(err), attempts: attempt };
    }
    if (!last.retryable || attempt === policy.maxAttempts) return last;
    const delayMs = retryDelayMs(attempt, retryAfter, policy, random);
    deps.onRetry?.({ attempt, delayMs, reason: last.message });
    await sleep(delayMs);
  }
  return last;
}

export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Wait before try `attempt + 1`: the server's Retry-After when given (capped), else exponential
 * backoff with jitter (half fixed, half random) so parallel shards do not retry in lockstep.
 */
export function retryDelayMs(attempt: number, retryAfter: string | null, policy: RetryPolicy, random: () => number = Math.random): number {
  const hinted = parseRetryAfterMs(retryAfter);
  if (hinted !== undefined) return Math.min(hinted, policy.maxRetryAfterMs);
  const exp = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(exp / 2 + (random() * exp) / 2);
}

/** `Retry-After` as delay-seconds or an HTTP date; undefined when absent or unusable. */
export function parseRetryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function errorCode(body: unknown): string | undefined {
  return isRecord(body) && typeof body.error === 'string' ? body.error : undefined;
}

function errorMessage(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  const message = typeof body.message === 'string' ? body.message : undefined;
  const issues = Array.isArray(body.issues)
    ? body.issues
        .filter(isRecord)
        .slice(0, 3)
        .map((i) => `${typeof i.path === 'string' && i.path ? `${i.path}: ` : ''}${typeof i.message === 'string' ? i.message : ''}`)
    : [];
  return [message, ...issues].filter(Boolean).join('; ') || undefined;
}

/** What went wrong reaching the server, in a line (undici's useful part is in the cause). */
export function networkMessage(err: unknown): string {
  if (err instanceof Error) {
    if (err.name === 'TimeoutError') return 'timed out';
    // undici puts the useful part (ECONNREFUSED 127.0.0.1:8080) in the cause.
    const cause = (err as Error & { cause?: unknown }).cause;
    if (cause instanceof Error) {
      const code = (cause as NodeJS.ErrnoException).code;
      return code ? `${code}: ${cause.message}` : cause.message;
    }
    return err.message;
  }
  return String(err);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
