// The flaky board as the dashboard pages through it: filtered and sorted in SQL, so a page reads
// its own rows only. CODEOWNERS is matched in Node (domain/codeowners.ts), so the owner filter
// arrives here as the file paths the owner owns (the caller resolves them over `filePaths`).
import type { Store } from './client.js';
import { toNumber } from './numbers.js';
import { BOARD_COLUMNS, toBoardEntry, type BoardDbRow, type BoardEntry } from './board-columns.js';
import type { TestState } from '../domain/score.js';
import { impactParams, impactSql, toImpact, type BoardImpact, type ImpactDbRow } from './board-impact.js';
import { notMergedSql } from './test-merges.js';

/** `impact`: CI time lost over the board's window (store/board-impact.ts), most first. */
export const BOARD_SORTS = ['score', 'flipRate', 'passOnRerunRate', 'lastSeen', 'title', 'impact'] as const;
export type BoardSort = (typeof BOARD_SORTS)[number];
/** The sorts that read every test's impact with the rows (store/board-impact.ts): to rank by it, or to break score ties. */
const IMPACT_RANKED: ReadonlySet<BoardSort> = new Set(['score', 'impact']);

// Score ties rank by impact: CI time lost, then failures caused. A tie is as the page shows the
// score, to two decimals (flaky tests saturate near 1.00, and 0.998 above 0.996 is no ranking a
// reader can see or act on), then the exact score.
const ORDER: Record<BoardSort, string> = {
  score: 'round(score, 2) DESC, i_lost_ms DESC, i_failures DESC, score DESC, test_id',
  flipRate: 'flip_rate DESC, score DESC, test_id',
  passOnRerunRate: 'pass_on_rerun_rate DESC, score DESC, test_id',
  lastSeen: 'last_seen_at DESC, test_id',
  title: 'lower(suite), lower(title), test_id',
  impact: 'i_lost_ms DESC, i_failures DESC, score DESC, test_id',
};

export interface BoardQuery {
  minScore: number;
  /** Case-insensitive substring of the suite / the file path. */
  suite?: string;
  file?: string;
  /** Only tests in these files (exact paths as stored). */
  filePaths?: readonly string[];
  /** Only tests whose effective quarantine state is this (people's decisions over the scorer's). */
  quarantined?: boolean;
  /** Only tests in this state (a row not rescored since test states existed: flaky by its candidate flag, else healthy). */
  state?: TestState;
  /** Only tests that need attention: flaky or broken (as `state` reads them), or effectively quarantined. */
  attention?: boolean;
  /** Only tests with an execution on this branch (exact name) / since this time (ms), in test_recent (120 days). */
  branch?: string;
  sinceMs?: number;
  sort: BoardSort;
  /** The impact window's start (ms): sort=impact ranks over it, sort=score breaks its ties with it. */
  impactSinceMs?: number;
  /** Rows to skip and to return; null limit: every matching row. */
  offset: number;
  limit: number | null;
}

export interface BoardRow extends BoardEntry {
  lastSeenAt: number;
  /** Present when the page was sorted by impact or score (the impact was read with the rows). */
  impact?: BoardImpact;
  /** The model's ring of recent runs (store/tests.ts recentRunsOf), read with a page's rows (not with `limit: null`). */
  ring?: string;
}

interface Row extends BoardDbRow, Partial<ImpactDbRow> {
  last_seen_ms: number | string;
}

// domain/quarantine.ts effectiveQuarantine in SQL, over test_state joined with the project's
// quarantine_overrides (o_* columns; o_decided = 0 where the test has no decision): a person's
// quarantine or release wins; `auto` keeps the state it left until the scorer ran after it.
const EFFECTIVE_QUARANTINE = `multiIf(o_decided = 0, auto_quarantined = 1,
  o_override = 'quarantined', 1, o_override = 'released', 0,
  o_decided_ms > toUnixTimestamp64Milli(scored_at), o_state_after = 1, auto_quarantined = 1)`;

/** A row's state; a row not rescored since test states existed: flaky by its candidate flag, else healthy. */
const STATE = `multiIf(state != '', state, candidate = 1, 'flaky', 'healthy')`;

export class BoardRepo {
  constructor(private readonly store: Store) {}

  /** The project's distinct test file paths (any version's: a superset of the current ones). */
  async filePaths(projectId: string): Promise<string[]> {
    const rows = await this.store.query<{ file_path: string }>(
      `SELECT DISTINCT file_path FROM ${this.store.table('test_state')} WHERE project_id = {projectId:UUID}`,
      { projectId },
    );
    return rows.map((r) => r.file_path);
  }

  /**
   * The project's default branch as its runs show it: the base branch most PR runs target, else the
   * branch most runs without a PR ran on; null before any run.
   */
  async defaultBranch(projectId: string): Promise<string | null> {
    const runs = this.store.table('runs');
    const rows = await this.store.query<{ b: string; base: number | string }>(
      `SELECT b, base FROM (
         SELECT base_branch AS b, 1 AS base, uniqExact(id) AS n FROM ${runs}
         WHERE project_id = {projectId:UUID} AND base_branch != '' GROUP BY b
         UNION ALL
         SELECT branch AS b, 0 AS base, uniqExact(id) AS n FROM ${runs}
         WHERE project_id = {projectId:UUID} AND pr_number IS NULL AND branch != '' GROUP BY b
       ) ORDER BY base DESC, n DESC, b LIMIT 1`,
      { projectId },
    );
    return rows[0]?.b ?? null;
  }

  /** One page of matching rows (ask for one more than shown to learn whether another page follows). */
  async page(projectId: string, q: BoardQuery): Promise<{ rows: BoardRow[] }> {
    // A test merged into another (store/test-merges.ts) is shown as that one.
    const where = ['project_id = {projectId:UUID}', 'score >= {minScore:Float32}', notMergedSql(this.store)];
    const params: Record<string, unknown> = { projectId, minScore: q.minScore, offset: q.offset, limit: q.limit ?? 0 };
    if (q.suite !== undefined) {
      where.push('positionCaseInsensitiveUTF8(suite, {suite:String}) > 0');
      params.suite = q.suite;
    }
    if (q.file !== undefined) {
      where.push('positionCaseInsensitiveUTF8(file_path, {file:String}) > 0');
      params.file = q.file;
    }
    if (q.filePaths !== undefined) {
      where.push('file_path IN {filePaths:Array(String)}');
      params.filePaths = q.filePaths;
    }
    if (q.state !== undefined) {
      where.push(`${STATE} = {state:String}`);
      params.state = q.state;
    }
    if (q.branch !== undefined || q.sinceMs !== undefined) {
      // Tests run on the branch / in the window: the per-test recent executions (sorted by test).
      const seen = ['project_id = {projectId:UUID}'];
      if (q.branch !== undefined) {
        seen.push('branch = {branch:String}');
        params.branch = q.branch;
      }
      if (q.sinceMs !== undefined) {
        seen.push('started_at >= fromUnixTimestamp64Milli({sinceMs:Int64})');
        params.sinceMs = q.sinceMs;
      }
      where.push(`test_id IN (SELECT test_id FROM ${this.store.table('test_recent')} WHERE ${seen.join(' AND ')})`);
    }
    let table = `${this.store.table('test_state')} FINAL`;
    if (q.quarantined !== undefined || q.attention) {
      table += ` LEFT JOIN (
         SELECT test_id AS o_test_id, 1 AS o_decided, override AS o_override, state_after AS o_state_after,
                toUnixTimestamp64Milli(decided_at) AS o_decided_ms
         FROM ${this.store.table('quarantine_overrides')} FINAL WHERE project_id = {projectId:UUID}
       ) AS o ON o_test_id = test_id`;
      if (q.quarantined !== undefined) {
        where.push(`${EFFECTIVE_QUARANTINE} = {quarantined:UInt8}`);
        params.quarantined = q.quarantined ? 1 : 0;
      }
      if (q.attention) where.push(`(${STATE} IN ('flaky', 'broken') OR ${EFFECTIVE_QUARANTINE} = 1)`);
    }
    let impactCols = '';
    if (IMPACT_RANKED.has(q.sort)) {
      // Ranked by impact: every test's. The score sort breaks ties of the rounded score with it, so
      // a page needs the impact only of the tests whose rounded score is among its own: a row of
      // another score keeps its place whatever its impact (another's within its score may change,
      // not the number of rows above the page). The page's rounded scores come first (no row: no
      // page, and no impact read); a superset of those tests is bounded by exact score (a rounded
      // score is within 0.005 of the score).
      let bound: string | undefined;
      if (q.sort === 'score' && q.limit !== null) {
        const [band] = await this.store.query<{ n: number | string; lo: number | null; hi: number | null }>(
          `SELECT count() AS n, min(r) AS lo, max(r) AS hi FROM (
             SELECT round(score, 2) AS r FROM ${table} WHERE ${where.join(' AND ')}
             ORDER BY r DESC LIMIT {limit:UInt32} OFFSET {offset:UInt32})`,
          params,
        );
        if (!band || toNumber(band.n) === 0) return { rows: [] };
        // A page down to the scores shown as 0.00, most of a project's tests, reads every test's.
        if (toNumber(band.lo ?? 0) > 0.006) {
          bound = `(SELECT test_id FROM ${this.store.table('test_state')} WHERE project_id = {projectId:UUID}
                    AND score BETWEEN {bandLo:Float64} AND {bandHi:Float64})`;
          params.bandLo = toNumber(band.lo) - 0.006;
          params.bandHi = toNumber(band.hi ?? 1) + 0.006;
        }
      }
      table += ` LEFT JOIN (${impactSql(this.store, bound)}) AS i ON i_test_id = test_id`;
      Object.assign(params, impactParams(q.impactSinceMs ?? Date.now() - 30 * 86_400_000));
      impactCols = ', i_failures, i_prs, i_lost_ms';
    }
    const order = `ORDER BY ${ORDER[q.sort]}`;
    if (q.limit === null) {
      const rows = await this.store.query<Row>(
        `SELECT ${BOARD_COLUMNS}, toUnixTimestamp64Milli(last_seen_at) AS last_seen_ms${impactCols}
         FROM ${table} WHERE ${where.join(' AND ')} ${order}`,
        params,
      );
      return { rows: rows.map(toRow) };
    }
    // A page in two reads: the page's ids in order, over the columns the filters and the order
    // need; then the shown columns (and the recent-runs ring the page shows beside them) of those
    // ids only. Reading every shown column of every row of the project before the ORDER BY (FINAL
    // reads them all) cost most of a page that was not ranked by impact (issue 40). A test rescored
    // between the two reads shows its newer columns where its older ones ranked it (as its ring did
    // when the ring was a read of its own after the page).
    const ranked = await this.store.query<{ test_id: string } & Partial<ImpactDbRow>>(
      `SELECT test_id${impactCols} FROM ${table} WHERE ${where.join(' AND ')}
       ${order} LIMIT {limit:UInt32} OFFSET {offset:UInt32}`,
      params,
    );
    if (ranked.length === 0) return { rows: [] };
    // PREWHERE on sorting-key columns only: every version of a row shares them, so FINAL keeps
    // the same rows, and it reads the wide columns of the page's granules only.
    const shown = await this.store.query<Row & { ring: string }>(
      `SELECT ${BOARD_COLUMNS}, toUnixTimestamp64Milli(last_seen_at) AS last_seen_ms, ring
       FROM ${this.store.table('test_state')} FINAL
       PREWHERE project_id = {projectId:UUID} AND test_id IN {ids:Array(UUID)}`,
      { projectId, ids: ranked.map((r) => r.test_id) },
    );
    const byId = new Map(shown.map((r) => [r.test_id, r]));
    const rows: BoardRow[] = [];
    for (const k of ranked) {
      const r = byId.get(k.test_id);
      // Gone between the two reads (its project deleted): not shown.
      if (r) rows.push({ ...toRow({ ...r, ...(impactCols ? { i_failures: k.i_failures, i_prs: k.i_prs, i_lost_ms: k.i_lost_ms } : {}) }), ring: r.ring });
    }
    return { rows };
  }
}

function toRow(r: Row): BoardRow {
  const row: BoardRow = { ...toBoardEntry(r), lastSeenAt: toNumber(r.last_seen_ms) };
  if (r.i_lost_ms !== undefined) row.impact = toImpact({ i_failures: r.i_failures ?? 0, i_prs: r.i_prs ?? 0, i_lost_ms: r.i_lost_ms });
  return row;
}
