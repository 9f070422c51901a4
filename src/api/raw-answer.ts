// Answers written to a socket by hand, where no request object exists yet (Node's clientError, a
// connection refused at accept): the same status line, error body and security headers as every
// other answer, and `connection: close`, since the socket ends right after.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ApiError } from '../errors/catalogue.js';

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

/**
 * Answers `apiError` on the socket by hand and closes it: for a request Node's parser refused or
 * timed out, or one cut short by a stop. A response that has already sent its headers cannot take
 * another, so its socket is only closed.
 */
export function answerAndClose(socket: Socket, apiError: ApiError, cause?: Error): void {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) socket.write(rawAnswer(apiError));
  socket.destroy(cause);
}
