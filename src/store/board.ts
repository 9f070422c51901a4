// The flaky board as the dashboard pages through it: filtered and sorted in SQL, so a page reads
// its own rows only. CODEOWNERS is matched in Node (domain/codeowners.ts), so the owner filter
// arrives here as the file paths the owner owns (the caller resolves them over `filePaths`).
import { toNumber, type Store } from './client.js';
import { BOARD_COLUMNS, toBoardEntry, type BoardDbRow, type BoardEntry } from './board-columns.js';
import type { TestState } from '../domain/score.js';

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
  /** Only tests in these files (exact paths as stored). */
  filePaths?: readonly string[];
  /** Only tests whose effective quarantine state is this (people's decisions over the scorer's). */
  quarantined?: boolean;
  /** Only tests in this state (a row not rescored since test states existed: flaky by its candidate flag, else healthy). */
  state?: TestState;
  sort: BoardSort;
  /** Rows to skip and to return; null limit: every matching row. */
  offset: number;
  limit: number | null;
}

export interface BoardRow extends BoardEntry {
  lastSeenAt: number;
}

interface Row extends BoardDbRow {
  last_seen_ms: number | string;
}

// domain/quarantine.ts effectiveQuarantine in SQL, over test_state joined with the project's
// quarantine_overrides (o_* columns; o_decided = 0 where the test has no decision): a person's
// quarantine or release wins; `auto` keeps the state it left until the scorer ran after it.
const EFFECTIVE_QUARANTINE = `multiIf(o_decided = 0, auto_quarantined = 1,
  o_override = 'quarantined', 1, o_override = 'released', 0,
  o_decided_ms > toUnixTimestamp64Milli(scored_at), o_state_after = 1, auto_quarantined = 1)`;

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
    if (q.filePaths !== undefined) {
      where.push('file_path IN {filePaths:Array(String)}');
      params.filePaths = q.filePaths;
    }
    if (q.state !== undefined) {
      where.push(`multiIf(state != '', state, candidate = 1, 'flaky', 'healthy') = {state:String}`);
      params.state = q.state;
    }
    let table = `${this.store.table('test_state')} FINAL`;
    if (q.quarantined !== undefined) {
      table += ` LEFT JOIN (
         SELECT test_id AS o_test_id, 1 AS o_decided, override AS o_override, state_after AS o_state_after,
                toUnixTimestamp64Milli(decided_at) AS o_decided_ms
         FROM ${this.store.table('quarantine_overrides')} FINAL WHERE project_id = {projectId:UUID}
       ) AS o ON o_test_id = test_id`;
      where.push(`${EFFECTIVE_QUARANTINE} = {quarantined:UInt8}`);
      params.quarantined = q.quarantined ? 1 : 0;
    }
    const rows = await this.store.query<Row>(
      `SELECT ${BOARD_COLUMNS}, toUnixTimestamp64Milli(last_seen_at) AS last_seen_ms
       FROM ${table} WHERE ${where.join(' AND ')}
       ORDER BY ${ORDER[q.sort]}${q.limit === null ? '' : ' LIMIT {limit:UInt32} OFFSET {offset:UInt32}'}`,
      params,
    );
    return { rows: rows.map(toRow) };
  }
}

function toRow(r: Row): BoardRow {
  return { ...toBoardEntry(r), lastSeenAt: toNumber(r.last_seen_ms) };
}
