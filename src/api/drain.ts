// What a stop does with the HTTP listener's open connections (fastify.close(): SIGTERM to
// `flakehouse serve`, the close of an agent or an ingest process, a daemon's close() in tests).
//
// Node's server.close() stops accepting and closes the connections that are between requests, and
// then waits for every other connection to end; but it also stops the checks of the header and
// request timeouts (SERVICE_HEADERS_TIMEOUT_MS, SERVICE_REQUEST_TIMEOUT_MS: its
// connectionsCheckingInterval). A connection that never sent a request, or sent part of its request
// line or headers, then held the stop open for ever (Node counts a fresh connection as busy, not
// idle, so that the header timeout covers it); a body that never finished likewise; and a request
// answered during the stop kept its connection for the keep-alive timeout (72 s). fastify's
// forceCloseConnections cannot tell these apart: `idle` is Node's own closing of the connections
// between requests, `true` cuts requests in flight. So, once the listener stops accepting
// (fastify's preClose hook):
//   - a connection with no request in progress (nothing sent, part of a request line or headers,
//     between requests) is closed at once: a request completed now would only be answered 503;
//   - a request in progress keeps its connection until it is answered, with `connection: close`
//     when its headers are still unsent, and the connection is closed after the answer (a 202 is
//     durable before it is sent);
//   - a request whose body is still arriving has SHUTDOWN_DRAIN_MS to finish, and never more than
//     its request timeout; else it is answered 503 not_ready (408 past its timeout, as Node would
//     have) and closed.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { errors } from '../errors/catalogue.js';
import { SHUTDOWN_DRAIN_MS } from '../ingest/door.js';
import { answerAndClose } from './raw-answer.js';

interface InFlight {
  req: IncomingMessage;
  res: ServerResponse;
  startedAt: number;
}

export function drainOnClose(fastify: FastifyInstance, requestTimeoutMs: number): void {
  const server = fastify.server;
  const open = new Map<Socket, Set<InFlight>>();
  let stopping = false;

  server.on('connection', (socket: Socket) => {
    // Accepted between the preClose hook and server.close(): nothing will serve it.
    if (stopping) return void socket.destroy();
    open.set(socket, new Set());
    socket.once('close', () => open.delete(socket));
  });

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const requests = open.get(req.socket);
    if (!requests) return;
    const request: InFlight = { req, res, startedAt: performance.now() };
    requests.add(request);
    res.once('close', () => {
      requests.delete(request);
      // Answered (or its client went): a stopping listener keeps no connection for the next request.
      if (stopping && requests.size === 0) req.socket.destroySoon();
    });
  });

  fastify.addHook('preClose', (done) => {
    stopping = true;
    const now = performance.now();
    for (const [socket, requests] of open) {
      if (requests.size === 0) {
        socket.destroy();
        continue;
      }
      for (const request of requests) drain(socket, request, now);
    }
    done();
  });

  function drain(socket: Socket, { req, res, startedAt }: InFlight, now: number): void {
    if (!res.headersSent) res.setHeader('connection', 'close');
    if (req.complete) return;
    const timeoutLeft = startedAt + requestTimeoutMs - now;
    // Which bound ends the wait is decided here: a timer may fire a fraction of a millisecond
    // before performance.now() says the request timeout has passed.
    const byRequestTimeout = timeoutLeft <= SHUTDOWN_DRAIN_MS;
    const timer = setTimeout(
      () => {
        if (req.complete || socket.destroyed) return;
        const timedOut = byRequestTimeout || performance.now() - startedAt >= requestTimeoutMs;
        answerAndClose(socket, timedOut ? errors.requestTimeout() : errors.notReady('the server is shutting down; send the request again'));
      },
      Math.max(0, Math.ceil(Math.min(SHUTDOWN_DRAIN_MS, timeoutLeft))),
    );
    timer.unref();
    res.once('close', () => clearTimeout(timer));
  }
}
