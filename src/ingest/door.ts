// The door every request comes through, whatever its protocol (docs/api.md "Limits at the door"):
// HTTP/1.1 (src/api/route.ts, app.ts) and OTLP/gRPC over HTTP/2 (src/receivers/otlp/grpc.ts) call
// the same checks, in the same order, each answering a refusal in its own terms:
//   connection budget (total and per address; an HTTP/2 stream beyond a connection's first counts
//   as one more) → token, scope, rate limit from the headers or metadata → a body slot → the raw
//   and inflated size caps while the body is read → (the receiver) queue depth and memory, then
//   the enqueue.
// Who a token is comes in as a function (src/api passes its authenticator with its scope check),
// so this module stays below the API layer.
import type { Socket } from 'node:net';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { DoorSettings } from '../config/daemon-env.js';
import { LIMITS } from '../../client/src/contract/batch.js';
import { ApiError, errors } from '../errors/catalogue.js';
import type { IngestDoor, IngestSlots } from '../pipeline/component.js';
import { BodySlots } from './body-slots.js';
import { IngestTurns } from './turns.js';

/** Request line plus headers (HTTP), or an HTTP/2 header list: more is refused (431/414; HTTP/2: the stream is refused). */
export const MAX_HEADER_BYTES = 16_384;

/** How long a connection with no request in progress stays open after its last one (fastify's default, pinned here for both protocols). */
export const KEEP_ALIVE_TIMEOUT_MS = 72_000;

/** How long a refused connection may take to read its answer before it is cut. */
export const REFUSED_GRACE_MS = 1000;

/**
 * Closes a connection whose client may still be sending (a refusal, on either protocol). Closing a
 * socket with unread data makes the kernel reset the connection, and the reset makes the client's
 * kernel drop what it had received and not yet read: a client busy for a moment loses the answer
 * (a raw HTTP client that read 300 ms late lost its 401 every time). So `last` goes out with a
 * FIN, what the client still sends is read and dropped, and the socket is destroyed once the
 * client closes its side or REFUSED_GRACE_MS have passed (one that never stops sending is cut then).
 */
export function lingeringClose(socket: Socket, last?: string | Uint8Array): void {
  socket.on('error', () => {});
  socket.resume();
  const cut = setTimeout(() => socket.destroy(), REFUSED_GRACE_MS);
  socket.once('close', () => clearTimeout(cut));
  socket.once('end', () => socket.destroy());
  if (last === undefined) socket.end();
  else socket.end(last);
}

/**
 * How long a stop (SIGTERM, close()) lets a request whose body, or a call whose message, is still
 * arriving finish; later it is answered 503 not_ready (gRPC: UNAVAILABLE) and its connection
 * closed, so a stalled client cannot hold the process open. A request whose body has arrived is
 * always answered (a 202 is durable before it is sent); a connection with no request in progress
 * is closed at once.
 */
export const SHUTDOWN_DRAIN_MS = 5_000;

// ---------------------------------------------------------------------------------------------
// Token, scope, rate limit

/** Seconds a project must wait before its next request, 0 when it may go on (the API's RateLimiter). */
export interface ProjectRateLimit {
  hit(projectId: string): number;
}

/**
 * The one check of a caller from its headers or metadata, before any of its body is read: who the
 * token is and whether it has the scope (`identify` throws 401/403), then the project's rate
 * limit (429). Refused requests with 401/403 do not count against the limit.
 */
export async function admitCaller<P extends { projectId: string }>(identify: () => Promise<P>, rateLimiter: ProjectRateLimit): Promise<P> {
  const principal = await identify();
  const wait = rateLimiter.hit(principal.projectId);
  if (wait > 0) throw errors.rateLimited(wait);
  return principal;
}

/** The principal of an `authorization` value with scope ingest: throws 401 (no valid token) or 403 (another scope). */
export type IngestAuthenticate<P extends { projectId: string }> = (authorization: string | undefined) => Promise<P>;

/** Auth 401 → scope 403 → rate limit 429 (admitCaller); a queue slot (503) with admit(); the listener's shared caps. */
export function ingestDoor<P extends { projectId: string }>(
  authenticate: IngestAuthenticate<P>,
  rateLimiter: ProjectRateLimit,
  ingest: { admit(): IngestSlots },
  listener: ListenerDoor,
): IngestDoor {
  return {
    authenticate: (authorization) => admitCaller(() => authenticate(authorization), rateLimiter),
    admit: () => ingest.admit(),
    listener,
  };
}

// ---------------------------------------------------------------------------------------------
// Connections, bodies in flight, timeouts: one budget per process, shared by its listeners

/** Open connections in total and per remote address; one unit each (an HTTP/2 stream beyond a connection's first takes one more). */
export class ConnectionBudget {
  private open = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(
    readonly max: number,
    readonly perAddress: number,
  ) {}

  get inUse(): number {
    return this.open;
  }

  /** One unit for `address`: the function that gives it back (once), or why not (a server_busy message). */
  take(address: string): (() => void) | string {
    const mine = this.byAddress.get(address) ?? 0;
    if (this.open >= this.max) return `too many open connections (at most ${this.max})`;
    if (mine >= this.perAddress) return `too many open connections from your address (at most ${this.perAddress})`;
    this.open++;
    this.byAddress.set(address, mine + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.open--;
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.byAddress.set(address, left);
      else this.byAddress.delete(address);
    };
  }
}

/**
 * What every listener of a process shares: the connection budget, the body slots, the timeouts
 * (SERVICE_* door settings), and the HTTP thread's turns for ingest work (./turns.ts).
 */
export class ListenerDoor {
  readonly connections: ConnectionBudget;
  readonly bodies: BodySlots;
  readonly turns = new IngestTurns();

  constructor(readonly settings: DoorSettings) {
    this.connections = new ConnectionBudget(settings.maxConnections, settings.maxConnectionsPerAddress);
    this.bodies = new BodySlots(settings.maxConcurrentBodies);
  }

  /** The refusal of a request that found no body slot within SERVICE_BODY_WAIT_MS. */
  bodiesBusy(): ApiError {
    return errors.serverBusy(`too many request bodies are being received at once (at most ${this.bodies.max})`);
  }
}

// ---------------------------------------------------------------------------------------------
// Sizes: the raw cap on the wire, the inflated cap after gzip (LIMITS), one pipeline for both protocols

export function tooLargeOnWire(): ApiError {
  return errors.payloadTooLarge(`request body exceeds ${LIMITS.bodyBytes} bytes`);
}

export function tooLargeInflated(): ApiError {
  return errors.payloadTooLarge(`inflated request body exceeds ${LIMITS.inflatedBytes} bytes`);
}

/** A body's declared length (Content-Length, a gRPC message's length prefix) over the raw cap: refused before it is read. */
export function checkDeclaredLength(bytes: number): void {
  if (bytes > LIMITS.bodyBytes) throw tooLargeOnWire();
}

/**
 * Where a body's bytes go as they arrive (`input`) and what comes out decoded (`output`): at most
 * LIMITS.bodyBytes on the wire, and for gzip at most LIMITS.inflatedBytes inflated, failing with
 * 413 the moment either is passed (an inflating bomb stops there). Other encodings: 415.
 * `raw.seen` counts the bytes on the wire.
 */
export function decodingPipeline(encoding: string): { input: Transform & { seen: number }; output: Readable } {
  const raw = capBytes(LIMITS.bodyBytes, tooLargeOnWire);
  const enc = encoding.toLowerCase();
  if (enc === 'identity' || enc === '') return { input: raw, output: raw };
  if (enc !== 'gzip') throw errors.unsupportedContentEncoding(enc);
  const gunzip = createGunzip();
  const inflated = capBytes(LIMITS.inflatedBytes, tooLargeInflated);
  raw.on('error', (e) => inflated.destroy(e)).pipe(gunzip);
  gunzip.on('error', (e: Error) => inflated.destroy(e instanceof ApiError ? e : errors.invalidBody(`invalid gzip body: ${e.message}`))).pipe(inflated);
  return { input: raw, output: inflated };
}

/** A whole body at once through decodingPipeline: its decoded bytes, or the same 413/415/400 as a streamed one. */
export function decodeBody(bytes: Buffer, encoding: string): Promise<Buffer> {
  const { input, output } = decodingPipeline(encoding);
  return new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = [];
    output.on('data', (c: Buffer) => parts.push(c));
    output.on('error', reject);
    output.on('end', () => resolve(Buffer.concat(parts)));
    input.end(bytes);
  });
}

/** Passes bytes through, failing with `tooLarge()` once more than `max` have gone by. */
function capBytes(max: number, tooLarge: () => ApiError): Transform & { seen: number } {
  const t = new Transform({
    transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback) {
      counted.seen += chunk.length;
      if (counted.seen > max) cb(tooLarge());
      else cb(null, chunk);
    },
  });
  const counted = Object.assign(t, { seen: 0 });
  return counted;
}
