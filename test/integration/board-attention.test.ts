// The board's "needs attention" default and its branch and time-range filters (flaky.board and the
// opt-in GET /v1/flaky params): filtered in SQL, while GET /v1/flaky without them stays Flakemetry's
// whole list (minScore 0, every scored test).
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const RUNS = 8;
const OLD = Date.now() - 20 * DAY;

type Exec = Record<string, unknown>;
const exec = (title: string, status: 'pass' | 'fail', startedAt: number, extra: Exec = {}): Exec => ({
  filePath: `src/${title.replace(/ /g, '-')}.test.ts`,
  suite: 'shop',
  title,
  status,
  startedAt,
  durationMs: 10,
  ...(status === 'fail' ? { error: { message: `${title} failed` } } : {}),
  ...extra,
});

/** Main run r, 20 days ago: `adds an item` and `logs in` pass, `refunds` flips, `applies a coupon` breaks from run 5. */
function mainRun(r: number): Record<string, unknown> {
  const at = OLD + r * HOUR;
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `attention-main-${r}`,
    resource: { ciProvider: 'github_actions', commitSha: `${String(r).padStart(7, '0')}${'a'.repeat(33)}`, branch: 'main', trigger: 'push' },
    run: { status: 'failed', startedAt: at },
    executions: [
      exec('adds an item', 'pass', at),
      exec('logs in', 'pass', at + 1),
      exec('refunds', r % 2 === 0 ? 'fail' : 'pass', at + 2),
      exec('applies a coupon', r >= 5 ? 'fail' : 'pass', at + 3),
    ],
  };
}

/** A PR run two days ago on feature/search (base main): `adds an item` and a new `searches`. */
const prRun = {
  contractVersion: '0.1.0',
  idempotencyKey: 'attention-pr',
  resource: { ciProvider: 'github_actions', commitSha: 'b'.repeat(40), branch: 'feature/search', trigger: 'pull_request', prNumber: 7, baseBranch: 'main' },
  run: { status: 'passed', startedAt: Date.now() - 2 * DAY },
  executions: [exec('adds an item', 'pass', Date.now() - 2 * DAY), exec('searches', 'pass', Date.now() - 2 * DAY + 1)],
};

describe('the board: needs attention, branch and time range', () => {
  let td: TestDaemon;
  let c: ReturnType<typeof createTRPCClient<AppRouter>>;
  let ids: Record<string, string>;
  const titles = async (input: Parameters<typeof c.flaky.board.query>[0]) => (await c.flaky.board.query({ limit: 100, ...input })).items.map((t) => t.title).sort();
  const restTitles = async (query: string) => {
    const res = await td.request('GET', `/v1/flaky?limit=100${query}`);
    expect(res.status, res.text).toBe(200);
    return (res.json.items as { title: string }[]).map((t) => t.title).sort();
  };

  beforeAll(async () => {
    td = await startTestDaemon({ env: { SERVICE_FLAKY_MIN_SAMPLES: '3' } });
    await td.ingest(...Array.from({ length: RUNS }, (_, i) => mainRun(i + 1)), prRun);
    c = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
    const board = (await td.request('GET', '/v1/flaky?limit=100')).json.items as { testIdentityId: string; title: string }[];
    ids = Object.fromEntries(board.map((t) => [t.title, t.testIdentityId]));
    // A person's quarantine of a healthy test: it needs attention too.
    await c.test.quarantine.mutate({ testIdentityId: ids['logs in']!, reason: 'held for the auth migration' });
  }, 120_000);

  afterAll(async () => {
    await td?.close();
  });

  it('GET /v1/flaky without the new params still lists every scored test (Flakemetry default)', async () => {
    expect(await restTitles('')).toEqual(['adds an item', 'applies a coupon', 'logs in', 'refunds', 'searches']);
    expect(await titles({})).toEqual(['adds an item', 'applies a coupon', 'logs in', 'refunds', 'searches']);
  });

  it('attention: flaky, broken or quarantined only; the same through REST as an opt-in param', async () => {
    const states = Object.fromEntries((await c.flaky.board.query({ limit: 100 })).items.map((t) => [t.title, `${t.state}${t.quarantined ? '+q' : ''}`]));
    expect(states).toMatchObject({ refunds: 'flaky', 'applies a coupon': 'broken', 'logs in': 'healthy+q', 'adds an item': 'healthy' });
    expect(await titles({ attention: true })).toEqual(['applies a coupon', 'logs in', 'refunds']);
    expect(await restTitles('&attention=true')).toEqual(['applies a coupon', 'logs in', 'refunds']);
    // With the state filter it narrows further; with quarantined=false the quarantined one goes.
    expect(await titles({ attention: true, state: 'broken' })).toEqual(['applies a coupon']);
    expect(await titles({ attention: true, quarantined: false })).toEqual(['applies a coupon', 'refunds']);
    // Released, a healthy test no longer needs attention.
    await c.test.release.mutate({ testIdentityId: ids['logs in']!, reason: 'migration done' });
    try {
      expect(await titles({ attention: true })).toEqual(['applies a coupon', 'refunds']);
    } finally {
      await c.test.quarantine.mutate({ testIdentityId: ids['logs in']!, reason: 'held again' });
    }
  });

  it('branch: a named branch, the default branch (the one PRs target), and days: only tests run in the window', async () => {
    expect(await titles({ branch: 'feature/search' })).toEqual(['adds an item', 'searches']);
    expect(await titles({ defaultBranch: true })).toEqual(['adds an item', 'applies a coupon', 'logs in', 'refunds']);
    expect(await titles({ branch: 'no/such-branch' })).toEqual([]);
    expect(await titles({ days: 7 })).toEqual(['adds an item', 'searches']);
    expect(await titles({ days: 30 })).toEqual(['adds an item', 'applies a coupon', 'logs in', 'refunds', 'searches']);
    expect(await titles({ days: 7, defaultBranch: true })).toEqual([]);
    expect(await titles({ days: 30, defaultBranch: true, attention: true })).toEqual(['applies a coupon', 'logs in', 'refunds']);
    // REST takes the same params; paging still sees every row once.
    expect(await restTitles('&branch=feature%2Fsearch')).toEqual(['adds an item', 'searches']);
    expect(await restTitles('&defaultBranch=true&days=30')).toEqual(['adds an item', 'applies a coupon', 'logs in', 'refunds']);
    const p1 = await c.flaky.board.query({ days: 30, sort: 'title', limit: 2 });
    const p2 = await c.flaky.board.query({ days: 30, sort: 'title', limit: 2, cursor: p1.nextCursor! });
    const p3 = await c.flaky.board.query({ days: 30, sort: 'title', limit: 2, cursor: p2.nextCursor! });
    expect([...p1.items, ...p2.items, ...p3.items].map((t) => t.title)).toEqual(['adds an item', 'applies a coupon', 'logs in', 'refunds', 'searches']);
    expect((await td.request('GET', '/v1/flaky?days=0')).status).toBe(400);
  });
});
