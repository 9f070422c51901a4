// The store as it talks to a ClickHouse server (SERVICE_CLICKHOUSE_URL), through the official client,
// against a local HTTP sink that records each request: no ClickHouse server runs on these machines,
// so this checks what is sent, and store-read-query.test.ts checks on chDB that SQL with its
// parameters written in reads as the bound query does. Bound parameters travel in the URL, which a
// server refuses past 1 MiB (http_max_uri_size): POST /v1/tests/known's 20,000 fingerprints are
// ~1.5 MB there, so large parameters are written into the SQL, which goes in the body.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type OpenedStore } from '../../src/store/client.js';
import { inlineParams } from '../../src/store/inline-params.js';

interface Seen {
  url: URL;
  body: string;
}

const seen: Seen[] = [];
const sink = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({ url: new URL(req.url ?? '/', 'http://sink'), body: Buffer.concat(chunks).toString('utf8') });
    // An empty result: what a server answers for a query with no rows (and for a command).
    res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8' }).end('');
  });
});

let store: OpenedStore;
beforeAll(async () => {
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  store = await openStore({ url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`, database: 'flakehouse' });
});
afterAll(async () => {
  await store?.close();
  await new Promise((resolve) => sink.close(resolve));
});

const fingerprints = Array.from({ length: 20_000 }, (_, i) => i.toString(16).padStart(64, '0'));
const SQL = 'SELECT fingerprint FROM t WHERE project_id = {projectId:UUID} AND fingerprint IN {fps:Array(String)}';
const params = { projectId: '0190e7c6-1b7d-7d2e-9a55-0f0d1e2c3b4a', fps: fingerprints };

/** The one request `call` makes. */
async function sent(call: () => Promise<unknown>): Promise<Seen> {
  const before = seen.length;
  await call();
  expect(seen.length).toBe(before + 1);
  return seen[before]!;
}

describe('Store on a ClickHouse server', () => {
  it('binds small parameters in the URL, a bigint among them', async () => {
    const r = await sent(() => store.query('SELECT {id:UUID} AS id, {n:Int64} AS n', { id: params.projectId, n: 2n ** 62n }));
    expect(r.url.searchParams.get('param_id')).toBe(params.projectId);
    expect(r.url.searchParams.get('param_n')).toBe(String(2n ** 62n));
    expect(r.body).toContain('{id:UUID}');
    expect(r.url.searchParams.has('max_query_size')).toBe(false);
  });

  it('writes 20,000 fingerprints into the SQL in the body, with room to parse it, and keeps the URL short', async () => {
    const inlined = inlineParams(SQL, params);
    for (const call of [
      () => store.query(SQL, params),
      () => store.queryText(SQL, params),
      () => store.command(`ALTER TABLE t DELETE WHERE fingerprint IN {fps:Array(String)}`, { fps: fingerprints }, { mutations_sync: '1' }),
      async () => {
        for await (const chunk of store.stream(SQL, params)) void chunk;
      },
    ]) {
      const r = await sent(call);
      expect(r.url.href.length).toBeLessThan(2_048);
      expect([...r.url.searchParams.keys()].filter((k) => k.startsWith('param_'))).toEqual([]);
      expect(Number(r.url.searchParams.get('max_query_size'))).toBeGreaterThan(r.body.length);
      expect(r.body).toContain(fingerprints[19_999]);
      expect(r.body).not.toContain('{fps:Array(String)}');
    }
    // The query and the stream send exactly the written-in SQL (with their FORMAT).
    expect((await sent(() => store.query(SQL, params))).body.startsWith(inlined)).toBe(true);
    // A command keeps its own settings beside the query size.
    const command = await sent(() => store.command(`ALTER TABLE t DELETE WHERE fingerprint IN {fps:Array(String)}`, { fps: fingerprints }, { mutations_sync: '1' }));
    expect(command.url.searchParams.get('mutations_sync')).toBe('1');
  });
});
