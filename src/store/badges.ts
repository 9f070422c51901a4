// What the README badges are drawn from (client/src/contract/badge.ts): the tests flagged flaky or
// quarantined by the scorer, and graded versus passed executions over a recent window.
import { toNumber, type Store } from './client.js';
import { notMergedSql } from './test-merges.js';

export class BadgeFactsRepo {
  constructor(private readonly store: Store) {}

  /** Flaky candidates and automatically quarantined tests; people's decisions are the overrides (TestRepo). */
  async flaggedTestIds(projectId: string): Promise<string[]> {
    const rows = await this.store.query<{ test_id: string }>(
      `SELECT test_id FROM ${this.store.table('test_state')} FINAL
       WHERE project_id = {projectId:UUID} AND (candidate = 1 OR auto_quarantined = 1) AND ${notMergedSql(this.store)}`,
      { projectId },
    );
    return rows.map((r) => r.test_id);
  }

  /** Executions that were graded (not skipped) and that passed, from `startDay` (YYYY-MM-DD, UTC) on, per the daily rollup. */
  async passTotals(projectId: string, startDay: string): Promise<{ graded: number; passed: number }> {
    const rows = await this.store.query<{ graded: number | string; passed: number | string }>(
      `SELECT sum(executions) - sum(skipped) AS graded, sum(passed) AS passed
       FROM ${this.store.table('daily_test_stats')}
       WHERE project_id = {projectId:UUID} AND day >= {startDay:Date}`,
      { projectId, startDay },
    );
    return { graded: toNumber(rows[0]?.graded), passed: toNumber(rows[0]?.passed) };
  }
}
