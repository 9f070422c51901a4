// The fastify application: the door's timeouts and caps, body decoding (JSON, protobuf, gzip with
// caps), error mapping, security headers, and the route table that receivers and read routes
// register into.
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { LIMITS } from '../../client/src/contract/batch.js';
import type { DoorSettings } from '../config/daemon-env.js';
import { registerBodySlots } from './body-slots.js';
import { capConnections } from './connection-caps.js';
import { drainOnClose } from './drain.js';
import { lingerWhenClosed } from './lingering-close.js';
import { checkDeclaredLength, decodingPipeline, KEEP_ALIVE_TIMEOUT_MS, ListenerDoor, MAX_HEADER_BYTES } from '../ingest/door.js';
import { ApiError, errors } from '../errors/catalogue.js';
import { answerAndClose, SECURITY_HEADERS } from './raw-answer.js';
import { authenticatedAtDoor, RouteTable, type RouteDeps } from './route.js';

export interface AppOptions {
  logger: Logger;
  deps: RouteDeps;
  /** Timeouts and caps at the door (SERVICE_HEADERS_TIMEOUT_MS and the rest). */
  door: DoorSettings;
  /** One `info` line per answered request (SERVICE_LOG_REQUESTS); otherwise that line is at `debug`. */
  logRequests?: boolean;
  /** Called when each response is sent (self-telemetry): the route pattern, not the path, keeps label values few. */
  observe?: (r: { method: string; route: string; status: number; durationMs: number }) => void;
}

export interface App {
  fastify: FastifyInstance;
  routes: RouteTable;
  /** Every (method, url) fastify registered, route table or not: what /openapi.json is checked against. */
  registered: { method: string; url: string }[];
  /** Answers a request no route took (the dashboard's pages), true when it did; null: plain 404s. */
  pages: ((request: FastifyRequest, reply: FastifyReply) => Promise<boolean>) | null;
  /** The door's live counts: open connections, bodies being received. */
  door: { connections(): number; bodies(): number };
  /** The connection budget, body slots and timeouts this listener shares with receivers' own (OTLP/gRPC), src/ingest/door.ts. */
  listener: ListenerDoor;
}

/**
 * One line per answered request, when it is answered (method, URL, status, time), at `level`:
 * `debug`, or `info` with SERVICE_LOG_REQUESTS. fastify's "incoming request" line is not written;
 * a response that fails after its headers is still logged as an error, as fastify does.
 */
class RequestLogs extends LogController {
  constructor(private readonly level: 'info' | 'debug') {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) return super.requestCompleted(error, request, reply);
    request.log[this.level]({ req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/** Request line plus headers (Node's default, pinned so NODE_OPTIONS cannot move it); more is 431, or 414 for the URL. */
export { MAX_HEADER_BYTES };

export function buildApp(opts: AppOptions): App {
  const loggerInstance: FastifyBaseLogger = opts.logger;
  const { door } = opts;
  const fastify = Fastify({
    loggerInstance,
    // fastify's own two lines per request ("incoming request", "request completed") at `info` drown
    // everything else: one line per request, at `debug` unless asked for (SERVICE_LOG_REQUESTS).
    logController: new RequestLogs(opts.logRequests ? 'info' : 'debug'),
    // Node's timers answer 408 through clientErrorHandler and close the socket (docs/api.md
    // "Limits at the door"); they stop at the end of the request, so a long answer is not cut.
    requestTimeout: door.requestTimeoutMs,
    // Our own byte counting enforces the raw and inflated caps with clear errors; this is a backstop.
    bodyLimit: LIMITS.inflatedBytes + 1024,
    return503OnClosing: true,
    // A tRPC batch names all its procedures in one path segment (/trpc/a,b,c): 100 would be ~9 calls.
    routerOptions: { maxParamLength: 5000 },
    // Pinned (fastify's default) so that OTLP/gRPC's idle connections are closed after the same time.
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    http: {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: door.headersTimeoutMs,
      requestTimeout: door.requestTimeoutMs,
      // Node checks the timeouts every interval (30 s by default): a quarter of the shorter keeps
      // an answer within 25 % of its timeout.
      connectionsCheckingInterval: Math.min(1000, Math.max(10, Math.floor(Math.min(door.headersTimeoutMs, door.requestTimeoutMs) / 4))),
    },
    // Errors raised before routing answer with the same body and headers as every other error.
    clientErrorHandler: answerClientError,
    frameworkErrors: (error, _request, reply) => {
      const apiError =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? errors.uriTooLong('a path segment of the URL is too long')
          : error.code === 'FST_ERR_BAD_URL'
            ? errors.badRequest('the URL is not valid (bad percent-encoding?)')
            : toApiError(error);
      // This reply skips the onSend hooks, so the security headers are set here.
      void (reply as FastifyReply)
        .code(apiError.statusCode)
        .headers({ ...SECURITY_HEADERS, 'cache-control': 'no-store', ...apiError.extra.headers })
        .send(apiError.toBody());
    },
  });
  const registered: App['registered'] = [];
  fastify.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) registered.push({ method, url: r.url });
  });

  // One budget of connections and body slots for this listener and the receivers' own (OTLP/gRPC).
  const listener = new ListenerDoor(door);
  capConnections(fastify.server, listener.connections);
  // close() stops Node's header and request timeouts: the stop closes what would otherwise hold it open.
  drainOnClose(fastify, door.requestTimeoutMs);
  // Before the byte caps below: nothing of a body is read until it holds a slot.
  registerBodySlots(fastify, listener.bodies, door.bodyWaitMs, authenticatedAtDoor);

  fastify.addContentTypeParser(
    ['application/x-protobuf', 'application/protobuf', 'application/octet-stream'],
    { parseAs: 'buffer' },
    (_req, body, done) => done(null, body),
  );

  fastify.addHook('preParsing', async (request, _reply, payload) => {
    // The caps every protocol's body meets (src/ingest/door.ts): raw on the wire, inflated after gzip.
    checkDeclaredLength(Number(request.headers['content-length'] ?? 0));
    const { input: raw, output } = decodingPipeline(String(request.headers['content-encoding'] ?? 'identity'));
    payload.on('error', (e) => raw.destroy(e)).pipe(raw);
    if (output === raw) return raw;
    // fastify compares Content-Length with the bytes on the wire, not the inflated ones.
    Object.defineProperty(output, 'receivedEncodedLength', { get: () => raw.seen, enumerable: true });
    return output;
  });

  fastify.addHook('onSend', async (_request, reply, payload) => {
    // Badges widen cross-origin-resource-policy: they are meant to be embedded on other sites.
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (k !== 'cross-origin-resource-policy' || !reply.hasHeader(k)) reply.header(k, v);
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    return payload;
  });

  fastify.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    const apiError = toApiError(error);
    // Only our own failures are errors; 503 backpressure is a designed answer, not a fault.
    if (apiError.statusCode === 500) request.log.error({ err: error }, 'request failed');
    // Refused before its body was read (401, 403, 429, 503 at the door): close the connection after
    // the answer rather than keep receiving a body nobody wants.
    if (!request.raw.complete) {
      void reply.header('connection', 'close');
      lingerWhenClosed(request.raw.socket);
    }
    for (const [k, v] of Object.entries(apiError.extra.headers ?? {})) void reply.header(k, v);
    void reply.code(apiError.statusCode).send(apiError.toBody());
  });

  const observe = opts.observe;
  if (observe) {
    fastify.addHook('onResponse', async (request, reply) => {
      observe({ method: request.method, route: request.routeOptions.url ?? 'unmatched', status: reply.statusCode, durationMs: reply.elapsedTime });
    });
  }

  // The dashboard's pages answer what no API route took (src/api/dashboard): no routes of their own.
  let pages: App['pages'] = null;
  fastify.setNotFoundHandler(async (request, reply) => {
    if (pages && (await pages(request, reply))) return reply;
    const notFound = errors.routeNotFound(request.method, request.url.split('?')[0] ?? '');
    return reply.code(notFound.statusCode).send(notFound.toBody());
  });

  return {
    fastify,
    routes: new RouteTable(fastify, opts.deps),
    registered,
    door: { connections: () => listener.connections.inUse, bodies: () => listener.bodies.inUse },
    listener,
    get pages() {
      return pages;
    },
    set pages(f) {
      pages = f;
    },
  };
}

/**
 * Node's parser refused the request (too large, malformed, too slow): no request object exists,
 * so the answer is written to the socket by hand, as fastify's default handler does.
 */
function answerClientError(err: ClientError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // A request timing out mid-body has a response object that has written nothing yet.
  answerAndClose(socket, clientErrorOf(err), err);
}

/** Node's clientError: `rawPacket` is a Buffer at run time (fastify's type says otherwise). */
type ClientError = Error & { code?: string; rawPacket?: unknown };

function clientErrorOf(err: ClientError): ApiError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return errors.requestTimeout();
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    // The limit covers the request line too; when the overflow comes before the line ends, the URL
    // is what is too long. (rawPacket is the chunk being parsed: a request split over several
    // packets may not show its start, and is then reported as 431.)
    const packet = Buffer.isBuffer(err.rawPacket) ? err.rawPacket.subarray(0, MAX_HEADER_BYTES + 1).toString('latin1') : '';
    if (/^[A-Z]+ /.test(packet) && !packet.includes('\r\n')) return errors.uriTooLong(`the request line exceeds ${MAX_HEADER_BYTES} bytes; send large values in the body`);
    return errors.headersTooLarge(MAX_HEADER_BYTES);
  }
  return errors.badRequest(`the request is not valid HTTP/1.1${err.code ? ` (${err.code})` : ''}`);
}

function toApiError(error: FastifyError | ApiError): ApiError {
  if (error instanceof ApiError) return error;
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge('request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.unsupportedMediaType(error.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.invalidPayload([{ path: '', message: 'the body is empty' }], 'the request body is empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.invalidPayload([{ path: '', message: error.message }], 'the body is not valid JSON');
    default:
      break;
  }
  if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
    return errors.invalidPayload([{ path: '', message: error.message }], 'the body is not valid JSON');
  }
  if (error.statusCode === 415) return errors.unsupportedMediaType(error.message);
  if (error.statusCode === 413) return errors.payloadTooLarge(error.message);
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return errors.clientError(error.statusCode, error.message);
  }
  return errors.internal();
}
