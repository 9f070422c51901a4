// One door for every protocol (issue 37, docs/api.md "Limits at the door"): OTLP/gRPC passes the
// admission HTTP does (src/ingest/door.ts). The token is checked from the call's headers before a
// byte of its message is read; HTTP/2 connections and their streams count against the HTTP
// listener's connection budget and idle timeouts; the size caps after inflating are the same, with
// the same limit named. Real daemons, the official grpc-js client, node:http2 for hostile clients.
import { request as httpRequest } from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXPORT_PATH, readRetryDelaySec } from '../../src/otlp/grpc-service.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { grpcPipelineFile, handMadeRequest, rawExport } from '../helpers/otlp-grpc.js';
import { openRaw } from '../helpers/raw-http.js';

const MIB = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x0a);

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface HostileStream {
  /** The response headers (a trailers-only status), when they came. */
  answered: Promise<{ headers: http2.IncomingHttpHeaders; atMs: number }>;
  closed: Promise<{ atMs: number; sent: number }>;
}

/**
 * An Export on a raw HTTP/2 session whose message announces `announce` bytes and never finishes:
 * it sends as fast as the server lets it (flow control), never the last byte, until the stream closes.
 */
function hostileExport(session: http2.ClientHttp2Session, announce: number, authorization?: string): HostileStream {
  const started = Date.now();
  const stream = session.request({
    ':method': 'POST',
    ':path': EXPORT_PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
    ...(authorization ? { authorization } : {}),
  });
  stream.on('error', () => {});
  let sent = 0;
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(announce, 1);
  stream.write(prefix);
  const pump = () => {
    while (!stream.destroyed && sent + CHUNK.length < announce) {
      sent += CHUNK.length;
      if (!stream.write(CHUNK)) return void stream.once('drain', pump);
    }
  };
  pump();
  stream.resume();
  return {
    answered: new Promise((resolve) => stream.once('response', (headers) => resolve({ headers, atMs: Date.now() - started }))),
    closed: new Promise((resolve) => stream.once('close', () => resolve({ atMs: Date.now() - started, sent }))),
  };
}

function connect(address: string): http2.ClientHttp2Session {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => {});
  return session;
}

async function postTraces(td: TestDaemon, body: Buffer, gzip: boolean): Promise<{ status: number; json: any }> {
  const res = await fetch(`${td.url}/v1/traces`, {
    method: 'POST',
    headers: { authorization: `Bearer ${td.token}`, 'content-type': 'application/x-protobuf', ...(gzip ? { 'content-encoding': 'gzip' } : {}) },
    body: gzip ? gzipSync(body) : body,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

/** POST /v1/ingest on a connection of its own, closed after the answer (fetch would keep it for the next request). */
function postIngest(td: TestDaemon, batch: Record<string, unknown>): Promise<number> {
  const body = JSON.stringify(batch);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${td.url}/v1/ingest`,
      { method: 'POST', agent: false, headers: { authorization: `Bearer ${td.token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('the token before the message', () => {
  let td: TestDaemon;
  let address: string;
  beforeAll(async () => {
    // Long timeouts: an answer within them can only come from the door's token check.
    td = await startTestDaemon({
      work: false,
      pipelineFile: grpcPipelineFile('127.0.0.1:0', { limit_mib: Math.round(process.memoryUsage().rss / MIB) + 1024, spike_limit_mib: 0, check_interval: '200ms' }),
      env: { SERVICE_RATE_LIMIT_MAX: '100000', SERVICE_HEADERS_TIMEOUT_MS: '15000', SERVICE_REQUEST_TIMEOUT_MS: '30000' },
    });
    address = td.daemon.listeners.get('otlp:grpc')!;
  }, 60_000);
  afterAll(async () => td?.close());

  it('an unauthenticated Export announcing 8 MiB that never finishes is answered UNAUTHENTICATED at once, its stream closed, no body slot taken', async () => {
    const session = connect(address);
    try {
      const call = hostileExport(session, 8 * MIB);
      const { headers, atMs } = await call.answered;
      expect(headers['grpc-status']).toBe(String(GrpcStatus.UNAUTHENTICATED));
      expect(decodeURI(String(headers['grpc-message']))).toBe('unauthorized: a valid bearer token is required');
      // Well before the header timeout (15 s) and the request timeout (30 s).
      expect(atMs).toBeLessThan(10_000);
      const closed = await call.closed;
      expect(closed.sent).toBeLessThan(8 * MIB - CHUNK.length);
      expect(td.daemon.app.door.bodies()).toBe(0);
    } finally {
      session.destroy();
    }
  });

  it('a bad token is UNAUTHENTICATED over the official client too, without RetryInfo', async () => {
    const res = await rawExport(address, handMadeRequest('bad-token', { padding: 10 }), { authorization: `Bearer fh_${'0'.repeat(48)}` });
    expect(res.error?.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(res.error?.details).toBe('unauthorized: the token is unknown or revoked');
    expect(res.error?.metadata.get('grpc-status-details-bin')).toEqual([]);
  });

  it('100 unauthenticated streams announcing 8 MiB each are all refused and closed, while HTTP ingest with a token keeps answering 202 (memory_limiter on)', async () => {
    const sessions = Array.from({ length: 10 }, () => connect(address));
    let stop = false;
    const legit: number[] = [];
    // Legitimate traffic meanwhile, on another protocol: every answer must be 202.
    const ingesting = (async () => {
      for (let i = 0; !stop || legit.length < 5; i++) {
        legit.push(await postIngest(td, nativeBatch({ key: `grpc-door-legit-${process.pid}-${i}` })));
      }
    })();
    try {
      const calls = sessions.flatMap((s) => Array.from({ length: 10 }, () => hostileExport(s, 8 * MIB)));
      const answers = await Promise.all(calls.map((c) => c.answered));
      expect(answers.map((a) => a.headers['grpc-status'])).toEqual(calls.map(() => String(GrpcStatus.UNAUTHENTICATED)));
      const closed = await Promise.all(calls.map((c) => c.closed));
      // None got to send its message: each was stopped within a few flow-control windows.
      expect(Math.max(...closed.map((c) => c.sent))).toBeLessThan(8 * MIB - CHUNK.length);
      expect(td.daemon.app.door.bodies()).toBe(0);
    } finally {
      stop = true;
      await ingesting;
      for (const s of sessions) s.destroy();
    }
    expect(legit.length).toBeGreaterThanOrEqual(5);
    expect(legit.filter((s) => s !== 202)).toEqual([]);
    // The connections are given back once the clients go.
    await until(() => td.daemon.app.door.connections() === 0, 20_000, 'connections released');
  });
});

describe('the same size caps after inflating', () => {
  let td: TestDaemon;
  let address: string;
  beforeAll(async () => {
    td = await startTestDaemon({ work: false, pipelineFile: grpcPipelineFile(), env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
    address = td.daemon.listeners.get('otlp:grpc')!;
  }, 60_000);
  afterAll(async () => td?.close());

  const auth = () => ({ authorization: `Bearer ${td.token}` });

  it('a gzip request inflating to 12 MiB is accepted over HTTP and over gRPC', async () => {
    const http = await postTraces(td, handMadeRequest('inflated-12-http', { padding: 12 * MIB }), true);
    expect(http.status).toBe(202);
    const grpc = await rawExport(address, handMadeRequest('inflated-12-grpc', { padding: 12 * MIB }), auth(), true);
    expect(grpc.error).toBeNull();
  });

  it('a gzip request inflating past 16 MiB: 413 over HTTP, RESOURCE_EXHAUSTED without RetryInfo over gRPC, the same limit named', async () => {
    const http = await postTraces(td, handMadeRequest('inflated-17-http', { padding: 17 * MIB }), true);
    expect(http.status).toBe(413);
    expect(http.json).toEqual({ error: 'payload_too_large', message: 'inflated request body exceeds 16777216 bytes' });
    const grpc = await rawExport(address, handMadeRequest('inflated-17-grpc', { padding: 17 * MIB }), auth(), true);
    expect(grpc.error?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(grpc.error?.details).toBe('payload_too_large: inflated request body exceeds 16777216 bytes');
    expect(grpc.error?.metadata.get('grpc-status-details-bin')).toEqual([]);
  });

  it('an uncompressed 17 MiB message: 413 over HTTP, a RESOURCE_EXHAUSTED status (not a stream reset) over gRPC, the same limit named', async () => {
    const body = handMadeRequest('raw-17', { padding: 17 * MIB });
    const http = await postTraces(td, body, false);
    expect(http.status).toBe(413);
    expect(http.json).toEqual({ error: 'payload_too_large', message: 'request body exceeds 8388608 bytes' });
    const grpc = await rawExport(address, body, auth());
    expect(grpc.error?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(grpc.error?.details).toBe('payload_too_large: request body exceeds 8388608 bytes');
    expect(grpc.error?.metadata.get('grpc-status-details-bin')).toEqual([]);
    // A slot is given back when its request's connection settles, a moment after the answer.
    await vi.waitFor(() => expect(td.daemon.app.door.bodies()).toBe(0), { timeout: 10_000 });
  });
});

describe('one connection budget and idle timeout for HTTP and HTTP/2', () => {
  let td: TestDaemon;
  let address: string;
  const HEADERS_TIMEOUT_MS = 600;
  beforeAll(async () => {
    td = await startTestDaemon({
      work: false,
      pipelineFile: grpcPipelineFile(),
      env: { SERVICE_RATE_LIMIT_MAX: '100000', SERVICE_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), SERVICE_MAX_CONNECTIONS_PER_ADDRESS: '3' },
    });
    address = td.daemon.listeners.get('otlp:grpc')!;
  }, 60_000);
  afterAll(async () => td?.close());

  it('an idle HTTP/2 connection, and a TCP one that sends nothing, are closed after the header timeout, as HTTP ones', async () => {
    const started = Date.now();
    const session = connect(address);
    const sessionClosed = new Promise<number>((resolve) => session.once('close', () => resolve(Date.now() - started)));
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
    const silent = net.connect(port, host);
    silent.on('error', () => {});
    silent.resume();
    const silentClosed = new Promise<number>((resolve) => silent.once('close', () => resolve(Date.now() - started)));
    const http = openRaw(td.url);
    const [h2Ms, tcpMs, httpMs] = await Promise.all([sessionClosed, silentClosed, http.closed.then((c) => c.atMs)]);
    for (const ms of [h2Ms, tcpMs, httpMs]) {
      expect(ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
      expect(ms).toBeLessThan(HEADERS_TIMEOUT_MS + 10_000);
    }
    await until(() => td.daemon.app.door.connections() === 0, 20_000, 'connections released');
  });

  it('HTTP and HTTP/2 connections, and streams beyond a connection\'s first, share the per-address cap', async () => {
    const https = [openRaw(td.url), openRaw(td.url)];
    const session = connect(address);
    try {
      await capsShared(https, session);
    } finally {
      session.destroy();
      for (const h of https) h.socket.destroy();
    }
    await until(() => td.daemon.app.door.connections() === 0, 20_000, 'connections released');
  });

  async function capsShared(https: ReturnType<typeof openRaw>[], session: http2.ClientHttp2Session): Promise<void> {
    await new Promise<void>((resolve) => session.once('connect', () => resolve()));
    await until(() => td.daemon.app.door.connections() === 3, 20_000, 'three connections');
    // A fourth connection from this address: refused on either listener.
    const refused = connect(address);
    const goaway = new Promise<number>((resolve) => refused.once('goaway', (code) => resolve(code)));
    expect(await goaway).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    refused.destroy();
    const busy = openRaw(td.url);
    expect((await busy.response).status).toBe(503);

    // One connection gone: its unit is free, taken by a second stream of the HTTP/2 connection; a
    // third stream open at once finds none and is told to retry.
    https[0]!.socket.destroy();
    await until(() => td.daemon.app.door.connections() === 2, 20_000, 'an HTTP connection released');
    const first = hostileExport(session, 8 * MIB, `Bearer ${td.token}`);
    const second = hostileExport(session, 8 * MIB, `Bearer ${td.token}`);
    await until(() => td.daemon.app.door.connections() === 3, 20_000, 'the second stream counted');
    const third = hostileExport(session, 8 * MIB, `Bearer ${td.token}`);
    const { headers } = await third.answered;
    expect(headers['grpc-status']).toBe(String(GrpcStatus.RESOURCE_EXHAUSTED));
    expect(decodeURI(String(headers['grpc-message']))).toBe('server_busy: too many open connections from your address (at most 3); retry shortly');
    expect(readRetryDelaySec(Buffer.from(String(headers['grpc-status-details-bin']), 'base64'))).toBe(1);
    session.destroy();
    await Promise.all([first.closed, second.closed, third.closed]);
  }
});
