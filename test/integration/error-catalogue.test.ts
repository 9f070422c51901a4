// Errors the routes and the app raise through the catalogue (src/api/errors.ts `errors.*`), checked
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
});
