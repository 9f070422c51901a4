// The health page's suites (the `health.suites` procedure): per suite, executions, failures and
// flakes over the window (or one day), worst first, with the days they add up from.
import type { SuiteHealthRepo } from '../store/suite-health.js';

const DAY_MS = 86_400_000;
const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const ratio = (n: number, of: number): number => (of > 0 ? Math.round((n / of) * 10_000) / 10_000 : 0);

export async function suiteHealth(d: { suiteHealth: Pick<SuiteHealthRepo, 'days'> }, projectId: string, q: { days: number; day?: string; suite?: string }, now: number) {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  const fromDay = q.day ?? dayOf(today - (q.days - 1) * DAY_MS);
  const toDay = q.day ?? dayOf(today);
  const days = await d.suiteHealth.days(projectId, { fromDay, toDay, suite: q.suite });
  const totals = new Map<string, { executions: number; failed: number; flaky: number; durationMs: number }>();
  for (const r of days) {
    const t = totals.get(r.suite) ?? { executions: 0, failed: 0, flaky: 0, durationMs: 0 };
    t.executions += r.executions;
    t.failed += r.failed;
    t.flaky += r.flaky;
    t.durationMs += r.durationMs;
    totals.set(r.suite, t);
  }
  const suites = [...totals]
    .map(([suite, t]) => ({ suite, ...t, failRate: ratio(t.failed, t.executions), flakyRate: ratio(t.flaky, t.executions) }))
    .sort((a, b) => b.flakyRate + b.failRate - (a.flakyRate + a.failRate) || a.suite.localeCompare(b.suite));
  return {
    fromDay,
    toDay,
    suites,
    days: days.map((r) => ({ ...r, failRate: ratio(r.failed, r.executions), flakyRate: ratio(r.flaky, r.executions) })),
  };
}
