// GET /openapi.json documents exactly what the server serves: every route of the route table and
// every route fastify registered (so nothing registered around the table goes undocumented; /trpc
// is described under x-trpc instead), with parameters, bodies and answers from the zod schemas.
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiPath } from '../../src/api/openapi.js';
import { PROCEDURES, createAppRouter, type TrpcDeps } from '../../src/api/trpc.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

describe('GET /openapi.json', () => {
  let td: TestDaemon;
  let doc: any;
  let status: number;
  let headers: Headers;

  beforeAll(async () => {
    td = await startTestDaemon();
    const res = await td.request('GET', '/openapi.json', { token: null });
    ({ status, headers } = res);
    doc = res.json;
  });

  afterAll(async () => td?.close());

  function documented(): string[] {
    return Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, ops]) => Object.keys(ops).filter((m) => METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
  }

  it('is served without a token, cacheable, with the security headers', () => {
    expect(status).toBe(200);
    expect(headers.get('cache-control')).toBe('public, max-age=300');
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    expect(doc.openapi).toBe('3.1.0');
  });

  it('documents every route of the route table and nothing else', () => {
    const table = td.daemon.app.routes.routes.map((r) => `${r.method} ${openApiPath(r.url)}`).sort();
    expect(table.length).toBeGreaterThan(20);
    expect(new Set(table).size).toBe(table.length);
    expect(documented()).toEqual(table);
  });

  it("documents every route fastify registered (its own route list), /trpc aside", () => {
    const registered = td.daemon.app.registered;
    const gets = new Set(registered.filter((r) => r.method === 'GET').map((r) => r.url));
    const served = registered
      // fastify adds a HEAD to every GET by itself; /trpc is described under x-trpc.
      .filter((r) => !(r.method === 'HEAD' && gets.has(r.url)))
      .filter((r) => r.url !== '/trpc' && !r.url.startsWith('/trpc/'))
      .map((r) => `${r.method} ${openApiPath(r.url)}`);
    expect([...new Set(served)].sort()).toEqual(documented());
    // /trpc is really there, and only the documented procedures answer on it.
    expect(registered.some((r) => r.url === '/trpc/:path' && r.method === 'GET')).toBe(true);
  });

  it('lists every procedure under x-trpc, as the router has them, and each one answers', async () => {
    const router = createAppRouter({} as TrpcDeps); // only its shape is read: no dependency is touched until a call
    const names = Object.keys(router._def.procedures).sort();
    // The six SPEC procedures, then the dashboard's (docs/dashboard.md).
    const spec = ['flaky.board', 'health.metrics', 'rca.get', 'run.get', 'runs.list', 'test.get'];
    for (const name of spec) expect(doc['x-trpc'].procedures[name]).toMatchObject({ type: 'query', scope: 'read' });
    expect(names).toEqual(
      [
        ...spec,
        'badges.get', 'channels.list', 'channels.sendTest', 'clusters.list', 'execution.get', 'flaky.slowed', 'health.flakyTests', 'health.suites', 'pipeline.graph', 'pr.commits', 'pr.summary',
        'projects.list', 'session.me', 'settings.get', 'settings.update', 'test.clusters', 'test.history', 'test.quarantine', 'test.quarantineLog',
        'test.release', 'test.trends', 'tokens.create', 'tokens.list', 'tokens.revoke',
      ].sort(),
    );
    expect(Object.keys(doc['x-trpc'].procedures).sort()).toEqual(names);
    expect(Object.keys(PROCEDURES).sort()).toEqual(names);
    expect(doc['x-trpc'].path).toBe('/trpc');
    for (const name of names) {
      const p = doc['x-trpc'].procedures[name];
      const kind = PROCEDURES[name as keyof typeof PROCEDURES];
      expect(p).toMatchObject({ type: kind.type, scope: kind.scope });
      if (p.rest !== null) expect(documented()).toContain(p.rest);
      // Exists: refused for the missing token, not "no such procedure".
      const res = kind.type === 'query' ? await td.request('GET', `/trpc/${name}`, { token: null }) : await td.request('POST', `/trpc/${name}`, { token: null, body: {} });
      expect(res.status, name).toBe(401);
    }
    expect((await td.request('GET', '/trpc/runs.delete', { token: null })).status).toBe(404);
    expect(doc['x-trpc'].procedures['runs.list'].input.properties.limit.type).toBe('integer');
    expect(doc['x-trpc'].procedures['run.get'].input.required).toEqual(['runId']);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const res = await validator.validate(doc);
    expect(res.errors ?? []).toEqual([]);
    expect(res.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    const ids = documented().map((k) => {
      const [m, p] = k.split(' ');
      return doc.paths[p!][m!.toLowerCase()].operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('resolves every $ref, with named schemas as components', () => {
    const refs: string[] = [];
    const walk = (v: unknown, at: string): void => {
      if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${at}/${i}`));
      else if (v && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if (k === '$ref') refs.push(x as string);
          expect(k, `${at}: left-over JSON Schema keyword`).not.toMatch(/^\$(defs|schema|id)$/);
          walk(x, `${at}/${k}`);
        }
      }
    };
    walk(doc, '#');
    expect(refs.length).toBeGreaterThan(50);
    for (const ref of new Set(refs)) {
      expect(ref.startsWith('#/'), ref).toBe(true);
      let node: any = doc;
      for (const seg of ref.slice(2).split('/')) node = node?.[decodeURIComponent(seg).replace(/~1/g, '/').replace(/~0/g, '~')];
      expect(node, `unresolved ${ref}`).toBeDefined();
    }
    for (const name of ['Error', 'Run', 'RunDetail', 'FlakyTest', 'TestDetail', 'ProjectHealth', 'RcaReport', 'IngestReceipt']) {
      expect(refs).toContain(`#/components/schemas/${name}`);
    }
    expect(doc.paths['/v1/runs'].get.responses['200'].content['application/json'].schema.properties.items.items).toEqual({ $ref: '#/components/schemas/Run' });
    expect(doc.paths['/v1/executions/{executionId}/rca'].get.responses['200'].content['application/json'].schema).toEqual({
      anyOf: [{ $ref: '#/components/schemas/RcaReport' }, { type: 'null' }],
    });
  });

  it('declares path and query parameters with their types, bodies and answers from the zod schemas', () => {
    for (const route of td.daemon.app.routes.routes) {
      const path = openApiPath(route.url);
      const op = doc.paths[path][route.method.toLowerCase()];
      const where = `${route.method} ${path}`;
      const pathParams = [...route.url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]).sort();
      const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path');
      expect(declared.map((p: any) => p.name).sort(), where).toEqual(pathParams);
      for (const p of declared) expect(p.required, where).toBe(true);
      for (const p of op.parameters ?? []) expect(p.schema.type ?? p.schema.anyOf ?? p.schema.enum, `${where} ${p.name}`).toBeDefined();
      if (route.body || route.requestBodyDoc) expect(op.requestBody, where).toBeDefined();
      // Every route says what it answers: a JSON schema, or the content types of a non-JSON answer.
      const success = op.responses[String(route.successStatus ?? 200)];
      expect(success?.content, `${where} has no documented answer`).toBeDefined();
      if (route.response) expect(success.content['application/json'].schema, where).toBeDefined();
      // Bearer security everywhere except the public routes.
      if (route.auth.kind === 'none') expect(op.security, where).toEqual([]);
      else expect(op.security.length, where).toBeGreaterThan(0);
      if (route.auth.kind === 'token') expect(op.responses['429'], where).toEqual({ $ref: '#/components/responses/RateLimited' });
    }
    const runs = doc.paths['/v1/runs'].get.parameters;
    expect(runs.find((p: any) => p.name === 'limit')).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } });
    expect(runs.find((p: any) => p.name === 'status').schema.enum).toEqual(['running', 'passed', 'failed', 'canceled']);
    const quarantine = doc.paths['/v1/tests/{testIdentityId}/quarantine'].post;
    expect(quarantine.requestBody.content['application/json'].schema.properties.decision.enum).toEqual(['quarantined', 'released', 'auto']);
    expect(quarantine.security).toEqual([{ bearerAuth: ['quarantine'] }]);
    expect(doc.paths['/v1/runs/gate'].get.security).toEqual([{ bearerAuth: ['ingest'] }, { bearerAuth: ['read'] }]);
    expect(Object.keys(doc.paths['/v1/traces'].post.requestBody.content).sort()).toEqual(['application/json', 'application/x-protobuf']);
    expect(doc.paths['/v1/ingest'].post.responses['202'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/IngestReceipt' });
    expect(doc.paths['/v1/ingest'].post.requestBody.content['application/json'].schema.required).toContain('contractVersion');
    expect(doc.paths['/health'].get.security).toEqual([]);
    expect(doc.paths['/openapi.json'].get.security).toEqual([]);
  });
});
