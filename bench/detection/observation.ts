// One test's outcome in one run, as the bench hands it to a model: every field the model may read
// (today's or the code-version-aware one), built the same way for every model.
import type { AttemptStatus, RunRecord, TestResult } from './generator.js';

export interface BenchObservation {
  runId: string;
  commitSha: string; // as CI reported it: 0000000 in a project that sends no commit
  /** The CI run, `provider:id` (its re-runs and shards share it), as the reporters send it. */
  ciRunKey: string;
  branch: string;
  prNumber: number | null;
  baseBranch: string | null;
  mergeBase: string | null;
  shardIndex: number | null;
  at: number;
  attempts: AttemptStatus[];
  /** Share of the run's graded tests whose final attempt failed. */
  runFailRatio: number;
  /** Share of the run's graded tests that failed and then passed on a retry. */
  runFlakyRatio: number;
  /** Graded tests in the run (skips left out). */
  runTestCount: number;
}

export interface RunRatios {
  runFailRatio: number;
  runFlakyRatio: number;
  runTestCount: number;
}

/** Per run (per shard run: each has its own run id), as the ingest side computes them. */
export function runRatios(run: RunRecord): RunRatios {
  let graded = 0;
  let finalFails = 0;
  let recovered = 0;
  for (const r of run.results) {
    if (r.attempts[0] === 'skip') continue;
    graded++;
    const last = r.attempts[r.attempts.length - 1];
    if (last === 'fail') finalFails++;
    else if (r.attempts.length > 1) recovered++;
  }
  return graded === 0 ? { runFailRatio: 0, runFlakyRatio: 0, runTestCount: 0 } : { runFailRatio: finalFails / graded, runFlakyRatio: recovered / graded, runTestCount: graded };
}

export function observationOf(run: RunRecord, result: TestResult, ratios: RunRatios): BenchObservation {
  return {
    runId: run.runId,
    commitSha: run.commitSha,
    ciRunKey: `github_actions:${run.ciRunId}`,
    branch: run.code.branch,
    prNumber: run.code.prNumber,
    baseBranch: run.code.baseBranch,
    mergeBase: run.mergeBase,
    shardIndex: run.shardIndex,
    at: run.at,
    attempts: result.attempts,
    ...ratios,
  };
}
