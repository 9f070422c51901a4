// GET /v1/export when it cannot be whole, through the real daemon (issue 39, defect 7):
//   - the artifact bucket unreachable: refused before the 200 (502 artifact_store_unavailable),
//     where it used to answer 200 and abort mid-body;
//   - the bucket failing after the 200 (the check made before it, HeadBucket, answered; the listing not):
//     the file ends with an `error` line and no summary, the gzip closed properly so every line is
//     readable (docs/export.md);
//   - a project session or token naming another project (`?project=`, x-flakehouse-project): 403 as
//     the procedures answer, where it used to export its own project.
// The object store here is a small S3 stand-in on a loopback port whose behaviour the test switches
// (s3rver cannot be made to fail one request and not another); ClickHouse, the queue and the
// daemon are the real ones.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { runCli } from '../helpers/process.js';

type Mode = 'probe-only' | 'ok';

let td: TestDaemon;
let s3: Server;
let mode: Mode = 'ok';
const listings: string[] = [];

const EMPTY_LISTING =
  '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>flakehouse-artifacts</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>';

beforeAll(async () => {
  s3 = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://s3');
    const probe = req.method === 'HEAD';
    if (probe) listings.push('probe');
    else if (url.searchParams.get('list-type') === '2') listings.push('list');
    req.resume();
    // The check made before the 200 (HeadBucket) is answered; in `probe-only` the listing is not.
    if (mode === 'probe-only' && !probe) {
      req.socket.destroy();
      return;
    }
    if (probe) {
      res.writeHead(200);
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.end(EMPTY_LISTING);
  });
  await new Promise<void>((resolve) => s3.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(s3.address() as AddressInfo).port}`;
  td = await startTestDaemon({
    env: {
      SERVICE_S3_BUCKET: 'flakehouse-artifacts',
      SERVICE_S3_ENDPOINT: endpoint,
      SERVICE_S3_ACCESS_KEY_ID: 'test',
      SERVICE_S3_SECRET_ACCESS_KEY: 'test',
    },
  });
  await td.ingest(nativeBatch({ key: 'export-refusals-1', n: 3 }));
}, 60_000);

afterAll(async () => {
  await td?.close();
  await new Promise((resolve) => (s3?.listening ? s3.close(resolve) : resolve(undefined)));
});

async function exportRaw(headers: Record<string, string>, query = ''): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await fetch(`${td.url}/v1/export${query}`, { headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

describe('GET /v1/export naming another project', () => {
  it('answers 403 to a project session or token naming another project, as the procedures do; its own slug is fine', async () => {
    expect((await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug: 'other' } })).status).toBe(201);
    const signIn = await fetch(`${td.url}/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json', origin: td.url }, body: JSON.stringify({ token: td.token }) });
    expect(signIn.status).toBe(200);
    const cookie = /^flakehouse_session=[^;]*/.exec(signIn.headers.get('set-cookie') ?? '')![0];
    const expected = '{"error":"forbidden","message":"this token belongs to another project than \\"other\\""}';

    const bySession = await exportRaw({ cookie }, '?project=other');
    expect(bySession.status).toBe(403);
    expect(bySession.body.toString('utf8')).toBe(expected);
    const byToken = await exportRaw(bearer(td.token), '?project=other');
    expect([byToken.status, byToken.body.toString('utf8')]).toEqual([403, expected]);
    const byHeader = await exportRaw({ ...bearer(td.token), 'x-flakehouse-project': 'other' });
    expect([byHeader.status, byHeader.body.toString('utf8')]).toEqual([403, expected]);
    const unknown = await exportRaw({ cookie }, '?project=no-such-project');
    expect(unknown.status).toBe(403);
    mode = 'ok';
    expect((await exportRaw({ cookie }, '?project=default')).status).toBe(200);

    // The procedures' answer to the same session, for comparison.
    const viaTrpc = await fetch(`${td.url}/trpc/runs.list?input=${encodeURIComponent('{}')}`, { headers: { cookie, 'x-flakehouse-project': 'other' } });
    expect(viaTrpc.status).toBe(403);
    expect(JSON.stringify(await viaTrpc.json())).toContain('this token belongs to another project than \\"other\\"');
  });
});

describe('GET /v1/export that cannot be whole', () => {
  it('exports whole while the bucket answers (checked first, then listed)', async () => {
    mode = 'ok';
    listings.length = 0;
    const res = await exportRaw(bearer(td.token));
    expect(res.status).toBe(200);
    const lines = gunzipSync(res.body).toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string });
    expect(lines.at(-1)).toMatchObject({ type: 'summary', artifacts: 0 });
    // Checked before the 200, listed after the rows.
    expect(listings.indexOf('probe')).toBeGreaterThanOrEqual(0);
    expect(listings.indexOf('probe')).toBeLessThan(listings.lastIndexOf('list'));
  });

  it('ends with an error line and no summary, in a whole gzip stream, when the bucket fails after the 200', async () => {
    mode = 'probe-only';
    const res = await exportRaw(bearer(td.token));
    expect(res.status).toBe(200);
    // gunzipSync throws on a stream cut short: this one is closed properly.
    const lines = gunzipSync(res.body).toString('utf8').trimEnd().split('\n').map((l) => JSON.parse(l) as { type: string; dataset?: string; error?: string; message?: string });
    expect(lines[0]!.type).toBe('manifest');
    expect(lines.filter((l) => l.type === 'row' && l.dataset === 'executions')).toHaveLength(3);
    expect(lines.some((l) => l.type === 'summary')).toBe(false);
    expect(lines.at(-1)).toEqual({
      type: 'error',
      error: 'export_failed',
      message: 'the export stopped early (the database or the artifact store failed): the lines above are correct but the export is incomplete (no summary line); retry',
    });
    // `flakehouse export` says why, and leaves no file.
    const dir = mkdtempSync(path.join(tmpdir(), 'fh-export-refusals-'));
    try {
      const cli = await runCli(['export', '--out', 'x.ndjson.gz'], { cwd: dir, env: { SERVICE_ENDPOINT: td.url, SERVICE_TOKEN: td.token } });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toContain('the server stopped the export early (export_failed): the export stopped early');
      expect(existsSync(path.join(dir, 'x.ndjson.gz')) || existsSync(path.join(dir, 'x.ndjson.gz.partial'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The export's slot is free again.
    mode = 'ok';
    expect((await exportRaw(bearer(td.token))).status).toBe(200);
  });

  it('is refused before the 200 with 502 artifact_store_unavailable while the bucket is unreachable', async () => {
    await new Promise((resolve) => s3.close(resolve));
    const res = await exportRaw(bearer(td.token));
    expect(res.status).toBe(502);
    expect(res.body.toString('utf8')).toBe('{"error":"artifact_store_unavailable","message":"the artifact store cannot be listed now, so the export was not started; retry later"}');
    expect(res.headers.get('retry-after')).toBe('30');
    // Refused, not left running: the next try is refused the same way, not 429.
    expect((await exportRaw(bearer(td.token))).status).toBe(502);
  }, 60_000);
});
