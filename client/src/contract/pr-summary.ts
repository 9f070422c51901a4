// What the runs of one commit add up to (docs/contract.md §6): a commit is every run stored for
// it, shards and reruns merged per test. A test that failed in one run and passed in another, or
// failed and then passed on a retry, is `flaky`; one that only failed is `fail`. Pure.
import type { RunStatus } from './batch.js';
import type { Classification, Verdict } from './gate.js';
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
  /** Of how many shards (0 when the run did not say). */
  shardTotal?: number;
  startedAt: number;
  source: string;
  hasRunSpan: boolean;
  idempotencyKey: string;
  /** The CI run (`provider:ciRunId`; '' when none was sent): without a commit, the runs of one CI run are one version of the code. */
  ciRunKey?: string;
  /** The CI job and its matrix values ('' when the client sent neither): another job of the same CI run is another job. */
  ciJobKey?: string;
}

/** The commit the runs name, merged. */
export interface MergedCommit {
  commitSha: string;
  branch: string;
  baseBranch: string | null;
  /** The merge base a run of the commit sent, or null. */
  mergeBase: string | null;
  prNumber: number | null;
  /** Every job's latest run, worst first (mergeRunStatus): never the newest run's status alone. */
  runStatus: RunStatus;
  /** Jobs of the commit (jobKey): each is its latest run. */
  jobs: number;
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
    jobs: new Set(selected.map(jobKey)).size,
    firstRunAt: Math.min(...selected.map((r) => r.startedAt)),
    complete: selected.every((r) => !inParts(r) || r.hasRunSpan),
    runIds: selected.map((r) => r.id),
  };
}

const RUN_STATUS_RANK: Record<RunStatus, number> = { failed: 3, running: 2, canceled: 1, passed: 0 };

/** What names a job of a commit: a later run of the same job replaces the one before it. */
export interface JobOfRun {
  shardIndex: number;
  shardTotal?: number;
  /** The receiver that stored it (native, junit, otlp): two receivers are two jobs. */
  source?: string;
  /** The CI run (`provider:ciRunId`): another workflow on the same commit is another job. */
  ciRunKey?: string;
  /** The CI job and matrix leg the run named (ciJobName, ciJobMatrix): another job of the CI run is another job. */
  ciJobKey?: string;
}

/**
 * A job of the commit: its source, its CI run, its CI job and matrix leg (when the client named
 * them), and its shard. A re-run of a job (GitHub's "re-run failed jobs" keeps the CI run id; a
 * local re-run has none) is the same job and replaces the run before it; another CI job or matrix
 * leg, a shard of another number, another workflow, or a report another receiver took (a JUnit
 * upload beside a native run) is another job, and its status stands.
 */
export function jobKey(r: JobOfRun): string {
  return [r.source ?? '', r.ciRunKey ?? '', r.ciJobKey ?? '', r.shardIndex, r.shardTotal ?? 0].join('\u0000');
}

/**
 * The commit's runs' status: per job (jobKey) its latest run decides (a rerun replaces the attempt
 * before it), and across jobs the worst wins (failed > running > canceled > passed). One passing
 * job never hides another's failure, whichever ran last.
 */
export function mergeRunStatus(runs: readonly (JobOfRun & { status: RunStatus; startedAt: number })[]): RunStatus {
  const latest = new Map<string, { status: RunStatus; startedAt: number }>();
  for (const r of runs) {
    const key = jobKey(r);
    const prev = latest.get(key);
    if (!prev || r.startedAt > prev.startedAt) latest.set(key, r);
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

// ---------------------------------------------------------------------------------------------
// The one summary of a pull request's commit: every count and status the PR page, its table, the
// gate's JSON and markdown, the summary and the CLI show (docs/pull-requests.md, "What a pull
// request shows"). Each surface reads these numbers; none counts on its own.

/**
 * The one status a commit of a pull request shows: the gate's verdict over every job of the commit
 * (each job's latest run). `blocked` whenever the gate blocks, whatever any run says; `running`
 * while a job's latest run is still running or still arriving (the verdict may change); `canceled`
 * when a job's latest run was canceled (its tests may not all have run); else `passed`.
 */
export const PR_STATUSES = ['blocked', 'running', 'canceled', 'passed'] as const;
export type PrStatus = (typeof PR_STATUSES)[number];

export function prStatusOf(verdict: Verdict, runStatus: RunStatus | (string & {}), complete: boolean): PrStatus {
  if (verdict === 'block') return 'blocked';
  if (!complete || runStatus === 'running') return 'running';
  if (runStatus === 'canceled') return 'canceled';
  return 'passed';
}

/**
 * The counts of a commit's failing tests (every test that failed at least one attempt in the
 * commit's runs), two ways that each add up to all of them:
 * - by outcome: `failed` (failed every attempt in every run, or a new test that failed any attempt
 *   of its proof by `flakehouse run --verify-new`) + `flaky` (the rest: failed, and passed on a
 *   retry or in another run);
 * - by the gate's classification: `newFailures` + `brokenOnBase` + `knownFlakes`, where a known
 *   flake is, as the wire contract has always said, a quarantined test or one known flaky
 *   (classification `known_flake` or `quarantined`); `quarantined` is how many of the known flakes
 *   are quarantined (a part of `knownFlakes`, never added to it).
 */
export interface PrCounts {
  failed: number;
  flaky: number;
  newFailures: number;
  brokenOnBase: number;
  knownFlakes: number;
  quarantined: number;
}

/** What the counts read of a failing test. */
export interface CountedTest {
  status: 'fail' | 'flaky';
  classification: Classification;
  newTest?: { runs: number; failed: number } | null;
}

/** Counted as failed (not flaky): every attempt failed, or a new test failed its proof (client/src/contract/gate.ts newTestFailed). */
export function countsAsFailed(t: Pick<CountedTest, 'status' | 'newTest'>): boolean {
  return t.status === 'fail' || (!!t.newTest && t.newTest.failed > 0);
}

/** The one summary: the status and the counts. */
export interface PrTally extends PrCounts {
  status: PrStatus;
}

export function prCounts(tests: readonly CountedTest[]): PrCounts {
  const n = (c: Classification): number => tests.filter((t) => t.classification === c).length;
  const failed = tests.filter(countsAsFailed).length;
  return { failed, flaky: tests.length - failed, newFailures: n('new_failure'), brokenOnBase: n('broken_on_base'), knownFlakes: n('known_flake') + n('quarantined'), quarantined: n('quarantined') };
}

/** The summary of a judged commit: its classified tests, the gate's verdict and its jobs' status. */
export function prTally(c: { tests: readonly CountedTest[]; verdict: Verdict; runStatus: RunStatus | (string & {}); complete: boolean }): PrTally {
  return { status: prStatusOf(c.verdict, c.runStatus, c.complete), ...prCounts(c.tests) };
}

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}

/**
 * The counts by classification as every text says them, the parts that are not zero: `1 new
 * failure, 1 already broken, 2 known flakes (1 quarantined)`; `no failures` when there are none.
 */
export function countsText(c: Pick<PrCounts, 'newFailures' | 'brokenOnBase' | 'knownFlakes' | 'quarantined'>): string {
  const parts = [
    c.newFailures > 0 ? plural(c.newFailures, 'new failure') : null,
    c.brokenOnBase > 0 ? `${c.brokenOnBase} already broken` : null,
    c.knownFlakes > 0 ? `${plural(c.knownFlakes, 'known flake')}${c.quarantined > 0 ? ` (${c.quarantined} quarantined)` : ''}` : null,
  ].filter((x) => x !== null);
  return parts.length > 0 ? parts.join(', ') : 'no failures';
}
