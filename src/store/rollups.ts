// The daily rollups (materialized views filled at insert time: daily_test_stats, suite_daily,
// flaky_trends), as the rollups processor reads them.
import type { SuiteDay } from '../domain/suite-alerts.js';
import { toNumber, type Store } from './client.js';

const DAY = 86_400_000;

/** A suite's totals for one day and for each of the days before it that have rows. */
export interface SuiteHistory {
  today: SuiteDay;
  prior: SuiteDay[];
}

export class RollupRepo {
  constructor(private readonly store: Store) {}

  /** Every suite of the project with rows in the 15 days up to `today` (YYYY-MM-DD, UTC). */
  async suiteHistory(projectId: string, today: string): Promise<Map<string, SuiteHistory>> {
    const rows = await this.store.query<{ suite: string; day_text: string; executions: number | string; failed: number | string; duration: number | string }>(
      `SELECT suite, toString(day) AS day_text, sum(executions) AS executions, sum(failed) AS failed, sum(duration_ms_sum) AS duration
       FROM ${this.store.table('suite_daily')}
       WHERE project_id = {projectId:UUID}
         AND day BETWEEN toDate({today:String}) - 14 AND toDate({today:String})
       GROUP BY suite, day_text`,
      { projectId, today },
    );
    const out = new Map<string, SuiteHistory>();
    const start = Date.parse(`${today}T00:00:00Z`) - 14 * DAY;
    for (const r of rows) {
      const entry = out.get(r.suite) ?? { today: { executions: 0, failed: 0, durationMsSum: 0 }, prior: [] };
      const d = { executions: toNumber(r.executions), failed: toNumber(r.failed), durationMsSum: toNumber(r.duration) };
      if (r.day_text === today) entry.today = d;
      else if (Date.parse(`${r.day_text}T00:00:00Z`) >= start) entry.prior.push(d);
      out.set(r.suite, entry);
    }
    return out;
  }
}
