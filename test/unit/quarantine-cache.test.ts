// The client's quarantine list (client/src/reporter/quarantine-cache.ts) against a local HTTP server:
// cached with its ETag, revalidated with If-None-Match (304), the cache used when the server is
// unreachable or failing (and said so), a refusal not papered over by the cache.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchQuarantineList, quarantineCacheFile } from '../../client/src/reporter/quarantine-cache.js';

const item = { testIdentityId: 'id-1', fingerprints: ['fp1'], filePath: 'a.test.ts', suite: 'A', title: 't', params: null, reason: 'manual', source: 'manual', since: null };
let status = 200;
const seen: (string | undefined)[] = [];
let server: http.Server;
let endpoint: string;
const dir = fs.mkdtempSync(path.join(tmpdir(), 'fh-qcache-'));

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.headers['if-none-match']);
    if (status !== 200) return void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: status === 403 ? 'insufficient_scope' : 'boom' }));
    if (req.headers['if-none-match'] === '"v1"') return void res.writeHead(304, { etag: '"v1"' }).end();
    res.writeHead(200, { 'content-type': 'application/json', etag: '"v1"' }).end(JSON.stringify({ items: [item] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('fetchQuarantineList', () => {
  it('caches the list with its ETag, revalidates with If-None-Match, falls back to the cache when the server fails or is gone', async () => {
    const target = () => ({ endpoint, project: undefined, token: 'tok-1', bufferDir: dir });
    const first = await fetchQuarantineList(target());
    expect(first).toMatchObject({ ok: true, fresh: true, via: 'server', etag: '"v1"', items: [item] });
    expect(fs.existsSync(quarantineCacheFile(target()))).toBe(true);
    expect(fs.readFileSync(quarantineCacheFile(target()), 'utf8')).not.toContain('tok-1');

    const second = await fetchQuarantineList(target());
    expect(second).toMatchObject({ ok: true, fresh: true, via: 'not-modified', items: [item] });
    expect(seen).toEqual([undefined, '"v1"']);

    status = 503;
    const failing = await fetchQuarantineList(target());
    expect(failing).toMatchObject({ ok: true, fresh: false, items: [item], problem: expect.stringContaining('answered 503') });

    status = 403;
    expect(await fetchQuarantineList(target())).toMatchObject({ ok: false, refused: true, problem: expect.stringContaining('403 insufficient_scope') });
    status = 200;

    // Another token has its own cache: nothing to fall back to.
    const gone = { endpoint: 'http://127.0.0.1:9', project: undefined, token: 'tok-1', bufferDir: dir };
    expect(await fetchQuarantineList(gone)).toMatchObject({ ok: false, refused: false, problem: expect.stringContaining('cannot reach') });
    await new Promise<void>((r) => server.close(() => r()));
    const down = await fetchQuarantineList(target());
    expect(down).toMatchObject({ ok: true, fresh: false, items: [item], problem: expect.stringContaining('cannot reach') });
    await new Promise<void>((r) => server.listen(Number(new URL(endpoint).port), '127.0.0.1', r));
  });
});
