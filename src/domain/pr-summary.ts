// What the runs of one commit add up to (docs/contract.md §6): a commit is every run stored for
// it, shards and reruns merged per test. A test that failed in one run and passed in another, or
// failed and then passed on a retry, is `flaky`; one that only failed is `fail`. Pure.
import type { RunStatus } from './batch.js';
import { parseReportPartKey } from './report-parts.js';

/** A commit sha of zeros: the placeholder of a run that sent no commit. */
const PLACEHOLDER_SHA = /^0+$/;

/** One stored run whose commit sha matches the one asked for (either may be abbreviated). */
export interface CommitRun {
  id: string;
  commitSha: string;
  branch: string;
  /** '' when the run did not say. */
  baseBranch: string;
  /** The commit its branch forked from the base branch; '' when the run did not say. */
  mergeBase: string;
  prNumber: number | null;
  status: RunStatus;
  shardIndex: number;
  startedAt: number;
  source: string;
  hasRunSpan: boolean;
  idempotencyKey: string;
  /** The CI run (`provider:ciRunId`; '' when none was sent): without a commit, the runs of one CI run are one version of the code. */
  ciRunKey?: string;
}

/** The commit the runs name, merged. */
export interface MergedCommit {
  commitSha: string;
  branch: string;
  baseBranch: string | null;
  /** The merge base a run of the commit sent, or null. */
  mergeBase: string | null;
  prNumber: number | null;
  runStatus: RunStatus;
  /** Start of the commit's first run: the base branch's history before it decides what was already there. */
  firstRunAt: number;
  /** Every run of the commit is whole (an OTLP trace counts once its run span is in). */
  complete: boolean;
  runIds: string[];
}

/** Two shas name the same commit when one starts with the other. */
export function sameCommit(a: string, b: string): boolean {
  return a.startsWith(b) || b.startsWith(a);
}

/**
 * Merges the runs found for a commit sha, newest first. An abbreviated query may match several
 * commits: the one of the newest run wins, with every run whose sha is compatible with it (a
 * reporter may have sent the short form). Null when there is no run.
 */
export function mergeCommitRuns(newestFirst: readonly CommitRun[]): MergedCommit | null {
  const latest = newestFirst[0];
  if (!latest) return null;
  // The placeholder `0000000` is every run that sent no commit: only the newest one's CI run (its
  // re-runs, shards and matrix cells) is the same code, never another CI run's pass.
  const sameCode = PLACEHOLDER_SHA.test(latest.commitSha)
    ? (r: CommitRun): boolean => r === latest || (!!latest.ciRunKey && r.ciRunKey === latest.ciRunKey && PLACEHOLDER_SHA.test(r.commitSha))
    : (r: CommitRun): boolean => sameCommit(r.commitSha, latest.commitSha);
  const selected = newestFirst.filter(sameCode);
  const commitSha = selected.reduce((longest, r) => (r.commitSha.length > longest.length ? r.commitSha : longest), latest.commitSha);
  const prRun = selected.find((r) => r.prNumber !== null && r.prNumber > 0);
  const baseRun = selected.find((r) => r.baseBranch !== '');
  const forkRun = selected.find((r) => r.mergeBase !== '');
  // Runs still arriving in parts: an OTLP trace until its run span (an SDK ends it last; our
  // reporter sends it last), a split JUnit report until its last part.
  const inParts = (r: CommitRun): boolean => r.source === 'otlp' || (r.source === 'junit' && parseReportPartKey(r.idempotencyKey) !== undefined);
  return {
    commitSha,
    branch: latest.branch,
    baseBranch: baseRun?.baseBranch ?? null,
    mergeBase: forkRun?.mergeBase ?? null,
    prNumber: prRun?.prNumber ?? null,
    runStatus: mergeRunStatus(selected),
    firstRunAt: Math.min(...selected.map((r) => r.startedAt)),
    complete: selected.every((r) => !inParts(r) || r.hasRunSpan),
    runIds: selected.map((r) => r.id),
  };
}

const RUN_STATUS_RANK: Record<RunStatus, number> = { failed: 3, running: 2, canceled: 1, passed: 0 };

/**
 * The commit's status: per shard the latest run decides (a rerun replaces the attempt before it),
 * and across shards the worst wins (failed > running > canceled > passed).
 */
export function mergeRunStatus(runs: readonly { shardIndex: number; status: RunStatus; startedAt: number }[]): RunStatus {
  const latest = new Map<number, { status: RunStatus; startedAt: number }>();
  for (const r of runs) {
    const prev = latest.get(r.shardIndex);
    if (!prev || r.startedAt > prev.startedAt) latest.set(r.shardIndex, r);
  }
  let status: RunStatus = 'passed';
  for (const r of latest.values()) if (RUN_STATUS_RANK[r.status] > RUN_STATUS_RANK[status]) status = r.status;
  return status;
}

/** fail only failed; flaky = failed somewhere and passed somewhere (another run or a retry), or reported flaky. */
export function mergedStatus(fails: number, passes: number, flakies: number): 'fail' | 'flaky' | null {
  if (flakies > 0 || (fails > 0 && passes > 0)) return 'flaky';
  if (fails > 0) return 'fail';
  return null;
}

/** What the summary's order reads of a test. */
export interface SortableTest {
  testIdentityId: string;
  filePath: string;
  suite: string;
  title: string;
  status: 'fail' | 'flaky';
  score: number;
}

/** Fails first, then score desc, then a stable order by file and title. */
export function compareTests(a: SortableTest, b: SortableTest): number {
  if (a.status !== b.status) return a.status === 'fail' ? -1 : 1;
  if (a.score !== b.score) return b.score - a.score;
  return a.filePath.localeCompare(b.filePath) || a.suite.localeCompare(b.suite) || a.title.localeCompare(b.title) || a.testIdentityId.localeCompare(b.testIdentityId);
}
