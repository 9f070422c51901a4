// Answers written to a socket by hand, where no request object exists yet (Node's clientError, a
// connection refused at accept): the same status line, error body and security headers as every
// other answer, and `connection: close`, since the socket ends right after.
import { STATUS_CODES } from 'node:http';
import type { ApiError } from '../errors.js';

export const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

/** A complete HTTP/1.1 response carrying `apiError`'s body. */
export function rawAnswer(apiError: ApiError): string {
  const body = JSON.stringify(apiError.toBody());
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    ...SECURITY_HEADERS,
    'cache-control': 'no-store',
    connection: 'close',
    ...apiError.extra.headers,
  };
  const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return `HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode]}\r\n${head}\r\n${body}`;
}
