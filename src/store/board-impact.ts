// The board's impact columns (docs/dashboard.md "Board"): per test, over the board's window, from
// test_recent (per-execution rows, 120 days) and runs.
//
// - failuresCaused: runs in which the test's final attempt failed (it made the run fail);
// - prsBlocked: distinct PR numbers among those runs;
// - lost time: the test's retried attempts (attempt > 1), plus, for each run it failed that was
//   re-run as a whole job (the next run of the same commit, branch, trigger, shard and CI job, its
//   name and matrix values: another job of the commit is no re-run; scheduled runs and runs
//   without a commit are never re-runs, as on the health page), that re-run's wall
//   time divided evenly among the tests whose final attempt failed in the failed run.
// One query; bounded to a page's test ids, or over every test of the project when the board sorts
// by impact (then joined onto the board query as `i_*` columns).
import { PLACEHOLDER_COMMIT } from '../../client/src/contract/batch.js';
import type { Store } from './client.js';
import { toNumber } from './numbers.js';

export interface BoardImpact {
  failuresCaused: number;
  prsBlocked: number;
  lostMs: number;
}

/** The bound of boardImpact: the ids it is given. */
export const IMPACT_IDS = '{impactIds:Array(UUID)}';

/**
 * The impact query's SQL: rows (i_test_id, i_failures, i_prs, i_lost_ms). Binds {projectId},
 * {impactSinceMs} and what `bound` binds: the tests to read, as the right side of an IN (IMPACT_IDS,
 * or a subquery); absent, every test of the project.
 */
export function impactSql(store: Store, bound?: string): string {
  const recent = store.table('test_recent');
  const runs = store.table('runs');
  const window = 'project_id = {projectId:UUID} AND started_at >= fromUnixTimestamp64Milli({impactSinceMs:Int64})';
  // Only a (test, run) with a failed or a retried attempt in the window costs anything: any other's
  // final attempt passed and it has no retry, so it adds 0 to every column (a test with only such
  // runs gets no row, which the board's LEFT JOIN reads as 0). Those rows alone are grouped, on the
  // cheap status and attempt columns: they hold all a costly pair needs, since attempts start at 1
  // (receivers default it so) and a pair's final attempt is then costly itself: attempt 1 alone
  // only by failing, any later one by being a retry. Grouping every execution of the window by
  // (test, run) was most of the board's time (issue 40); so was reading all the rows of the pairs
  // found costly again (a test with one failure read its whole window). Bounded, the rows are those
  // of every test in the runs where the page's tests have one, so that each run's count of tests
  // that failed it counts the tests not on the page too.
  const costly = "(status = 'fail' OR attempt > 1)";
  const costlyRuns = bound && `SELECT run_id FROM ${recent} WHERE ${window} AND test_id IN ${bound} AND ${costly}`;
  // The runs whose re-runs are looked for. Bounded: those of the commits of the page's costly runs
  // (found on test_recent's key). Unbounded: every run of the window, which costs less than finding
  // those commits from every costly execution again (4 against 23 ms on the ingest bench's data). A
  // run's re-run starts after it; a day of margin keeps every run whose executions are in the
  // window, unless a run took longer than a day.
  const rerunScope = costlyRuns
    ? `commit_sha IN (SELECT commit_sha FROM ${runs} WHERE project_id = {projectId:UUID} AND id IN (${costlyRuns}))`
    : 'started_at >= fromUnixTimestamp64Milli({impactSinceMs:Int64}) - INTERVAL 1 DAY';
  return `WITH
    t AS (
      SELECT test_id, run_id, failed, retried_ms, countIf(failed) OVER (PARTITION BY run_id) AS failed_tests FROM (
        SELECT test_id, run_id, argMax(status, attempt) = 'fail' AS failed, sumIf(duration_ms, attempt > 1) AS retried_ms
        FROM ${recent}
        WHERE ${window} AND ${costly}${costlyRuns ? ` AND run_id IN (${costlyRuns})` : ''}
        GROUP BY test_id, run_id
      )
    ),
    r AS (
      SELECT id, pr_number,
             if(trigger = 'schedule' OR commit_sha IN ('', {impactPlaceholder:String}), 0, leadInFrame(duration_ms) OVER w) AS rerun_ms
      FROM ${runs} FINAL
      WHERE project_id = {projectId:UUID}
        AND ${rerunScope}
      WINDOW w AS (PARTITION BY commit_sha, branch, trigger, shard_index, shard_total, ci_job_name, ci_job_matrix
                   ORDER BY started_at, id ROWS BETWEEN CURRENT ROW AND 1 FOLLOWING)
    )
    SELECT t.test_id AS i_test_id, countIf(t.failed) AS i_failures,
           uniqExactIf(r.pr_number, t.failed AND r.pr_number IS NOT NULL) AS i_prs,
           sum(t.retried_ms) + sumIf(r.rerun_ms / greatest(t.failed_tests, 1), t.failed) AS i_lost_ms
    FROM t LEFT JOIN r ON r.id = t.run_id${bound ? `\n    WHERE t.test_id IN ${bound}` : ''}
    GROUP BY t.test_id`;
}

export function impactParams(sinceMs: number, ids?: readonly string[]): Record<string, unknown> {
  return { impactSinceMs: sinceMs, impactPlaceholder: PLACEHOLDER_COMMIT, ...(ids ? { impactIds: ids } : {}) };
}

export interface ImpactDbRow {
  i_failures: number | string | null;
  i_prs: number | string | null;
  i_lost_ms: number | string | null;
}

export function toImpact(r: ImpactDbRow): BoardImpact {
  return { failuresCaused: toNumber(r.i_failures ?? 0), prsBlocked: toNumber(r.i_prs ?? 0), lostMs: toNumber(r.i_lost_ms ?? 0) };
}

/** Impact of the given tests (a board page) since `sinceMs`; a test without failures or retries is absent. */
export async function boardImpact(store: Store, projectId: string, testIds: readonly string[], sinceMs: number): Promise<Map<string, BoardImpact>> {
  if (testIds.length === 0) return new Map();
  const rows = await store.query<ImpactDbRow & { i_test_id: string }>(impactSql(store, IMPACT_IDS), { projectId, ...impactParams(sinceMs, testIds) });
  return new Map(rows.map((r) => [r.i_test_id, toImpact(r)]));
}
