// The dashboard's procedures against the real daemon with ingested history, through a stock
// @trpc/client: each answer checked against the REST route that has the same data, or against
// what was ingested where no route exists.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { TRPCClientError, createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { verifyWebhookSignature } from '../../src/domain/notifications.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

/** flaky.board as GET /v1/flaky answers it: the same items, less the impact only the dashboard's board reads. */
function withoutImpact<T extends { items: object[] }>(board: T): T {
  return { ...board, items: board.items.map((i) => Object.fromEntries(Object.entries(i).filter(([k]) => k !== 'impact'))) };
}

const T0 = Date.parse('2026-11-10T08:00:00Z');
const RUNS = 6;

/** Run r (1-based): cart tests always run, `applies a coupon` fails then passes on a retry, pay fails every 2nd run; PR 42 on runs 5 and 6. */
function run(r: number): Record<string, unknown> {
  const at = T0 + r * 3_600_000;
  const executions: Record<string, unknown>[] = [
    { filePath: 'src/cart.test.ts', suite: 'cart', title: 'adds an item', status: 'pass', startedAt: at, durationMs: 12 },
    { filePath: 'src/cart.test.ts', suite: 'cart', title: 'applies a coupon', status: 'fail', startedAt: at + 1, durationMs: 40, error: { type: 'AssertionError', message: 'expected 90 to be 80', stack: 'AssertionError: expected 90 to be 80\n    at cart.test.ts:12:5' } },
    { filePath: 'src/cart.test.ts', suite: 'cart', title: 'applies a coupon', status: 'pass', attempt: 2, retryOfIndex: 1, startedAt: at + 2, durationMs: 38 },
    { filePath: 'src/pay/refund.test.ts', suite: 'pay', title: 'refunds', status: r % 2 === 0 ? 'fail' : 'pass', startedAt: at + 3, durationMs: 9, ...(r % 2 === 0 ? { error: { message: 'timeout after 5000 ms' } } : {}) },
  ];
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `dash-run-${r}`,
    resource: {
      ciProvider: 'github_actions',
      commitSha: `${'d'.repeat(33)}${String(r).padStart(7, '0')}`,
      branch: r >= 5 ? 'feature/pr' : 'main',
      trigger: r >= 5 ? 'pull_request' : 'push',
      ...(r >= 5 ? { prNumber: 42, baseBranch: 'main' } : {}),
    },
    run: { status: r % 2 === 0 ? 'failed' : 'passed', startedAt: at },
    executions,
  };
}

type Client = ReturnType<typeof createTRPCClient<AppRouter>>;

function client(td: TestDaemon, token: string, project?: string): Client {
  return createTRPCClient<AppRouter>({
    links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${token}`, ...(project ? { 'x-flakehouse-project': project } : {}) }) })],
  });
}

async function failure(p: Promise<unknown>): Promise<{ status: number; error: string }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TRPCClientError) {
      const data = e.data as { httpStatus: number; error: string };
      return { status: data.httpStatus, error: data.error };
    }
    throw e;
  }
  throw new Error('expected the call to fail');
}

describe('dashboard procedures', () => {
  let td: TestDaemon;
  let c: Client;
  let admin: Client;
  let coupon: string;
  let refunds: string;
  let hooks: { server: Server; url: string; received: { headers: IncomingMessage['headers']; body: string }[] };

  beforeAll(async () => {
    const received: { headers: IncomingMessage['headers']; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    hooks = { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, received };
    // An environment policy key: shown with source env and read-only.
    td = await startTestDaemon({ env: { SERVICE_FLAKY_MIN_SAMPLES: '3', SERVICE_ALLOW_PRIVATE_WEBHOOKS: 'true' } });
    await td.ingest(...Array.from({ length: RUNS }, (_, i) => run(i + 1)));
    c = client(td, td.token);
    admin = client(td, td.adminToken, 'default');
    const board = (await td.request('GET', '/v1/flaky?limit=100')).json.items as { testIdentityId: string; title: string }[];
    coupon = board.find((t) => t.title === 'applies a coupon')!.testIdentityId;
    refunds = board.find((t) => t.title === 'refunds')!.testIdentityId;
  }, 120_000);

  afterAll(async () => {
    await td?.close();
    hooks?.server.close();
  });

  it('flaky.board filters by suite, file and quarantine, sorts, and pages by cursor, as GET /v1/flaky does', async () => {
    const all = await c.flaky.board.query({ limit: 100 });
    expect(all.items.map((t) => t.title).sort()).toEqual(['adds an item', 'applies a coupon', 'refunds']);
    expect(all.nextCursor).toBeUndefined();
    expect(withoutImpact(await c.flaky.board.query({ suite: 'PAY' }))).toEqual((await td.request('GET', '/v1/flaky?suite=PAY')).json);
    expect((await c.flaky.board.query({ suite: 'PAY' })).items.map((t) => t.title)).toEqual(['refunds']);
    expect((await c.flaky.board.query({ file: 'cart.test' })).items.map((t) => t.title).sort()).toEqual(['adds an item', 'applies a coupon']);
    const byTitle = await c.flaky.board.query({ sort: 'title', limit: 100 });
    expect(byTitle.items.map((t) => t.title)).toEqual(['adds an item', 'applies a coupon', 'refunds']);

    // One page at a time: every row once, in the same order as the whole list.
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 5; i++) {
      const page = await c.flaky.board.query({ sort: 'title', limit: 1, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((t) => t.title));
      expect(withoutImpact(page)).toEqual((await td.request('GET', `/v1/flaky?sort=title&limit=1${cursor ? `&cursor=${cursor}` : ''}`)).json);
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(['adds an item', 'applies a coupon', 'refunds']);
    expect((await failure(c.flaky.board.query({ cursor: 'garbage' }))).error).toBe('invalid_query');

    // quarantined: true / false split the board; a decision shows at once.
    await c.test.quarantine.mutate({ testIdentityId: refunds, reason: 'board filter test' });
    expect((await c.flaky.board.query({ quarantined: true })).items.map((t) => t.testIdentityId)).toEqual([refunds]);
    expect((await c.flaky.board.query({ quarantined: false, limit: 100 })).items.map((t) => t.testIdentityId)).not.toContain(refunds);
    // Paging with a filter applied after the read: still every row once.
    const p1 = await c.flaky.board.query({ quarantined: false, sort: 'title', limit: 1 });
    const p2 = await c.flaky.board.query({ quarantined: false, sort: 'title', limit: 1, cursor: p1.nextCursor! });
    expect([...p1.items, ...p2.items].map((t) => t.title)).toEqual(['adds an item', 'applies a coupon']);
    expect(p2.nextCursor).toBeUndefined();
    await c.test.release.mutate({ testIdentityId: refunds, reason: 'done' });
  });

  it('test.history gives the status strip oldest first; quarantineLog the decisions; an unknown test is 404', async () => {
    const h = await c.test.history.query({ testIdentityId: coupon });
    expect(h.items).toHaveLength(RUNS * 2);
    expect(h.items.map((e) => e.status)).toEqual(Array.from({ length: RUNS }, () => ['fail', 'pass']).flat());
    const times = h.items.map((e) => Date.parse(e.startedAt));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    const page = (await td.request('GET', `/v1/tests/${coupon}?historyLimit=4`)).json;
    expect(h.items.slice(-4).map((e) => e.executionId)).toEqual(page.history.map((e: { executionId: string }) => e.executionId));

    await c.test.quarantine.mutate({ testIdentityId: coupon, reason: 'flaky coupon' });
    await c.test.release.mutate({ testIdentityId: coupon, reason: 'fixed' });
    const log = await c.test.quarantineLog.query({ testIdentityId: coupon });
    expect(log).toMatchObject({ quarantined: false, decision: { override: 'released', reason: 'fixed' } });
    const kinds = log.events.map((e) => e.kind);
    expect(kinds.slice(-2)).toEqual(['quarantined', 'released']);

    expect(await failure(c.test.history.query({ testIdentityId: '00000000-0000-4000-8000-000000000000' }))).toEqual({ status: 404, error: 'not_found' });
    expect((await failure(c.test.history.query({ testIdentityId: 'nope' }))).status).toBe(404);
  });

  it('execution.get: error, stack, every attempt of the test in the run, RCA; test.clusters and clusters.list count the failures', async () => {
    const runs = (await td.request('GET', '/v1/runs?limit=100')).json.items as { id: string; commitSha: string }[];
    const detail = (await td.request('GET', `/v1/runs/${runs[0]!.id}`)).json;
    const failed = detail.executions.find((e: { title: string; attempt: number }) => e.title === 'applies a coupon' && e.attempt === 1);
    const e = await c.execution.get.query({ executionId: failed.id });
    expect(e).toMatchObject({
      id: failed.id,
      runId: runs[0]!.id,
      testIdentityId: coupon,
      status: 'fail',
      errorType: 'AssertionError',
      errorMessage: 'expected 90 to be 80',
      commitSha: runs[0]!.commitSha,
      prNumber: 42,
      rca: null,
    });
    expect(e.errorStack).toContain('cart.test.ts:12:5');
    expect(e.attempts.map((a) => [a.attempt, a.status])).toEqual([
      [1, 'fail'],
      [2, 'pass'],
    ]);
    expect(await c.rca.get.query({ executionId: failed.id })).toBeNull();
    expect((await failure(c.execution.get.query({ executionId: '00000000-0000-4000-8000-000000000000' }))).status).toBe(404);

    const testClusters = await c.test.clusters.query({ testIdentityId: coupon, days: 3650 });
    expect(testClusters.items).toHaveLength(1);
    expect(testClusters.items[0]).toMatchObject({ occurrences: RUNS, testsAffected: 1, errorMessage: 'expected 90 to be 80' });
    const all = await c.clusters.list.query({ days: 3650 });
    expect(all.items.map((x) => x.occurrences)).toEqual([RUNS, RUNS / 2]);
    expect(all.items[1]).toMatchObject({ errorMessage: 'timeout after 5000 ms', exampleTestId: refunds, rca: null });
  });

  it('runs.list filters by commit and PR; pr.summary shows what GET /v1/runs/summary and /v1/runs/gate say', async () => {
    const pr = await c.runs.list.query({ prNumber: 42 });
    expect(pr.items).toHaveLength(2);
    expect(pr).toEqual((await td.request('GET', '/v1/runs?prNumber=42')).json);
    const one = await c.runs.list.query({ commitSha: pr.items[0]!.commitSha.toUpperCase() });
    expect(one.items.map((r) => r.id)).toEqual([pr.items[0]!.id]);
    expect((await failure(c.runs.list.query({ commitSha: 'xyz' }))).error).toBe('invalid_query');

    const sha = pr.items[0]!.commitSha;
    const byPr = await c.pr.summary.query({ prNumber: 42 });
    const bySha = await c.pr.summary.query({ commitSha: sha });
    expect(byPr).toEqual(bySha);
    const summary = (await td.request('GET', `/v1/runs/summary?commitSha=${sha}`)).json;
    const gate = (await td.request('GET', `/v1/runs/gate?commitSha=${sha}`)).json;
    expect(bySha).toEqual({ commitSha: sha, prNumber: 42, summary: summary.summary, summaryMarkdown: summary.markdown, gate: gate.gate, gateMarkdown: gate.markdown });
    expect(bySha.summary.failed + bySha.summary.flaky).toBeGreaterThan(0);
    expect(await failure(c.pr.summary.query({ prNumber: 7 }))).toEqual({ status: 404, error: 'not_found' });
  });

  it('health.suites sums the daily rollups per suite', async () => {
    const h = await c.health.suites.query({ days: 365 });
    const cart = h.suites.find((s) => s.suite === 'cart')!;
    const pay = h.suites.find((s) => s.suite === 'pay')!;
    // Executions that ran, per suite: 3 cart attempts and 1 pay per run; a pass on a retry counts as flaky.
    expect(cart).toMatchObject({ executions: RUNS * 3, failed: RUNS, flaky: RUNS });
    expect(pay).toMatchObject({ executions: RUNS, failed: RUNS / 2, flaky: 0, failRate: 0.5 });
    const day = h.days[0]!.day;
    const one = await c.health.suites.query({ day, suite: 'pay' });
    expect(one.suites.map((s) => s.suite)).toEqual(['pay']);
    expect(one.fromDay).toBe(day);
    expect((await failure(c.health.suites.query({ day: '10 Nov' }))).status).toBe(400);
  });

  it('settings.get lists each policy key with its source (env read-only); settings.update is the admin’s', async () => {
    const s = await c.settings.get.query();
    const key = (k: string) => s.keys.find((x) => x.key === k);
    expect(key('flaky.minSamples')).toEqual({ key: 'flaky.minSamples', value: 3, source: 'env', readOnly: true });
    expect(key('flaky.threshold')).toMatchObject({ source: 'default', readOnly: false });
    // No AI provider on this daemon: `ai.rca` is off whatever it says, as `flakehouse config` shows it.
    expect(key('ai.rca')).toEqual({ key: 'ai.rca', value: false, configured: true, note: expect.stringContaining('no AI provider'), source: 'default', readOnly: false });
    expect(await failure(c.settings.update.mutate({ patch: { flaky: { threshold: 0.4 } } }))).toEqual({ status: 403, error: 'admin_required' });
    const after = await admin.settings.update.mutate({ patch: { flaky: { threshold: 0.4 } } });
    expect(after.keys.find((x) => x.key === 'flaky.threshold')).toEqual({ key: 'flaky.threshold', value: 0.4, source: 'settings', readOnly: false });
    expect((await td.request('GET', '/v1/admin/projects/default/settings', { token: td.adminToken })).json.settings).toMatchObject({ flaky: { threshold: 0.4 } });
    // Input errors name the path, as every procedure's do, with the code REST's PATCH answers for the same patch.
    const bad = await admin.settings.update.mutate({ patch: { flaky: { threshold: 7 } } }).catch((e: TRPCClientError<AppRouter>) => e.data);
    expect(bad).toMatchObject({ httpStatus: 400, error: 'invalid_payload', issues: [expect.objectContaining({ path: 'patch.flaky.threshold' })] });
    const rest = await td.request('PATCH', '/v1/admin/projects/default/settings', { token: td.adminToken, body: { flaky: { threshold: 7 } } });
    expect(rest.status).toBe(400);
    expect(rest.json).toMatchObject({ error: 'invalid_payload', issues: [expect.objectContaining({ path: 'flaky.threshold' })] });
  });

  it('channels.list shows config channels read-only; channels.sendTest delivers a signed test message', async () => {
    const put = await td.request('PUT', '/v1/notifications/routing', { body: { channels: [{ kind: 'webhook', target: hooks.url }] } });
    expect(put.status).toBe(200);
    const list = await c.channels.list.query();
    expect(list.items).toEqual([expect.objectContaining({ source: 'config', kind: 'webhook', target: hooks.url, signed: true, readOnly: true })]);
    expect(await failure(c.channels.sendTest.mutate({ channelId: list.items[0]!.id }))).toEqual({ status: 403, error: 'admin_required' });
    const sent = await admin.channels.sendTest.mutate({ channelId: list.items[0]!.id });
    expect(sent).toMatchObject({ delivered: true, kind: 'webhook' });
    expect(hooks.received).toHaveLength(1);
    const got = hooks.received[0]!;
    expect(got.headers['x-service-event']).toBe('test');
    const secret = (await td.request('GET', '/v1/admin/projects/default/settings', { token: td.adminToken })).json.configChannels[0].signingSecret;
    expect(verifyWebhookSignature(secret, String(got.headers['x-service-signature']), got.body, Math.floor(Date.now() / 1000))).toBe(true);
    expect((await failure(admin.channels.sendTest.mutate({ channelId: 'nope' }))).status).toBe(404);
  });

  it('tokens: created with the secret once, listed without it, revoked (then refused); admin only', async () => {
    expect(await failure(c.tokens.list.query())).toEqual({ status: 403, error: 'admin_required' });
    const created = await admin.tokens.create.mutate({ scopes: ['read'] });
    expect(created.token).toMatch(/^fh_[0-9a-f]{48}$/);
    const listed = await admin.tokens.list.query();
    const row = listed.items.find((t) => t.id === created.id)!;
    expect(row).toMatchObject({ prefix: created.token.slice(0, 10), scopes: ['read'], revokedAt: null });
    expect(JSON.stringify(listed)).not.toContain(created.token);
    expect((await client(td, created.token).runs.list.query({})).items.length).toBe(RUNS);
    expect(await admin.tokens.revoke.mutate({ tokenId: created.id })).toEqual({ revoked: true });
    expect((await failure(client(td, created.token).runs.list.query({}))).status).toBe(401);
    expect((await admin.tokens.list.query()).items.find((t) => t.id === created.id)!.revokedAt).not.toBeNull();
    expect((await failure(admin.tokens.revoke.mutate({ tokenId: created.id }))).status).toBe(404);
  });

  it('badges.get is GET /v1/badges; pipeline.graph shows the running graph, counters and queue', async () => {
    expect(await c.badges.get.query()).toEqual((await td.request('GET', '/v1/badges')).json);
    expect(await failure(c.pipeline.graph.query())).toEqual({ status: 403, error: 'admin_required' });
    const g = await admin.pipeline.graph.query();
    expect(g.pipelines.map((p) => p.id).sort()).toEqual(['events', 'executions']);
    expect(g.pipelines.find((p) => p.id === 'executions')!.processors).toEqual(['normalize', 'identity', 'clustering', 'scoring', 'quarantine', 'rollups']);
    expect(g.components.map((x) => x.key)).toEqual(expect.arrayContaining(['receivers:native', 'processors:scoring', 'exporters:clickhouse']));
    expect(g.worker.jobs).toBeGreaterThanOrEqual(RUNS);
    expect(g.worker.executions).toBeGreaterThanOrEqual(RUNS * 4);
    expect(g.queue).toMatchObject({ pending: 0, inflight: 0, dead: 0, depth: 0 });
    expect(g.lag.count).toBeGreaterThanOrEqual(RUNS);
    expect(g.deadJobs).toEqual({ count: 0, newest: [] });
    // The receivers' routes with their answers since start: the RUNS batches, each a 202.
    expect(g.ingest.find((r) => r.url === '/v1/ingest')).toEqual({ method: 'POST', url: '/v1/ingest', requests: RUNS, clientErrors: 0, serverErrors: 0 });
    expect(g.ingest.map((r) => r.url).sort()).toEqual(['/v1/ingest', '/v1/ingest/junit', '/v1/traces']);
    expect(g.components.find((x) => x.key === 'processors:scoring')!.busyMs).toBeGreaterThanOrEqual(0);
  });

  it('session.me says who calls; an admin without x-flakehouse-project must name one', async () => {
    expect(await c.session.me.query()).toMatchObject({ via: 'bearer', expiresAt: null, principal: { kind: 'project', projectSlug: 'default' } });
    const bare = client(td, td.adminToken);
    expect(await bare.session.me.query()).toMatchObject({ principal: { kind: 'admin' } });
    expect(await failure(bare.flaky.board.query({}))).toEqual({ status: 400, error: 'project_required' });
    expect((await bare.projects.list.query()).items.map((p) => p.slug)).toContain('default');
  });
});
