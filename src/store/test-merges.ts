// Merged test identities (migration 018, docs/architecture.md "Identity"): which identities were
// merged into which, the SQL that leaves merged-from tests out of the board, the quarantine list and
// the PR gate, and the kept test's ids for reading its history.
import type { Store } from './client.js';
import { stableUuid } from '../../client/src/contract/ids.js';
import { chTime } from './time.js';

export type MergeReason = 'legacy_junit_twin';

export interface TestMerge {
  projectId: string;
  fromTestId: string;
  intoTestId: string;
  reason: MergeReason;
  mergedAt: number;
}

/**
 * `test_id NOT IN (merged-from ids of {projectId:UUID})`: a merged-from test is shown through the
 * test it was merged into. For a query over `test_id` with the `projectId` parameter.
 */
export function notMergedSql(store: Pick<Store, 'table'>, column = 'test_id'): string {
  return `${column} NOT IN (SELECT from_test_id FROM ${store.table('test_merges')} FINAL WHERE project_id = {projectId:UUID})`;
}

/**
 * `test_id IN (the test and the ids merged into it)`, for per-test reads of executions; the query
 * needs the `projectId` parameter and `testParam` (a UUID).
 */
export function testAndMergedSql(store: Pick<Store, 'table'>, testParam: string): string {
  return `test_id IN (SELECT {${testParam}:UUID} UNION ALL SELECT from_test_id FROM ${store.table('test_merges')} FINAL
    WHERE project_id = {projectId:UUID} AND into_test_id = {${testParam}:UUID})`;
}

/**
 * A `WITH` element naming the project's merges `merged_ids`: (from ids, into ids) as two aligned
 * arrays, for keptTestIdSql. Needs the `projectId` parameter.
 */
export function mergedIdsWithSql(store: Pick<Store, 'table'>): string {
  return `(SELECT (groupArray(from_test_id), groupArray(into_test_id)) FROM ${store.table('test_merges')} FINAL WHERE project_id = {projectId:UUID}) AS merged_ids`;
}

/** The id a row counts under: the test a merged-from id was merged into, else its own (needs mergedIdsWithSql). */
export function keptTestIdSql(column = 'test_id'): string {
  return `if(indexOf(merged_ids.1, ${column}) > 0, arrayElement(merged_ids.2, indexOf(merged_ids.1, ${column})), ${column})`;
}

/**
 * `test_id IN {param}` widened to the ids merged into them (the primary key still narrows the
 * read); group by keptTestIdSql to count them as the kept tests. Needs the `projectId` parameter.
 */
export function testsAndMergedInSql(store: Pick<Store, 'table'>, param: string): string {
  return `(test_id IN {${param}:Array(UUID)} OR test_id IN (SELECT from_test_id FROM ${store.table('test_merges')} FINAL
    WHERE project_id = {projectId:UUID} AND into_test_id IN {${param}:Array(UUID)}))`;
}

export class TestMergeRepo {
  constructor(private readonly store: Store) {}

  /** The project's merges: merged-from id → kept id. */
  async mergedInto(projectId: string): Promise<Map<string, string>> {
    const rows = await this.store.query<{ from_id: string; into_id: string }>(
      `SELECT toString(from_test_id) AS from_id, toString(into_test_id) AS into_id FROM ${this.store.table('test_merges')} FINAL
       WHERE project_id = {projectId:UUID}`,
      { projectId },
    );
    return new Map(rows.map((r) => [r.from_id, r.into_id]));
  }

  async record(merges: readonly TestMerge[]): Promise<void> {
    if (merges.length === 0) return;
    await this.store.insert(
      'test_merges',
      merges.map((m) => ({ project_id: m.projectId, from_test_id: m.fromTestId, into_test_id: m.intoTestId, reason: m.reason, merged_at: chTime(m.mergedAt) })),
      `test-merges:${stableUuid('test-merges', ...merges.map((m) => `${m.projectId}:${m.fromTestId}:${m.intoTestId}:${m.mergedAt}`))}`,
    );
  }
}
