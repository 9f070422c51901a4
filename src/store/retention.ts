// Retention deletes (client/src/contract/retention.ts decides what). Raw executions live in two tables:
// `executions` (PARTITION BY toYYYYMM(day), shared by all projects) and its unpartitioned copy
// `test_recent` (the test page). The rollups (daily_test_stats, suite_daily, flaky_trends) are
// materialized-view targets filled at insert time: deleting source rows never touches them, and
// they are never pruned here.
//
// Whole partitions are dropped when nothing in them is kept (cheap: whole parts go); everything
// else is a lightweight DELETE (synchronous, masks the rows at once; merges reclaim the space).
// Both are plain ClickHouse SQL, the same in chDB and on a server. A dropped partition also drops
// its insert-deduplication entries: a lease redelivered later re-inserts its (already expired)
// rows there, which the next sweep removes again; the rollups stay exact because their own
// deduplication entries are untouched (checked in chDB 26.7).
import type { PartitionCell } from '../../client/src/contract/retention.js';
import { toNumber, type Store } from './client.js';

// Partition ids go into ALTER as literals (ClickHouse takes no parameter there): ours are
// toYYYYMM values, so only digits are expected; anything else is refused rather than quoted.
const PARTITION_ID = /^[0-9]{1,12}$/;

/** Keeps ClickHouse from running a DELETE as a background mutation: the sweep's counts are what is gone. */
const SYNC_DELETE = { lightweight_deletes_sync: '2' };

export class RetentionRepo {
  constructor(private readonly store: Store) {}

  /**
   * Per (partition, project), in every partition holding a row past some project's window: its
   * rows and how many of them are past that project's window. `cutoffs` maps project id → first
   * kept day; projects not in it keep everything.
   */
  async executionCells(cutoffs: ReadonlyMap<string, string>): Promise<PartitionCell[]> {
    if (cutoffs.size === 0) return [];
    const ids = [...cutoffs.keys()];
    const days = ids.map((id) => cutoffs.get(id)!);
    const latest = days.reduce((a, b) => (a > b ? a : b));
    const t = this.store.table('executions');
    const rows = await this.store.query<{ partition: string; project_id: string; rows: number | string; expired: number | string }>(
      `SELECT _partition_id AS partition, project_id, count() AS rows,
              countIf(day < transform(project_id, {ids:Array(UUID)}, {days:Array(Date)}, toDate('1970-01-01'))) AS expired
       FROM ${t}
       WHERE _partition_id IN (SELECT DISTINCT _partition_id FROM ${t} WHERE day < {latest:Date})
       GROUP BY partition, project_id`,
      { ids, days, latest },
    );
    return rows.map((r) => ({ partition: r.partition, projectId: r.project_id, rows: toNumber(r.rows), expired: toNumber(r.expired) }));
  }

  /**
   * What a mutation names: the table itself, or on a cluster its replicated local table on every
   * shard (a Distributed table takes neither DROP PARTITION nor DELETE; docs/clickhouse-cluster.md).
   */
  private mutated(name: string): string {
    const cluster = this.store.cluster;
    return cluster === undefined ? this.store.table(name) : `${this.store.table(`${name}_local`)} ON CLUSTER '${cluster}'`;
  }

  async dropExecutionPartition(partitionId: string): Promise<void> {
    if (!PARTITION_ID.test(partitionId)) throw new Error(`unexpected partition id of executions: ${JSON.stringify(partitionId)}`);
    await this.store.command(`ALTER TABLE ${this.mutated('executions')} DROP PARTITION ID '${partitionId}'`);
  }

  async deleteExecutions(projectId: string, cutoffDay: string): Promise<void> {
    await this.store.command(
      `DELETE FROM ${this.mutated('executions')} WHERE project_id = {projectId:UUID} AND day < {cutoffDay:Date}`,
      { projectId, cutoffDay },
      SYNC_DELETE,
    );
  }

  /** Deletes the project's test_recent rows before the cutoff day; returns how many there were. */
  async pruneTestRecent(projectId: string, cutoffDay: string): Promise<number> {
    const t = this.store.table('test_recent');
    const where = `project_id = {projectId:UUID} AND started_at < toDateTime64({cutoffDay:Date}, 3, 'UTC')`;
    const [row] = await this.store.query<{ n: number | string }>(`SELECT count() AS n FROM ${t} WHERE ${where}`, { projectId, cutoffDay });
    const n = toNumber(row?.n);
    // No rows, no DELETE: every DELETE is a mutation ClickHouse keeps a record of.
    if (n > 0) await this.store.command(`DELETE FROM ${this.mutated('test_recent')} WHERE ${where}`, { projectId, cutoffDay }, SYNC_DELETE);
    return n;
  }
}
