// Test state, quarantine overrides, identities and history: what the scorer reads and writes and
// what the test page, the flaky board and the quarantine route show.
import type { OverrideDecision, OverrideRow } from '../domain/quarantine.js';
import type { ReasonCode, ScoreState } from '../domain/score.js';
import type { TestStatus } from '../../client/src/contract/batch.js';
import { toIso } from '../../client/src/contract/time.js';
import type { Store } from './client.js';
import { toNumber } from './numbers.js';
import { chTime } from './time.js';
import { executionsWithReport } from './rca.js';
import { parseStoredArtifacts } from '../artifacts/links.js';
import type { TsvColumns } from './tsv.js';
import { notMergedSql, testAndMergedSql } from './test-merges.js';
import { BoardRepo, type BoardQuery, type BoardRow } from './board.js';
import { boardImpact, type BoardImpact } from './board-impact.js';
import { BOARD_COLUMNS, toAuto, toBoardEntry, toStateFields, type AutoDbRow, type BoardDbRow, type BoardEntry, type StateColumn } from './board-columns.js';

export type { BoardEntry } from './board-columns.js';

export interface TestStateRecord extends BoardEntry {
  projectId: string;
  broken: boolean;
  samples: number;
  reasons: { code: ReasonCode; message: string }[];
  model: ScoreState;
  lastRunId: string;
  lastStatus: TestStatus;
  lastSeenAt: number;
  appliedLease: string;
  version: number;
}

export const TEST_STATE_COLUMNS: TsvColumns = {
  names: [
    'project_id', 'test_id', 'file_path', 'suite', 'title', 'score', 'candidate', 'broken', 'samples', 'flip_rate',
    'pass_on_rerun_rate', 'trend', 'last_flaked_at', 'reasons', 'model', 'auto_quarantined', 'quarantine_reason',
    'quarantined_at', 'clean_runs', 'released_at', 'last_run_id', 'last_status', 'last_seen_at', 'scored_at', 'applied_lease', 'version',
    'state', 'state_commit', 'state_branch', 'state_at', 'flake_rate',
  ],
  plain: new Set(['project_id', 'test_id', 'score', 'candidate', 'broken', 'samples', 'flip_rate', 'pass_on_rerun_rate', 'trend', 'last_flaked_at', 'auto_quarantined', 'quarantined_at', 'clean_runs', 'released_at', 'last_run_id', 'last_status', 'last_seen_at', 'scored_at', 'version', 'state', 'state_at', 'flake_rate']),
};

export function testStateRow(r: TestStateRecord): Record<string, unknown> {
  return {
    project_id: r.projectId,
    test_id: r.testId,
    file_path: r.filePath,
    suite: r.suite,
    title: r.title,
    score: r.score,
    candidate: r.candidate ? 1 : 0,
    broken: r.broken ? 1 : 0,
    samples: r.samples,
    flip_rate: r.flipRate,
    pass_on_rerun_rate: r.passOnRerunRate,
    trend: r.trend,
    last_flaked_at: r.lastFlakedAt === null ? null : chTime(r.lastFlakedAt),
    reasons: JSON.stringify(r.reasons),
    model: JSON.stringify(r.model),
    auto_quarantined: r.auto.autoQuarantined ? 1 : 0,
    quarantine_reason: r.auto.reason,
    quarantined_at: r.auto.quarantinedAt === null ? null : chTime(r.auto.quarantinedAt),
    clean_runs: r.auto.cleanRuns,
    released_at: r.auto.releasedAt === null ? null : chTime(r.auto.releasedAt),
    last_run_id: r.lastRunId,
    last_status: r.lastStatus,
    last_seen_at: chTime(r.lastSeenAt),
    scored_at: chTime(r.auto.scoredAt ?? r.lastSeenAt),
    applied_lease: r.appliedLease,
    version: r.version,
    state: r.state,
    state_commit: r.stateSince?.commitSha ?? '',
    state_branch: r.stateSince?.branch ?? '',
    state_at: r.stateSince === null ? null : chTime(r.stateSince.at),
    flake_rate: r.flakeRate,
  };
}

interface StateDbRow extends BoardDbRow {
  project_id: string;
  broken: number;
  samples: number | string;
  reasons: string;
  model: string;
  last_run_id: string;
  last_status: TestStatus;
  last_seen_ms: number | string;
  applied_lease: string;
  version: number | string;
}

const STATE_SELECT = `project_id, test_id, file_path, suite, title, score, candidate, broken, samples, flip_rate, pass_on_rerun_rate,
  trend, toUnixTimestamp64Milli(last_flaked_at) AS last_flaked_ms, reasons, model, auto_quarantined, quarantine_reason,
  toUnixTimestamp64Milli(quarantined_at) AS quarantined_ms, clean_runs, toUnixTimestamp64Milli(released_at) AS released_ms, last_run_id, last_status,
  toUnixTimestamp64Milli(last_seen_at) AS last_seen_ms, toUnixTimestamp64Milli(scored_at) AS scored_ms, applied_lease, version,
  state, state_commit, state_branch, toUnixTimestamp64Milli(state_at) AS state_ms, flake_rate`;

/** What the test page shows of a state (no model: it is most of the row). */
export type PageState = Pick<TestStateRecord, 'score' | 'reasons' | 'auto' | 'state' | 'stateSince' | 'flakeRate'>;

const PAGE_SELECT = `score, candidate, reasons, auto_quarantined, quarantine_reason, toUnixTimestamp64Milli(quarantined_at) AS quarantined_ms, clean_runs,
  toUnixTimestamp64Milli(released_at) AS released_ms, toUnixTimestamp64Milli(scored_at) AS scored_ms,
  state, state_commit, state_branch, toUnixTimestamp64Milli(state_at) AS state_ms, flake_rate`;

function toState(r: StateDbRow): TestStateRecord {
  return {
    ...toBoardEntry(r),
    projectId: r.project_id,
    broken: toNumber(r.broken) === 1,
    samples: toNumber(r.samples),
    reasons: JSON.parse(r.reasons || '[]') as TestStateRecord['reasons'],
    model: JSON.parse(r.model) as ScoreState,
    lastRunId: r.last_run_id,
    lastStatus: r.last_status,
    lastSeenAt: toNumber(r.last_seen_ms),
    appliedLease: r.applied_lease,
    version: toNumber(r.version),
  };
}

/** A test's last graded runs and those with a failed attempt: its raw (unsmoothed) flake rate is failed / runs. */
export interface RecentRuns {
  runs: number;
  failed: number;
}

/** Counts the model's run letters (src/domain/score/run-outcome.ts RunLetter): P passed, R failed then passed, F failed, O outage (not graded). */
export function recentRunsOf(ring: string): RecentRuns {
  let runs = 0;
  let failed = 0;
  for (const c of ring) {
    if (c === 'O') continue;
    runs++;
    if (c === 'R' || c === 'F') failed++;
  }
  return { runs, failed };
}

export interface FlakyFilter {
  limit: number;
  minScore: number;
  includeQuarantined: boolean;
}

/** How long a project's overrides are reused. The API is their only writer and drops its own
 * copy on write; another process (the worker) may see a decision up to this much later. */
const OVERRIDES_TTL_MS = 2_000;

export class TestRepo {
  private readonly overrideCache = new Map<string, { at: number; rows: Map<string, OverrideRow> }>();

  constructor(private readonly store: Store) {}

  async states(projectId: string, testIds: readonly string[]): Promise<Map<string, TestStateRecord>> {
    if (testIds.length === 0) return new Map();
    const rows = await this.store.query<StateDbRow>(
      `SELECT ${STATE_SELECT} FROM ${this.store.table('test_state')} FINAL
       WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)}`,
      { projectId, ids: testIds },
    );
    return new Map(rows.map((r) => [r.test_id, toState(r)]));
  }

  async state(projectId: string, testId: string): Promise<TestStateRecord | null> {
    return (await this.states(projectId, [testId])).get(testId) ?? null;
  }

  /** The state as the test page shows it: without the model (most of the row) and the columns it does not show. */
  async pageState(projectId: string, testId: string): Promise<PageState | null> {
    const rows = await this.store.query<Pick<StateDbRow, 'score' | 'reasons' | 'candidate' | StateColumn> & AutoDbRow>(
      `SELECT ${PAGE_SELECT} FROM ${this.store.table('test_state')} FINAL
       WHERE project_id = {projectId:UUID} AND test_id = {testId:UUID}`,
      { projectId, testId },
    );
    const r = rows[0];
    return r ? { score: toNumber(r.score), reasons: JSON.parse(r.reasons || '[]') as TestStateRecord['reasons'], auto: toAuto(r), ...toStateFields(r) } : null;
  }

  /** People's decisions for these tests (all of the project's when `testIds` is null: the table is small). */
  async overrides(projectId: string, testIds: readonly string[] | null): Promise<Map<string, OverrideRow>> {
    if (testIds !== null && testIds.length === 0) return new Map();
    // The table holds only people's decisions (few per project): read them all, reuse briefly.
    const hit = this.overrideCache.get(projectId);
    const all = hit && Date.now() - hit.at < OVERRIDES_TTL_MS ? hit.rows : await this.readOverrides(projectId);
    if (!hit || hit.rows !== all) {
      if (this.overrideCache.size > 10_000) this.overrideCache.clear();
      this.overrideCache.set(projectId, { at: Date.now(), rows: all });
    }
    if (testIds === null) return all;
    const out = new Map<string, OverrideRow>();
    for (const id of testIds) {
      const row = all.get(id);
      if (row) out.set(id, row);
    }
    return out;
  }

  private async readOverrides(projectId: string): Promise<Map<string, OverrideRow>> {
    const rows = await this.store.query<{ test_id: string; override: string; reason: string; state_after: number; decided_ms: number | string }>(
      `SELECT test_id, override, reason, state_after, toUnixTimestamp64Milli(decided_at) AS decided_ms
       FROM ${this.store.table('quarantine_overrides')} FINAL WHERE project_id = {projectId:UUID}`,
      { projectId },
    );
    return new Map(
      rows.map((r) => [
        r.test_id,
        {
          override: r.override === '' ? null : (r.override as OverrideDecision),
          reason: r.reason,
          stateAfter: toNumber(r.state_after) === 1,
          decidedAt: toNumber(r.decided_ms),
        },
      ]),
    );
  }

  async writeOverride(projectId: string, testId: string, row: OverrideRow): Promise<void> {
    await this.store.insert(
      'quarantine_overrides',
      [
        {
          project_id: projectId,
          test_id: testId,
          override: row.override ?? '',
          reason: row.reason,
          state_after: row.stateAfter ? 1 : 0,
          decided_at: row.decidedAt,
          version: row.decidedAt,
        },
      ],
      `override:${projectId}:${testId}:${row.decidedAt}:${row.override ?? 'auto'}`,
    );
    this.overrideCache.delete(projectId);
  }

  /** A health event outside the worker (a person's quarantine decision). */
  async addHealthEvent(projectId: string, testId: string, kind: 'quarantined' | 'released', at: number, score: number): Promise<void> {
    await this.store.insert('test_health_events', [{ project_id: projectId, test_id: testId, kind, at: chTime(at), score }], `health:${projectId}:${testId}:${kind}:${at}`);
  }

  /** Whether the identity exists in the project (identities are never deleted). */
  async identityExists(projectId: string, testId: string): Promise<boolean> {
    const rows = await this.store.query<{ n: number | string }>(
      `SELECT count() AS n FROM ${this.store.table('test_identities')} WHERE project_id = {projectId:UUID} AND id = {testId:UUID}`,
      { projectId, testId },
    );
    return toNumber(rows[0]?.n) > 0;
  }

  async identity(projectId: string, testId: string): Promise<{ id: string; fingerprint: string; filePath: string; suite: string; title: string } | null> {
    const rows = await this.store.query<{ id: string; fingerprint: string; file_path: string; suite: string; title: string }>(
      `SELECT id, fingerprint, file_path, suite, title FROM ${this.store.table('test_identities')} FINAL
       WHERE project_id = {projectId:UUID} AND id = {testId:UUID} LIMIT 1`,
      { projectId, testId },
    );
    const r = rows[0];
    return r ? { id: r.id, fingerprint: r.fingerprint, filePath: r.file_path, suite: r.suite, title: r.title } : null;
  }

  /** Worst first; quarantined tests (by any means) left out unless asked for. */
  async board(projectId: string, f: FlakyFilter): Promise<BoardEntry[]> {
    const rows = await this.store.query<BoardDbRow>(
      `SELECT ${BOARD_COLUMNS} FROM ${this.store.table('test_state')} FINAL
       WHERE project_id = {projectId:UUID} AND score >= {minScore:Float32} AND ${notMergedSql(this.store)}
       ORDER BY score DESC, test_id LIMIT {limit:UInt32}`,
      { projectId, minScore: f.minScore, limit: f.limit },
    );
    return rows.map(toBoardEntry);
  }

  /**
   * Each test's raw rate behind its smoothed flake rate: its last graded runs (the model's ring of
   * run letters, up to 32; runs in an outage left out) and those with a failed attempt (failed, or
   * failed then passed on a retry). Bounded to `testIds` (a board page); the ring is a column of
   * its own (migration 019), so the model, most of a row, is not read.
   */
  async recentRuns(projectId: string, testIds: readonly string[]): Promise<Map<string, RecentRuns>> {
    if (testIds.length === 0) return new Map();
    const rows = await this.store.query<{ test_id: string; ring: string }>(
      `SELECT test_id, ring FROM ${this.store.table('test_state')} FINAL
       WHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)}`,
      { projectId, ids: testIds },
    );
    return new Map(rows.map((r) => [r.test_id, recentRunsOf(r.ring)]));
  }

  /** The board filtered and sorted in SQL, one page or (limit null) every matching row (store/board.ts). */
  boardPage(projectId: string, q: BoardQuery): Promise<{ rows: BoardRow[] }> {
    return new BoardRepo(this.store).page(projectId, q);
  }

  /** Impact of a board page's tests since `sinceMs` (store/board-impact.ts). */
  boardImpact(projectId: string, testIds: readonly string[], sinceMs: number): Promise<Map<string, BoardImpact>> {
    return boardImpact(this.store, projectId, testIds, sinceMs);
  }

  /** The project's default branch as its runs show it (store/board.ts), for the board's branch filter. */
  boardDefaultBranch(projectId: string): Promise<string | null> {
    return new BoardRepo(this.store).defaultBranch(projectId);
  }

  /** The project's test file paths, for resolving an owner filter into paths (store/board.ts). */
  boardFilePaths(projectId: string): Promise<string[]> {
    return new BoardRepo(this.store).filePaths(projectId);
  }

  async history(
    projectId: string,
    testId: string,
    limit: number,
  ): Promise<{ executionId: string; runId: string; commitSha: string; branch: string; startedAt: string; status: TestStatus; attempt: number; durationMs: number; errorMessage: string | null; hasRca: boolean; artifacts: unknown[] }[]> {
    // The last 120 days come from test_recent (not partitioned: a few parts to read); a test with
    // fewer recent executions than asked for falls back to executions, whose rows sit in every
    // monthly partition (there optimize_read_in_order = 0: merging a reverse stream per part costs
    // more than sorting the test's few granules; same rows, same order).
    type Row = { id: string; run_id: string; commit_sha: string; branch: string; started_ms: number | string; status: TestStatus; attempt: number; duration_ms: number; error_message: string; artifacts: string };
    const read = (table: string, settings: string): Promise<Row[]> =>
      this.store.query<Row>(
        `SELECT id, run_id, commit_sha, branch, toUnixTimestamp64Milli(started_at) AS started_ms, status, attempt, duration_ms, error_message, artifacts
         FROM ${this.store.table(table)}
         WHERE project_id = {projectId:UUID} AND ${testAndMergedSql(this.store, 'testId')}
         ORDER BY started_at DESC, attempt DESC, id DESC LIMIT {limit:UInt32}${settings}`,
        { projectId, testId, limit },
      );
    let rows = await read('test_recent', '');
    if (rows.length < limit) rows = await read('executions', ' SETTINGS optimize_read_in_order = 0');
    const withRca = await executionsWithReport(this.store, projectId, rows.filter((r) => r.status === 'fail' || r.status === 'flaky').map((r) => r.id), testId);
    return rows.reverse().map((r) => ({
      executionId: r.id,
      runId: r.run_id,
      commitSha: r.commit_sha,
      branch: r.branch,
      startedAt: toIso(toNumber(r.started_ms)),
      status: r.status,
      attempt: toNumber(r.attempt),
      durationMs: toNumber(r.duration_ms),
      errorMessage: r.error_message === '' ? null : r.error_message,
      hasRca: withRca.has(r.id),
      artifacts: parseStoredArtifacts(r.artifacts),
    }));
  }
}
