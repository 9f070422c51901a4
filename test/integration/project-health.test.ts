// GET /v1/health against the real daemon: a history where a test becomes flaky (and is
// auto-quarantined), MTTR from health events, reliability and cost from the daily rollup, and the
// owner filter through CODEOWNERS.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chTime } from '../../src/store/time.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const DAY = 86_400_000;
const RATES = { ciMinute: 0.5, developerHour: 60, investigationMinutes: 10 };

function dayText(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function mondayOf(ms: number): number {
  const day = Math.floor(ms / DAY) * DAY;
  return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY;
}

interface Exec {
  filePath: string;
  suite: string;
  title: string;
  status: 'pass' | 'fail' | 'skip' | 'flaky';
  attempt: number;
  retryOfIndex?: number;
  startedAt: number;
  durationMs: number;
}

describe('GET /v1/health', () => {
  let td: TestDaemon;
  const today = Math.floor(Date.now() / DAY) * DAY;
  // Expected figures, accumulated from what is posted.
  const perDay = new Map<string, { executions: number; passed: number; skipped: number }>();
  let rerunMs = 0;
  let flakyOccurrences = 0;
  let payRerunMs = 0;
  let payExecutions = 0;
  let flappyId = '';
  let manualId = '';


  /** One run on main at `at`: `flappy` fails then passes on retry when `flaky`, the rest is steady. */
  function run(at: number, flaky: boolean): Record<string, unknown> {
    const ex: Exec[] = [];
    const add = (e: Omit<Exec, 'startedAt'>): void => {
      ex.push({ ...e, startedAt: at + ex.length });
    };
    add({ filePath: 'src/flaky/flappy.test.ts', suite: 'flappy', title: 'sometimes', status: flaky ? 'fail' : 'pass', attempt: 1, durationMs: 100 });
    if (flaky) add({ filePath: 'src/flaky/flappy.test.ts', suite: 'flappy', title: 'sometimes', status: 'pass', attempt: 2, retryOfIndex: 0, durationMs: 250 });
    add({ filePath: 'src/pay/charge.test.ts', suite: 'pay', title: 'charges', status: 'pass', attempt: 1, durationMs: 40 });
    add({ filePath: 'src/pay/charge.test.ts', suite: 'pay', title: 'refunds', status: 'fail', attempt: 1, durationMs: 30 });
    add({ filePath: 'src/pay/charge.test.ts', suite: 'pay', title: 'refunds', status: 'fail', attempt: 2, retryOfIndex: ex.length - 1, durationMs: 35 });
    add({ filePath: 'src/pay/charge.test.ts', suite: 'pay', title: 'later', status: 'skip', attempt: 1, durationMs: 0 });
    // A reporter's own `flaky` status (only today: too few samples to become a candidate).
    if (flaky) add({ filePath: 'src/misc/report.test.ts', suite: 'misc', title: 'reported flaky', status: 'flaky', attempt: 1, durationMs: 60 });

    const d = perDay.get(dayText(at)) ?? { executions: 0, passed: 0, skipped: 0 };
    for (const e of ex) {
      d.executions++;
      if (e.status === 'pass') d.passed++;
      if (e.status === 'skip') d.skipped++;
      // A pass on a retry flaked, as much as a reporter's own `flaky`.
      if (e.status === 'flaky' || (e.status === 'pass' && e.attempt > 1)) flakyOccurrences++;
      if (e.attempt > 1) rerunMs += e.durationMs;
      if (e.filePath.startsWith('src/pay/')) {
        payExecutions++;
        if (e.attempt > 1) payRerunMs += e.durationMs;
      }
    }
    perDay.set(dayText(at), d);
    return nativeBatch({
      resource: { commitSha: randomBytes(20).toString('hex'), branch: 'main', trigger: 'push' },
      run: { status: 'failed', startedAt: new Date(at).toISOString() },
      executions: ex,
    });
  }

  beforeAll(async () => {
    td = await startTestDaemon({
      env: {
        SERVICE_QUARANTINE_ENABLED: 'true',
        SERVICE_CI_MINUTE_COST: String(RATES.ciMinute),
        SERVICE_DEVELOPER_HOUR_COST: String(RATES.developerHour),
        SERVICE_INVESTIGATION_MINUTES: String(RATES.investigationMinutes),
      },
    });
    // Two days ago and yesterday: steady; today: `flappy` passes only on retry, three times.
    const todayAt = (k: number): number => today + Math.floor((Date.now() - today) / 2) + k * 1000;
    await td.ingest(run(today - 2 * DAY + 9 * 3_600_000, false), run(today - DAY + 9 * 3_600_000, false), run(today - DAY + 10 * 3_600_000, false));
    await td.ingest(run(todayAt(0), true), run(todayAt(1), true), run(todayAt(2), true));
    await td.request('PUT', '/v1/codeowners', { body: { content: '/src/pay/ @acme/pay\n/src/flaky/ @acme/flaky\n' } });

    const flaky = await td.request('GET', '/v1/flaky?includeQuarantined=true');
    flappyId = flaky.json.items.find((i: any) => i.title === 'sometimes')?.testIdentityId;
    expect(flappyId).toBeTruthy();
    const run0 = (await td.request('GET', '/v1/runs?limit=1')).json.items[0];
    const detail = await td.request('GET', `/v1/runs/${run0.id}`);
    manualId = detail.json.executions.find((e: any) => e.title === 'charges').testIdentityId;
  });
  afterAll(async () => td?.close());

  it('rejects days out of range', async () => {
    for (const days of ['0', '366', 'abc', '1.5']) {
      const res = await td.request('GET', `/v1/health?days=${days}`);
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ error: 'invalid_query' });
    }
    expect((await td.request('GET', '/v1/health', { token: null })).status).toBe(401);
  });

  it('reports a test that became flaky and one broken from its first run: introduced, open, the flaky one auto-quarantined', async () => {
    const res = await td.request('GET', '/v1/health');
    expect(res.status).toBe(200);
    const h = res.json;
    expect(h.rangeDays).toBe(90);
    // Open: `sometimes` (flaky) and `refunds` (failing every run on main: broken, not flaky).
    expect(h.mttr).toMatchObject({ openCount: 2, resolvedCount: 0, meanMs: null, medianMs: null });
    const thisWeek = h.weekly.find((w: any) => w.weekStart === dayText(mondayOf(Date.now())));
    expect(thisWeek.introduced).toBeGreaterThanOrEqual(1);
    expect(h.weekly[h.weekly.length - 1].weekStart).toBe(dayText(mondayOf(Date.now())));
    for (const w of h.weekly) expect(new Date(`${w.weekStart}T00:00:00Z`).getUTCDay()).toBe(1);
    expect(h.quarantine.currentBacklog).toBe(1);
    expect(h.quarantine.trend).toHaveLength(90);
    expect(h.quarantine.trend.at(-1)).toEqual({ day: dayText(today), count: 1 });
    expect(h.quarantine.trend.at(-2)).toEqual({ day: dayText(today - DAY), count: 0 });
  });

  it('computes reliability per day and cost per docs/contract.md §10 from the rollup', async () => {
    const h = (await td.request('GET', '/v1/health?days=7')).json;
    expect(h.rangeDays).toBe(7);
    const expected = [...perDay.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      // Fewer than 5 graded executions on a day: a gap (null), not a rate of so few.
      .map(([day, d]) => ({ day, passRate: d.executions - d.skipped < 5 ? null : Math.round((d.passed / (d.executions - d.skipped)) * 10_000) / 10_000, total: d.executions - d.skipped }));
    expect(h.reliabilityTrend[0].passRate).toBeNull();
    expect(h.reliabilityTrend).toEqual(expected);
    expect(h.reliabilityTrend.map((r: any) => r.day)).toEqual([dayText(today - 2 * DAY), dayText(today - DAY), dayText(today)]);

    expect(rerunMs).toBe(3 * 250 + 6 * 35);
    expect(flakyOccurrences).toBe(6); // 3 reported `flaky` + 3 passes on a retry
    const ci = (rerunMs / 60_000) * RATES.ciMinute;
    const people = ((flakyOccurrences * RATES.investigationMinutes) / 60) * RATES.developerHour;
    expect(h.cost).toMatchObject({ rerunMs, flakyOccurrences, rates: RATES });
    expect(h.cost.ciSpend).toBeCloseTo(ci, 4);
    expect(h.cost.peopleSpend).toBeCloseTo(people, 4);
    expect(h.cost.total).toBeCloseTo(ci + people, 4);

    // A one-day window sees only today's runs.
    const one = (await td.request('GET', '/v1/health?days=1')).json;
    expect(one.reliabilityTrend.map((r: any) => r.day)).toEqual([dayText(today)]);
    expect(one.quarantine.trend).toEqual([{ day: dayText(today), count: 1 }]);
    expect(one.cost.rerunMs).toBe(3 * 250 + 3 * 35);
  });

  it('pairs fixed with flaked or broke for MTTR (a score dipping under the threshold fixes nothing) and walks the quarantine backlog back per day', async () => {
    // Earlier episodes of other tests, as the scorer and quarantine processor record them.
    const a = randomUUID();
    const b = randomUUID();
    const c = randomUUID();
    const d = randomUUID();
    const projectId = (await td.daemon.store.query<{ id: string }>(`SELECT id FROM ${td.daemon.store.table('projects')} FINAL LIMIT 1`))[0]!.id;
    const at = (ms: number) => chTime(ms);
    await td.daemon.store.insert(
      'test_health_events',
      [
        { project_id: projectId, test_id: a, kind: 'flaked', at: at(today - 4 * DAY), score: 0.9 },
        { project_id: projectId, test_id: a, kind: 'fixed', at: at(today - 3 * DAY), score: 0 },
        { project_id: projectId, test_id: b, kind: 'broke', at: at(today - 200 * DAY), score: 0.1 },
        { project_id: projectId, test_id: b, kind: 'fixed', at: at(today - 2 * DAY), score: 0 },
        // The older model's "stabilized" (a score under the threshold) is no fix: it ends nothing.
        { project_id: projectId, test_id: d, kind: 'flaked', at: at(today - 6 * DAY), score: 0.9 },
        { project_id: projectId, test_id: d, kind: 'stabilized', at: at(today - 5 * DAY), score: 0.7 },
        { project_id: projectId, test_id: c, kind: 'quarantined', at: at(today - 5 * DAY + 3_600_000), score: 0.9 },
        { project_id: projectId, test_id: c, kind: 'released', at: at(today - 2 * DAY + 3_600_000), score: 0.2 },
      ],
      `health-fixture-${a}`,
    );
    // A person quarantines a test today: no health event, known from the override.
    const q = await td.request('POST', `/v1/tests/${manualId}/quarantine`, { body: { decision: 'quarantined' } });
    expect(q.json).toMatchObject({ quarantined: true, changed: true });

    const h = (await td.request('GET', '/v1/health?days=30')).json;
    const times = [DAY, 198 * DAY];
    expect(h.mttr).toMatchObject({ resolvedCount: 2, openCount: 2, meanMs: (times[0]! + times[1]!) / 2, medianMs: (times[0]! + times[1]!) / 2 });
    // b's episode began before the window: its repair counts, its start does not.
    const introduced = h.weekly.reduce((n: number, w: any) => n + w.introduced, 0);
    const resolved = h.weekly.reduce((n: number, w: any) => n + w.resolved, 0);
    expect(resolved).toBe(2);
    expect(introduced).toBe(4); // flappy today, refunds broke two days ago, a, d
    expect(h.weekly.find((w: any) => w.weekStart === dayText(mondayOf(today - 3 * DAY))).resolved).toBeGreaterThanOrEqual(1);

    expect(h.quarantine.currentBacklog).toBe(2);
    const trend = new Map(h.quarantine.trend.map((t: any) => [t.day, t.count]));
    expect(trend.get(dayText(today - 6 * DAY))).toBe(0);
    expect(trend.get(dayText(today - 5 * DAY))).toBe(1);
    expect(trend.get(dayText(today - 3 * DAY))).toBe(1);
    expect(trend.get(dayText(today - 2 * DAY))).toBe(0);
    expect(trend.get(dayText(today - DAY))).toBe(0);
    expect(trend.get(dayText(today))).toBe(2);

    // Only stabilizations inside a short window count.
    expect((await td.request('GET', '/v1/health?days=3')).json.mttr.resolvedCount).toBe(1);
  });

  it('restricts everything to the tests an owner holds', async () => {
    const pay = (await td.request('GET', `/v1/health?days=7&owner=${encodeURIComponent('@acme/pay')}`)).json;
    // `refunds` fails every run: broken since its first, an open episode that is not flaky.
    expect(pay.mttr).toMatchObject({ openCount: 1, resolvedCount: 0 });
    expect(pay.weekly.reduce((n: number, w: any) => n + w.introduced, 0)).toBe(1);
    expect(pay.cost).toMatchObject({ rerunMs: payRerunMs, flakyOccurrences: 0, peopleSpend: 0 });
    expect(pay.reliabilityTrend.reduce((n: number, r: any) => n + r.total, 0)).toBe(payExecutions - 6 /* skips */);
    expect(pay.quarantine.currentBacklog).toBe(1); // the manual quarantine of `charges`

    // Without the @, any case.
    const flaky = (await td.request('GET', '/v1/health?days=7&owner=ACME/flaky')).json;
    expect(flaky.mttr.openCount).toBe(1);
    expect(flaky.quarantine.currentBacklog).toBe(1);
    expect(flaky.weekly.reduce((n: number, w: any) => n + w.introduced, 0)).toBe(1);
    expect(flaky.cost).toMatchObject({ rerunMs: 3 * 250, flakyOccurrences: 3 });
    expect(flappyId).toBeTruthy();

    const nobody = (await td.request('GET', '/v1/health?days=7&owner=@nobody')).json;
    expect(nobody).toMatchObject({ mttr: { openCount: 0, resolvedCount: 0 }, quarantine: { currentBacklog: 0 }, reliabilityTrend: [], cost: { total: 0, rerunMs: 0 } });
    expect(nobody.quarantine.trend).toHaveLength(7);
  });

  it('answers for an owner of 7,000 tests, whose ids are more SQL than the engine parses by default', async () => {
    // The owner's test ids are written into the read's SQL (src/store/inline-params.ts): ~290 KB here.
    const at = today + Math.floor((Date.now() - today) / 2);
    const part = (p: number): Record<string, unknown> =>
      nativeBatch({
        resource: { commitSha: randomBytes(20).toString('hex'), branch: 'main', trigger: 'push' },
        run: { status: 'passed', startedAt: new Date(at + p).toISOString() },
        executions: Array.from({ length: 3_500 }, (_, i) => ({
          filePath: `src/big/file${i % 40}.test.ts`,
          suite: 'big',
          title: `case ${p * 3_500 + i}`,
          status: 'pass',
          attempt: 1,
          startedAt: at + p,
          durationMs: 1,
        })),
      });
    await td.ingest(part(0), part(1));
    await td.request('PUT', '/v1/codeowners', { body: { content: '/src/pay/ @acme/pay\n/src/flaky/ @acme/flaky\n/src/big/ @acme/big\n' } });
    const big = await td.request('GET', `/v1/health?days=7&owner=${encodeURIComponent('@acme/big')}`);
    expect(big.status).toBe(200);
    expect(big.json.reliabilityTrend.reduce((n: number, r: any) => n + r.total, 0)).toBe(7_000);
    expect(big.json.mttr).toMatchObject({ openCount: 0, resolvedCount: 0 });
  });
});
