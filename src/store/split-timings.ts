// The recent duration of test files, for split plans (POST /v1/splits): per file, the median over
// its last RUNS runs of the run's total for that file (every execution's duration summed, retries
// included, since they run on the shard too), from file_run_durations (migration 015).
//
// Why these choices:
// - Any branch, not only the default one: a file's duration is a property of the file, and the
//   newest runs are most often pull requests, which are also where a test that just got slower is
//   first seen. Limiting to the base branch would plan a PR's new or changed files blind.
// - The median of the last runs, not the mean: one run where a file hung, timed out or retried
//   everything would move a mean for weeks; the median ignores it, and still follows a file whose
//   every run became slower within RUNS/2 runs.
// - A window of days bounds what is read: a file run a thousand times a month still reads only its
//   rows of the window (the table is sorted by project, file, day), and a file not run lately
//   counts as unknown (the median of the others) rather than by a duration from long ago.
import type { Store } from './client.js';

export interface FileTiming {
  /** Median duration per run (ms). */
  ms: number;
  /** Runs the median was taken over (≤ the `runs` asked for). */
  runs: number;
}

export interface TimingOptions {
  /** Last runs per file (default 10). */
  runs?: number;
  /** Days of history looked at (default 14). */
  days?: number;
}

export const DEFAULT_TIMING_RUNS = 10;
export const DEFAULT_TIMING_DAYS = 14;

export class SplitTimings {
  constructor(private readonly store: Store) {}

  /** Recent durations of `files` (stored paths, relative to the repository root); files with no run in the window are absent. */
  async fileDurations(projectId: string, files: readonly string[], opts: TimingOptions = {}): Promise<Map<string, FileTiming>> {
    const out = new Map<string, FileTiming>();
    if (files.length === 0) return out;
    // One query. The inner GROUP BY adds up a run's rows (a row per insert until the parts merge, a
    // row per day for a run over midnight); LIMIT BY keeps each file's newest runs.
    const rows = await this.store.query<{ file_path: string; ms: number | string; runs: number | string }>(
      `SELECT file_path, quantileExactInclusive(0.5)(ms) AS ms, count() AS runs
       FROM (
         SELECT file_path, run_id, sum(duration_ms) AS ms, max(last_at) AS at
         FROM ${this.store.table('file_run_durations')}
         WHERE project_id = {projectId:UUID} AND file_path IN {files:Array(String)} AND day >= today() - {days:UInt32}
         GROUP BY file_path, run_id
         ORDER BY file_path, at DESC, run_id
         LIMIT {runs:UInt32} BY file_path
       )
       GROUP BY file_path`,
      { projectId, files: [...files], days: opts.days ?? DEFAULT_TIMING_DAYS, runs: opts.runs ?? DEFAULT_TIMING_RUNS },
    );
    for (const r of rows) out.set(r.file_path, { ms: Number(r.ms), runs: Number(r.runs) });
    return out;
  }
}
