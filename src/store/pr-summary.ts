// What GET /v1/runs/summary and /v1/runs/gate read: the runs of one commit, its failing tests
// merged over those runs, and the base branch's recent history of those tests.
import type { RunStatus } from '../../client/src/contract/batch.js';
import { baseStreak, type BaseHistory } from '../../client/src/contract/gate.js';
import type { CommitRun } from '../../client/src/contract/pr-summary.js';
import { toNumber, type Store } from './client.js';
import { keptTestIdSql, mergedIdsWithSql, testsAndMergedInSql } from './test-merges.js';

/** Runs of one commit considered (shards × reruns); more than this is not a real commit. */
const MAX_RUNS = 1000;

/** A test that failed or flaked in at least one execution of the runs, counted over all of them. */
export interface CommitFailingTest {
  testId: string;
  /** File, suite and title of its newest execution. */
  filePath: string;
  suite: string;
  title: string;
  fails: number;
  passes: number;
  flakies: number;
  /** The newest non-empty error of a failed or flaky execution; '' when none. */
  errorMessage: string;
  /** Attempts marked `flakehouse.verify: new` (`flakehouse run --verify-new`), and how many of them failed. */
  newRuns: number;
  newFailed: number;
}

/** A test `flakehouse run --verify-fix` re-ran in the commit's runs (attempts marked `flakehouse.verify: fix`). */
export interface CommitFixVerification {
  testId: string;
  filePath: string;
  suite: string;
  title: string;
  runs: number;
  failed: number;
}

/** One commit of a pull request, from its runs. */
export interface PrCommitRow {
  commitSha: string;
  runs: number;
  firstRunAt: number;
  lastRunAt: number;
}

/** The verification mark of an execution (client/src/contract/verify.ts VERIFY_ATTRIBUTE). */
const VERIFY_KIND = `JSONExtractString(attributes, 'flakehouse.verify')`;

interface RunRow {
  id: string;
  commit_sha: string;
  branch: string;
  base_branch: string;
  merge_base: string;
  pr_number: number | string | null;
  status: RunStatus;
  shard_index: number | string;
  shard_total: number | string;
  started_ms: number | string;
  source: string;
  has_run_span: number | string;
  idempotency_key: string;
  ci_provider: string;
  ci_run_id: string;
  ci_job_name: string;
  ci_job_matrix: string;
}

interface FailingRow {
  kept_id: string;
  file_path: string;
  suite: string;
  title: string;
  fails: number | string;
  passes: number | string;
  flakies: number | string;
  error_message: string;
  new_runs: number | string;
  new_failed: number | string;
}

export class PrSummaryRepo {
  constructor(private readonly store: Store) {}

  /**
   * Runs whose sha matches `sha` either way (a stored sha it is a prefix of, or a stored short sha
   * it starts with; never one under 7 characters), newest first.
   */
  async commitRuns(projectId: string, sha: string): Promise<CommitRun[]> {
    const rows = await this.store.query<RunRow>(
      `SELECT id, commit_sha, branch, base_branch, merge_base, pr_number, status, shard_index, shard_total, toUnixTimestamp64Milli(started_at) AS started_ms, source, has_run_span, idempotency_key, ci_provider, ci_run_id,
              ci_job_name, ci_job_matrix
       FROM ${this.store.table('runs')} FINAL
       WHERE project_id = {projectId:UUID} AND length(commit_sha) >= 7
         AND (startsWith(commit_sha, {sha:String}) OR startsWith({sha:String}, commit_sha))
       ORDER BY started_at DESC, id DESC
       LIMIT {limit:UInt32}`,
      { projectId, sha, limit: MAX_RUNS },
    );
    return rows.map((r) => ({
      id: r.id,
      commitSha: r.commit_sha,
      branch: r.branch,
      baseBranch: r.base_branch,
      mergeBase: r.merge_base,
      prNumber: r.pr_number === null ? null : toNumber(r.pr_number),
      status: r.status,
      shardIndex: toNumber(r.shard_index),
      shardTotal: toNumber(r.shard_total),
      startedAt: toNumber(r.started_ms),
      source: r.source,
      hasRunSpan: toNumber(r.has_run_span) === 1,
      idempotencyKey: r.idempotency_key,
      ciRunKey: r.ci_run_id ? `${r.ci_provider}:${r.ci_run_id}` : '',
      // The CI job and its matrix leg (migration 017; '' from older clients): a Vitest job and a
      // Jest job of one CI run are two jobs of the commit.
      ciJobKey: r.ci_job_name || r.ci_job_matrix ? `${r.ci_job_name}\u0000${r.ci_job_matrix}` : '',
    }));
  }

  /**
   * The commits of pull request `prNumber` (its runs' distinct shas of 7 or more characters), the
   * one run last first, with their runs' count and when the first and last started; at most `limit`.
   */
  async prCommits(projectId: string, prNumber: number, limit: number): Promise<PrCommitRow[]> {
    const rows = await this.store.query<{ commit_sha: string; runs: number | string; first_ms: number | string; last_ms: number | string }>(
      `SELECT commit_sha, count() AS runs, toUnixTimestamp64Milli(min(started_at)) AS first_ms, toUnixTimestamp64Milli(max(started_at)) AS last_ms
       FROM ${this.store.table('runs')} FINAL
       WHERE project_id = {projectId:UUID} AND pr_number = {prNumber:UInt32} AND length(commit_sha) >= 7
       GROUP BY commit_sha
       ORDER BY last_ms DESC, commit_sha
       LIMIT {limit:UInt32}`,
      { projectId, prNumber, limit },
    );
    return rows.map((r) => ({ commitSha: r.commit_sha, runs: toNumber(r.runs), firstRunAt: toNumber(r.first_ms), lastRunAt: toNumber(r.last_ms) }));
  }

  /** Tests that failed or flaked in any of the runs, with their counts over all of them. */
  async failingTests(projectId: string, runIds: readonly string[]): Promise<CommitFailingTest[]> {
    const rows = await this.store.query<FailingRow>(
      `WITH ${mergedIdsWithSql(this.store)}
       SELECT ${keptTestIdSql()} AS kept_id,
              argMax(file_path, started_at) AS file_path,
              argMax(suite, started_at) AS suite,
              argMax(title, started_at) AS title,
              countIf(status = 'fail') AS fails,
              countIf(status = 'pass') AS passes,
              countIf(status = 'flaky') AS flakies,
              argMaxIf(error_message, started_at, status IN ('fail', 'flaky') AND error_message != '') AS error_message,
              countIf(${VERIFY_KIND} = 'new' AND status != 'skip') AS new_runs,
              countIf(${VERIFY_KIND} = 'new' AND status = 'fail') AS new_failed
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND run_id IN {runIds:Array(UUID)}
       GROUP BY kept_id
       HAVING fails > 0 OR flakies > 0`,
      { projectId, runIds },
    );
    return rows.map((r) => ({
      testId: r.kept_id,
      filePath: r.file_path,
      suite: r.suite,
      title: r.title,
      fails: toNumber(r.fails),
      passes: toNumber(r.passes),
      flakies: toNumber(r.flakies),
      errorMessage: r.error_message,
      newRuns: toNumber(r.new_runs),
      newFailed: toNumber(r.new_failed),
    }));
  }

  /** Tests whose fix `flakehouse run --verify-fix` re-ran in the runs: its re-runs, and how many failed. */
  async fixVerifications(projectId: string, runIds: readonly string[]): Promise<CommitFixVerification[]> {
    const rows = await this.store.query<{ kept_id: string; file_path: string; suite: string; title: string; runs: number | string; failed: number | string }>(
      `WITH ${mergedIdsWithSql(this.store)}
       SELECT ${keptTestIdSql()} AS kept_id, argMax(file_path, started_at) AS file_path, argMax(suite, started_at) AS suite, argMax(title, started_at) AS title,
              countIf(status != 'skip') AS runs, countIf(status = 'fail') AS failed
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND run_id IN {runIds:Array(UUID)} AND ${VERIFY_KIND} = 'fix'
       GROUP BY kept_id
       ORDER BY file_path, suite, title, kept_id`,
      { projectId, runIds },
    );
    return rows.map((r) => ({ testId: r.kept_id, filePath: r.file_path, suite: r.suite, title: r.title, runs: toNumber(r.runs), failed: toNumber(r.failed) }));
  }

  /** Distinct tests that ran (not only skipped) in the runs. */
  async testedCount(projectId: string, runIds: readonly string[]): Promise<number> {
    const rows = await this.store.query<{ n: number | string }>(
      `WITH ${mergedIdsWithSql(this.store)}
       SELECT uniqExact(${keptTestIdSql()}) AS n FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND run_id IN {runIds:Array(UUID)} AND status != 'skip'`,
      { projectId, runIds },
    );
    return toNumber(rows[0]?.n);
  }

  /**
   * Per test: its graded runs on `baseBranch` in the `days` before `beforeMs` (the commit's first
   * run), leaving out the commit's own runs (`excludeRunIds`): how many failed or flaked, and
   * whether the last ones all failed every attempt (broken there, since which commit). Tests with
   * no such run are absent.
   */
  async baseHistory(
    projectId: string,
    baseBranch: string,
    testIds: readonly string[],
    excludeRunIds: readonly string[],
    beforeMs: number,
    days: number,
  ): Promise<Map<string, Omit<BaseHistory, 'containsBreak'>>> {
    if (testIds.length === 0) return new Map();
    const rows = await this.store.query<{ kept_id: string; commit_sha: string; at_ms: number | string; failed: number | string; flaky: number | string; green: number | string }>(
      `WITH ${mergedIdsWithSql(this.store)}
       SELECT ${keptTestIdSql()} AS kept_id, any(commit_sha) AS commit_sha, toUnixTimestamp64Milli(min(started_at)) AS at_ms,
              countIf(status = 'fail') AS failed, countIf(status = 'flaky') AS flaky, countIf(status IN ('pass', 'flaky')) AS green
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND ${testsAndMergedInSql(this.store, 'ids')}
         AND started_at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC') AND started_at < fromUnixTimestamp64Milli({before:Int64}, 'UTC')
         AND branch = {baseBranch:String} AND status != 'skip'
         AND run_id NOT IN {exclude:Array(UUID)}
       GROUP BY kept_id, run_id
       ORDER BY kept_id, at_ms`,
      { projectId, ids: testIds, since: beforeMs - days * 86_400_000, before: beforeMs, baseBranch, exclude: excludeRunIds },
    );
    const runs = new Map<string, { commitSha: string; at: number; failed: number; green: number; bad: boolean }[]>();
    for (const r of rows) {
      const list = runs.get(r.kept_id) ?? [];
      const failed = toNumber(r.failed);
      list.push({ commitSha: r.commit_sha, at: toNumber(r.at_ms), failed, green: toNumber(r.green), bad: failed > 0 || toNumber(r.flaky) > 0 });
      runs.set(r.kept_id, list);
    }
    return new Map([...runs].map(([testId, list]) => [testId, { graded: list.length, bad: list.filter((x) => x.bad).length, brokenSince: baseStreak(list) }]));
  }

  /**
   * When the merge base first ran on the base branch (either sha may be abbreviated), or null when
   * it never did there: then whether the commit contains a break of the base branch is unknown.
   */
  async forkedAt(projectId: string, baseBranch: string, mergeBase: string): Promise<number | null> {
    const rows = await this.store.query<{ at_ms: number | string | null }>(
      `SELECT toUnixTimestamp64Milli(min(started_at)) AS at_ms FROM ${this.store.table('runs')}
       WHERE project_id = {projectId:UUID} AND branch = {baseBranch:String} AND length(commit_sha) >= 7
         AND (startsWith(commit_sha, {sha:String}) OR startsWith({sha:String}, commit_sha))
       HAVING count() > 0`,
      { projectId, baseBranch, sha: mergeBase },
    );
    const at = rows[0]?.at_ms;
    return at === undefined || at === null ? null : toNumber(at);
  }
}
