// Per-project fixed-window rate limit (docs/contract.md §5): request max+1 of a window gets 429
// `rate_limited` with Retry-After, on every token route of the route table and every procedure,
// from one budget per project; other projects are unaffected; refused requests cost nothing.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCEDURES } from '../../src/api/trpc.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { PROCEDURE_EXAMPLES, ROUTE_EXAMPLES, callProcedure, createProject, examplePath, routeKey, type Fixture } from '../helpers/route-examples.js';

const ALL_SCOPES = ['ingest', 'read', 'quarantine', 'sql'];
let projectSeq = 0;

/** Ids of nothing in particular: the examples only need to get past auth and scope to count. */
function fixtureFor(slug: string): Fixture {
  return { slug, runId: randomUUID(), executionId: randomUUID(), testIdentityId: randomUUID(), commitSha: 'abc1234', ownBadgeToken: 'unknown', tokenId: randomUUID() };
}

function expectRateLimited(res: { status: number; headers: Headers; json: any }, where: string): void {
  expect(res.status, where).toBe(429);
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter, `${where}: Retry-After`).toMatch(/^\d+$/);
  expect(Number(retryAfter), where).toBeGreaterThanOrEqual(1);
}

describe('rate limit (3 requests per window)', () => {
  let td: TestDaemon;

  async function project(): Promise<{ slug: string; token: string }> {
    const slug = `rl-${++projectSeq}`;
    const p = await createProject(td, slug, [ALL_SCOPES]);
    return { slug, token: p.tokens[0]! };
  }

  beforeAll(async () => {
    // A 2^40 ms window (2004..2039): no window boundary can pass while the test runs.
    td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '3', SERVICE_RATE_LIMIT_WINDOW_MS: String(2 ** 40) } });
  });

  afterAll(async () => td?.close());

  it('counts on every token route of the route table: the 4th request is 429 rate_limited', async () => {
    const routes = td.daemon.app.routes.routes.filter((r) => r.auth.kind === 'token');
    expect(routes.length).toBeGreaterThan(12);
    const missing = routes.map(routeKey).filter((k) => !ROUTE_EXAMPLES[k]);
    expect(missing, 'routes without an example in test/helpers/route-examples.ts').toEqual([]);
    for (const route of routes) {
      const { slug, token } = await project();
      const make = ROUTE_EXAMPLES[routeKey(route)]!;
      const send = () => {
        const ex = make(fixtureFor(slug));
        return td.request(route.method, examplePath(route.url, ex), { token, body: ex.body });
      };
      for (let i = 1; i <= 3; i++) {
        const res = await send();
        expect([401, 403, 429], `${routeKey(route)} request ${i}: ${res.status} ${res.text.slice(0, 200)}`).not.toContain(res.status);
      }
      const fourth = await send();
      expectRateLimited(fourth, routeKey(route));
      expect(fourth.json.error).toBe('rate_limited');
    }
  });

  it('counts on every procedure, with TOO_MANY_REQUESTS and the REST code', async () => {
    // Every procedure on a project's data; the admin ones (as admin REST routes) and session.me are not per project.
    for (const [name, doc] of Object.entries(PROCEDURES)) {
      if (doc.scope === 'admin' || doc.scope === 'signed-in') continue;
      const { slug, token } = await project();
      const input = PROCEDURE_EXAMPLES[name]!(fixtureFor(slug));
      for (let i = 1; i <= 3; i++) expect((await callProcedure(td, name, input, token, doc.type)).status, name).not.toBe(429);
      const fourth = await callProcedure(td, name, input, token, doc.type);
      expectRateLimited(fourth, name);
      expect(fourth.json.error.data).toMatchObject({ code: 'TOO_MANY_REQUESTS', httpStatus: 429, error: 'rate_limited' });
    }
  });

  it('draws ingest, REST reads and procedures from one budget per project', async () => {
    const { token } = await project();
    expect((await td.request('POST', '/v1/ingest', { token, body: nativeBatch({ n: 1 }) })).status).toBe(202);
    expect((await td.request('GET', '/v1/flaky', { token })).status).toBe(200);
    expect((await callProcedure(td, 'runs.list', {}, token)).status).toBe(200);
    expectRateLimited(await td.request('GET', '/v1/runs', { token }), 'REST after 3 mixed');
    expectRateLimited(await td.request('POST', '/v1/ingest', { token, body: nativeBatch({ n: 1 }) }), 'ingest after 3 mixed');
    expectRateLimited(await callProcedure(td, 'flaky.board', {}, token), 'procedure after 3 mixed');
  });

  it('counts each call of a batch', async () => {
    const { token } = await project();
    const input = encodeURIComponent(JSON.stringify({ 0: {}, 1: {}, 2: {}, 3: {} }));
    const res = await td.request('GET', `/trpc/runs.list,flaky.board,health.metrics,runs.list?batch=1&input=${input}`, { token });
    expect(res.json).toHaveLength(4);
    expect(res.json.slice(0, 3).every((r: any) => r.result)).toBe(true);
    expect(res.json[3].error.data).toMatchObject({ code: 'TOO_MANY_REQUESTS', error: 'rate_limited' });
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it("does not let one project's traffic limit another's", async () => {
    const a = await project();
    const b = await project();
    for (let i = 0; i < 3; i++) expect((await td.request('GET', '/v1/runs', { token: a.token })).status).toBe(200);
    expectRateLimited(await td.request('GET', '/v1/runs', { token: a.token }), 'project a');
    for (let i = 0; i < 3; i++) expect((await td.request('GET', '/v1/runs', { token: b.token })).status).toBe(200);
    expectRateLimited(await td.request('GET', '/v1/runs', { token: b.token }), 'project b');
    expectRateLimited(await td.request('GET', '/v1/runs', { token: a.token }), 'project a, still');
  });

  it('does not count refused requests (401, 403) against the project', async () => {
    const slug = `rl-${++projectSeq}`;
    const p = await createProject(td, slug, [['read'], ['ingest']]);
    const [read, ingestOnly] = p.tokens as [string, string];
    for (let i = 0; i < 5; i++) {
      expect((await td.request('GET', '/v1/runs', { token: ingestOnly })).status).toBe(403);
      expect((await td.request('GET', '/v1/runs', { token: `fh_${'e'.repeat(48)}` })).status).toBe(401);
    }
    for (let i = 0; i < 3; i++) expect((await td.request('GET', '/v1/runs', { token: read })).status).toBe(200);
    expectRateLimited(await td.request('GET', '/v1/runs', { token: read }), 'after refused requests');
  });
});

describe('rate limit at the defaults (600 requests per 60 s)', () => {
  let td: TestDaemon;
  // Windows are fixed to the minute: the limiter's clock runs at real speed from the start of a
  // window, so that all 601 requests (a few seconds' worth) fall into one without waiting for it.
  let shift = 0;
  const clock = (): number => Date.now() + shift;

  beforeAll(async () => {
    shift = -(Date.now() % 60_000);
    td = await startTestDaemon({ rateLimitClock: clock }); // SERVICE_RATE_LIMIT_MAX / _WINDOW_MS unset
  });

  afterAll(async () => td?.close());

  it('answers the 601st request of a window with 429 and Retry-After', { timeout: 120_000 }, async () => {
    const { tokens } = await createProject(td, 'rl-defaults', [['read', 'ingest']]);
    const token = tokens[0]!;
    expect(60_000 - (clock() % 60_000), 'at least 20 s of the window left').toBeGreaterThanOrEqual(20_000);
    const window = Math.floor(clock() / 60_000);

    const statuses: number[] = [];
    // Every request counts once it is authenticated, a read the engine answers as much as one refused
    // by validation (400): all but one in thirty are the latter, which cost the engine nothing.
    const pathOf = (n: number): string => (n % 30 === 0 ? '/v1/runs?limit=1' : n % 2 ? '/v1/runs?limit=0' : '/v1/flaky?limit=0');
    for (let i = 0; i < 600; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, (_, j) => td.request('GET', pathOf(i + j), { token })));
      statuses.push(...batch.map((r) => r.status));
    }
    const last = await td.request('GET', '/v1/runs?limit=1', { token });
    expect(Math.floor(clock() / 60_000), 'the 601 requests spanned two windows').toBe(window);

    expect(statuses).toHaveLength(600);
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    expect(new Set(statuses)).toEqual(new Set([200, 400]));
    expectRateLimited(last, '601st request');
    expect(last.json.error).toBe('rate_limited');
    expect(Number(last.headers.get('retry-after'))).toBeLessThanOrEqual(60);
  });
});
