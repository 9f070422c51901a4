// Trends of a project and of one test: flaky tests per UTC day (from the flaky_trends rollup, an
// AggregatingMergeTree of uniq states filled at insert time), the execution where a test first
// flaked, the run a commit came from (for a link to its repository), and a test's median duration
// over a recent window and its trailing baseline (from test_recent: no rollup holds per-test
// quantile states, and test_recent's sort key (project, test, started_at) bounds the read).
import { toNumber, type Store } from './client.js';

export interface FlakyDay {
  day: string;
  /** Distinct tests with a flaky execution that day; null on a day without executions (a gap, not a zero). */
  flakyTests: number | null;
}

export interface FirstFlake {
  executionId: string;
  runId: string;
  commitSha: string;
  branch: string;
  at: number;
}

export interface RunSource {
  repository: string;
  ciProvider: string;
  ciJobUrl: string;
}

const DAY_MS = 86_400_000;
const FLAKY = "(status = 'flaky' OR (status = 'pass' AND attempt > 1))";

export class TestTrendsRepo {
  constructor(private readonly store: Store) {}

  /** Every UTC day from `fromDay` to `toDay` (YYYY-MM-DD, both included), oldest first. */
  async flakyTestsPerDay(projectId: string, fromDay: string, toDay: string): Promise<FlakyDay[]> {
    const rows = await this.store.query<{ day: string; executions: number | string; flaky_tests: number | string }>(
      `SELECT toString(d) AS day, sum(executions) AS executions, uniqMerge(flaky_tests) AS flaky_tests
       FROM (SELECT day AS d, executions, flaky_tests FROM ${this.store.table('flaky_trends')}
             WHERE project_id = {projectId:UUID} AND day >= {fromDay:Date} AND day <= {toDay:Date})
       GROUP BY d ORDER BY d`,
      { projectId, fromDay, toDay },
    );
    const byDay = new Map(rows.map((r) => [r.day, r]));
    const out: FlakyDay[] = [];
    for (let t = Date.parse(`${fromDay}T00:00:00Z`); t <= Date.parse(`${toDay}T00:00:00Z`); t += DAY_MS) {
      const day = new Date(t).toISOString().slice(0, 10);
      const r = byDay.get(day);
      out.push({ day, flakyTests: r && toNumber(r.executions) > 0 ? toNumber(r.flaky_tests) : null });
    }
    return out;
  }

  /** The test's earliest flaky execution (a flaky status, or a pass on a retry), or null. */
  async firstFlake(projectId: string, testId: string): Promise<FirstFlake | null> {
    const rows = await this.store.query<{ id: string; run_id: string; commit_sha: string; branch: string; started_ms: number | string }>(
      `SELECT id, run_id, commit_sha, branch, toUnixTimestamp64Milli(started_at) AS started_ms
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID} AND ${FLAKY}
       ORDER BY started_at, attempt, id LIMIT 1`,
      { projectId, testId },
    );
    const r = rows[0];
    return r ? { executionId: r.id, runId: r.run_id, commitSha: r.commit_sha, branch: r.branch, at: toNumber(r.started_ms) } : null;
  }

  /**
   * The test's first execution at a commit given by its sha or a prefix of it (a state keeps the
   * first 12 digits): the full sha and the run, or null.
   */
  async firstAtCommit(projectId: string, testId: string, shaPrefix: string): Promise<{ commitSha: string; runId: string } | null> {
    if (shaPrefix === '') return null;
    const rows = await this.store.query<{ commit_sha: string; run_id: string }>(
      `SELECT commit_sha, run_id FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID} AND startsWith(commit_sha, {prefix:String})
       ORDER BY started_at LIMIT 1`,
      { projectId, testId, prefix: shaPrefix.toLowerCase() },
    );
    const r = rows[0];
    return r ? { commitSha: r.commit_sha, runId: r.run_id } : null;
  }

  /** Where a run came from: repository, CI provider and job URL. */
  async runSource(projectId: string, runId: string): Promise<RunSource | null> {
    const rows = await this.store.query<{ repository: string; ci_provider: string; ci_job_url: string }>(
      `SELECT repository, ci_provider, ci_job_url FROM ${this.store.table('runs')} FINAL
       WHERE project_id = {projectId:UUID} AND id = {runId:UUID} LIMIT 1`,
      { projectId, runId },
    );
    const r = rows[0];
    return r ? { repository: r.repository, ciProvider: r.ci_provider, ciJobUrl: r.ci_job_url } : null;
  }

  /** durationWindows for several tests in one read (the board's page of rows); tests without rows are left out. */
  async durationWindowsMany(projectId: string, testIds: readonly string[], w: { baselineFrom: number; recentFrom: number; now: number }) {
    if (testIds.length === 0) return new Map<string, Awaited<ReturnType<TestTrendsRepo['durationWindows']>>>();
    const rows = await this.store.query<{ test_id: string; recent_n: number | string; recent_p50: number | string; base_n: number | string; base_p50: number | string }>(
      `SELECT test_id, countIf(started_at >= fromUnixTimestamp64Milli({recentFrom:Int64}, 'UTC')) AS recent_n,
              quantileExactIf(0.5)(duration_ms, started_at >= fromUnixTimestamp64Milli({recentFrom:Int64}, 'UTC')) AS recent_p50,
              countIf(started_at < fromUnixTimestamp64Milli({recentFrom:Int64}, 'UTC')) AS base_n,
              quantileExactIf(0.5)(duration_ms, started_at < fromUnixTimestamp64Milli({recentFrom:Int64}, 'UTC')) AS base_p50
       FROM ${this.store.table('test_recent')}
       WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)}
         AND started_at >= fromUnixTimestamp64Milli({baselineFrom:Int64}, 'UTC') AND started_at <= fromUnixTimestamp64Milli({now:Int64}, 'UTC')
         AND status IN ('pass', 'flaky')
       GROUP BY test_id`,
      { projectId, ids: testIds, baselineFrom: w.baselineFrom, recentFrom: w.recentFrom, now: w.now },
    );
    return new Map(
      rows.map((r) => {
        const recentN = toNumber(r.recent_n);
        const baseN = toNumber(r.base_n);
        return [
          r.test_id,
          { recent: { samples: recentN, p50Ms: recentN > 0 ? toNumber(r.recent_p50) : null }, baseline: { samples: baseN, p50Ms: baseN > 0 ? toNumber(r.base_p50) : null } },
        ] as const;
      }),
    );
  }

  /**
   * The test's median duration of passing (or flaky) executions in [recentFrom, now] and in the
   * baseline [baselineFrom, recentFrom), with the number of executions in each. Failures are left
   * out: a test failing on a timeout is broken, not slower.
   */
  async durationWindows(projectId: string, testId: string, w: { baselineFrom: number; recentFrom: number; now: number }) {
    const rows = await this.store.query<{ recent_n: number | string; recent_p50: number | string | null; base_n: number | string; base_p50: number | string | null }>(
      `SELECT countIf(started_at >= fromUnixTimestamp64Milli({recentFrom:Int64}, 'UTC')) AS recent_n,
              quantileExactIf(0.5)(duration_ms, started_at >= fromUnixTimestamp64Milli({recentFrom:Int64}, 'UTC')) AS recent_p50,
              countIf(started_at < fromUnixTimestamp64Milli({recentFrom:Int64}, 'UTC')) AS base_n,
              quantileExactIf(0.5)(duration_ms, started_at < fromUnixTimestamp64Milli({recentFrom:Int64}, 'UTC')) AS base_p50
       FROM ${this.store.table('test_recent')}
       WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID}
         AND started_at >= fromUnixTimestamp64Milli({baselineFrom:Int64}, 'UTC') AND started_at <= fromUnixTimestamp64Milli({now:Int64}, 'UTC')
         AND status IN ('pass', 'flaky')`,
      { projectId, testId, baselineFrom: w.baselineFrom, recentFrom: w.recentFrom, now: w.now },
    );
    const r = rows[0];
    const recentN = toNumber(r?.recent_n ?? 0);
    const baseN = toNumber(r?.base_n ?? 0);
    return {
      recent: { samples: recentN, p50Ms: recentN > 0 ? toNumber(r!.recent_p50) : null },
      baseline: { samples: baseN, p50Ms: baseN > 0 ? toNumber(r!.base_p50) : null },
    };
  }
}
