// Suite health from the daily rollup (suite_daily, kept up by a materialized view at insert time
// and never pruned): per suite and UTC day, executions that ran, failed, flaked, and time spent.
import { toNumber, type Store } from './client.js';

export interface SuiteDay {
  day: string;
  suite: string;
  executions: number;
  failed: number;
  flaky: number;
  durationMs: number;
}

export interface SuiteFilter {
  /** First and last UTC day (YYYY-MM-DD), both included. */
  fromDay: string;
  toDay: string;
  /** Exactly this suite. */
  suite?: string;
}

export class SuiteHealthRepo {
  constructor(private readonly store: Store) {}

  /** One row per (suite, day) with executions, oldest day first. */
  async days(projectId: string, f: SuiteFilter): Promise<SuiteDay[]> {
    // Summed again here: a SummingMergeTree holds several rows per key until its parts merge.
    const rows = await this.store.query<{ day: string; suite: string; runs: number | string; fails: number | string; flakes: number | string; duration: number | string }>(
      `SELECT toString(d) AS day, suite, sum(executions) AS runs, sum(failed) AS fails, sum(flaky) AS flakes, sum(duration_ms_sum) AS duration
       FROM (SELECT day AS d, suite, executions, failed, flaky, duration_ms_sum FROM ${this.store.table('suite_daily')}
             WHERE project_id = {projectId:UUID} AND day >= {fromDay:Date} AND day <= {toDay:Date}
               ${f.suite !== undefined ? 'AND suite = {suite:String}' : ''})
       GROUP BY d, suite
       HAVING runs > 0
       ORDER BY d, suite`,
      { projectId, fromDay: f.fromDay, toDay: f.toDay, suite: f.suite ?? '' },
    );
    return rows.map((r) => ({
      day: r.day,
      suite: r.suite,
      executions: toNumber(r.runs),
      failed: toNumber(r.fails),
      flaky: toNumber(r.flakes),
      durationMs: toNumber(r.duration),
    }));
  }
}
