// Suite alerts (docs/contract.md §10), pure: today's numbers of a suite against its trailing 14 days.
//   suite.regressed: today ≥ 20 executions, some prior day in the window with ≥ 20, fail rate ≥ 0.10
//                    and ≥ baseline + 0.15;
//   suite.slowed:    today ≥ 20 executions, average ≥ 500 ms and ≥ 1.3 × the baseline average.

export interface SuiteDay {
  executions: number;
  failed: number;
  durationMsSum: number;
}

export interface SuiteAlert {
  kind: 'regressed' | 'slowed';
  today: { executions: number; failRate: number; avgMs: number };
  baseline: { failRate: number; avgMs: number; days: number };
}

export const MIN_DAY_EXECUTIONS = 20;

export function suiteAlerts(today: SuiteDay, priorDays: readonly SuiteDay[]): SuiteAlert[] {
  if (today.executions < MIN_DAY_EXECUTIONS) return [];
  const full = priorDays.filter((d) => d.executions >= MIN_DAY_EXECUTIONS);
  if (full.length === 0) return [];
  const base = priorDays.reduce((a, d) => ({ executions: a.executions + d.executions, failed: a.failed + d.failed, durationMsSum: a.durationMsSum + d.durationMsSum }), { executions: 0, failed: 0, durationMsSum: 0 });
  const baseFail = base.executions > 0 ? base.failed / base.executions : 0;
  const baseAvg = base.executions > 0 ? base.durationMsSum / base.executions : 0;
  const failRate = today.failed / today.executions;
  const avgMs = today.durationMsSum / today.executions;
  const summary = { today: { executions: today.executions, failRate, avgMs }, baseline: { failRate: baseFail, avgMs: baseAvg, days: priorDays.length } };
  const out: SuiteAlert[] = [];
  if (failRate >= 0.1 && failRate >= baseFail + 0.15) out.push({ kind: 'regressed', ...summary });
  if (avgMs >= 500 && avgMs >= 1.3 * baseAvg) out.push({ kind: 'slowed', ...summary });
  return out;
}
