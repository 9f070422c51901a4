// The OTLP/gRPC listener (`protocols.grpc` of the otlp receiver): its own HTTP/2 server, beside the
// daemon's HTTP one, serving TraceService/Export. Plaintext, as the Collector's default; TLS is a
// proxy's job, as for the HTTP listener.
//
// It passes the same door as HTTP (src/ingest/door.ts), on node:http2 directly rather than
// @grpc/grpc-js's server, which cannot hold to it: grpc-js has one message cap for the framed
// and the inflated size (HTTP has 8 MiB raw and 16 MiB inflated), strips grpc-encoding before a
// handler or interceptor could tell the two apart, answers its own texts (INTERNAL for bad gzip),
// and gives no hold of a connection's streams. Here:
//   - a connection takes a unit of the process's connection budget (the HTTP listener's: total and
//     per address); a connection beyond it gets GOAWAY ENHANCE_YOUR_CALM and is closed; each
//     stream open beyond a connection's first takes one more unit (an HTTP/1.1 connection carries
//     one request at a time);
//   - a connection with no stream open is closed (GOAWAY) after SERVICE_HEADERS_TIMEOUT_MS until
//     its first call, after the HTTP listener's keep-alive timeout between calls;
//   - token, scope and rate limit are checked from the call's headers while its message is unread
//     (the stream is paused: HTTP/2 flow control holds the client to one 64 KiB window); a refusal
//     is a trailers-only status at once, and RST_STREAM(NO_ERROR) stops a client still sending;
//   - an admitted call takes a body slot (the HTTP listener's) before its message is read, and must
//     have sent it within SERVICE_REQUEST_TIMEOUT_MS (else DEADLINE_EXCEEDED);
//   - the message's length prefix meets the raw cap before a byte of it is kept, and gzip is
//     inflated through the HTTP body's pipeline, with its inflated cap;
//   - at shutdown, as the HTTP listener (src/api/drain.ts): GOAWAY; a connection with no call open
//     is closed at once, a call whose message has arrived is answered, one whose message is still
//     arriving after SHUTDOWN_DRAIN_MS is answered UNAVAILABLE.
import http2, { constants as h2, type IncomingHttpHeaders, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ApiError, errors } from '../../errors/catalogue.js';
import { checkDeclaredLength, decodeBody, KEEP_ALIVE_TIMEOUT_MS, lingeringClose, MAX_HEADER_BYTES, REFUSED_GRACE_MS, SHUTDOWN_DRAIN_MS, type ListenerDoor } from '../../ingest/door.js';
import type { Host, IngestDoor, IngestPort, Receiver } from '../../pipeline/component.js';
import type { Endpoint } from './config.js';
import { exportTraces } from './grpc-export.js';
import { EXPORT_PATH, traceServiceDefinition } from '../../otlp/grpc-service.js';
import { GrpcCode, grpcInternalError, grpcShuttingDown, grpcStatusOf, type GrpcStatus } from './grpc-status.js';

/**
 * Streams one connection may have open at once (HTTP/2 SETTINGS). Each beyond the first also takes
 * a unit of the connection budget, so this bounds a connection's share, not the total.
 */
const MAX_STREAMS_PER_CONNECTION = 100;

function bindAddress({ host, port }: Endpoint): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

interface CallDeps {
  door: IngestDoor;
  ingest: IngestPort;
  listener: ListenerDoor;
  logger: Logger;
  /** The Export calls being served, for shutdown. */
  calls: Set<Call>;
}

/** An Export call being served: `reading` until its message has arrived; `served` settles when it has been answered (or has failed). */
interface Call {
  stream: ServerHttp2Stream;
  reading: boolean;
  served: Promise<void>;
}

export function otlpGrpcReceiver(id: string, endpoint: Endpoint, logger: Logger): Receiver {
  let server: http2.Http2Server | undefined;
  // Each connection's session, with what closes it at shutdown (serveSession).
  const sessions = new Map<ServerHttp2Session, () => void>();
  const sockets = new Set<Socket>();
  const calls = new Set<Call>();
  return {
    async start(host: Host) {
      if (!host.door) return; // worker-only role: nothing to serve
      const { ingest, admission: door, listeners } = host.door;
      const deps: CallDeps = { door, ingest, listener: door.listener, logger, calls };
      const s = http2.createServer({
        settings: { maxConcurrentStreams: MAX_STREAMS_PER_CONNECTION, maxHeaderListSize: MAX_HEADER_BYTES },
        maxSendHeaderBlockLength: MAX_HEADER_BYTES,
      });
      capConnections(s, door.listener, sockets);
      s.on('session', (session) => serveSession(session, deps, sessions));
      const port = await new Promise<number>((resolve, reject) => {
        s.once('error', reject);
        s.listen({ host: endpoint.host, port: endpoint.port }, () => {
          s.off('error', reject);
          resolve((s.address() as { port: number }).port);
        });
      });
      s.on('error', (err) => logger.error({ err }, 'otlp grpc listener failed'));
      server = s;
      const bound = bindAddress({ host: endpoint.host, port });
      listeners.add(`${id}:grpc`, bound);
      logger.info({ address: bound }, 'otlp grpc listening');
    },
    async shutdown() {
      const s = server;
      server = undefined;
      if (!s) return;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      // GOAWAY to every client: a connection with no call open is closed, a call in flight is
      // answered (its jobs durable first), then its connection closed. One whose message is still
      // arriving after SHUTDOWN_DRAIN_MS is answered UNAVAILABLE (as HTTP's 503), and whatever
      // remains a grace later is cut.
      for (const close of sessions.values()) close();
      let cut: NodeJS.Timeout | undefined;
      const drain = setTimeout(() => {
        for (const call of calls) if (call.reading) sendStatus(call.stream, grpcShuttingDown());
        cut = setTimeout(() => {
          for (const session of sessions.keys()) session.destroy();
          // A session's socket can outlive it (a client still sending into a closed window).
          for (const socket of sockets) socket.destroy();
        }, REFUSED_GRACE_MS);
        cut.unref();
      }, SHUTDOWN_DRAIN_MS);
      drain.unref();
      await closed;
      clearTimeout(drain);
      clearTimeout(cut);
      // A call whose message had arrived finishes its enqueue before the queue is closed after us.
      await Promise.all([...calls].map((c) => c.served));
    },
  };
}

/** The HTTP listener's connection budget on this one: a connection beyond it is told GOAWAY and closed before an HTTP/2 session exists. */
function capConnections(server: http2.Http2Server, listener: ListenerDoor, sockets: Set<Socket>): void {
  const handlers = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const release = listener.connections.take(socket.remoteAddress ?? '');
    if (typeof release === 'string') return refuseConnection(socket, release);
    sockets.add(socket);
    socket.once('close', () => {
      release();
      sockets.delete(socket);
    });
    for (const handle of handlers) handle.call(server, socket);
  });
}

/** The server's connection preface (an empty SETTINGS) and GOAWAY(ENHANCE_YOUR_CALM) saying why, by hand: no session is built for it. */
function refuseConnection(socket: Socket, why: string): void {
  const debug = Buffer.from(`server_busy: ${why}`, 'utf8');
  const frames = Buffer.alloc(9 + 9 + 8 + debug.length);
  frames[3] = 0x4; // SETTINGS, empty, stream 0
  frames.writeUIntBE(8 + debug.length, 9, 3);
  frames[12] = 0x7; // GOAWAY, stream 0: last stream 0, the error code, the debug data
  frames.writeUInt32BE(0, 18);
  frames.writeUInt32BE(h2.NGHTTP2_ENHANCE_YOUR_CALM, 22);
  debug.copy(frames, 26);
  lingeringClose(socket, frames);
}

/** Idle timeouts and the stream count of one connection; each call is served by serveCall. */
function serveSession(session: ServerHttp2Session, deps: CallDeps, sessions: Map<ServerHttp2Session, () => void>): void {
  const { settings, connections } = deps.listener;
  const address = session.socket?.remoteAddress ?? '';
  let open = 0;
  let served = false;
  let idle: NodeJS.Timeout | undefined;
  const closeIdle = () => {
    clearTimeout(idle);
    session.close();
    // A client that does not read our GOAWAY cannot keep the socket.
    setTimeout(() => session.destroy(), REFUSED_GRACE_MS).unref();
  };
  // Shutdown: GOAWAY; a connection with no call open goes now, one with calls once they are answered.
  sessions.set(session, () => (open === 0 ? closeIdle() : session.close()));
  // Until its first call a connection has the header timeout, as an HTTP one that sends nothing;
  // between calls, the HTTP listener's keep-alive timeout.
  const arm = () => {
    clearTimeout(idle);
    idle = setTimeout(closeIdle, served ? KEEP_ALIVE_TIMEOUT_MS : settings.headersTimeoutMs);
    idle.unref();
  };
  arm();
  session.on('error', () => {});
  session.on('close', () => {
    clearTimeout(idle);
    sessions.delete(session);
  });
  session.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    open++;
    clearTimeout(idle);
    let extra: (() => void) | undefined;
    stream.once('close', () => {
      extra?.();
      open--;
      served = true;
      if (open > 0 || session.destroyed) return;
      // Closing (shutdown, or the idle timeout's GOAWAY): its last call answered, it goes.
      if (session.closed) closeIdle();
      else arm();
    });
    if (open > 1) {
      const release = connections.take(address);
      if (typeof release === 'string') return sendStatus(stream, grpcStatusOf(errors.serverBusy(release)));
      extra = release;
    }
    serveCall(stream, headers, deps);
  });
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const GRPC_CONTENT_TYPE = /^application\/grpc(\+proto)?\s*(;|$)/i;

function serveCall(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, deps: CallDeps): void {
  const path = headerValue(headers, ':path');
  if (headers[':method'] !== 'POST' || !GRPC_CONTENT_TYPE.test(headerValue(headers, 'content-type') ?? '')) {
    // Not a gRPC request (the spec's answer is HTTP 415).
    stream.respond({ ':status': 415 }, { endStream: true });
    return stopReading(stream);
  }
  if (path !== EXPORT_PATH) return sendStatus(stream, { code: GrpcCode.UNIMPLEMENTED, details: `unknown method ${path ?? ''}: this listener serves ${EXPORT_PATH}` });
  const { listener } = deps;
  const { settings } = listener;
  const timeout = setTimeout(() => sendStatus(stream, grpcStatusOf(errors.requestTimeout())), settings.requestTimeoutMs);
  stream.once('close', () => clearTimeout(timeout));
  const call: Call = { stream, reading: true, served: Promise.resolve() };
  deps.calls.add(call);
  let claim: ReturnType<typeof listener.bodies.claim> | undefined;
  call.served = (async () => {
    // Nothing of the message is read until the caller is known and holds a body slot.
    const { projectId } = await deps.door.authenticate(headerValue(headers, 'authorization'));
    claim = listener.bodies.claim(settings.bodyWaitMs, false);
    stream.once('close', claim.release);
    if (!(await claim.granted)) throw listener.bodiesBusy();
    if (stream.destroyed) return;
    const message = await readMessage(stream, headerValue(headers, 'grpc-encoding') ?? 'identity');
    call.reading = false;
    clearTimeout(timeout);
    claim.release();
    const answer = await exportTraces(message, projectId, deps);
    sendMessage(stream, traceServiceDefinition.Export.responseSerialize(answer));
  })()
    .catch((err: unknown) => {
      if (err instanceof ApiError) return sendStatus(stream, grpcStatusOf(err));
      if (err instanceof CallGone) return;
      deps.logger.error({ err }, 'otlp grpc export failed');
      sendStatus(stream, grpcInternalError());
    })
    .finally(() => {
      // Answered (or gone): nothing more of its message is read. Not left to the stream's 'close',
      // which a refused stream still being sent to may not reach for a long time (Node 24).
      claim?.release();
      deps.calls.delete(call);
    });
}

/** The client reset or closed the stream before its message was read. */
class CallGone extends Error {}

/**
 * The call's one message (a gRPC frame: compressed flag, 4-byte length, bytes), decoded: its
 * announced length meets the raw cap before anything is kept, a compressed one is inflated with
 * the inflated cap (src/ingest/door.ts, as an HTTP body). Resolves at the client's half-close.
 */
function readMessage(stream: ServerHttp2Stream, encoding: string): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const prefix: Buffer[] = [];
    let prefixBytes = 0;
    let length = -1;
    let compressed = false;
    const parts: Buffer[] = [];
    let got = 0;
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      stream.pause();
      reject(err);
    };
    stream.on('data', (chunk: Buffer) => {
      if (failed) return;
      let rest = chunk;
      while (rest.length > 0) {
        if (length >= 0 && got === length) return fail(errors.invalidBody('a unary call carries one request message'));
        if (length < 0) {
          const take = Math.min(5 - prefixBytes, rest.length);
          prefix.push(rest.subarray(0, take));
          prefixBytes += take;
          rest = rest.subarray(take);
          if (prefixBytes < 5) return;
          const head = Buffer.concat(prefix);
          compressed = head[0] === 1;
          length = head.readUInt32BE(1);
          try {
            checkDeclaredLength(length);
          } catch (err) {
            return fail(err as Error);
          }
          continue;
        }
        const take = Math.min(length - got, rest.length);
        parts.push(rest.subarray(0, take));
        got += take;
        rest = rest.subarray(take);
      }
    });
    stream.once('end', () => {
      if (failed) return;
      if (length < 0 || got < length) return fail(errors.invalidBody(length < 0 ? 'the call carries no request message' : 'the request message ended early'));
      decodeBody(Buffer.concat(parts, length), compressed ? encoding : 'identity').then(resolve, fail);
    });
    stream.once('close', () => fail(new CallGone()));
  });
}

/** Stops a client that is still sending: RST_STREAM(NO_ERROR) once our answer is out, as gRPC servers do. */
function stopReading(stream: ServerHttp2Stream): void {
  if (!stream.readableEnded && !stream.destroyed) stream.close(h2.NGHTTP2_NO_ERROR);
}

/** A trailers-only answer (or trailers after our headers): the status, its message, RetryInfo when it has one. */
function sendStatus(stream: ServerHttp2Stream, status: GrpcStatus): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond(
    {
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': String(status.code),
      'grpc-message': encodeURI(status.details),
      ...(status.statusDetails ? { 'grpc-status-details-bin': status.statusDetails.toString('base64') } : {}),
    },
    { endStream: true },
  );
  stopReading(stream);
}

/** The response message, then OK in the trailers. */
function sendMessage(stream: ServerHttp2Stream, body: Buffer): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return;
  stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-accept-encoding': 'identity,gzip' }, { waitForTrailers: true });
  stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(GrpcCode.OK), 'grpc-message': 'OK' }));
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  stream.end(frame);
}
