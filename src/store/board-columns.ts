// The flaky board's columns of a test_state row: how they are selected and read back. One place for
// GET /v1/flaky and the test page (store/tests.ts) and the dashboard's board pages (store/board.ts).
import { toNumber } from './numbers.js';
import type { AutoState } from '../domain/quarantine.js';
import { TEST_STATES, type StateSince, type TestState } from '../domain/score.js';

/**
 * What the flaky board shows of a state. It leaves out `model` and `reasons`: the model is most of a
 * row (≈1.4 KB of JSON), and FINAL reads the columns of every row of the project before the ORDER BY,
 * so the full select cost 2-3× as much at 50,000 tests (bench/scale.ts).
 */
export interface BoardEntry {
  testId: string;
  filePath: string;
  suite: string;
  title: string;
  score: number;
  candidate: boolean;
  flipRate: number;
  passOnRerunRate: number;
  trend: 'rising' | 'falling' | 'stable';
  lastFlakedAt: number | null;
  /** new | healthy | flaky | broken | fixed (a row of the older model, not rescored yet: healthy or flaky by its candidate flag). */
  state: TestState;
  /** Where the state began: broken since its first failing commit, fixed since its first passing one. */
  stateSince: StateSince | null;
  /** Estimated share of its runs in which the test flakes. */
  flakeRate: number;
  auto: AutoState;
}

export const BOARD_COLUMNS = `test_id, file_path, suite, title, score, candidate, flip_rate, pass_on_rerun_rate, trend,
  toUnixTimestamp64Milli(last_flaked_at) AS last_flaked_ms, state, state_commit, state_branch, toUnixTimestamp64Milli(state_at) AS state_ms, flake_rate,
  auto_quarantined, quarantine_reason,
  toUnixTimestamp64Milli(quarantined_at) AS quarantined_ms, clean_runs, toUnixTimestamp64Milli(released_at) AS released_ms,
  toUnixTimestamp64Milli(scored_at) AS scored_ms`;

export interface AutoDbRow {
  auto_quarantined: number;
  quarantine_reason: string;
  quarantined_ms: number | string | null;
  clean_runs: number | string;
  released_ms: number | string | null;
  scored_ms: number | string;
}

/** A row of BOARD_COLUMNS as chDB returns it. */
export interface BoardDbRow extends AutoDbRow {
  test_id: string;
  file_path: string;
  suite: string;
  title: string;
  score: number;
  candidate: number;
  flip_rate: number;
  pass_on_rerun_rate: number;
  trend: BoardEntry['trend'];
  last_flaked_ms: number | string | null;
  state: string;
  state_commit: string;
  state_branch: string;
  state_ms: number | string | null;
  flake_rate: number;
}

export function toAuto(r: AutoDbRow): AutoState {
  return {
    autoQuarantined: toNumber(r.auto_quarantined) === 1,
    reason: r.quarantine_reason,
    quarantinedAt: r.quarantined_ms === null ? null : toNumber(r.quarantined_ms),
    cleanRuns: toNumber(r.clean_runs),
    scoredAt: toNumber(r.scored_ms),
    releasedAt: r.released_ms === null ? null : toNumber(r.released_ms),
  };
}

export type StateColumn = 'state' | 'state_commit' | 'state_branch' | 'state_ms' | 'flake_rate';

/** The state columns read back; a row written before test states existed reads as its candidate flag said. */
export function toStateFields(r: Pick<BoardDbRow, 'candidate' | StateColumn>): Pick<BoardEntry, 'state' | 'stateSince' | 'flakeRate'> {
  const known = (TEST_STATES as readonly string[]).includes(r.state);
  return {
    state: known ? (r.state as TestState) : toNumber(r.candidate) === 1 ? 'flaky' : 'healthy',
    stateSince: r.state_ms === null || r.state_ms === undefined ? null : { commitSha: r.state_commit, branch: r.state_branch, at: toNumber(r.state_ms) },
    flakeRate: toNumber(r.flake_rate),
  };
}

export function toBoardEntry(r: BoardDbRow): BoardEntry {
  return {
    testId: r.test_id,
    filePath: r.file_path,
    suite: r.suite,
    title: r.title,
    score: toNumber(r.score),
    candidate: toNumber(r.candidate) === 1,
    flipRate: toNumber(r.flip_rate),
    passOnRerunRate: toNumber(r.pass_on_rerun_rate),
    trend: r.trend,
    lastFlakedAt: r.last_flaked_ms === null ? null : toNumber(r.last_flaked_ms),
    ...toStateFields(r),
    auto: toAuto(r),
  };
}
