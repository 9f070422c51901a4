// GET /openapi.json: an OpenAPI 3.1 document generated from the one route table the server
// registers from (docs/contract.md §6), so a route is documented the moment it is added. Schemas come
// from each route's zod declarations (z.toJSONSchema); schemas named with `.meta({ id })` become
// components/schemas and are referenced by `$ref`. The procedures at /trpc are listed under the
// `x-trpc` extension (they speak tRPC's wire format, not REST).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ProcedureDoc } from './trpc.js';
import { defineRoute, type AnyRouteDef, type RouteDef } from './route.js';

type JsonObject = { [key: string]: unknown };

export interface OpenApiOptions {
  /** The procedure API to describe under `x-trpc`. */
  procedures?: { path: string; maxBatch: number; list: Readonly<Record<string, ProcedureDoc>> };
}

const PACKAGE_VERSION = z.object({ version: z.string() }).parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))).version;

const errorBodySchema = z
  .looseObject({
    error: z.string().describe('snake_case error code'),
    message: z.string().optional(),
    issues: z.array(z.object({ path: z.string().describe('dot path of the offending field'), message: z.string() })).optional(),
  })
  .meta({ id: 'Error', description: 'Every error answer (docs/contract.md §5); never a stack trace' });

const SECURITY_SCHEMES = {
  bearerAuth: { type: 'http', scheme: 'bearer', description: 'A project token (`fh_` + 48 hex). Scopes: ingest, read, quarantine, sql; none = ingest-only. The SQL routes (/clickhouse) also take it as basic auth: user = the project slug, password = the token.' },
  adminAuth: { type: 'http', scheme: 'bearer', description: 'The admin token (SERVICE_ADMIN_TOKEN or <data dir>/admin-token).' },
} as const;

/** The error answers shared by many operations, each referring to the Error schema. */
function errorResponses(errorRef: JsonObject): Record<string, JsonObject> {
  const json = { 'application/json': { schema: errorRef } };
  const retryAfter = { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer', minimum: 1 } } };
  return {
    BadRequest: { description: '`invalid_query` / `invalid_payload` (and route-specific codes) with `issues` naming the offending path', content: json },
    Unauthorized: {
      description: '`unauthorized`: no bearer token, or an unknown or revoked one',
      headers: { 'WWW-Authenticate': { schema: { type: 'string', const: 'Bearer' } } },
      content: json,
    },
    Forbidden: { description: '`insufficient_scope`: the token lacks the scope the route needs', content: json },
    NotFound: { description: "`not_found`: unknown, malformed, or another project's id", content: json },
    RateLimited: { description: '`rate_limited`: the project used up its requests of this window', headers: retryAfter, content: json },
    PayloadTooLarge: { description: '`payload_too_large`: over 8 MiB raw or 16 MiB inflated', content: json },
    UnsupportedMediaType: { description: '`unsupported_content_type`', content: json },
    Backpressure: { description: '`backpressure`: the ingest queue is full', headers: retryAfter, content: json },
    InsufficientStorage: {
      description:
        "`insufficient_storage`: the data dir's disk is below SERVICE_MIN_FREE_BYTES, or the queue is full on disk (SERVICE_QUEUE_MAX_BYTES, or the disk itself); nothing was stored; retry once space returns (GET /health shows `storage.state`)",
      headers: retryAfter,
      content: json,
    },
    DeadLetter: {
      description:
        "`dead_letter`: the idempotency key's batch failed processing and is parked as a dead job (`receiptId` in the body); nothing was stored. Requeue or drop it through /v1/admin/dead-jobs; a drop releases the key",
      content: json,
    },
  };
}

/** zod → JSON Schema, with named (`.meta({ id })`) schemas collected as components. */
class SchemaComponents {
  readonly schemas: Record<string, JsonObject> = {};

  convert(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
    const raw = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonObject;
    const { $schema: _dialect, $defs, ...root } = raw;
    const defs = ($defs ?? {}) as Record<string, JsonObject>;
    // A named schema reads differently as input (no additionalProperties: false, defaults optional):
    // that version gets its own name rather than overwriting the output one.
    const names = new Map(Object.keys(defs).map((n) => [n, n] as const));
    for (const [name, def] of Object.entries(defs)) {
      const existing = this.schemas[name];
      if (existing && !sameJson(existing, rewriteRefs(def, names))) names.set(name, `${name}${io === 'input' ? 'Input' : 'Output'}`);
    }
    for (const [name, def] of Object.entries(defs)) {
      const target = names.get(name)!;
      const body = rewriteRefs(def, names);
      const existing = this.schemas[target];
      if (existing && !sameJson(existing, body)) throw new Error(`openapi: two different schemas are named "${target}"`);
      this.schemas[target] = body;
    }
    return rewriteRefs(root, names);
  }
}

function rewriteRefs(value: JsonObject, names: ReadonlyMap<string, string>): JsonObject {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string' && x.startsWith('#/$defs/')) {
        const name = decodeURIComponent(x.slice('#/$defs/'.length));
        out[k] = `#/components/schemas/${encodeURIComponent(names.get(name) ?? name)}`;
      } else out[k] = walk(x);
    }
    return out;
  };
  return walk(value) as JsonObject;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** `/v1/runs/:runId` → `/v1/runs/{runId}` */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function pathParamNames(url: string): string[] {
  return [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
}

function operationId(method: string, url: string): string {
  const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
  const words = url
    .split('/')
    .filter(Boolean)
    .map((seg) => (seg.startsWith(':') ? `By${cap(seg.slice(1))}` : seg.split(/[^A-Za-z0-9]+/).map(cap).join('')));
  return method.toLowerCase() + words.join('');
}

/** Query or path parameters from an object schema's properties. */
function parameters(schemas: SchemaComponents, schema: z.ZodType | undefined, where: 'query' | 'path', url: string): JsonObject[] {
  const props: Record<string, JsonObject> = {};
  let required: string[] = [];
  if (schema) {
    const js = schemas.convert(schema, 'input');
    if (js.type !== 'object' || typeof js.properties !== 'object' || js.properties === null) {
      throw new Error(`openapi: the ${where} schema of ${url} is not an object`);
    }
    Object.assign(props, js.properties as Record<string, JsonObject>);
    required = Array.isArray(js.required) ? (js.required as string[]) : [];
  }
  if (where === 'path') {
    // Every :param of the URL is declared, with or without a schema for it.
    for (const name of pathParamNames(url)) props[name] ??= { type: 'string' };
  }
  return Object.entries(props).map(([name, s]) => {
    const { description, ...rest } = s;
    return {
      name,
      in: where,
      required: where === 'path' || required.includes(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: rest,
    };
  });
}

function isJsonType(contentType: string): boolean {
  return contentType === 'application/json' || contentType.endsWith('+json');
}

function operation(schemas: SchemaComponents, route: RouteDef): JsonObject {
  const ref = (name: string): JsonObject => ({ $ref: `#/components/responses/${name}` });
  const params = [...parameters(schemas, route.params, 'path', route.url), ...parameters(schemas, route.query, 'query', route.url)];
  const op: JsonObject = {
    operationId: operationId(route.method, route.url),
    summary: route.summary,
    ...(route.tags ? { tags: route.tags } : {}),
  };
  if (route.auth.kind === 'token') op.security = route.auth.anyOf.map((scope) => ({ bearerAuth: [scope] }));
  else if (route.auth.kind === 'admin') op.security = [{ adminAuth: [] }];
  else op.security = [];
  if (params.length > 0) op.parameters = params;

  const bodySchema = route.body ?? route.requestBodyDoc;
  if (bodySchema) {
    const schema = schemas.convert(bodySchema, 'input');
    const content: JsonObject = {};
    // Non-JSON bodies (protobuf) are bytes: no schema to show for them.
    for (const ct of route.consumes ?? ['application/json']) content[ct] = isJsonType(ct) ? { schema } : {};
    op.requestBody = { required: true, content };
  }

  const success: JsonObject = { description: route.summary };
  if (route.response) success.content = { 'application/json': { schema: schemas.convert(route.response, 'output') } };
  else if (route.produces) success.content = Object.fromEntries(route.produces.map((ct) => [ct, {}]));
  const responses: JsonObject = { [String(route.successStatus ?? 200)]: success };
  if (params.length > 0 || bodySchema) responses['400'] = ref('BadRequest');
  if (route.auth.kind !== 'none') responses['401'] = ref('Unauthorized');
  if (route.auth.kind === 'token') {
    responses['403'] = ref('Forbidden');
    responses['429'] = ref('RateLimited');
  }
  if (pathParamNames(route.url).length > 0) responses['404'] = ref('NotFound');
  if (bodySchema) responses['413'] = ref('PayloadTooLarge');
  if (route.consumes) responses['415'] = ref('UnsupportedMediaType');
  if (route.backpressure) responses['503'] = ref('Backpressure');
  if (route.backpressure) responses['507'] = ref('InsufficientStorage');
  // Ingest routes (the ones with backpressure) answer 409 for a dead job's idempotency key.
  if (route.backpressure) responses['409'] = ref('DeadLetter');
  op.responses = responses;
  return op;
}

export function buildOpenApi(routes: readonly AnyRouteDef[], opts: OpenApiOptions = {}): JsonObject {
  const schemas = new SchemaComponents();
  const errorRef = schemas.convert(errorBodySchema, 'output');
  const paths: Record<string, Record<string, JsonObject>> = {};
  const tags = new Set<string>();
  const ids = new Set<string>();
  // Answers first: a schema named for both keeps its plain name for the answer, the request side
  // (if it reads differently) gets the `Input` suffix, whatever the route order.
  for (const route of routes) if (route.response) schemas.convert(route.response, 'output');
  for (const route of routes as readonly RouteDef[]) {
    const op = operation(schemas, route);
    // Two routes may only share an operationId by accident of spelling: keep them unique.
    let id = op.operationId as string;
    for (let n = 2; ids.has(id); n++) id = `${op.operationId as string}${n}`;
    ids.add(id);
    op.operationId = id;
    for (const t of route.tags ?? []) tags.add(t);
    (paths[openApiPath(route.url)] ??= {})[route.method.toLowerCase()] = op;
  }

  const doc: JsonObject = {
    openapi: '3.1.0',
    info: {
      title: 'Flakehouse API',
      version: PACKAGE_VERSION,
      description:
        'Flaky-test analytics: ingest (native JSON, JUnit XML, OTLP traces), read (runs, tests, flaky board, RCA, health), ' +
        'PR summary and merge gate, quarantine, admin. Errors are `{ error, message?, issues? }`. ' +
        'The dashboard procedures (tRPC wire format) are described under `x-trpc`.',
    },
    tags: [...tags].sort().map((name) => ({ name })),
    paths,
    components: { schemas: {}, responses: errorResponses(errorRef), securitySchemes: SECURITY_SCHEMES },
  };
  if (opts.procedures) {
    const { path, maxBatch, list } = opts.procedures;
    doc['x-trpc'] = {
      path,
      description:
        `tRPC procedures: GET ${path}/<name>?input=<json> or POST with a JSON body, answer {"result":{"data":…}}; ` +
        `batch with ?batch=1 (at most ${maxBatch} calls). Same bearer token, scope, rate limit (one per call) and data as the REST route named in "rest"; ` +
        'errors carry the REST code in error.data.error (and issues in error.data.issues).',
      procedures: Object.fromEntries(
        Object.entries(list).map(([name, p]) => [name, { type: p.type, scope: p.scope, summary: p.summary, rest: p.rest, input: schemas.convert(p.input, 'input') }]),
      ),
    };
  }
  (doc.components as JsonObject).schemas = schemas.schemas;
  return doc;
}

export function openApiRoute(routes: () => readonly AnyRouteDef[], opts: OpenApiOptions = {}): AnyRouteDef {
  // Routes are all registered before the server listens; rebuild only if the table grew since.
  let cached: { count: number; doc: JsonObject } | undefined;
  return defineRoute({
    method: 'GET',
    url: '/openapi.json',
    summary: 'This OpenAPI 3.1 document, generated from the route table',
    tags: ['meta'],
    auth: { kind: 'none' },
    response: z.looseObject({ openapi: z.literal('3.1.0'), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()) }),
    async handler({ reply }) {
      const all = routes();
      if (cached?.count !== all.length) cached = { count: all.length, doc: buildOpenApi(all, opts) };
      // The document changes only with a new version of the service.
      void reply.header('cache-control', 'public, max-age=300');
      return cached.doc;
    },
  });
}
