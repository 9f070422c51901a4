// Retention rules (docs/contract.md §10), pure. A window is a number of whole
// UTC days kept before today; no window means nothing is pruned.

const DAY_MS = 86_400_000;

export interface RetentionWindows {
  /** Days of raw executions kept; null keeps everything. */
  executionDays: number | null;
  /** Days of artifact objects kept; null keeps everything. At least `executionDays` when both are set. */
  artifactDays: number | null;
}

/**
 * The effective windows from a project's resolved `retention` keys. Artifacts are clamped up to the
 * execution window, so an execution never outlives the screenshots it links to. Without an
 * execution window there is nothing to clamp to and the artifact window applies alone (docs/contract.md §10,
 * `SERVICE_ARTIFACT_RETENTION_DAYS`: older objects are pruned periodically).
 */
export function retentionWindows(retention: { rawDays?: number | undefined; artifactDays?: number | undefined }): RetentionWindows {
  const executionDays = retention.rawDays ?? null;
  const artifact = retention.artifactDays ?? null;
  const artifactDays = artifact === null ? null : executionDays === null ? artifact : Math.max(artifact, executionDays);
  return { executionDays, artifactDays };
}

/**
 * The first UTC day kept ('YYYY-MM-DD'): rows of earlier days are past the window. A 7-day window
 * on 2026-11-21 keeps 2026-11-14 onwards (today and 7 full days before it).
 */
export function cutoffDay(now: number, days: number): string {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return new Date(today - days * DAY_MS).toISOString().slice(0, 10);
}

/** One (partition, project) cell of a partitioned table: its rows and how many are past the project's window. */
export interface PartitionCell {
  partition: string;
  projectId: string;
  rows: number;
  expired: number;
}

export interface PrunePlan {
  /** Partitions whose every row, of every project in them, is past its project's window. */
  dropPartitions: string[];
  /** Rows each project loses with those partitions. */
  droppedRows: Map<string, number>;
  /** Projects that still have expired rows elsewhere: deleted row by row. */
  deleteRows: Map<string, number>;
}

/**
 * Partitions are shared by all projects (`PARTITION BY toYYYYMM(day)`): one can be dropped whole
 * only when nothing in it is kept, for any project. The rest is deleted per project.
 */
export function planPrune(cells: readonly PartitionCell[]): PrunePlan {
  const byPartition = new Map<string, PartitionCell[]>();
  for (const c of cells) {
    const list = byPartition.get(c.partition) ?? [];
    list.push(c);
    byPartition.set(c.partition, list);
  }
  const plan: PrunePlan = { dropPartitions: [], droppedRows: new Map(), deleteRows: new Map() };
  const add = (m: Map<string, number>, k: string, n: number): void => {
    if (n > 0) m.set(k, (m.get(k) ?? 0) + n);
  };
  for (const [partition, list] of [...byPartition].sort(([a], [b]) => a.localeCompare(b))) {
    const whole = list.every((c) => c.expired === c.rows) && list.some((c) => c.rows > 0);
    if (whole) plan.dropPartitions.push(partition);
    for (const c of list) add(whole ? plan.droppedRows : plan.deleteRows, c.projectId, c.expired);
  }
  return plan;
}
