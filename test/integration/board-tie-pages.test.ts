// Issue 40: the board reads a page's ids first and its shown columns after, with the impact of
// only the tests that can cost anything (store/board.ts, store/board-impact.ts). The order must stay
// the one the default sort defines: round(score, 2), then CI time lost, failures caused, the exact
// score, the id. Here twelve tests tie on score (with three stable ones) and differ in impact, two
// pairs tie on impact too, their ids rank them the other way round, and pages cut through the group.
import { createTRPCClient, httpLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../src/api/trpc.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const HOUR = 3_600_000;
const T0 = Date.now() - 20 * HOUR;
const TIED = Array.from({ length: 12 }, (_, i) => ({ filePath: 'src/tied.test.ts', suite: 'tied', title: `flakes alike ${String(i).padStart(2, '0')}` }));
/** Fail most runs without a retry: other scores beside the group's. */
const WORSE = [0, 1].map((i) => ({ filePath: 'src/worse.test.ts', suite: 'worse', title: `flakes more ${i}` }));
const STABLE = [0, 1, 2].map((i) => ({ filePath: 'src/stable.test.ts', suite: 'stable', title: `stays green ${i}` }));
const RUNS = 6;

/** Run r: the tied tests fail their first attempt and pass the retry on odd runs (retry `retryMs(title)` long). */
function run(r: number, retryMs: (title: string) => number): Record<string, unknown> {
  const at = T0 + r * HOUR;
  const executions: Record<string, unknown>[] = STABLE.map((t, i) => ({ ...t, status: 'pass', startedAt: at + i, durationMs: 10 }));
  for (const t of WORSE) {
    const fails = r % 3 !== 0;
    executions.push({ ...t, status: fails ? 'fail' : 'pass', startedAt: at + 5, durationMs: 50, ...(fails ? { error: { message: 'boom' } } : {}) });
  }
  for (const t of TIED) {
    if (r % 2 === 1) {
      executions.push({ ...t, status: 'fail', startedAt: at + 10, durationMs: 100, error: { message: 'timeout' } });
      executions.push({ ...t, status: 'pass', attempt: 2, retryOfIndex: executions.length - 1, startedAt: at + 20, durationMs: retryMs(t.title) });
    } else executions.push({ ...t, status: 'pass', startedAt: at + 10, durationMs: 100 });
  }
  return {
    contractVersion: '0.1.0',
    idempotencyKey: `issue40-tie-pages-${r}`,
    // A commit per run: no run is another's whole-job re-run, so the time lost is the retries'.
    resource: { ciProvider: 'github_actions', commitSha: `${'d'.repeat(33)}${String(r).padStart(7, '0')}`, branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: at, finishedAt: at + 60_000 },
    executions,
  };
}

/** ClickHouse's order of UUIDs (the board's last tie-break): by their second half, then their first. */
function byUuid(a: string, b: string): number {
  const key = (u: string): string => u.slice(19) + u.slice(0, 18);
  return key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
}

interface Item {
  testIdentityId: string;
  title: string;
  score: number;
  impact?: { minutesLost: number; failuresCaused: number };
}

let td: TestDaemon;
let trpc: ReturnType<typeof createTRPCClient<AppRouter>>;

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '0' } });
  trpc = createTRPCClient<AppRouter>({ links: [httpLink({ url: `${td.url}/trpc`, headers: () => ({ authorization: `Bearer ${td.token}` }) })] });
}, 60_000);

afterAll(async () => {
  await td?.close();
});

/** Every page of GET /v1/flaky at this size, followed by its cursor. */
async function pages(query: string, limit: number): Promise<Item[][]> {
  const out: Item[][] = [];
  let cursor: string | undefined;
  do {
    const res = await td.request('GET', `/v1/flaky?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status, res.text).toBe(200);
    out.push(res.json.items as Item[]);
    cursor = res.json.nextCursor as string | undefined;
  } while (cursor !== undefined && out.length < 20);
  return out;
}

describe('the board: a score tie across pages ranks by impact, then id, on every page', () => {
  it('pages of five through fifteen tests tied on score keep the impact order, the same as one page', async () => {
    // Runs 1..5 alike (1 s retries): the tied tests' ids are known once they exist.
    await td.ingest(...Array.from({ length: RUNS - 1 }, (_, i) => run(i + 1, () => 1000)));
    const first = (await td.request('GET', '/v1/flaky?limit=50')).json.items as Item[];
    const ids = new Map([...TIED, ...STABLE].map((t) => [t.title, first.find((i) => i.title === t.title)!.testIdentityId]));
    // Run 7's retries, longest for the last id: the impact order is the reverse of the id order,
    // except two pairs of equal retries, which their ids order.
    const byId = [...TIED].sort((a, b) => byUuid(ids.get(a.title)!, ids.get(b.title)!));
    const retry = new Map(byId.map((t, n) => [t.title, [3, 4].includes(n) ? 4_000 : [8, 9].includes(n) ? 9_000 : (n + 1) * 1_000]));
    await td.ingest(run(RUNS + 1, (title) => retry.get(title)!));
    // Runs 1, 3 and 5 retried for 1 s each, run 7 for its own time; the stable tests lost nothing.
    const lost = (title: string) => (retry.has(title) ? 3 * 1_000 + retry.get(title)! : 0);

    const whole = (await td.request('GET', '/v1/flaky?limit=50')).json.items as Item[];
    expect(whole.map((i) => i.title).sort()).toEqual([...TIED, ...WORSE, ...STABLE].map((t) => t.title).sort());
    // The group: every test shown with the tied tests' score (the twelve fail together, so they score
    // alike, as low as the stable ones); the tests that fail alone score apart, above it.
    const score = whole.find((i) => i.title === TIED[0]!.title)!.score;
    const group = whole.filter((i) => i.score === score);
    expect(group.map((i) => i.title).sort(), 'the tied tests and nothing that fails alone').toEqual(
      [...TIED, ...STABLE].filter((t) => group.some((i) => i.title === t.title)).map((t) => t.title).sort(),
    );
    expect(group.filter((i) => i.title.startsWith('flakes alike'))).toHaveLength(TIED.length);
    const expected = group
      .map((i) => i.title)
      .sort((a, b) => lost(b) - lost(a) || byUuid(ids.get(a)!, ids.get(b)!));
    // The id order alone would say otherwise: the tie-break is what ranks them.
    expect(expected).not.toEqual([...expected].sort((a, b) => byUuid(ids.get(a)!, ids.get(b)!)));
    expect(group.map((i) => i.title)).toEqual(expected);
    // Contiguous: nothing else between them.
    const at = whole.findIndex((i) => i.title === expected[0]);
    expect(whole.slice(at, at + expected.length).map((i) => i.title)).toEqual(expected);

    // Pages of five cut the group at least twice; every page size and start cuts it elsewhere, and
    // each page is the same slice of the whole.
    for (const limit of [5, 1, 2, 3, 7]) expect((await pages('', limit)).flat().map((i) => i.title), `limit ${limit}`).toEqual(whole.map((i) => i.title));
    for (const offset of [3, 4, 6, 9, 13]) {
      const page = (await td.request('GET', `/v1/flaky?limit=3&offset=${offset}`)).json.items as Item[];
      expect(page.map((i) => i.title), `offset ${offset}`).toEqual(whole.slice(offset, offset + 3).map((i) => i.title));
    }

    // The dashboard's procedure: the same order, with the impact it was ranked by.
    const dash = (await trpc.flaky.board.query({ limit: 50 })).items as Item[];
    expect(dash.map((i) => i.title)).toEqual(whole.map((i) => i.title));
    const dashGroup = dash.filter((i) => expected.includes(i.title));
    expect(dashGroup.map((i) => i.impact!.minutesLost)).toEqual(expected.map((t) => Math.round((lost(t) / 60_000) * 100) / 100));
    const dashPage = (await trpc.flaky.board.query({ limit: 4, offset: at + 2 })).items as Item[];
    expect(dashPage.map((i) => i.title)).toEqual(dash.slice(at + 2, at + 6).map((i) => i.title));
  }, 120_000);
});
