// One route table: every route is declared with its auth, zod schemas and handler (src/pipeline/route-def.ts), registered on
// fastify from here, and (later) documented in /openapi.json from the same declarations.
//
// Check order on every route (docs/contract.md §2, §6): auth 401 → scope 403 → rate limit 429 →
// body decode (400/413/415) → queue depth 503 (ingest routes) → validation 400 → handler (ingest:
// a replay of a stored key answers 202, a new batch meets storage 507). Auth, scope and rate limit read only the headers and run in onRequest, before a byte
// of the body is read: a stranger cannot make the server hold a body.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { TokenPrincipal } from '../store/projects.js';
import { requireAnyScope, type Authenticator } from './auth.js';
import type { IngestAdmission } from '../ingest/service.js';
import { ApiError, errors, zodIssues } from '../errors/catalogue.js';
import { admitCaller } from '../ingest/door.js';
import type { RateLimiter } from './rate-limit.js';
import type { AnyRouteDef, RouteDef } from '../pipeline/route-def.js';

// What a route is (its declaration) lives below the API layer, in src/pipeline/route-def.ts: receivers
// declare their ingest routes there without importing this registration.
export { defineRoute, type AnyRouteDef, type RouteAuth, type RouteContext, type RouteDef } from '../pipeline/route-def.js';

export interface RouteDeps {
  auth: Authenticator;
  rateLimiter: RateLimiter;
  /** Queue depth check, synchronous: holds a queue slot, or throws 503 (storage is checked per batch, after validation). */
  admitIngest(): IngestAdmission;
}

/** Principals of the requests the route table authenticated from their headers (token routes; admin routes hold ADMIN). */
const doorPrincipals = new WeakMap<FastifyRequest, TokenPrincipal | typeof ADMIN>();
const ADMIN = Symbol('admin');

/** Whether the request was authenticated from its headers, before its body (src/api/body-slots.ts). */
export function authenticatedAtDoor(request: FastifyRequest): boolean {
  return doorPrincipals.has(request);
}

export class RouteTable {
  readonly routes: AnyRouteDef[] = [];

  constructor(
    private readonly app: FastifyInstance,
    private readonly deps: RouteDeps,
  ) {}

  add(route: AnyRouteDef): void {
    this.routes.push(route);
    const def = route as RouteDef<unknown, unknown, unknown>;
    const deps = this.deps;
    this.app.route({
      method: def.method,
      url: toFastifyPath(def.url),
      // def.auth and def.authenticate are read per request: the dashboard sets authenticate on
      // some routes after they are added (src/api/dashboard/setup.ts).
      onRequest: async (request) => {
        if (def.auth.kind === 'admin') {
          deps.auth.authenticateAdmin(request.headers.authorization);
          doorPrincipals.set(request, ADMIN);
        } else if (def.auth.kind === 'token') {
          const anyOf = def.auth.anyOf;
          // The door's one check of a caller (src/ingest/door.ts, OTLP/gRPC's too): token, scope,
          // then the rate limit, here rather than after the body: a client over its budget costs no body read either.
          const principal = await admitCaller(async () => {
            const p = def.authenticate ? await def.authenticate(request) : await deps.auth.authenticate(request.headers.authorization);
            requireAnyScope(p, anyOf);
            return p;
          }, deps.rateLimiter);
          doorPrincipals.set(request, principal);
        }
      },
      handler: async (request, reply) => {
        const known = doorPrincipals.get(request);
        const principal = known === ADMIN ? undefined : known;
        const admission = def.backpressure ? deps.admitIngest() : undefined;
        let result: unknown;
        try {
          const params = parseOrThrow(def.params, request.params, 'params', def.paramsNotFound === true);
          const query = parseOrThrow(def.query, request.query, 'query', false);
          const body = def.body ? parseOrThrow(def.body, request.body, 'body', false) : request.body;
          result = await def.handler({ request, reply, query, params, body, principal, ...(admission ? { admission } : {}) });
        } finally {
          admission?.close();
        }
        if (reply.sent) return reply;
        reply.code(def.successStatus ?? 200);
        return result;
      },
    });
  }
}

function parseOrThrow<T>(schema: z.ZodType<T> | undefined, value: unknown, where: 'params' | 'query' | 'body', notFound: boolean): T {
  if (!schema) return value as T;
  const r = schema.safeParse(value ?? {});
  if (r.success) return r.data;
  if (where === 'params' && notFound) throw errors.notFound();
  if (where === 'body') throw errors.invalidPayload(zodIssues(r.error));
  throw errors.invalidQuery(zodIssues(r.error));
}

/** `/v1/runs/:runId` style is what fastify wants already; kept as a seam for OpenAPI `{runId}`. */
function toFastifyPath(url: string): string {
  return url;
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
