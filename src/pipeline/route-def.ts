// What a route is: its method and path, auth, zod schemas and handler. The declaration only; the
// API's route table (src/api/route.ts) registers it on fastify, runs the door checks in the order
// docs/contract.md §2 gives, and documents it in /openapi.json. Below the API layer, so receivers
// (src/receivers) declare their ingest routes without importing the API; the types it names from
// fastify, the store and src/ingest are type-only.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { IngestAdmission } from '../ingest/service.js';
import type { Scope, TokenPrincipal } from '../store/projects.js';

export type RouteAuth = { kind: 'none' } | { kind: 'admin' } | { kind: 'token'; anyOf: readonly Scope[] };

export interface RouteContext<Q, P, B> {
  request: FastifyRequest;
  reply: FastifyReply;
  query: Q;
  params: P;
  /** The validated body, or the raw decoded body when the route validates it itself. */
  body: B;
  /** Present on token-authenticated routes. */
  principal: TokenPrincipal | undefined;
  /** Ingest routes: the queue slot taken at the door (released by the enqueue, or when the handler ends). */
  admission?: IngestAdmission;
}

export interface RouteDef<Q = unknown, P = unknown, B = unknown> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  summary: string;
  tags?: string[];
  auth: RouteAuth;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  body?: z.ZodType<B>;
  /** Documents a body the handler validates itself (ingest validates after the backpressure check). */
  requestBodyDoc?: z.ZodType;
  /** Content types the body may have (default application/json). */
  consumes?: string[];
  response?: z.ZodType;
  /** Content types of a success answer that is not JSON (export: application/gzip; badges: image/svg+xml), for /openapi.json. */
  produces?: string[];
  successStatus?: number;
  /** Ingest routes: refuse with 507 when storage is full, 503 when the queue is, before validating the body. */
  backpressure?: boolean;
  /** Token routes: finds the principal itself instead of reading a bearer header (the ClickHouse endpoint takes basic auth). */
  authenticate?(request: FastifyRequest): Promise<TokenPrincipal>;
  /** Whether a 404 for a malformed path param should replace 400 (ids that do not parse are unknown). */
  paramsNotFound?: boolean;
  handler(ctx: RouteContext<Q, P, B>): Promise<unknown>;
}

// Erases the generics for storage in the table; handlers stay typed where they are defined.
// oxlint-disable-next-line typescript/no-explicit-any
export type AnyRouteDef = RouteDef<any, any, any>;

export function defineRoute<Q, P, B>(def: RouteDef<Q, P, B>): RouteDef<Q, P, B> {
  return def;
}
