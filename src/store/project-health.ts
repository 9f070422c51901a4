// What GET /v1/health reads (docs/contract.md §6, §10): test_health_events (the flaked / broke /
// fixed state transitions, quarantined / released decisions), test_state and quarantine_overrides (the current state) and
// daily_test_stats (the rollup: never pruned, so a window is not limited by execution retention).
//
// Every method takes `ownerIds`: null for the whole project, else only those tests (an owner's).
import { notMergedSql } from './test-merges.js';
import { PLACEHOLDER_COMMIT } from '../../client/src/contract/batch.js';
import { toNumber, type Store } from './client.js';

type Num = number | string;

export class ProjectHealthRepo {
  constructor(private readonly store: Store) {}

  /** Each test identity's file path (to resolve CODEOWNERS against). */
  async testFiles(projectId: string): Promise<{ id: string; filePath: string }[]> {
    const rows = await this.store.query<{ id: string; file_path: string }>(
      `SELECT id, file_path FROM ${this.store.table('test_identities')} FINAL WHERE project_id = {projectId:UUID}`,
      { projectId },
    );
    return rows.map((r) => ({ id: r.id, filePath: r.file_path }));
  }

  /**
   * Every flaked, broke and fixed transition, at any time, of the tests fixed since `startMs`: their
   * repairs' episodes. (A `stabilized` of the older model was a score dipping under the threshold,
   * no proof of a fix: it ends no episode.)
   */
  async repairEvents(projectId: string, startMs: number, ownerIds: readonly string[] | null): Promise<{ testId: string; kind: string; at: number }[]> {
    const only = onlyOwners(ownerIds);
    const rows = await this.store.query<{ test_id: string; kind: string; at_ms: Num }>(
      `SELECT test_id, kind, toUnixTimestamp64Milli(at) AS at_ms
       FROM ${this.store.table('test_health_events')} FINAL
       WHERE project_id = {projectId:UUID} AND kind IN ('flaked', 'broke', 'fixed')${only}
         AND test_id IN (SELECT test_id FROM ${this.store.table('test_health_events')}
                         WHERE project_id = {projectId:UUID} AND kind = 'fixed'
                           AND at >= fromUnixTimestamp64Milli({startMs:Int64}, 'UTC')${only})
       ORDER BY test_id, at`,
      { projectId, ownerIds: ownerIds ?? [], startMs },
    );
    return rows.map((r) => ({ testId: r.test_id, kind: r.kind, at: toNumber(r.at_ms) }));
  }

  /** Tests flaky or broken now: episodes not yet repaired. */
  async openFlakyCount(projectId: string, ownerIds: readonly string[] | null): Promise<number> {
    const rows = await this.store.query<{ n: Num }>(
      `SELECT count() AS n FROM ${this.store.table('test_state')} FINAL
       WHERE project_id = {projectId:UUID} AND (state IN ('flaky', 'broken') OR (state = '' AND candidate = 1)) AND ${notMergedSql(this.store)}${onlyOwners(ownerIds)}`,
      { projectId, ownerIds: ownerIds ?? [] },
    );
    return toNumber(rows[0]?.n);
  }

  /** Flaked or broke (introduced) and fixed (resolved) transitions since `startMs`, per ISO week (its Monday, YYYY-MM-DD). */
  async weeklyTransitions(projectId: string, startMs: number, ownerIds: readonly string[] | null): Promise<Map<string, { introduced: number; resolved: number }>> {
    const rows = await this.store.query<{ week: string; introduced: Num; resolved: Num }>(
      `SELECT toString(toMonday(at)) AS week, countIf(kind IN ('flaked', 'broke')) AS introduced, countIf(kind = 'fixed') AS resolved
       FROM ${this.store.table('test_health_events')} FINAL
       WHERE project_id = {projectId:UUID} AND kind IN ('flaked', 'broke', 'fixed')
         AND at >= fromUnixTimestamp64Milli({startMs:Int64}, 'UTC')${onlyOwners(ownerIds)}
       GROUP BY week`,
      { projectId, ownerIds: ownerIds ?? [], startMs },
    );
    return new Map(rows.map((r) => [r.week, { introduced: toNumber(r.introduced), resolved: toNumber(r.resolved) }]));
  }

  /** Tests the scorer quarantined. */
  async autoQuarantinedIds(projectId: string, ownerIds: readonly string[] | null): Promise<string[]> {
    const rows = await this.store.query<{ test_id: string }>(
      `SELECT test_id FROM ${this.store.table('test_state')} FINAL WHERE project_id = {projectId:UUID} AND auto_quarantined = 1 AND ${notMergedSql(this.store)}${onlyOwners(ownerIds)}`,
      { projectId, ownerIds: ownerIds ?? [] },
    );
    return rows.map((r) => r.test_id);
  }

  /** Tests people decided on (quarantine or release). */
  async overriddenIds(projectId: string, ownerIds: readonly string[] | null): Promise<string[]> {
    const rows = await this.store.query<{ test_id: string }>(
      `SELECT test_id FROM ${this.store.table('quarantine_overrides')} FINAL WHERE project_id = {projectId:UUID} AND ${notMergedSql(this.store)}${onlyOwners(ownerIds)}`,
      { projectId, ownerIds: ownerIds ?? [] },
    );
    return rows.map((r) => r.test_id);
  }

  /** Quarantined and released events since `startMs`, by the scorer or by people. */
  async quarantineEvents(projectId: string, startMs: number, ownerIds: readonly string[] | null): Promise<{ kind: string; at: number }[]> {
    const rows = await this.store.query<{ kind: string; at_ms: Num }>(
      `SELECT kind, toUnixTimestamp64Milli(at) AS at_ms
       FROM ${this.store.table('test_health_events')} FINAL
       WHERE project_id = {projectId:UUID} AND kind IN ('quarantined', 'released') AND at >= fromUnixTimestamp64Milli({startMs:Int64}, 'UTC')${onlyOwners(ownerIds)}`,
      { projectId, ownerIds: ownerIds ?? [], startMs },
    );
    return rows.map((r) => ({ kind: r.kind, at: toNumber(r.at_ms) }));
  }

  /** Per day from `startDay` to `endDay` (YYYY-MM-DD, inclusive), in order; days without executions are absent. */
  async dailyTotals(
    projectId: string,
    startDay: string,
    endDay: string,
    ownerIds: readonly string[] | null,
  ): Promise<{ day: string; executions: number; passed: number; skipped: number; flaky: number; rerunMs: number }[]> {
    const rows = await this.store.query<{ d: string; executions: Num; passed: Num; skipped: Num; flaky: Num; rerun_ms: Num }>(
      `SELECT toString(day) AS d, sum(executions) AS executions, sum(passed) AS passed, sum(skipped) AS skipped,
              sum(flaky) AS flaky, sum(rerun_ms_sum) AS rerun_ms
       FROM ${this.store.table('daily_test_stats')}
       WHERE project_id = {projectId:UUID} AND day >= {startDay:Date} AND day <= {today:Date}${onlyOwners(ownerIds)}
       GROUP BY d ORDER BY d`,
      { projectId, ownerIds: ownerIds ?? [], startDay, today: endDay },
    );
    return rows.map((r) => ({
      day: r.d,
      executions: toNumber(r.executions),
      passed: toNumber(r.passed),
      skipped: toNumber(r.skipped),
      flaky: toNumber(r.flaky),
      rerunMs: toNumber(r.rerun_ms),
    }));
  }

  /**
   * Every run of the commits run since `startMs` (the earlier runs of those commits too, so a
   * re-run's original may be older than the window): what `reRunsOf` groups into re-runs.
   */
  async runsOfRecentCommits(projectId: string, startMs: number): Promise<RunKeyRow[]> {
    const rows = await this.store.query<{
      id: string;
      commit_sha: string;
      branch: string;
      trigger: string;
      shard_index: Num;
      shard_total: Num;
      ci_job_name: string;
      ci_job_matrix: string;
      started_ms: Num;
      duration_ms: Num;
    }>(
      `SELECT id, commit_sha, branch, trigger, shard_index, shard_total, ci_job_name, ci_job_matrix,
              toUnixTimestamp64Milli(started_at) AS started_ms, duration_ms
       FROM ${this.store.table('runs')} FINAL
       WHERE project_id = {projectId:UUID} AND commit_sha NOT IN ('', {placeholder:String}) AND trigger != 'schedule'
         AND commit_sha IN (SELECT commit_sha FROM ${this.store.table('runs')}
                            WHERE project_id = {projectId:UUID} AND started_at >= fromUnixTimestamp64Milli({startMs:Int64}, 'UTC'))`,
      { projectId, startMs, placeholder: PLACEHOLDER_COMMIT },
    );
    return rows.map((r) => ({
      id: r.id,
      // The job (name and matrix) is part of the key: two jobs of one commit are not re-runs of each
      // other. Runs that name no job ('' and '', older clients) share the old key among themselves.
      key: [r.commit_sha, r.branch, r.trigger, toNumber(r.shard_index), toNumber(r.shard_total), r.ci_job_name, r.ci_job_matrix].join('\u0000'),
      job: jobKey(r.ci_job_name, r.ci_job_matrix),
      startedAt: toNumber(r.started_ms),
      durationMs: toNumber(r.duration_ms),
    }));
  }

  /**
   * Per CI job (name and matrix; '' for runs that name none), the runs started since `startMs` and
   * their wall time: every run, scheduled ones and those without a commit too. Most CI time first,
   * at most `limit` jobs.
   */
  async runsByJob(projectId: string, startMs: number, limit: number): Promise<{ job: string; name: string; matrix: string; runs: number; ms: number }[]> {
    const rows = await this.store.query<{ name: string; matrix: string; runs: Num; ms: Num }>(
      `SELECT ci_job_name AS name, ci_job_matrix AS matrix, count() AS runs, sum(duration_ms) AS ms
       FROM ${this.store.table('runs')} FINAL
       WHERE project_id = {projectId:UUID} AND started_at >= fromUnixTimestamp64Milli({startMs:Int64}, 'UTC')
       GROUP BY name, matrix ORDER BY ms DESC, runs DESC, name, matrix LIMIT {limit:UInt32}`,
      { projectId, startMs, limit },
    );
    return rows.map((r) => ({ job: jobKey(r.name, r.matrix), name: r.name, matrix: r.matrix, runs: toNumber(r.runs), ms: toNumber(r.ms) }));
  }

  /**
   * Per run: the time of its retried attempts (attempt > 1) and of its first attempts, of the owner's
   * tests when `ownerIds` is given. From executions, so only within their retention.
   */
  async attemptTimeByRun(projectId: string, runIds: readonly string[], ownerIds: readonly string[] | null): Promise<Map<string, { retriedMs: number; firstMs: number }>> {
    if (runIds.length === 0) return new Map();
    const rows = await this.store.query<{ run_id: string; retried: Num; first: Num }>(
      `SELECT run_id, sumIf(duration_ms, attempt > 1) AS retried, sumIf(duration_ms, attempt <= 1) AS first
       FROM ${this.store.table('executions')}
       WHERE project_id = {projectId:UUID} AND run_id IN {runIds:Array(UUID)}${onlyOwners(ownerIds)}
       GROUP BY run_id`,
      { projectId, runIds, ownerIds: ownerIds ?? [] },
    );
    return new Map(rows.map((r) => [r.run_id, { retriedMs: toNumber(r.retried), firstMs: toNumber(r.first) }]));
  }
}

/** A run as re-run detection sees it: `key` is what makes two runs the same CI job on the same code. */
export interface RunKeyRow {
  id: string;
  key: string;
  /** The CI job alone (jobKey): what the health page's per-job breakdown groups by. */
  job?: string;
  startedAt: number;
  durationMs: number;
}

/** The CI job's name and stored matrix as one key (the run's `job`). */
export function jobKey(name: string, matrix: string): string {
  return `${name}\u0000${matrix}`;
}

/**
 * Whole-job re-runs (docs/dashboard.md "Health"): runs of the same commit, branch, trigger, shard
 * (index and total) and CI job (name and matrix values) are one CI job run again; the earliest is the original, every later one a
 * re-run. Scheduled runs and runs without a commit are never re-runs (filtered by the query). Only
 * re-runs started at or after `startMs` are returned, oldest first.
 */
export function reRunsOf(runs: readonly RunKeyRow[], startMs: number): RunKeyRow[] {
  const byKey = new Map<string, RunKeyRow[]>();
  for (const r of runs) {
    const list = byKey.get(r.key) ?? [];
    list.push(r);
    byKey.set(r.key, list);
  }
  const out: RunKeyRow[] = [];
  for (const list of byKey.values()) {
    list.sort((a, b) => a.startedAt - b.startedAt || a.id.localeCompare(b.id));
    for (const r of list.slice(1)) if (r.startedAt >= startMs) out.push(r);
  }
  return out.sort((a, b) => a.startedAt - b.startedAt || a.id.localeCompare(b.id));
}

/** The owner filter of a query, bound to `{ownerIds}`; nothing for the whole project. */
function onlyOwners(ownerIds: readonly string[] | null): string {
  return ownerIds === null ? '' : ' AND test_id IN {ownerIds:Array(UUID)}';
}
