// Answers that Node or fastify give before any route runs (an oversized URL or header block) still
// carry our error body and security headers (docs/contract.md §5). Sent over a raw socket: fetch
// refuses to send headers this large, and the point is what goes over the wire.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes `request` as is and reads until the server closes or the response is complete. */
async function raw(url: string, request: string): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      data += chunk;
      const end = data.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(data.slice(0, end))?.[1];
      if (end >= 0 && length !== undefined && Buffer.byteLength(data.slice(end + 4)) >= Number(length)) socket.destroy();
    });
    socket.on('close', () => resolve(data));
    // The server may close while we are still writing the oversized request.
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
    socket.end(request);
  });
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...headerLines] = text.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(headerLines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4) };
}

function expectOurError(r: RawResponse, status: number, code: string): void {
  expect(r.status, r.body).toBe(status);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(r.body) as Record<string, unknown>;
  expect(body).toEqual({ error: code, message: expect.any(String) });
  expect(r.headers['x-content-type-options']).toBe('nosniff');
  expect(r.headers['cache-control']).toBe('no-store');
}

describe('HTTP limits answered before routing', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon();
  }, 60_000);
  afterAll(async () => td?.close());

  it('a header block over 16 KiB is 431 headers_too_large with our error body', async () => {
    const r = await raw(td.url, `GET /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${td.token}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectOurError(r, 431, 'headers_too_large');
    expect(JSON.parse(r.body).message).toContain('16384 bytes');
  });

  it('a request line over 16 KiB is 414 uri_too_long', async () => {
    const r = await raw(td.url, `GET /v1/runs?branch=${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectOurError(r, 414, 'uri_too_long');
  });

  it('a path segment over the router limit is 414 uri_too_long', async () => {
    const r = await raw(td.url, `GET /v1/runs/${'r'.repeat(6_000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${td.token}\r\nConnection: close\r\n\r\n`);
    expectOurError(r, 414, 'uri_too_long');
  });

  it('a request that is not HTTP is 400 bad_request with our error body', async () => {
    const r = await raw(td.url, 'HELLO\r\n\r\n');
    expectOurError(r, 400, 'bad_request');
  });
});
