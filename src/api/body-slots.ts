// The body-slot budget (src/ingest/body-slots.ts) on fastify's request cycle: a request takes a
// slot before fastify reads its body and gives it back once the body is decoded.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors } from '../errors/catalogue.js';
import type { BodySlots, SlotClaim } from '../ingest/body-slots.js';

export { BodySlots } from '../ingest/body-slots.js';

/** Whether a request announces a body (Content-Length > 0, or chunked). */
export function declaresBody(headers: FastifyRequest['headers']): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/**
 * Takes a slot before fastify reads a body (preParsing, after the route's authentication in
 * onRequest) and frees it once the body is decoded (preValidation) or the answer is over.
 */
export function registerBodySlots(fastify: FastifyInstance, slots: BodySlots, waitMs: number, authenticated: (request: FastifyRequest) => boolean): void {
  const claims = new WeakMap<FastifyRequest, SlotClaim>();
  fastify.addHook('preParsing', async (request, reply, payload) => {
    // A gone client has no body to read; fastify ends the request.
    if (!declaresBody(request.headers) || request.raw.socket?.destroyed) return payload;
    const claim = slots.claim(waitMs, !authenticated(request));
    claims.set(request, claim);
    // 'close' comes when the answer is sent or the connection is gone, whatever happened meanwhile.
    reply.raw.once('close', claim.release);
    if (!(await claim.granted)) throw errors.serverBusy(`too many request bodies are being received at once (at most ${slots.max})`);
    return payload;
  });
  fastify.addHook('preValidation', async (request) => {
    claims.get(request)?.release();
  });
}
