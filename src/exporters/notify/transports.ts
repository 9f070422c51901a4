// The two ways a notification leaves: an HTTP POST (Slack, Discord, signed webhooks) behind the
// SSRF guard of docs/contract.md §9, and SMTP through nodemailer.
import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { Transporter } from 'nodemailer';
import type { SmtpSettings } from '../../config/integrations.js';
import { checkOutboundUrl, isPrivateAddress } from '../../domain/net-address.js';

/** A failed send; `permanent` ones are dropped at once (retrying cannot help). */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

export const HTTP_TIMEOUT_MS = 8_000;
const MAX_RESPONSE_BYTES = 4096;

export interface PostOptions {
  headers: Record<string, string>;
  allowPrivate: boolean;
  timeoutMs: number;
  /** Aborted on shutdown. */
  signal: AbortSignal;
}

/** Scheme, host and port only: a webhook URL's path is its secret (Slack, Discord). */
export function redactUrl(target: string): string {
  return URL.canParse(target) ? new URL(target).origin : '(invalid URL)';
}

/**
 * POSTs `body`. Refuses non-https targets and names resolving to private or loopback addresses
 * (unless allowed), then connects to the address it checked, so a second DNS answer cannot swap
 * in an internal one. Redirects are not followed; the whole exchange is bounded by `timeoutMs`.
 */
export async function postJson(target: string, body: string, opts: PostOptions): Promise<number> {
  const verdict = checkOutboundUrl(target, opts.allowPrivate);
  if (!verdict.ok) throw new DeliveryError(`refused ${redactUrl(target)}: ${verdict.reason}`, true);
  const url = verdict.url;
  const signal = AbortSignal.any([opts.signal, AbortSignal.timeout(opts.timeoutMs)]);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  let addresses: LookupAddress[];
  if (family !== 0) addresses = [{ address: host, family }];
  else {
    try {
      addresses = await abortable(lookup(host, { all: true, verbatim: true }), signal);
    } catch (err) {
      throw new DeliveryError(`cannot resolve ${host}: ${errorCode(err)}`, false);
    }
  }
  if (!opts.allowPrivate) {
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) throw new DeliveryError(`refused ${redactUrl(target)}: ${host} resolves to the private or loopback address ${bad.address} (SERVICE_ALLOW_PRIVATE_WEBHOOKS is not set)`, true);
  }
  const pinned = addresses[0];
  if (!pinned) throw new DeliveryError(`cannot resolve ${host}: no addresses`, false);

  const status = await new Promise<number>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'flakehouse-notify', ...opts.headers, 'content-length': String(Buffer.byteLength(body)) },
      signal,
      lookup: (_hostname, options, callback) => {
        if (options.all) callback(null, [pinned]);
        else callback(null, pinned.address, pinned.family);
      },
    });
    req.on('response', (res) => {
      // Drained, capped and never parsed: what a sink answers is none of our business.
      let seen = 0;
      res.on('data', (chunk: Buffer) => {
        seen += chunk.length;
        if (seen > MAX_RESPONSE_BYTES) res.destroy();
      });
      res.on('close', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  }).catch((err: unknown) => {
    if (opts.signal.aborted) throw new DeliveryError('aborted by shutdown', false);
    if (signal.aborted) throw new DeliveryError(`no answer from ${redactUrl(target)} within ${opts.timeoutMs} ms`, false);
    throw new DeliveryError(`POST ${redactUrl(target)} failed: ${errorCode(err)}`, false);
  });
  if (status >= 200 && status < 300) return status;
  if (status >= 300 && status < 400) throw new DeliveryError(`${redactUrl(target)} answered ${status}; redirects are not followed`, true);
  // Retry what may pass later (timeouts, throttling, server errors); a 4xx will not change.
  const transient = status === 408 || status === 429 || status >= 500;
  throw new DeliveryError(`${redactUrl(target)} answered ${status}`, !transient);
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('ETIMEOUT'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function errorCode(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof Error ? err.message : String(err);
}

export interface EmailContent {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/**
 * SMTP through nodemailer: one pooled-less transport, timeouts as for webhooks. nodemailer is
 * loaded with the first mail, not with the component list (an agent never sends one).
 */
export class Mailer {
  private transport: Promise<Transporter> | undefined;

  constructor(private readonly smtp: SmtpSettings) {}

  private open(): Promise<Transporter> {
    const smtp = this.smtp;
    return (this.transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      auth: smtp.user ? { user: smtp.user, pass: smtp.pass ?? '' } : undefined,
      connectionTimeout: HTTP_TIMEOUT_MS,
      greetingTimeout: HTTP_TIMEOUT_MS,
      socketTimeout: HTTP_TIMEOUT_MS,
    })));
  }

  async send(mail: EmailContent): Promise<void> {
    try {
      await (await this.open()).sendMail({ from: this.smtp.from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
    } catch (err) {
      const responseCode = err && typeof err === 'object' && 'responseCode' in err ? Number(err.responseCode) : 0;
      const code = errorCode(err);
      // 5xx replies and a refused login or address will not pass on a retry; a dropped connection may.
      const permanent = (responseCode >= 500 && responseCode < 600) || code === 'EAUTH' || code === 'EENVELOPE';
      throw new DeliveryError(`SMTP ${this.smtp.host}:${this.smtp.port}: ${err instanceof Error ? err.message : code}`, permanent);
    }
  }

  close(): void {
    void this.transport?.then((t) => t.close(), () => {});
  }
}
