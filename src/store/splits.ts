// Stored split plans (split_plans, migration 015): the first call for a (build id, shard count,
// file list) stores a plan and every later call of that build reads it, so all shards of a build
// run one plan even when timings change while the build runs.
//
// First writer wins, without transactions:
// - In this process, calls for one key run one after another (a promise chain per key), so the
//   second caller finds the first one's row and never computes a plan of its own. One daemon per
//   store is how Flakehouse runs (embedded chDB is one process), so this is the usual case, and it
//   is exact.
// - Across processes sharing a ClickHouse server, two first calls can both find nothing and both
//   insert. Each caller then answers with what it reads *after* its own insert: the row with the
//   earliest created_at (the store's clock at insert), then the lowest plan_id. Both rows are kept
//   (plain MergeTree: nothing is replaced on merge), so that choice never changes later. A caller
//   that reads before the other's insert is visible returns its own plan, and the other caller
//   then sees both: they can only disagree when the two inserts land within one insert's latency
//   of each other AND the timings changed between the two computations; with the same timings
//   both computed the same plan anyway (planning is deterministic). Every later call agrees.
import { randomUUID } from 'node:crypto';
import type { SplitPlan } from '../../client/src/contract/split.js';
import type { Store } from './client.js';

export interface SplitKey {
  buildId: string;
  total: number;
  /** client/src/contract/split.ts filesHash of the canonical file list. */
  filesHash: string;
}

export interface StoredPlan extends SplitPlan {
  planId: string;
  /** ISO-8601. */
  createdAt: string;
  fileCount: number;
  /** Runs of history behind the timings: the sum over files of the runs their median came from. */
  timedRuns: number;
}

interface PlanRow {
  plan_id: string;
  created_ms: number | string;
  file_count: number | string;
  shards: string;
  estimated_ms: (number | string)[];
  unknown_files: string;
  default_ms: number | string;
  timed_runs: number | string;
}

export class SplitPlanRepo {
  /** Per key, the tail of the calls queued on it (removed when the last one ends). */
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(private readonly store: Store) {}

  /** The plan that won for this key, or null when none is stored. */
  async find(projectId: string, key: SplitKey): Promise<StoredPlan | null> {
    const rows = await this.store.query<PlanRow>(
      `SELECT toString(plan_id) AS plan_id, toUnixTimestamp64Milli(created_at) AS created_ms, file_count, shards,
              estimated_ms, unknown_files, default_ms, timed_runs
       FROM ${this.store.table('split_plans')}
       WHERE project_id = {projectId:UUID} AND build_id = {buildId:String} AND total = {total:UInt16} AND files_hash = {filesHash:FixedString(64)}
       ORDER BY created_at, plan_id
       LIMIT 1`,
      { projectId, buildId: key.buildId, total: key.total, filesHash: key.filesHash },
    );
    const r = rows[0];
    if (!r) return null;
    return {
      planId: r.plan_id,
      createdAt: new Date(Number(r.created_ms)).toISOString(),
      fileCount: Number(r.file_count),
      shards: JSON.parse(r.shards) as string[][],
      estimatedMs: r.estimated_ms.map(Number),
      unknownFiles: JSON.parse(r.unknown_files) as string[],
      defaultMs: Number(r.default_ms),
      timedRuns: Number(r.timed_runs),
    };
  }

  /**
   * The stored plan for `key`, or the one `compute` makes, stored first. `created` says whether this
   * call's plan is the one returned (false: an earlier call's, or a concurrent writer's that won).
   */
  async findOrCreate(
    projectId: string,
    key: SplitKey,
    compute: () => Promise<SplitPlan & { timedRuns: number }>,
  ): Promise<{ plan: StoredPlan; created: boolean }> {
    const lockKey = `${projectId}\u0000${key.buildId}\u0000${key.total}\u0000${key.filesHash}`;
    const before = this.chains.get(lockKey) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(() => this.findOrCreateNow(projectId, key, compute));
    this.chains.set(lockKey, mine);
    try {
      return await mine;
    } finally {
      if (this.chains.get(lockKey) === mine) this.chains.delete(lockKey);
    }
  }

  private async findOrCreateNow(
    projectId: string,
    key: SplitKey,
    compute: () => Promise<SplitPlan & { timedRuns: number }>,
  ): Promise<{ plan: StoredPlan; created: boolean }> {
    const existing = await this.find(projectId, key);
    if (existing) return { plan: existing, created: false };
    const plan = await compute();
    const planId = randomUUID();
    await this.store.insert(
      'split_plans',
      [
        {
          project_id: projectId,
          build_id: key.buildId,
          total: key.total,
          files_hash: key.filesHash,
          plan_id: planId,
          file_count: plan.shards.reduce((n, s) => n + s.length, 0),
          shards: JSON.stringify(plan.shards),
          estimated_ms: plan.estimatedMs,
          unknown_files: JSON.stringify(plan.unknownFiles),
          default_ms: plan.defaultMs,
          timed_runs: plan.timedRuns,
        },
      ],
      `split:${planId}`,
    );
    // Read after write: the winner, which is ours unless another process's insert came first.
    const winner = await this.find(projectId, key);
    if (!winner) throw new Error('split plan not found right after it was stored');
    return { plan: winner, created: winner.planId === planId };
  }
}
