// The flaky board as the dashboard pages through it: filtered (score, suite, file) and sorted in
// SQL; the filters that need people's decisions or CODEOWNERS (quarantined, owner) are applied
// by the caller on the rows read here, so those read the project's matching rows whole.
import { toNumber, type Store } from './client.js';
import type { AutoState } from '../domain/quarantine.js';

export const BOARD_SORTS = ['score', 'flipRate', 'passOnRerunRate', 'lastSeen', 'title'] as const;
export type BoardSort = (typeof BOARD_SORTS)[number];

const ORDER: Record<BoardSort, string> = {
  score: 'score DESC, test_id',
  flipRate: 'flip_rate DESC, score DESC, test_id',
  passOnRerunRate: 'pass_on_rerun_rate DESC, score DESC, test_id',
  lastSeen: 'last_seen_at DESC, test_id',
  title: 'lower(suite), lower(title), test_id',
};

export interface BoardQuery {
  minScore: number;
  /** Case-insensitive substring of the suite / the file path. */
  suite?: string;
  file?: string;
  sort: BoardSort;
  /** Rows to skip and to return; null limit: every matching row. */
  offset: number;
  limit: number | null;
}

export interface BoardRow {
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
  lastSeenAt: number;
  auto: AutoState;
}

interface Row {
  test_id: string;
  file_path: string;
  suite: string;
  title: string;
  score: number;
  candidate: number;
  flip_rate: number;
  pass_on_rerun_rate: number;
  trend: BoardRow['trend'];
  last_flaked_ms: number | string | null;
  last_seen_ms: number | string;
  auto_quarantined: number;
  quarantine_reason: string;
  quarantined_ms: number | string | null;
  clean_runs: number | string;
  released_ms: number | string | null;
  scored_ms: number | string;
}

export class BoardRepo {
  constructor(private readonly store: Store) {}

  /** One page of matching rows (ask for one more than shown to learn whether another page follows). */
  async page(projectId: string, q: BoardQuery): Promise<{ rows: BoardRow[] }> {
    const where = ['project_id = {projectId:UUID}', 'score >= {minScore:Float32}'];
    const params: Record<string, unknown> = { projectId, minScore: q.minScore, offset: q.offset, limit: q.limit ?? 0 };
    if (q.suite !== undefined) {
      where.push('positionCaseInsensitiveUTF8(suite, {suite:String}) > 0');
      params.suite = q.suite;
    }
    if (q.file !== undefined) {
      where.push('positionCaseInsensitiveUTF8(file_path, {file:String}) > 0');
      params.file = q.file;
    }
    const table = `${this.store.table('test_state')} FINAL`;
    const rows = await this.store.query<Row>(
      `SELECT test_id, file_path, suite, title, score, candidate, flip_rate, pass_on_rerun_rate, trend,
              toUnixTimestamp64Milli(last_flaked_at) AS last_flaked_ms, toUnixTimestamp64Milli(last_seen_at) AS last_seen_ms,
              auto_quarantined, quarantine_reason, toUnixTimestamp64Milli(quarantined_at) AS quarantined_ms, clean_runs,
              toUnixTimestamp64Milli(released_at) AS released_ms, toUnixTimestamp64Milli(scored_at) AS scored_ms
       FROM ${table} WHERE ${where.join(' AND ')}
       ORDER BY ${ORDER[q.sort]}${q.limit === null ? '' : ' LIMIT {limit:UInt32} OFFSET {offset:UInt32}'}`,
      params,
    );
    return { rows: rows.map(toRow) };
  }
}

function toRow(r: Row): BoardRow {
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
    lastSeenAt: toNumber(r.last_seen_ms),
    auto: {
      autoQuarantined: toNumber(r.auto_quarantined) === 1,
      reason: r.quarantine_reason,
      quarantinedAt: r.quarantined_ms === null ? null : toNumber(r.quarantined_ms),
      cleanRuns: toNumber(r.clean_runs),
      scoredAt: toNumber(r.scored_ms),
      releasedAt: r.released_ms === null ? null : toNumber(r.released_ms),
    },
  };
}
