// Stopping a daemon while clients hold connections open (SIGTERM to `flakehouse serve`, or close()
// in tests): the listeners stop accepting, a request or call in flight still gets its answer (a
// 202 is stored), and no connection can hold the stop open. Node's server.close() also stops the
// header and request timeout checks, so before this a connection that never sent a request (or
// sent half of one) kept the daemon from stopping for ever, and one answered during the stop for
// the keep-alive timeout (72 s). Real daemons on random ports, raw sockets.
import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EXPORT_PATH } from '../../src/otlp/grpc-service.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { grpcPipelineFile } from '../helpers/otlp-grpc.js';
import { openRaw, postHead, type RawConnection } from '../helpers/raw-http.js';

/** Far above what a stop takes here (well under a second) and far below the hang it guards against. */
const STOP_BOUND_MS = 10_000;

/** Stops the daemon; resolves with how long it took, or rejects if it is still stopping after `boundMs`. */
async function timedStop(td: TestDaemon, boundMs = STOP_BOUND_MS): Promise<number> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the daemon was still stopping after ${boundMs} ms`)), boundMs);
  });
  try {
    await Promise.race([td.stop(), bound]);
  } finally {
    clearTimeout(timer);
  }
  return performance.now() - started;
}

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A raw TCP connection that sends `data` (or nothing) and then waits, reading (and dropping) what comes. */
function rawSocket(address: string, data?: string): { socket: net.Socket; closed: Promise<void> } {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  const socket = net.connect({ host, port });
  socket.on('error', () => {});
  // A socket with unread data never reports the server's close (HTTP/2 sends its SETTINGS at once).
  socket.resume();
  if (data) socket.write(data);
  return { socket, closed: new Promise((resolve) => socket.once('close', () => resolve())) };
}

describe('stopping with connections open', () => {
  let td: TestDaemon | undefined;
  const sockets: { destroy(): void }[] = [];
  afterEach(async () => {
    // A failed bound leaves the stop waiting on these: let it finish.
    for (const s of sockets.splice(0)) s.destroy();
    await td?.close();
    td = undefined;
  });

  it('HTTP: a connection that sent nothing, one that sent half a request line and one between requests do not hold the stop', async () => {
    // Long timeouts: only the stop can close these connections within the bound.
    td = await startTestDaemon({ work: false, env: { SERVICE_HEADERS_TIMEOUT_MS: '30000', SERVICE_REQUEST_TIMEOUT_MS: '60000' } });
    const address = new URL(td.url).host;
    const silent = rawSocket(address);
    const half = rawSocket(address, 'POST /v1/ing');
    const between = openRaw(td.url);
    between.write('GET /health HTTP/1.1\r\nhost: x\r\n\r\n');
    expect((await between.response).status).toBe(200);
    sockets.push(silent.socket, half.socket, between.socket);
    const app = td.daemon.app;
    await until(() => app.door.connections() === 3, 'the daemon holds the three connections');

    const tookMs = await timedStop(td);
    await Promise.all([silent.closed, half.closed, between.closed]);
    expect(tookMs).toBeLessThan(STOP_BOUND_MS);
  });

  it('HTTP: a request whose body is arriving when the stop begins is answered 202 (Connection: close) and stored', async () => {
    td = await startTestDaemon({ work: false, env: { SERVICE_HEADERS_TIMEOUT_MS: '30000', SERVICE_REQUEST_TIMEOUT_MS: '60000' } });
    const batch = nativeBatch({ n: 2, resource: { branch: 'stop-in-flight' } });
    const body = JSON.stringify(batch);
    const conn: RawConnection = openRaw(td.url);
    sockets.push(conn.socket);
    conn.write(postHead('/v1/ingest', Buffer.byteLength(body), { authorization: `Bearer ${td.token}` }) + body.slice(0, 20));
    const app = td.daemon.app;
    await until(() => app.door.bodies() === 1, 'the request holds a body slot');

    const stopping = timedStop(td);
    conn.write(body.slice(20));
    const answer = await conn.response;
    expect(answer.status).toBe(202);
    expect(answer.headers.connection).toBe('close');
    const receiptId = JSON.parse(answer.body).receiptId as string;
    expect(await stopping).toBeLessThan(STOP_BOUND_MS);
    await conn.closed;

    // The 202 was a promise: the job is there after a restart, and is processed.
    td = await td.restart({ work: true });
    const t = td;
    const runs = await t.waitFor(async () => {
      const r = await t.request('GET', '/v1/runs?branch=stop-in-flight&limit=10');
      // The run is readable once stored; the job leaves the queue at its ack, just after.
      return r.json.items.length === 1 && t.daemon.queue.depth() === 0 ? (r.json.items as { receiptId?: string }[]) : null;
    }, 60_000);
    expect(runs).toHaveLength(1);
    expect(receiptId).toBeTruthy();
  });

  it('HTTP: a body that never finishes is answered 408 at its request timeout, and does not hold the stop longer', async () => {
    td = await startTestDaemon({ work: false, env: { SERVICE_HEADERS_TIMEOUT_MS: '1000', SERVICE_REQUEST_TIMEOUT_MS: '2000' } });
    const conn = openRaw(td.url);
    sockets.push(conn.socket);
    conn.write(postHead('/v1/ingest', 1000, { authorization: `Bearer ${td.token}` }) + '{"contractVersion":');
    const app = td.daemon.app;
    await until(() => app.door.bodies() === 1, 'the request holds a body slot');

    const tookMs = await timedStop(td);
    const answer = await conn.response;
    expect(answer.status).toBe(408);
    await conn.closed;
    expect(tookMs).toBeLessThan(STOP_BOUND_MS);
  });

  it('OTLP/gRPC: a TCP connection that sent nothing, an HTTP/2 connection with no stream and a call whose message never finishes do not hold the stop', async () => {
    td = await startTestDaemon({
      work: false,
      pipelineFile: grpcPipelineFile(),
      env: { SERVICE_HEADERS_TIMEOUT_MS: '30000', SERVICE_REQUEST_TIMEOUT_MS: '60000' },
    });
    const address = td.daemon.listeners.get('otlp:grpc')!;
    const silent = rawSocket(address);
    sockets.push(silent.socket);
    const idle = http2.connect(`http://${address}`);
    idle.on('error', () => {});
    sockets.push(idle);
    await new Promise<void>((resolve) => idle.once('connect', () => resolve()));
    const busy = http2.connect(`http://${address}`);
    busy.on('error', () => {});
    sockets.push(busy);
    const call = busy.request({ ':method': 'POST', ':path': EXPORT_PATH, 'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${td.token}` });
    call.on('error', () => {});
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(1000, 1);
    call.write(prefix);
    const callClosed = new Promise<void>((resolve) => call.once('close', () => resolve()));
    let answer: http2.IncomingHttpHeaders | undefined;
    call.once('response', (headers) => (answer = headers));
    call.resume();
    const app = td.daemon.app;
    await until(() => app.door.bodies() === 1, 'the call holds a body slot');
    await until(() => app.door.connections() === 3, 'the daemon holds the three connections');

    const tookMs = await timedStop(td);
    await Promise.all([silent.closed, callClosed, new Promise<void>((resolve) => (idle.closed ? resolve() : idle.once('close', () => resolve())))]);
    expect(tookMs).toBeLessThan(STOP_BOUND_MS);
    // The call whose message never came is answered at the drain's end (SHUTDOWN_DRAIN_MS): UNAVAILABLE, which exporters retry.
    expect(answer?.['grpc-status']).toBe('14');
    expect(decodeURI(String(answer?.['grpc-message']))).toBe('not_ready: the server is shutting down; send the request again');
  });
});
