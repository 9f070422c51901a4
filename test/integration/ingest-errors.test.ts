// POST /v1/ingest (native batch) over real HTTP against the real daemon: auth, scopes, the check
// order of docs/contract.md §2/§5, validation issues, body limits and gzip, idempotent replays, security
// headers, the runs read API (pagination, isolation), token revocation, backpressure, rate limits.
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

type Res = Awaited<ReturnType<TestDaemon['request']>>;

const hex = (n: number) => randomBytes(n).toString('hex');
const uniqueBranch = (label: string) => `${label}-${hex(4)}`;

const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
};

function expectSecurityHeaders(res: { headers: Headers }): void {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) expect(res.headers.get(k), k).toBe(v);
}

function issuePaths(res: Res): string[] {
  expect(Array.isArray(res.json?.issues), res.text).toBe(true);
  return res.json.issues.map((i: { path: string }) => i.path);
}

/** POST with a streamed (chunked, no Content-Length) body, as OTLP exporters and proxies send. */
async function postChunked(url: string, chunks: Uint8Array[], headers: Record<string, string>): Promise<{ status: number; headers: Headers; json: any }> {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const ch of chunks) c.enqueue(ch);
      c.close();
    },
  });
  const res = await fetch(url, { method: 'POST', headers, body, duplex: 'half' });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json };
}

function split(buf: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size));
  return out;
}

async function createToken(td: TestDaemon, slug: string, scopes: string[]): Promise<{ id: string; token: string; scopes: string[] }> {
  const res = await td.request('POST', `/v1/admin/projects/${slug}/tokens`, { token: td.adminToken, body: { scopes } });
  expect(res.status, res.text).toBe(201);
  expect(res.json.token).toMatch(/^fh_[0-9a-f]{48}$/);
  return res.json;
}

async function listRuns(td: TestDaemon, query: string, token?: string): Promise<any[]> {
  const res = await td.request('GET', `/v1/runs?${query}`, token === undefined ? {} : { token });
  expect(res.status, res.text).toBe(200);
  return res.json.items;
}

async function waitForRuns(td: TestDaemon, branch: string, n: number): Promise<any[]> {
  await td.settled();
  return td.waitFor(async () => {
    const items = await listRuns(td, `branch=${encodeURIComponent(branch)}&limit=100`);
    return items.length >= n ? items : undefined;
  }, 60_000);
}

let td: TestDaemon;
let readToken: string;
let ingestOnlyToken: string;

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
  readToken = (await createToken(td, 'default', ['read'])).token;
  ingestOnlyToken = (await createToken(td, 'default', [])).token;
});

afterAll(async () => {
  await td?.close();
});

describe('authentication and scopes', () => {
  it('401 without a token, with WWW-Authenticate: Bearer', async () => {
    const res = await td.request('POST', '/v1/ingest', { token: null, body: nativeBatch() });
    expect(res.status).toBe(401);
    expect(res.json.error).toBe('unauthorized');
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expectSecurityHeaders(res);
  });

  it.each([
    ['a malformed token', 'Bearer not-a-token'],
    ['an unknown well-formed token', `Bearer fh_${hex(24)}`],
    ['a token with upper-case hex', `Bearer fh_${hex(24).toUpperCase()}`],
    ['another scheme', `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['an empty bearer', 'Bearer '],
  ])('401 with %s', async (_label, authorization) => {
    const res = await td.request('POST', '/v1/ingest', { token: null, headers: { authorization }, body: nativeBatch() });
    expect(res.status).toBe(401);
    expect(res.json.error).toBe('unauthorized');
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('the admin token is not a project token, and a project token is not an admin token', async () => {
    const a = await td.request('GET', '/v1/runs', { token: td.adminToken });
    expect(a.status).toBe(401);
    const b = await td.request('GET', '/v1/admin/projects', { token: td.token });
    expect(b.status).toBe(401);
    const c = await td.request('GET', '/v1/admin/projects', { token: td.adminToken });
    expect(c.status).toBe(200);
    expect(c.json.items.map((p: any) => p.slug)).toContain('default');
  });

  it('403 insufficient_scope for a read-only token on ingest', async () => {
    const res = await td.request('POST', '/v1/ingest', { token: readToken, body: nativeBatch() });
    expect(res.status).toBe(403);
    expect(res.json.error).toBe('insufficient_scope');
    expectSecurityHeaders(res);
    // ...which still reads.
    expect((await td.request('GET', '/v1/runs', { token: readToken })).status).toBe(200);
  });

  it('a token with no scopes is ingest-only', async () => {
    const branch = uniqueBranch('ingest-only');
    const post = await td.request('POST', '/v1/ingest', { token: ingestOnlyToken, body: nativeBatch({ resource: { branch } }) });
    expect(post.status).toBe(202);
    const get = await td.request('GET', '/v1/runs', { token: ingestOnlyToken });
    expect(get.status).toBe(403);
    expect(get.json.error).toBe('insufficient_scope');
    // The run it posted is real.
    await waitForRuns(td, branch, 1);
  });

  it('401 comes before 400: an invalid body without a token', async () => {
    const res = await td.request('POST', '/v1/ingest', { token: null, body: { nonsense: true } });
    expect(res.status).toBe(401);
  });

  it('403 comes before 400: an invalid body with a read-only token', async () => {
    const res = await td.request('POST', '/v1/ingest', { token: readToken, body: { nonsense: true } });
    expect(res.status).toBe(403);
  });

  it('auth comes before body decoding (docs/contract.md §2): malformed JSON is a 401 without a token, a 400 with one', async () => {
    const body = '{"idempotencyKey":';
    const res = await td.request('POST', '/v1/ingest', { token: null, body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(401);
    expect(res.json.error).toBe('unauthorized');
    const authed = await td.request('POST', '/v1/ingest', { body, headers: { 'content-type': 'application/json' } });
    expect(authed.status).toBe(400);
    expect(authed.json.error).toBe('invalid_payload');
  });
});

describe('validation', () => {
  it('400 invalid_payload naming each offending path', async () => {
    const b = nativeBatch({ resource: { commitSha: 'xyz' } });
    (b.executions as any[])[0].status = 'exploded';
    const res = await td.request('POST', '/v1/ingest', { body: b });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_payload');
    const paths = issuePaths(res);
    expect(paths).toContain('executions.0.status');
    expect(paths).toContain('resource.commitSha');
    for (const i of res.json.issues) expect(i.message.length).toBeGreaterThan(0);
    expect(res.text).not.toMatch(/\bat .*\.(ts|js):\d+/); // never a stack trace
  });

  it.each([
    ['idempotencyKey', (b: any) => (b.idempotencyKey = 'short')],
    ['idempotencyKey', (b: any) => (b.idempotencyKey = 'k'.repeat(129))],
    ['resource.ciProvider', (b: any) => (b.resource.ciProvider = 'travis')],
    ['resource.trigger', (b: any) => (b.resource.trigger = 'cron')],
    ['resource.branch', (b: any) => (b.resource.branch = '')],
    ['resource.prNumber', (b: any) => (b.resource.prNumber = 0)],
    ['resource.shardIndex', (b: any) => (b.resource.shardIndex = 0)],
    ['resource.repository', (b: any) => (b.resource.repository = 'no-slash')],
    ['run.status', (b: any) => (b.run.status = 'done')],
    ['run.startedAt', (b: any) => (b.run.startedAt = 'yesterday')],
    ['run', (b: any) => delete b.run],
    ['executions.1.durationMs', (b: any) => (b.executions[1].durationMs = -1)],
    ['executions.2.title', (b: any) => (b.executions[2].title = '')],
    ['executions.0.attempt', (b: any) => (b.executions[0].attempt = 0)],
    ['executions.0.error.message', (b: any) => (b.executions[0].error = { message: '' })],
    ['executions.0.params', (b: any) => (b.executions[0].params = ['not', 'an', 'object'])],
    ['executions.0.spans.0.kind', (b: any) => (b.executions[0].spans = [{ spanId: 's', name: 'n', kind: 'db', status: 'ok', startedAt: 1, durationMs: 1 }])],
    ['contractVersion', (b: any) => (b.contractVersion = '1.0')],
  ])('400 naming %s', async (path, mutate) => {
    const b = nativeBatch();
    mutate(b);
    const res = await td.request('POST', '/v1/ingest', { body: b });
    expect(res.status, res.text).toBe(400);
    expect(res.json.error).toBe('invalid_payload');
    expect(issuePaths(res)).toContain(path);
  });

  it('ignores unknown keys (forward compatibility) and stores the sha lower-case', async () => {
    const branch = uniqueBranch('unknown-keys');
    const b: any = nativeBatch({ resource: { branch, commitSha: 'ABCDEF1234', futureField: 1 }, run: { newThing: 'x' } });
    b.somethingNew = { nested: true };
    b.executions[0].extra = [1, 2, 3];
    const res = await td.request('POST', '/v1/ingest', { body: b });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ acceptedExecutions: 3, deduplicated: false });
    const [run] = await waitForRuns(td, branch, 1);
    expect(run.commitSha).toBe('abcdef1234');
  });

  it('contractVersion with another major → 400 unsupported_contract_version; 1.x is accepted', async () => {
    const bad = await td.request('POST', '/v1/ingest', { body: { ...nativeBatch(), contractVersion: '2.0.0' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toBe('unsupported_contract_version');
    expect(bad.json.message).toMatch(/2\.0\.0/);
    // Which majors are taken, and what to do.
    expect(bad.json.message).toContain('majors 0 and 1');
    expect(bad.json.message).toContain('Send contractVersion 0.1.0');
    const ok = await td.request('POST', '/v1/ingest', { body: { ...nativeBatch(), contractVersion: '1.4.2' } });
    expect(ok.status).toBe(202);
    const zero = await td.request('POST', '/v1/ingest', { body: { ...nativeBatch(), contractVersion: '0.99.0' } });
    expect(zero.status).toBe(202);
  });

  it('a retryOfIndex that does not point at an earlier execution is ignored (as Flakemetry does), not refused', async () => {
    const branch = uniqueBranch('retry-forward');
    const b: any = nativeBatch({ n: 3, resource: { branch } });
    b.executions[1].retryOfIndex = 2; // forward
    b.executions[2].retryOfIndex = 2; // itself
    const res = await td.request('POST', '/v1/ingest', { body: b });
    expect(res.status, res.text).toBe(202);
    // No link taken: three distinct passing tests.
    const [run] = await waitForRuns(td, branch, 1);
    expect(run.counts).toEqual({ total: 3, passed: 3, failed: 0, skipped: 0, flaky: 0 });
    const negative = await td.request('POST', '/v1/ingest', { body: { ...b, idempotencyKey: `${b.idempotencyKey}-neg`, executions: [{ ...b.executions[0], retryOfIndex: -1 }] } });
    expect(negative.status).toBe(400);
    expect(issuePaths(negative)).toEqual(['executions.0.retryOfIndex']);
  });

  it('a valid retry chain is accepted and counted as one flaky test', async () => {
    const branch = uniqueBranch('retry');
    const t = Date.parse('2026-03-01T10:00:00Z');
    const exec = { filePath: 'a.test.ts', suite: 'A', title: 'retried', startedAt: t, durationMs: 5 };
    const b = nativeBatch({
      resource: { branch },
      run: { status: 'passed', startedAt: t },
      executions: [
        { ...exec, status: 'fail', attempt: 1, error: { message: 'first try failed' } },
        { ...exec, status: 'pass', attempt: 2, retryOfIndex: 0, startedAt: t + 10 },
        { ...exec, title: 'skipped one', status: 'skip' },
      ],
    });
    const res = await td.request('POST', '/v1/ingest', { body: b });
    expect(res.status).toBe(202);
    const [run] = await waitForRuns(td, branch, 1);
    expect(run.counts).toEqual({ total: 2, passed: 0, failed: 0, skipped: 1, flaky: 1 });
    const d = await td.request('GET', `/v1/runs/${run.id}`);
    const retried = d.json.executions.filter((e: any) => e.title === 'retried');
    expect(retried.map((e: any) => [e.attempt, e.status, e.errorMessage])).toEqual([
      [1, 'fail', 'first try failed'],
      [2, 'pass', null],
    ]);
  });

  it('5001 executions → 400 naming executions; 5000 are accepted', async () => {
    const tooMany = await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 5001 }) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error).toBe('invalid_payload');
    expect(issuePaths(tooMany)).toContain('executions');
    const max = await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 5000 }) });
    expect(max.status).toBe(202);
    expect(max.json.acceptedExecutions).toBe(5000);
  });

  it('an empty executions array → 202 and a run with total 0', async () => {
    const branch = uniqueBranch('empty');
    const res = await td.request('POST', '/v1/ingest', { body: nativeBatch({ executions: [], resource: { branch }, run: { status: 'canceled' } }) });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ acceptedExecutions: 0, deduplicated: false });
    const [run] = await waitForRuns(td, branch, 1);
    expect(run).toMatchObject({ status: 'canceled', durationMs: 0, counts: { total: 0, passed: 0, failed: 0, skipped: 0, flaky: 0 } });
    const d = await td.request('GET', `/v1/runs/${run.id}`);
    expect(d.json.executions).toEqual([]);
    expect(d.json.finishedAt).toBeNull();
  });

  it.each([
    ['truncated JSON', '{"idempotencyKey": "abc'],
    ['not JSON at all', 'hello world'],
    ['an empty body', ''],
  ])('400 invalid_payload for %s', async (_label, body) => {
    const res = await td.request('POST', '/v1/ingest', { body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_payload');
    expectSecurityHeaders(res);
  });

  it('a JSON array or null body → 400 invalid_payload', async () => {
    for (const body of ['[]', 'null', '42']) {
      const res = await td.request('POST', '/v1/ingest', { body, headers: { 'content-type': 'application/json' } });
      expect(res.status, body).toBe(400);
      expect(res.json.error, body).toBe('invalid_payload');
    }
  });
});

describe('body limits and encodings', () => {
  const big = () => Buffer.from(JSON.stringify({ ...nativeBatch(), padding: 'x'.repeat(8 * 1024 * 1024) }));

  it('a body over 8 MiB → 413 payload_too_large (declared Content-Length)', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: new Uint8Array(big()), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(res.json.error).toBe('payload_too_large');
  });

  it('a body over 8 MiB → 413 payload_too_large (chunked, counted while streaming)', async () => {
    const res = await postChunked(`${td.url}/v1/ingest`, split(big(), 1024 * 1024), {
      'content-type': 'application/json',
      authorization: `Bearer ${td.token}`,
    });
    expect(res.status).toBe(413);
    expect(res.json.error).toBe('payload_too_large');
  });

  it('an oversized body without a token is a 401: auth comes first, the body is not read', async () => {
    const res = await td.request('POST', '/v1/ingest', { token: null, body: new Uint8Array(big()), headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(401);
  });

  it('a gzip body with Content-Length is accepted', async () => {
    const branch = uniqueBranch('gzip');
    const body = gzipSync(Buffer.from(JSON.stringify(nativeBatch({ resource: { branch } }))));
    const res = await td.request('POST', '/v1/ingest', { body: new Uint8Array(body), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    expect(res.status, res.text).toBe(202);
    expect(res.json.acceptedExecutions).toBe(3);
    await waitForRuns(td, branch, 1);
  });

  it('a chunked gzip body is accepted', async () => {
    const branch = uniqueBranch('gzip-chunked');
    const body = gzipSync(Buffer.from(JSON.stringify(nativeBatch({ resource: { branch } }))));
    const res = await postChunked(`${td.url}/v1/ingest`, split(body, 100), {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      authorization: `Bearer ${td.token}`,
    });
    expect(res.status).toBe(202);
    expect(res.json.acceptedExecutions).toBe(3);
    await waitForRuns(td, branch, 1);
  });

  it('a gzip body inflating past 16 MiB is refused with 413, even though it is small on the wire', async () => {
    const inner = Buffer.concat([Buffer.from('{"padding":"'), Buffer.alloc(17 * 1024 * 1024, 0x61), Buffer.from('"}')]);
    const bomb = gzipSync(inner, { level: 9 });
    expect(bomb.length).toBeLessThan(100 * 1024);
    const res = await td.request('POST', '/v1/ingest', { body: new Uint8Array(bomb), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    expect(res.status).toBe(413);
    expect(res.json.error).toBe('payload_too_large');
    const chunked = await postChunked(`${td.url}/v1/ingest`, [bomb], {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      authorization: `Bearer ${td.token}`,
    });
    expect(chunked.status).toBe(413);
  });

  it('a gzip body inflating to just under 16 MiB is not refused for its size', async () => {
    // 15 MiB of padding inflates under the cap; the batch itself is valid, the padding key ignored.
    const json = JSON.stringify({ ...nativeBatch(), padding: 'a'.repeat(15 * 1024 * 1024) });
    const body = gzipSync(Buffer.from(json));
    const res = await postChunked(`${td.url}/v1/ingest`, [body], {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      authorization: `Bearer ${td.token}`,
    });
    expect(res.status).toBe(202);
  });

  it('corrupt gzip → 400 invalid_payload', async () => {
    const good = gzipSync(Buffer.from(JSON.stringify(nativeBatch())));
    const corrupt = Buffer.from(good);
    corrupt.fill(0x5a, 10, 30);
    for (const body of [corrupt, Buffer.from('definitely not gzip')]) {
      const res = await td.request('POST', '/v1/ingest', { body: new Uint8Array(body), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('invalid_payload');
    }
  });

  it('an unsupported Content-Encoding → 415', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: JSON.stringify(nativeBatch()), headers: { 'content-type': 'application/json', 'content-encoding': 'br' } });
    expect(res.status).toBe(415);
    expect(res.json.error).toBe('unsupported_content_type');
  });

  it('an unsupported Content-Type → 415', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: 'a=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    expect(res.json.error).toBe('unsupported_content_type');
  });
});

describe('idempotent replays', () => {
  it('a replay returns the same receipt, deduplicated, and one run; the first payload wins', async () => {
    const branch = uniqueBranch('replay');
    const first = nativeBatch({ resource: { branch }, n: 2 });
    const a = await td.request('POST', '/v1/ingest', { body: first });
    expect(a.status).toBe(202);
    expect(a.json).toMatchObject({ acceptedExecutions: 2, deduplicated: false });
    const b = await td.request('POST', '/v1/ingest', { body: { ...nativeBatch({ n: 4, resource: { branch } }), idempotencyKey: first.idempotencyKey } });
    expect(b.status).toBe(202);
    expect(b.json).toEqual({ receiptId: a.json.receiptId, acceptedExecutions: 2, deduplicated: true });
    const [run] = await waitForRuns(td, branch, 1);
    // Replays after processing dedupe as well.
    const c = await td.request('POST', '/v1/ingest', { body: first });
    expect(c.json).toMatchObject({ receiptId: a.json.receiptId, deduplicated: true });
    expect(await listRuns(td, `branch=${branch}`)).toHaveLength(1);
    expect(run.counts.total).toBe(2);
  });

  it('concurrent posts of one key produce one receipt and one run', async () => {
    const branch = uniqueBranch('race');
    const body = nativeBatch({ resource: { branch } });
    const results = await Promise.all(Array.from({ length: 8 }, () => td.request('POST', '/v1/ingest', { body })));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(202));
    expect(new Set(results.map((r) => r.json.receiptId)).size).toBe(1);
    expect(results.filter((r) => !r.json.deduplicated)).toHaveLength(1);
    await waitForRuns(td, branch, 1);
    expect(await listRuns(td, `branch=${branch}`)).toHaveLength(1);
  });
});

describe('meta routes and headers', () => {
  it('security headers on a 202 and on a 404', async () => {
    const ok = await td.request('POST', '/v1/ingest', { body: nativeBatch() });
    expect(ok.status).toBe(202);
    expectSecurityHeaders(ok);
    const missing = await td.request('GET', '/v1/nowhere');
    expect(missing.status).toBe(404);
    expectSecurityHeaders(missing);
    const notFoundRun = await td.request('GET', `/v1/runs/${crypto.randomUUID()}`);
    expectSecurityHeaders(notFoundRun);
  });

  it('GET /health without a token', async () => {
    const res = await td.request('GET', '/health', { token: null });
    expect(res.status).toBe(200);
    // The fixed fields of SPEC's health body, plus the storage condition (ingest's 507).
    expect(res.json).toEqual({ status: 'ok', service: 'api', storage: expect.objectContaining({ state: 'ok' }) });
    expectSecurityHeaders(res);
  });

  it('an unknown route → 404 not_found', async () => {
    for (const [method, url] of [
      ['GET', '/v2/runs'],
      ['POST', '/v1/ingest/unknown'],
      ['DELETE', '/v1/ingest'],
    ] as const) {
      const res = await td.request(method, url);
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.json.error).toBe('not_found');
    }
  });
});

describe('GET /v1/runs', () => {
  it.each(['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'status=done', 'since=notadate'])('400 invalid_query for %s', async (q) => {
    const res = await td.request('GET', `/v1/runs?${q}`);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_query');
  });

  it('limit=1 and limit=100 are valid', async () => {
    expect((await td.request('GET', '/v1/runs?limit=1')).status).toBe(200);
    expect((await td.request('GET', '/v1/runs?limit=100')).status).toBe(200);
  });

  it('pages newest first without duplicates, nextCursor null on the last page', async () => {
    const branch = uniqueBranch('page');
    const base = Date.parse('2026-04-01T08:00:00Z');
    const starts = [2, 0, 4, 1, 3].map((i) => base + i * 60_000);
    for (const s of starts) {
      const res = await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { branch }, run: { startedAt: new Date(s).toISOString() }, n: 1 }) });
      expect(res.status).toBe(202);
    }
    await waitForRuns(td, branch, 5);
    const pages: any[][] = [];
    let cursor: string | null = null;
    do {
      const q: string = `branch=${branch}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await td.request('GET', `/v1/runs?${q}`);
      expect(res.status).toBe(200);
      pages.push(res.json.items);
      cursor = res.json.nextCursor;
      expect(pages.length).toBeLessThanOrEqual(3);
    } while (cursor !== null);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    const all = pages.flat();
    expect(new Set(all.map((r) => r.id)).size).toBe(5);
    expect(all.map((r) => r.startedAt)).toEqual([4, 3, 2, 1, 0].map((i) => new Date(base + i * 60_000).toISOString()));
  });

  it('pages through runs sharing one startedAt without losing or repeating any', async () => {
    const branch = uniqueBranch('ties');
    const startedAt = '2026-04-02T08:00:00.000Z';
    for (let i = 0; i < 4; i++) {
      const res = await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { branch }, run: { startedAt }, n: 1 }) });
      expect(res.status).toBe(202);
    }
    const everything = await waitForRuns(td, branch, 4);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 6; i++) {
      const q: string = `branch=${branch}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await td.request('GET', `/v1/runs?${q}`);
      seen.push(...res.json.items.map((r: any) => r.id));
      cursor = res.json.nextCursor;
      if (cursor === null) break;
    }
    expect(cursor).toBeNull();
    expect(seen).toEqual(everything.map((r) => r.id));
    expect(new Set(seen).size).toBe(4);
  });

  it.each(['garbage', Buffer.from('123:not-a-uuid').toString('base64url'), Buffer.from(`x:${crypto.randomUUID()}`).toString('base64url')])(
    'a malformed cursor → 400 invalid_query (%s)',
    async (cursor) => {
      const res = await td.request('GET', `/v1/runs?cursor=${encodeURIComponent(cursor)}`);
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('invalid_query');
    },
  );

  it('GET /v1/runs/:id → 404 for a malformed or unknown id', async () => {
    for (const id of ['not-a-uuid', crypto.randomUUID(), "1' OR '1'='1"]) {
      const res = await td.request('GET', `/v1/runs/${encodeURIComponent(id)}`);
      expect(res.status, id).toBe(404);
      expect(res.json.error).toBe('not_found');
    }
  });

  it('filters by status', async () => {
    const branch = uniqueBranch('status');
    await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { branch }, run: { status: 'failed' } }) });
    await td.request('POST', '/v1/ingest', { body: nativeBatch({ resource: { branch }, run: { status: 'passed' } }) });
    await waitForRuns(td, branch, 2);
    const failed = await listRuns(td, `branch=${branch}&status=failed`);
    expect(failed.map((r) => r.status)).toEqual(['failed']);
  });
});

describe('projects, isolation and revocation', () => {
  it("another project's token sees none of this project's runs and cannot dedupe against its keys", async () => {
    const branch = uniqueBranch('iso');
    const batchA = nativeBatch({ resource: { branch } });
    const postA = await td.request('POST', '/v1/ingest', { body: batchA });
    expect(postA.status).toBe(202);
    const [runA] = await waitForRuns(td, branch, 1);

    const slug = `proj-b-${hex(3)}`;
    const created = await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug, name: 'Project B' } });
    expect(created.status).toBe(201);
    expect(created.json.slug).toBe(slug);
    const dup = await td.request('POST', '/v1/admin/projects', { token: td.adminToken, body: { slug } });
    expect(dup.status).toBe(409);
    const tokB = (await createToken(td, slug, ['ingest', 'read', 'quarantine'])).token;

    const getB = await td.request('GET', `/v1/runs/${runA.id}`, { token: tokB });
    expect(getB.status).toBe(404);
    expect(getB.json.error).toBe('not_found');
    expect(await listRuns(td, 'limit=100', tokB)).toEqual([]);
    expect(await listRuns(td, `branch=${branch}`, tokB)).toEqual([]);

    // The same idempotency key in project B is a different batch.
    const postB = await td.request('POST', '/v1/ingest', { token: tokB, body: { ...nativeBatch({ resource: { branch }, n: 1 }), idempotencyKey: batchA.idempotencyKey } });
    expect(postB.status).toBe(202);
    expect(postB.json.deduplicated).toBe(false);
    expect(postB.json.receiptId).not.toBe(postA.json.receiptId);
    const runsB = await td.waitFor(async () => {
      const items = await listRuns(td, `branch=${branch}`, tokB);
      return items.length > 0 ? items : undefined;
    }, 60_000);
    expect(runsB).toHaveLength(1);
    expect(runsB[0].id).not.toBe(runA.id);
    expect(runsB[0].counts.total).toBe(1);
    // ...and A still has exactly its own run.
    expect((await listRuns(td, `branch=${branch}`)).map((r) => r.id)).toEqual([runA.id]);
    expect((await td.request('GET', `/v1/runs/${runsB[0].id}`)).status).toBe(404);
  });

  it('tokens for an unknown project → 404', async () => {
    const res = await td.request('POST', '/v1/admin/projects/no-such-project/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    expect(res.status).toBe(404);
  });

  it('a revoked token gets 401 afterwards', async () => {
    const { id, token } = await createToken(td, 'default', ['ingest', 'read']);
    expect((await td.request('GET', '/v1/runs', { token })).status).toBe(200);
    expect((await td.request('POST', '/v1/ingest', { token, body: nativeBatch() })).status).toBe(202);
    const del = await td.request('DELETE', `/v1/admin/tokens/${id}`, { token: td.adminToken });
    expect(del.status).toBe(200);
    expect(del.json).toEqual({ revoked: true });
    const get = await td.request('GET', '/v1/runs', { token });
    expect(get.status).toBe(401);
    expect(get.json.error).toBe('unauthorized');
    expect((await td.request('POST', '/v1/ingest', { token, body: nativeBatch() })).status).toBe(401);
    // Other tokens are unaffected.
    expect((await td.request('GET', '/v1/runs')).status).toBe(200);
  });

  it('revoking needs the admin token; unknown ids → 404', async () => {
    const { id } = await createToken(td, 'default', ['read']);
    expect((await td.request('DELETE', `/v1/admin/tokens/${id}`)).status).toBe(401);
    expect((await td.request('DELETE', `/v1/admin/tokens/${crypto.randomUUID()}`, { token: td.adminToken })).status).toBe(404);
    expect((await td.request('DELETE', '/v1/admin/tokens/not-a-uuid', { token: td.adminToken })).status).toBe(404);
  });
});

describe('backpressure (a daemon that does not work its queue, max depth 2)', () => {
  let bp: TestDaemon;
  beforeAll(async () => {
    bp = await startTestDaemon({ work: false, env: { SERVICE_MAX_QUEUE_DEPTH: '2', SERVICE_RATE_LIMIT_MAX: '100000' } });
  });
  afterAll(async () => {
    await bp?.close();
  });

  it('503 backpressure with Retry-After: 1 once the queue holds 2 jobs, after auth and scope, before validation', async () => {
    const first = nativeBatch();
    const a = await bp.request('POST', '/v1/ingest', { body: first });
    const b = await bp.request('POST', '/v1/ingest', { body: nativeBatch() });
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(bp.daemon.queue.depth()).toBe(2);

    const c = await bp.request('POST', '/v1/ingest', { body: nativeBatch() });
    expect(c.status).toBe(503);
    expect(c.json.error).toBe('backpressure');
    expect(c.headers.get('retry-after')).toBe('1');
    expectSecurityHeaders(c);

    // docs/contract.md §2 orders "queue depth 503 → validation 400 → 202", and the replay lookup is part
    // of the enqueue after validation, so while the queue is full a replay of an accepted key gets
    // 503 as well (the client retries and then gets its receipt). That is contract-conform.
    const replay = await bp.request('POST', '/v1/ingest', { body: first });
    expect(replay.status).toBe(503);
    expect(replay.json.error).toBe('backpressure');
    // An invalid body is not even validated while the queue is full...
    const invalid = await bp.request('POST', '/v1/ingest', { body: { nonsense: true } });
    expect(invalid.status).toBe(503);
    // ...but auth and scope come first.
    expect((await bp.request('POST', '/v1/ingest', { token: null, body: nativeBatch() })).status).toBe(401);
    const ro = await createToken(bp, 'default', ['read']);
    expect((await bp.request('POST', '/v1/ingest', { token: ro.token, body: nativeBatch() })).status).toBe(403);
    // Every ingest route shares the queue.
    const junit = await bp.request('POST', '/v1/ingest/junit', {
      body: { idempotencyKey: `bp-junit-${hex(4)}`, resource: { ciProvider: 'local', commitSha: 'abcdef1', branch: 'main', trigger: 'push' }, xml: '<testsuite><testcase name="t"/></testsuite>' },
    });
    expect(junit.status).toBe(503);
    expect((await bp.request('POST', '/v1/traces', { body: {} })).status).toBe(503);
    // Reads are unaffected; nothing beyond the two accepted jobs was queued.
    expect((await bp.request('GET', '/v1/runs')).status).toBe(200);
    expect(bp.daemon.queue.depth()).toBe(2);
  });
});

describe('rate limit (a daemon allowing 3 requests per project per window)', () => {
  let rl: TestDaemon;
  beforeAll(async () => {
    // A window far longer than the test, so a window boundary cannot reset the count mid-test.
    rl = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '3', SERVICE_RATE_LIMIT_WINDOW_MS: String(1e12) } });
  });
  afterAll(async () => {
    await rl?.close();
  });

  it('429 rate_limited with Retry-After after the budget, before validation; per project', async () => {
    expect((await rl.request('POST', '/v1/ingest', { body: nativeBatch() })).status).toBe(202);
    expect((await rl.request('POST', '/v1/ingest', { body: { nonsense: true } })).status).toBe(400);
    expect((await rl.request('GET', '/v1/runs')).status).toBe(200);
    const limited = await rl.request('POST', '/v1/ingest', { body: { nonsense: true } });
    expect(limited.status).toBe(429);
    expect(limited.json.error).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await rl.request('GET', '/v1/runs')).status).toBe(429);
    // Auth still comes first.
    expect((await rl.request('POST', '/v1/ingest', { token: null, body: nativeBatch() })).status).toBe(401);
    // Another project has its own budget.
    const created = await rl.request('POST', '/v1/admin/projects', { token: rl.adminToken, body: { slug: 'other' } });
    expect(created.status).toBe(201);
    const other = await createToken(rl, 'other', ['ingest', 'read']);
    expect((await rl.request('POST', '/v1/ingest', { token: other.token, body: nativeBatch() })).status).toBe(202);
  });
});
