// The procedure API (/trpc) through a stock @trpc/client against the real daemon: the same data as
// the REST routes, the same auth, scope and project isolation, and input errors naming the path.
// Also GET /v1/executions/:executionId/rca, which rca.get mirrors.
import { TRPCClientError, createTRPCClient, httpBatchLink, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createProject } from '../helpers/route-examples.js';

/** flaky.board as GET /v1/flaky answers it: the same items, less the impact only the dashboard's board reads. */
function withoutImpact<T extends { items: object[] }>(board: T): T {
  return { ...board, items: board.items.map((i) => Object.fromEntries(Object.entries(i).filter(([k]) => k !== 'impact'))) };
}

const T0 = Date.parse('2026-11-10T08:00:00Z');

/** Run r: a steady test, a test that fails then passes on its retry, and every 3rd run a failure. */
function run(r: number): Record<string, unknown> {
  const at = T0 + r * 3_600_000;
  const executions: Record<string, unknown>[] = [
    { filePath: 'src/cart.test.ts', suite: 'cart', title: 'adds an item', status: 'pass', startedAt: at, durationMs: 12 },
    { filePath: 'src/cart.test.ts', suite: 'cart', title: 'applies a coupon', status: 'fail', startedAt: at + 1, durationMs: 40, error: { message: 'expected 90 to be 80' } },
    { filePath: 'src/cart.test.ts', suite: 'cart', title: 'applies a coupon', status: 'pass', attempt: 2, retryOfIndex: 1, startedAt: at + 2, durationMs: 38 },
  ];
  if (r % 3 === 0) executions.push({ filePath: 'src/pay.test.ts', suite: 'pay', title: 'refunds', status: 'fail', startedAt: at + 3, durationMs: 9, error: { message: 'timeout' } });
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `procedures-run-${r}`,
    resource: { ciProvider: 'github_actions', commitSha: `abc${String(r).padStart(4, '0')}`, branch: r % 2 === 0 ? 'main' : 'feature/x', trigger: 'push' },
    run: { status: r % 3 === 0 ? 'failed' : 'passed', startedAt: at },
    executions,
  };
}

type Client = ReturnType<typeof createTRPCClient<AppRouter>>;

function batchClient(td: TestDaemon, token: string | null): Client {
  return createTRPCClient<AppRouter>({
    links: [httpBatchLink({ url: `${td.url}/trpc`, headers: () => (token ? { authorization: `Bearer ${token}` } : {}) })],
  });
}

function plainClient(td: TestDaemon, token: string | null): Client {
  return createTRPCClient<AppRouter>({
    links: [httpLink({ url: `${td.url}/trpc`, headers: () => (token ? { authorization: `Bearer ${token}` } : {}) })],
  });
}

/** The rejection of a procedure call, as the client surfaces it. */
async function failure(p: Promise<unknown>): Promise<TRPCClientError<AppRouter>> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TRPCClientError) return e as TRPCClientError<AppRouter>;
    throw e;
  }
  throw new Error('expected the call to fail');
}

describe('procedure API (/trpc)', () => {
  let td: TestDaemon;
  let client: Client;
  let runIds: string[];
  let execId: string;
  let flakyTestId: string;
  let other: { tokens: string[] };
  let ingestOnly: string;

  beforeAll(async () => {
    td = await startTestDaemon();
    await td.ingest(...Array.from({ length: 7 }, (_, i) => run(i + 1)));
    client = batchClient(td, td.token);
    const all = await td.request('GET', '/v1/runs?limit=100');
    runIds = all.json.items.map((r: { id: string }) => r.id);
    const detail = await td.request('GET', `/v1/runs/${runIds[0]}`);
    execId = detail.json.executions[0].id;
    flakyTestId = detail.json.executions.find((e: { title: string }) => e.title === 'applies a coupon').testIdentityId;
    other = await createProject(td, 'procedures-other', [['read', 'ingest', 'quarantine']]);
    // Same project as the data, but without `read`.
    const t = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['ingest', 'quarantine'] } });
    ingestOnly = t.json.token;
  }, 120_000);

  afterAll(async () => td?.close());

  it('lists runs page by page following the cursor, as GET /v1/runs does', async () => {
    expect(runIds).toHaveLength(7);
    const seen: unknown[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.runs.list.query({ limit: 3, cursor });
      const rest = await td.request('GET', `/v1/runs?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page).toEqual(rest.json);
      seen.push(...page.items);
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(seen.map((r) => (r as { id: string }).id)).toEqual(runIds);

    // Filters, epoch-millisecond bounds, and no input at all (every default).
    const main = await client.runs.list.query({ branch: 'main', status: 'passed', since: T0, until: T0 + 7 * 3_600_000 });
    const restMain = await td.request('GET', `/v1/runs?branch=main&status=passed&since=${T0}&until=${T0 + 7 * 3_600_000}`);
    expect(main).toEqual(restMain.json);
    expect(main.items.map((r) => r.branch)).toEqual(['main', 'main']);
    expect(await client.runs.list.query()).toEqual((await td.request('GET', '/v1/runs')).json);
  });

  it('answers run.get, test.get, flaky.board, rca.get and health.metrics with the REST data (one batch)', async () => {
    const [runDetail, testPage, board, boardByOwner, rca, health] = await Promise.all([
      client.run.get.query({ runId: runIds[0]! }),
      client.test.get.query({ testIdentityId: flakyTestId, historyLimit: 4 }),
      client.flaky.board.query({ limit: 10, includeQuarantined: true }),
      client.flaky.board.query({ owner: '@nobody' }),
      client.rca.get.query({ executionId: execId }),
      client.health.metrics.query({ days: 30 }),
    ]);
    expect(runDetail).toEqual((await td.request('GET', `/v1/runs/${runIds[0]}`)).json);
    expect(runDetail.executions.length).toBeGreaterThan(0);
    expect(testPage).toEqual((await td.request('GET', `/v1/tests/${flakyTestId}?historyLimit=4`)).json);
    expect(testPage.history).toHaveLength(4);
    expect(withoutImpact(board)).toEqual((await td.request('GET', '/v1/flaky?limit=10&includeQuarantined=true')).json);
    expect(board.items[0]?.testIdentityId).toBe(flakyTestId);
    expect(boardByOwner).toEqual({ items: [] });
    expect(rca).toBeNull();
    expect((await td.request('GET', `/v1/executions/${execId}/rca`)).json).toBeNull();
    expect(health).toEqual((await td.request('GET', '/v1/health?days=30')).json);
    expect(health.rangeDays).toBe(30);

    // The same through the non-batching link.
    const plain = plainClient(td, td.token);
    expect(await plain.run.get.query({ runId: runIds[1]! })).toEqual((await td.request('GET', `/v1/runs/${runIds[1]}`)).json);
  });

  it('speaks the tRPC wire format: GET ?input=, POST with a JSON body, ?batch=1', async () => {
    const get = await td.request('GET', `/trpc/run.get?input=${encodeURIComponent(JSON.stringify({ runId: runIds[2] }))}`);
    expect(get.status).toBe(200);
    expect(get.json.result.data.id).toBe(runIds[2]);
    const post = await td.request('POST', '/trpc/run.get', { body: { runId: runIds[2] } });
    expect(post.status).toBe(200);
    expect(post.json).toEqual(get.json);
    const batch = await td.request('GET', `/trpc/runs.list,flaky.board?batch=1&input=${encodeURIComponent(JSON.stringify({ 0: { limit: 1 }, 1: { limit: 1 } }))}`);
    expect(batch.status).toBe(200);
    expect(batch.json).toHaveLength(2);
    expect(batch.json[0].result.data.items).toHaveLength(1);
    expect(batch.json[1].result.data.items).toHaveLength(1);
    // Batches of up to 50 calls fit in the URL; 51 is a 400, not 51 queries.
    const names = (n: number) => Array.from({ length: n }, () => 'runs.list').join(',');
    const full = await td.request('GET', `/trpc/${names(50)}?batch=1&input=${encodeURIComponent(JSON.stringify({}))}`);
    expect(full.status).toBe(200);
    expect(full.json).toHaveLength(50);
    expect((await td.request('GET', `/trpc/${names(51)}?batch=1&input=${encodeURIComponent(JSON.stringify({}))}`)).status).toBe(400);
  });

  it("gives another project's token NOT_FOUND for this project's ids, and none of its runs", async () => {
    const foreign = batchClient(td, other.tokens[0]!);
    for (const call of [
      () => foreign.run.get.query({ runId: runIds[0]! }),
      () => foreign.test.get.query({ testIdentityId: flakyTestId }),
      () => foreign.rca.get.query({ executionId: execId }),
    ]) {
      const e = await failure(call());
      expect(e.data?.code).toBe('NOT_FOUND');
      expect(e.data?.httpStatus).toBe(404);
      expect(e.data?.error).toBe('not_found');
    }
    expect(await foreign.runs.list.query({ limit: 100 })).toEqual({ items: [], nextCursor: null });
    expect(await foreign.flaky.board.query({ includeQuarantined: true })).toEqual({ items: [] });
  });

  it('refuses a token without `read` (FORBIDDEN) and a missing or unknown one (UNAUTHORIZED), with the REST codes', async () => {
    const noRead = await failure(batchClient(td, ingestOnly).runs.list.query({}));
    expect(noRead.data).toMatchObject({ code: 'FORBIDDEN', httpStatus: 403, error: 'insufficient_scope' });
    const none = await failure(plainClient(td, null).flaky.board.query({}));
    expect(none.data).toMatchObject({ code: 'UNAUTHORIZED', httpStatus: 401, error: 'unauthorized' });
    const unknown = await failure(plainClient(td, `fh_${'0'.repeat(48)}`).health.metrics.query({}));
    expect(unknown.data).toMatchObject({ code: 'UNAUTHORIZED', error: 'unauthorized' });
    // On the wire: the status and the headers REST sends with them.
    const raw = await td.request('GET', '/trpc/runs.list', { token: null });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBe('Bearer');
    expect((await td.request('GET', '/trpc/runs.list', { token: ingestOnly })).status).toBe(403);
  });

  it('answers bad input with BAD_REQUEST naming the offending path', async () => {
    const cases: [Promise<unknown>, string][] = [
      [client.runs.list.query({ limit: 1000 }), 'limit'],
      [client.runs.list.query({ since: 'last tuesday' }), 'since'],
      [client.runs.list.query({ cursor: 'not-a-cursor' }), 'cursor'],
      [client.test.get.query({ testIdentityId: flakyTestId, historyLimit: 0 }), 'historyLimit'],
      [client.flaky.board.query({ minScore: 2 }), 'minScore'],
      [client.health.metrics.query({ days: 400 }), 'days'],
      // A client without types can send anything: a missing required field is named too.
      [client.run.get.query({} as { runId: string }), 'runId'],
      [client.flaky.board.query({ includeQuarantined: 'yes' } as unknown as { includeQuarantined: boolean }), 'includeQuarantined'],
    ];
    for (const [call, path] of cases) {
      const e = await failure(call);
      expect(e.data?.code).toBe('BAD_REQUEST');
      expect(e.data?.httpStatus).toBe(400);
      expect(e.data?.error).toBe('invalid_query');
      expect(e.data?.issues?.map((i) => i.path)).toContain(path);
    }
    // A malformed id is unknown, as on REST (GET /v1/runs/not-a-uuid → 404).
    expect((await failure(client.run.get.query({ runId: 'not-a-uuid' }))).data?.code).toBe('NOT_FOUND');
    expect((await td.request('GET', '/v1/runs/not-a-uuid')).status).toBe(404);
  });

  it('GET /v1/executions/:id/rca: null for an execution of the project, 404 otherwise, scope read', async () => {
    const own = await td.request('GET', `/v1/executions/${execId}/rca`);
    expect(own.status).toBe(200);
    expect(own.headers.get('content-type')).toMatch(/^application\/json/);
    expect(own.text).toBe('null');
    expect((await td.request('GET', `/v1/executions/${execId.toUpperCase()}/rca`)).text).toBe('null');
    const foreign = await td.request('GET', `/v1/executions/${execId}/rca`, { token: other.tokens[0] });
    expect(foreign.status).toBe(404);
    expect(foreign.json.error).toBe('not_found');
    expect((await td.request('GET', `/v1/executions/${runIds[0]}/rca`)).status).toBe(404); // a run id is no execution id
    expect((await td.request('GET', '/v1/executions/nope/rca')).status).toBe(404);
    const noRead = await td.request('GET', `/v1/executions/${execId}/rca`, { token: ingestOnly });
    expect(noRead.status).toBe(403);
    expect(noRead.json.error).toBe('insufficient_scope');
    expect((await td.request('GET', `/v1/executions/${execId}/rca`, { token: null })).status).toBe(401);
  });
});
