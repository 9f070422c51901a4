// Errors the routes and the app raise through the catalogue (src/errors/catalogue.ts `errors.*`), checked
// byte for byte on the wire: moving them into the catalogue must not change a client's view.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

let td: TestDaemon;

beforeAll(async () => {
  td = await startTestDaemon({ work: false });
});

afterAll(async () => {
  await td?.close();
});

describe('error bodies from the catalogue', () => {
  it('404 for a path no route serves, without its query string', async () => {
    const res = await td.request('GET', '/v1/no-such-thing?x=1');
    expect(res.status).toBe(404);
    expect(res.text).toBe('{"error":"not_found","message":"no route for GET /v1/no-such-thing"}');
  });

  it('401 and 403 are answered from the headers with the same bytes, the body unread (docs/contract.md §2)', async () => {
    const anonymous = await td.request('POST', '/v1/ingest', { token: null, body: '{"not json', headers: { 'content-type': 'application/json' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).toBe('{"error":"unauthorized","message":"a valid bearer token is required"}');
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    const created = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    const readOnly = await td.request('POST', '/v1/ingest', { token: created.json.token, body: '{"not json', headers: { 'content-type': 'application/json' } });
    expect(readOnly.status).toBe(403);
    expect(readOnly.text).toBe('{"error":"insufficient_scope","message":"this token lacks the \\"ingest\\" scope"}');
  });

  it('GET /ready: ready on the embedded queue, shaped like the liveness probe (not_ready, 503, is checked against NATS in test/e2e/scale-out.test.ts)', async () => {
    const res = await td.request('GET', '/ready', { token: null });
    expect(res.status).toBe(200);
    expect(res.text).toBe('{"status":"ready","service":"api"}');
  });

  it('415 for a content-encoding other than gzip', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: JSON.stringify(nativeBatch()), headers: { 'content-type': 'application/json', 'content-encoding': 'br' } });
    expect(res.status).toBe(415);
    expect(res.text).toBe('{"error":"unsupported_content_type","message":"unsupported content-encoding \\"br\\"; use gzip or none","contentEncoding":"br"}');
  });

  it('400 invalid_payload, without issues, for a body that is not gzip', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: 'not gzip at all', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    expect(res.status).toBe(400);
    expect(Object.keys(res.json)).toEqual(['error', 'message']);
    expect(res.json.error).toBe('invalid_payload');
    expect(res.json.message).toMatch(/^invalid gzip body: /);
  });

  it('400 unsupported_contract_version names the field', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: { ...nativeBatch(), contractVersion: '9.0.0' } });
    expect(res.status).toBe(400);
    expect(Object.keys(res.json)).toEqual(['error', 'message', 'issues']);
    expect(res.json.error).toBe('unsupported_contract_version');
    expect(res.json.message).toMatch(/^contractVersion 9\.0\.0 is not supported/);
    expect(res.json.issues).toEqual([{ path: 'contractVersion', message: 'unsupported major version' }]);
  });

  it('409 conflict for a project slug that is taken', async () => {
    const body = { slug: 'catalogue-dup' };
    expect((await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body })).status).toBe(201);
    const res = await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body });
    expect(res.status).toBe(409);
    expect(res.text).toBe('{"error":"conflict","message":"project \\"catalogue-dup\\" already exists"}');
  });

  it('501 artifacts_disabled on a server without object storage', async () => {
    const res = await td.request('POST', '/v1/artifacts/presign', { body: { idempotencyKey: 'k', artifacts: [] } });
    expect(res.status).toBe(501);
    expect(res.text).toBe('{"error":"artifacts_disabled","message":"artifact storage is not configured on this server (SERVICE_S3_BUCKET is unset)"}');
  });

  // Issue 28: values that cannot be true are refused with the path, not rewritten.
  it('400 invalid_payload for an impossible calendar date', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: { ...nativeBatch({ run: { startedAt: '2026-02-30T10:00:00Z' } }), idempotencyKey: 'catalogue-date-1' } });
    expect(res.status).toBe(400);
    expect(res.text).toBe(
      '{"error":"invalid_payload","message":"the request body does not match the schema","issues":[{"path":"run.startedAt","message":"not a calendar date: February 2026 has 28 days, not day 30"}]}',
    );
  });

  it('400 invalid_payload for a run that ends before it starts', async () => {
    const res = await td.request('POST', '/v1/ingest', {
      body: { ...nativeBatch({ run: { startedAt: '2026-02-01T10:00:00.000Z', finishedAt: '2026-02-01T09:00:00.000Z' } }), idempotencyKey: 'catalogue-ends-1' },
    });
    expect(res.status).toBe(400);
    expect(res.text).toBe(
      '{"error":"invalid_payload","message":"the request body does not match the schema","issues":[{"path":"run.finishedAt","message":"must not be before run.startedAt (2026-02-01T09:00:00.000Z < 2026-02-01T10:00:00.000Z)"}]}',
    );
  });

  it('400 invalid_payload at `xml` for a JUnit timestamp that is no calendar date', async () => {
    const res = await td.request('POST', '/v1/ingest/junit', {
      body: {
        idempotencyKey: 'catalogue-junit-date',
        resource: { ciProvider: 'jenkins', commitSha: 'abcdef1234', branch: 'main', trigger: 'push' },
        xml: '<testsuite name="S" timestamp="2026-02-30T10:00:00"><testcase name="a"/></testsuite>',
      },
    });
    expect(res.status).toBe(400);
    const why = '<testsuite name=\\"S\\"> timestamp \\"2026-02-30T10:00:00\\" is not a calendar date: February 2026 has 28 days, not day 30 at line 1, column 52';
    expect(res.text).toBe(`{"error":"invalid_payload","message":"xml: ${why}","issues":[{"path":"xml","message":"${why}"}]}`);
  });

  it('400 invalid_payload for an OTLP attribute value nested past 32 levels', async () => {
    let value: Record<string, unknown> = { stringValue: 'x' };
    for (let i = 0; i < 32; i++) value = { arrayValue: { values: [value] } };
    const span = { traceId: '5b8efff798038103d269b633813fc60c', spanId: '00000000000000a1', name: 'test.case', attributes: [{ key: 'deep', value }] };
    const res = await td.request('POST', '/v1/traces', { body: { resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] } });
    expect(res.status).toBe(400);
    expect(res.text).toBe(
      '{"error":"invalid_payload","message":"invalid OTLP request: nested too deeply: at most 32 levels of objects and arrays","issues":[{"path":"resourceSpans.0.scopeSpans.0.spans.0.attributes.deep","message":"nested too deeply: at most 32 levels of objects and arrays"}]}',
    );
  });
});
