// CI histories with known truth for `npm run bench -- detection`. Pure data: nothing here knows
// about any flakiness model, so that the same histories judge every model (and every version of
// ours) alike.
//
// Per project: a main branch of commits (each push runs CI on `main`), pull-request branches
// forked from main's head at the time (1–5 commits each, every commit runs CI; most merge into
// main as a new main commit, some are abandoned, a few merge main into themselves), re-runs of red
// (rarely green) builds, CI retries (0 or 2 per project), shards (each commit's CI run is N shard
// runs with their own run ids), outage runs, and optionally a project whose CI sends no commit.
//
// Code-version semantics: a test's behaviour is a function of the code a run tests, described by
// `CodeVersion` = (the main commits it contains: 0..mainIdx) + (the PR's own commits: 0..prCommitIdx).
// A regression at main commit X fixed at main commit Y breaks every code version with
// X ≤ mainIdx < Y: later main commits and PR branches forked (or updated from main) in that range;
// PR branches forked before X pass. Re-runs run the same code.
import { seededRandom } from '../../src/domain/random.js';

export type Rand = () => number;
export type AttemptStatus = 'pass' | 'fail' | 'skip' | 'flaky';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** A Monday morning (UTC). */
export const HISTORY_START = Date.UTC(2026, 0, 5, 8, 0, 0);
export const PLACEHOLDER_SHA = '0000000';

// ---------------------------------------------------------------------------------------------
// Truth classes
// ---------------------------------------------------------------------------------------------

export const FLAKY_CLASSES = ['independent', 'shardOnly', 'bursty', 'timeOfDay', 'varyingMessages', 'renamedWhileFlaky'] as const;
export const NON_FLAKY_CLASSES = ['stable', 'regressionFixed', 'regressionUnfixed', 'brokenVariant', 'skippedAfterBreak', 'onePrBreak', 'newTest'] as const;
export type FlakyClass = (typeof FLAKY_CLASSES)[number];
export type NonFlakyClass = (typeof NON_FLAKY_CLASSES)[number];
export type TruthClass = FlakyClass | NonFlakyClass;
/** Per-attempt failure rates of the `independent` flakes. */
export const INDEPENDENT_RATES = [0.01, 0.02, 0.05, 0.1, 0.2, 0.4] as const;

/** Population shares per project (of its tests). Stable tests are the rest. */
const SHARE = {
  independentPerRate: 0.02,
  shardOnly: 0.015, // sharded projects only
  bursty: 0.015,
  timeOfDay: 0.015,
  varyingMessages: 0.015,
  renamedWhileFlaky: 0.01,
  regressionFixed: 0.04,
  regressionUnfixed: 0.015,
  brokenVariant: 0.01, // each in a family of 3–6 variants, the others stable
  skippedAfterBreak: 0.012,
  onePrBreak: 0.04,
  newTest: 0.06,
} as const;

/** Bursty flakes: an external dependency flapping for a few hours. */
const BURST_FAIL_RATE = 0.9;
const BURSTY_BASE_RATE = 0.005;
/** Time-of-day flakes: failure rate outside their hours. */
const TIME_OF_DAY_BASE_RATE = 0.005;
/** Any test: a conditional skip (platform, feature flag) now and then. */
const RANDOM_SKIP_RATE = 0.01;

// ---------------------------------------------------------------------------------------------
// CI activity
// ---------------------------------------------------------------------------------------------

export interface ProjectProfile {
  label: string;
  retries: number; // CI retries of a failed test (stopping at a pass)
  shards: number; // 0 = not sharded
  placeholderCommit: boolean; // CI sends no commit: every run reports 0000000 and no merge base
}

/** Projects take these in turn (`--no-placeholder` drops the third). */
export const PROFILES: readonly ProjectProfile[] = [
  { label: 'retries', retries: 2, shards: 0, placeholderCommit: false },
  { label: 'sharded', retries: 0, shards: 4, placeholderCommit: false },
  { label: 'no-commit', retries: 0, shards: 0, placeholderCommit: true },
  { label: 'retries+sharded', retries: 2, shards: 3, placeholderCommit: false },
];

/** Mean gap between CI activities in working hours; nights and weekends are mostly quiet. */
const MEAN_GAP_MS = 1.2 * HOUR_MS;
const OUTAGE_RUN_SHARE = 0.03;
/** Re-runs: people re-run red builds often, green ones rarely; at most MAX_RERUNS per commit. */
const RERUN_AFTER_RED = { main: 0.3, pr: 0.3 } as const;
const RERUN_AFTER_GREEN = 0.02;
const MAX_RERUNS = 2;
/** A re-run of a sharded build re-runs only the failed shards ("re-run failed jobs") this often. */
const RERUN_FAILED_SHARDS_ONLY = 0.6;
/** Re-runs come on top of the pushes: the push count is chosen so that the total is about `--runs`. */
const EXPECTED_RERUN_SHARE = 0.38;
/** Every REBALANCE_EVERY main commits the shard map is regenerated and SHARD_MOVE_SHARE of tests move. */
const REBALANCE_EVERY = 12;
const SHARD_MOVE_SHARE = 0.08;
const RETRY_GAP_MS = 3 * MINUTE_MS;
const SHARD_GAP_MS = 40_000;

/** The code a run tests (truth), and how the run reports it. */
export interface CodeVersion {
  sha: string;
  branch: string;
  prNumber: number | null;
  baseBranch: string | null;
  mergeBase: string | null;
  /** Contains main commits 0..mainIdx. */
  mainIdx: number;
  /** Contains this PR's own commits 0..prCommitIdx (null on main). */
  pr: number | null;
  prCommitIdx: number;
}

interface PullRequest {
  number: number;
  forkMainIdx: number;
  baseMainIdx: number; // moves when main is merged into the PR
  commits: number;
  planned: number;
  outcome: 'open' | 'merged' | 'abandoned';
}

interface PlannedPipeline {
  at: number;
  code: CodeVersion;
}

interface Skeleton {
  pipelines: PlannedPipeline[];
  mainCommits: { sha: string; at: number }[];
  prs: PullRequest[];
  mergesOfMain: number;
}

const hexSha = (rand: Rand): string => {
  let s = '';
  for (let i = 0; i < 40; i++) s += Math.floor(rand() * 16).toString(16);
  return s;
};
const intIn = (rand: Rand, lo: number, hi: number): number => lo + Math.floor(rand() * (hi - lo + 1));
const pick = <T>(rand: Rand, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

/** Next moment someone pushes: exponential gaps, mostly skipping nights and weekends (project's local time). */
function nextActivity(t: number, rand: Rand, utcOffsetHours: number): number {
  const next = t + -Math.log(1 - rand()) * MEAN_GAP_MS;
  const local = next + utcOffsetHours * HOUR_MS;
  const d = new Date(local);
  const hour = d.getUTCHours();
  const weekday = d.getUTCDay();
  const midnight = Math.floor(local / DAY_MS) * DAY_MS;
  const morning = (daysAhead: number): number => midnight + daysAhead * DAY_MS + 7 * HOUR_MS + rand() * 2 * HOUR_MS - utcOffsetHours * HOUR_MS;
  if ((weekday === 6 || weekday === 0) && rand() < 0.85) return morning(weekday === 6 ? 2 : 1);
  if (hour >= 21 && rand() < 0.8) return morning(1);
  if (hour < 7 && rand() < 0.8) return morning(0);
  return next;
}

/** Commits, PRs and the CI runs they trigger (re-runs are decided later, from the outcomes). */
function buildSkeleton(rand: Rand, pushesWanted: number, startAt: number, utcOffsetHours: number): Skeleton {
  const mainCommits = [{ sha: hexSha(rand), at: startAt }];
  const mainCode = (idx: number): CodeVersion => ({ sha: mainCommits[idx]!.sha, branch: 'main', prNumber: null, baseBranch: null, mergeBase: null, mainIdx: idx, pr: null, prCommitIdx: -1 });
  const pipelines: PlannedPipeline[] = [{ at: startAt, code: mainCode(0) }];
  const prs: PullRequest[] = [];
  let open: PullRequest[] = [];
  let nextPr = intIn(rand, 100, 400);
  let mergesOfMain = 0;
  let t = startAt;
  const prCommit = (pr: PullRequest): void => {
    const head = mainCommits.length - 1;
    // Now and then the author merges main into the PR: it then contains main up to the head.
    if (pr.commits > 0 && pr.baseMainIdx < head && rand() < 0.12) {
      pr.baseMainIdx = head;
      pr.planned++;
      mergesOfMain++;
    }
    pipelines.push({
      at: t,
      code: { sha: hexSha(rand), branch: `feat/${pr.number}`, prNumber: pr.number, baseBranch: 'main', mergeBase: mainCommits[pr.baseMainIdx]!.sha, mainIdx: pr.baseMainIdx, pr: pr.number, prCommitIdx: pr.commits },
    });
    pr.commits++;
  };
  while (pipelines.length < pushesWanted) {
    t = nextActivity(t, rand, utcOffsetHours);
    const working = open.filter((pr) => pr.commits < pr.planned);
    const done = open.filter((pr) => pr.commits >= pr.planned);
    const options: ['prCommit' | 'finishPr' | 'openPr' | 'mainPush', number][] = [['mainPush', 0.1]];
    if (working.length > 0) options.push(['prCommit', 0.45]);
    if (done.length > 0) options.push(['finishPr', 0.3]);
    if (open.length < 6) options.push(['openPr', 0.18]);
    let u = rand() * options.reduce((a, [, w]) => a + w, 0);
    let action = options[0]![0];
    for (const [name, w] of options) {
      u -= w;
      if (u < 0) {
        action = name;
        break;
      }
    }
    if (action === 'mainPush') {
      mainCommits.push({ sha: hexSha(rand), at: t });
      pipelines.push({ at: t, code: mainCode(mainCommits.length - 1) });
    } else if (action === 'openPr') {
      const head = mainCommits.length - 1;
      const pr: PullRequest = { number: nextPr++, forkMainIdx: head, baseMainIdx: head, commits: 0, planned: intIn(rand, 1, 5), outcome: 'open' };
      prs.push(pr);
      open.push(pr);
      prCommit(pr);
    } else if (action === 'prCommit') {
      prCommit(pick(rand, working));
    } else {
      const pr = pick(rand, done);
      open = open.filter((x) => x !== pr);
      if (rand() < 0.75) {
        pr.outcome = 'merged';
        mainCommits.push({ sha: hexSha(rand), at: t });
        pipelines.push({ at: t, code: mainCode(mainCommits.length - 1) });
      } else pr.outcome = 'abandoned';
    }
  }
  return { pipelines, mainCommits, prs, mergesOfMain };
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

export interface TestSpec {
  id: string;
  name: string;
  project: number;
  truth: TruthClass;
  flaky: boolean;
  /** Own per-attempt failure rate where there is one (shard-only: in its shard; time-of-day: in its hours). */
  rate: number | null;
  /** Present in code that contains this main commit (new tests; 0 = from the start). */
  addedAtMain: number;
  /** Broken in code containing main commit breakAtMain but not fixAtMain (Infinity = none). */
  breakAtMain: number;
  fixAtMain: number;
  /**
   * Skipped after breaking: once it has failed skipAfterFailures runs, every later run reports skip,
   * on every branch (a skip list in the CI configuration, not a code change; set while running).
   */
  skipped: boolean;
  skipAfterFailures: number;
  /** One-PR break: PR `pr`'s commits fromCommit..toCommit−1 break it (toCommit Infinity: never fixed, the PR is not merged). */
  prBreak: { pr: number; fromCommit: number; toCommit: number } | null;
  /** Shard assignment (sharded projects): a base shard and rebalances, by main commit. */
  shardBase: number;
  shardMoves: { atMain: number; shard: number }[];
  /** Shard-only flakes fail only in this shard (a polluting neighbour runs there). */
  badShard: number | null;
  /** Bursty flakes: time windows of an external dependency flapping. */
  bursts: { from: number; to: number }[];
  /** Time-of-day flakes: UTC hours [from, from + length) (wrapping). */
  failHoursUtc: { from: number; length: number } | null;
  /** Renamed while flaky: when (the identity layer stitches old and new names into this one history). */
  renamedAt: number | null;
  family: string | null;
}

/** What actually happened to a test (truth events), from which observability and latency are defined. */
export interface TestTruth {
  gradedRuns: number;
  /** Runs outside outages in which it failed on its own (flaky tests only: the code was not broken). */
  ownFailureRuns: number;
  /** The test's graded-run ordinal (1-based) of its second own failure outside outages. */
  secondOwnFailureRun: number | null;
  /** First time the same code both failed (on its own, outside outages) and passed: the ordinal of the run that completed the pair. */
  firstStrongEvidenceRun: number | null;
  /** Runs in which an own failure was followed by a passing retry. */
  passedOnRetryRuns: number;
  /** Runs it failed only because of an outage. */
  outageFailureRuns: number;
  /** Runs it failed because its code was broken. */
  brokenRuns: number;
  skippedRuns: number;
}

export interface TestResult {
  test: TestSpec;
  attempts: AttemptStatus[];
  /** Error message per attempt (null for a pass or skip). Models do not see them today. */
  errors: (string | null)[];
  codeBroken: boolean;
}

export interface Outage {
  intensity: number; // share of tests whose first attempt fails
  persistent: boolean; // retries fail too
}

export interface RunRecord {
  runId: string;
  pipelineId: string;
  /** The CI system's run id, as its re-runs and shards keep it (GITHUB_RUN_ID, a GitLab pipeline, a Buildkite build). */
  ciRunId: string;
  project: number;
  at: number;
  /** The code this run tests (truth). */
  code: CodeVersion;
  /** As CI reports them (a no-commit project: 0000000 and no merge base). */
  commitSha: string;
  mergeBase: string | null;
  trigger: 'push' | 'pull_request';
  rerun: number; // 0 = first run of this commit
  shardIndex: number | null;
  shardCount: number | null;
  outage: Outage | null;
  results: TestResult[];
}

export interface ProjectHistory {
  index: number;
  profile: ProjectProfile;
  tests: TestSpec[];
  truth: Map<string, TestTruth>;
  runs: RunRecord[];
  stats: {
    tests: number;
    ciRuns: number; // pipelines: a commit's CI run (all its shards), re-runs included
    runIds: number; // shard runs count one each
    reruns: number;
    outageRuns: number;
    mainCommits: number;
    prs: { opened: number; merged: number; abandoned: number; open: number; mainMergedIn: number };
    days: number;
  };
}

export interface GeneratorOptions {
  seed: number;
  projects: number;
  testsPerProject: number;
  ciRunsPerProject: number;
  placeholderProject: boolean;
}

/** Log-uniform in [lo, hi]: flake rates are spread over orders of magnitude. */
const logUniform = (rand: Rand, lo: number, hi: number): number => lo * Math.pow(hi / lo, rand());

function buildPopulation(rand: Rand, project: number, n: number, profile: ProjectProfile, sk: Skeleton): TestSpec[] {
  const M = sk.mainCommits.length;
  const tests: TestSpec[] = [];
  const blank = (truth: TruthClass, name: string): TestSpec => {
    const shardBase = profile.shards > 0 ? Math.floor(rand() * profile.shards) : 0;
    const shardMoves: { atMain: number; shard: number }[] = [];
    if (profile.shards > 0) {
      for (let m = REBALANCE_EVERY; m < M; m += REBALANCE_EVERY) if (rand() < SHARD_MOVE_SHARE) shardMoves.push({ atMain: m, shard: Math.floor(rand() * profile.shards) });
    }
    const spec: TestSpec = {
      id: `p${project}-t${tests.length}`,
      name,
      project,
      truth,
      flaky: (FLAKY_CLASSES as readonly string[]).includes(truth),
      rate: null,
      addedAtMain: 0,
      breakAtMain: Infinity,
      fixAtMain: Infinity,
      skipped: false,
      skipAfterFailures: 0,
      prBreak: null,
      shardBase,
      shardMoves,
      badShard: null,
      bursts: [],
      failHoursUtc: null,
      renamedAt: null,
      family: null,
    };
    tests.push(spec);
    return spec;
  };
  const quota = (share: number): number => Math.round(n * share);
  const first = sk.pipelines[0]!.at;
  const last = sk.pipelines[sk.pipelines.length - 1]!.at;

  // Flaky (positives).
  for (const rate of INDEPENDENT_RATES) for (let i = 0; i < quota(SHARE.independentPerRate); i++) blank('independent', `independent_${rate * 100}pct_${i}`).rate = rate;
  if (profile.shards > 0) {
    for (let i = 0; i < quota(SHARE.shardOnly); i++) {
      const t = blank('shardOnly', `shared_fixture_${i}`);
      t.rate = 0.1 + rand() * 0.2;
      t.badShard = t.shardBase;
    }
  }
  for (let i = 0; i < quota(SHARE.bursty); i++) {
    const t = blank('bursty', `external_api_${i}`);
    const bursts = intIn(rand, 1, 3);
    for (let b = 0; b < bursts; b++) {
      // At least 4 consecutive CI runs of the project fall in the window (re-runs in it too).
      const len = intIn(rand, 4, 8);
      const start = intIn(rand, 1, Math.max(1, sk.pipelines.length - len - 1));
      const from = sk.pipelines[start]!.at - 10 * MINUTE_MS;
      const to = sk.pipelines[Math.min(sk.pipelines.length - 1, start + len - 1)]!.at + 30 * MINUTE_MS;
      t.bursts.push({ from, to });
    }
  }
  for (let i = 0; i < quota(SHARE.timeOfDay); i++) {
    const t = blank('timeOfDay', `daily_report_${i}`);
    t.failHoursUtc = { from: intIn(rand, 0, 23), length: intIn(rand, 3, 5) };
    t.rate = 0.3 + rand() * 0.3;
  }
  for (let i = 0; i < quota(SHARE.varyingMessages); i++) blank('varyingMessages', `websocket_reconnect_${i}`).rate = logUniform(rand, 0.01, 0.4);
  for (let i = 0; i < quota(SHARE.renamedWhileFlaky); i++) {
    const t = blank('renamedWhileFlaky', `checkout_flow_${i}`);
    t.rate = logUniform(rand, 0.01, 0.4);
    t.renamedAt = first + rand() * (last - first);
  }

  // Non-flaky (negatives).
  // Regressions come in incidents: one main commit breaks 1–4 tests (now and then 8–16), fixed together.
  const incidents = (count: number, fixed: boolean, cls: 'regressionFixed' | 'regressionUnfixed'): void => {
    let made = 0;
    let k = 0;
    while (made < count) {
      const size = Math.min(count - made, rand() < 0.1 ? intIn(rand, 8, 16) : intIn(rand, 1, 4));
      // Most regressions are fixed within a few main commits, some take up to 20.
      const gap = fixed ? Math.min(2 + Math.floor(19 * rand() * rand()), Math.max(2, M - 3)) : 0;
      const breakAt = intIn(rand, 1, Math.max(1, M - 2 - gap));
      for (let i = 0; i < size; i++) {
        const t = blank(cls, `${cls === 'regressionFixed' ? 'billing' : 'legacy_import'}_${k}_${i}`);
        t.breakAtMain = breakAt;
        t.fixAtMain = fixed ? breakAt + gap : Infinity;
      }
      made += size;
      k++;
    }
  };
  incidents(quota(SHARE.regressionFixed), true, 'regressionFixed');
  incidents(quota(SHARE.regressionUnfixed), false, 'regressionUnfixed');
  const variants = ['utf8', 'latin1', 'utf16le', 'ascii', 'base64', 'hex'];
  for (let f = 0; f < quota(SHARE.brokenVariant); f++) {
    const size = intIn(rand, 3, 6);
    const brokenAt = Math.floor(rand() * size);
    const breakAt = intIn(rand, 1, Math.max(1, M - 3));
    const fixAt = rand() < 0.5 ? breakAt + intIn(rand, 2, 20) : Infinity;
    for (let v = 0; v < size; v++) {
      const t = blank(v === brokenAt ? 'brokenVariant' : 'stable', `decode_${f}[${variants[v]}]`);
      t.family = `decode_${f}`;
      if (v === brokenAt) {
        t.breakAtMain = breakAt;
        t.fixAtMain = fixAt;
      }
    }
  }
  for (let i = 0; i < quota(SHARE.skippedAfterBreak); i++) {
    const t = blank('skippedAfterBreak', `search_index_${i}`);
    t.breakAtMain = intIn(rand, 1, Math.max(1, M - 3));
    t.skipAfterFailures = intIn(rand, 1, 5);
  }
  // One-PR breaks: fixed on a later commit of that PR (which may merge), or the PR never merges.
  const fixable = sk.prs.filter((pr) => pr.commits >= 2);
  const unmerged = sk.prs.filter((pr) => pr.outcome !== 'merged');
  for (let i = 0; i < quota(SHARE.onePrBreak); i++) {
    const t = blank('onePrBreak', `feature_wip_${i}`);
    if (unmerged.length > 0 && (fixable.length === 0 || rand() < 0.4)) {
      const pr = pick(rand, unmerged);
      t.prBreak = { pr: pr.number, fromCommit: intIn(rand, 0, pr.commits - 1), toCommit: Infinity };
    } else if (fixable.length > 0) {
      const pr = pick(rand, fixable);
      const from = intIn(rand, 0, pr.commits - 2);
      t.prBreak = { pr: pr.number, fromCommit: from, toCommit: intIn(rand, from + 1, pr.commits - 1) };
    }
  }
  for (let i = 0; i < quota(SHARE.newTest); i++) blank('newTest', `new_endpoint_${i}`).addedAtMain = intIn(rand, 2, Math.max(2, M - 3));
  while (tests.length < n) blank('stable', `unit_${tests.length}`);
  return tests;
}

// ---------------------------------------------------------------------------------------------
// Behaviour: a function of the code version, plus each flake's own chance
// ---------------------------------------------------------------------------------------------

function shardOf(test: TestSpec, mainIdx: number): number {
  let shard = test.shardBase;
  for (const m of test.shardMoves) if (m.atMain <= mainIdx) shard = m.shard;
  return shard;
}

function codeBroken(test: TestSpec, code: CodeVersion): boolean {
  if (code.mainIdx >= test.breakAtMain && code.mainIdx < test.fixAtMain) return true;
  const b = test.prBreak;
  return b !== null && code.pr === b.pr && code.prCommitIdx >= b.fromCommit && code.prCommitIdx < b.toCommit;
}

function ownFailureChance(test: TestSpec, at: number, shardIndex: number | null): number {
  switch (test.truth) {
    case 'independent':
    case 'varyingMessages':
    case 'renamedWhileFlaky':
      return test.rate ?? 0;
    case 'shardOnly':
      return shardIndex !== null && shardIndex === test.badShard ? (test.rate ?? 0) : 0;
    case 'bursty':
      return test.bursts.some((b) => at >= b.from && at < b.to) ? BURST_FAIL_RATE : BURSTY_BASE_RATE;
    case 'timeOfDay': {
      const w = test.failHoursUtc!;
      const hour = new Date(at).getUTCHours();
      return (hour - w.from + 24) % 24 < w.length ? (test.rate ?? 0) : TIME_OF_DAY_BASE_RATE;
    }
    default:
      return 0;
  }
}

function ownErrorMessage(test: TestSpec, rand: Rand): string {
  switch (test.truth) {
    case 'varyingMessages':
      return pick(rand, [
        `TimeoutError: waited ${intIn(rand, 1000, 30000)}ms for "message" on ws://127.0.0.1:${intIn(rand, 30000, 60000)}`,
        `Error: socket hang up (ECONNRESET) after ${intIn(rand, 1, 9)} frames`,
        `AssertionError: expected ${intIn(rand, 1, 9)} reconnects, got ${intIn(rand, 10, 20)}`,
        `Error: Unexpected server response: ${pick(rand, [502, 503, 504])}`,
      ]);
    case 'bursty':
      return `FetchError: request to https://sandbox.payments.example/v2/charges failed, reason: ${pick(rand, ['ETIMEDOUT', 'ECONNRESET', '503 Service Unavailable'])}`;
    case 'timeOfDay':
      return `AssertionError: expected report for 2026-01-${intIn(rand, 10, 28)} to include today's entries`;
    case 'shardOnly':
      return `Error: fixture "db" already initialised by another test in this worker`;
    default:
      return `TimeoutError: locator.click: Timeout ${pick(rand, [5000, 10000, 15000])}ms exceeded`;
  }
}

const brokenMessage = (test: TestSpec): string => `AssertionError: expected ${test.name} to return "ok", got "error: invalid state"`;
const outageMessage = (rand: Rand): string => `Error: connect ECONNREFUSED 10.0.${intIn(rand, 0, 9)}.${intIn(rand, 2, 250)}:5432`;

// ---------------------------------------------------------------------------------------------
// Running the history
// ---------------------------------------------------------------------------------------------

const BIT_PASS = 1;
const BIT_OWN_FAIL = 2;

interface PendingPipeline {
  at: number;
  code: CodeVersion;
  rerun: number;
  /** Shards to run (null: all). */
  shards: number[] | null;
  id: string;
}

function generateProject(index: number, seed: number, opts: GeneratorOptions, profile: ProjectProfile): ProjectHistory {
  const rand = seededRandom(seed);
  const tests_n = Math.round(opts.testsPerProject * (0.92 + rand() * 0.16));
  const ciRunsWanted = Math.max(20, Math.round(opts.ciRunsPerProject + (rand() - 0.5) * 10));
  const utcOffset = pick(rand, [-8, -5, 0, 1, 2, 5.5, 9]);
  const startAt = HISTORY_START + index * 37 * MINUTE_MS;
  const sk = buildSkeleton(rand, Math.round(ciRunsWanted / (1 + EXPECTED_RERUN_SHARE)), startAt, utcOffset);
  const tests = buildPopulation(rand, index, tests_n, profile, sk);
  const truth = new Map<string, TestTruth>();
  const commitOutcomes = new Map<string, Map<string, number>>(); // test id → true sha → bits
  for (const t of tests) {
    truth.set(t.id, { gradedRuns: 0, ownFailureRuns: 0, secondOwnFailureRun: null, firstStrongEvidenceRun: null, passedOnRetryRuns: 0, outageFailureRuns: 0, brokenRuns: 0, skippedRuns: 0 });
    commitOutcomes.set(t.id, new Map());
  }

  const runs: RunRecord[] = [];
  const pending: PendingPipeline[] = [];
  let planned = 0;
  let lastAt = -Infinity;
  let ciRuns = 0;
  let reruns = 0;
  let outageRuns = 0;
  const shardCount = profile.shards > 0 ? profile.shards : null;

  while (planned < sk.pipelines.length || pending.length > 0) {
    // The earliest of the next push and the pending re-runs.
    pending.sort((a, b) => a.at - b.at);
    const next = sk.pipelines[planned];
    let p: PendingPipeline;
    if (next && (pending.length === 0 || next.at <= pending[0]!.at)) {
      p = { at: next.at, code: next.code, rerun: 0, shards: null, id: `p${index}-c${planned}` };
      planned++;
    } else p = pending.shift()!;
    const at = Math.max(p.at, lastAt + 5 * MINUTE_MS); // runs stay in time order, shards included
    lastAt = at;
    ciRuns++;
    if (p.rerun > 0) reruns++;
    const outage: Outage | null = rand() < OUTAGE_RUN_SHARE ? { intensity: 0.4 + rand() * 0.4, persistent: rand() < 0.5 } : null;
    if (outage) outageRuns++;
    const shards = shardCount === null ? [null] : (p.shards ?? Array.from({ length: shardCount }, (_, s) => s));
    const redShards: number[] = [];
    let red = false;
    for (const shard of shards) {
      const runAt = at + (shard ?? 0) * SHARD_GAP_MS;
      const run: RunRecord = {
        runId: `p${index}-r${runs.length}`,
        pipelineId: `${p.id}${p.rerun > 0 ? `-rerun${p.rerun}` : ''}`,
        ciRunId: p.id,
        project: index,
        at: runAt,
        code: p.code,
        commitSha: profile.placeholderCommit ? PLACEHOLDER_SHA : p.code.sha,
        mergeBase: profile.placeholderCommit ? null : p.code.mergeBase,
        trigger: p.code.pr === null ? 'push' : 'pull_request',
        rerun: p.rerun,
        shardIndex: shard,
        shardCount,
        outage,
        results: [],
      };
      let shardRed = false;
      for (const test of tests) {
        if (p.code.mainIdx < test.addedAtMain) continue; // not in this code
        if (shard !== null && shardOf(test, p.code.mainIdx) !== shard) continue;
        const tr = truth.get(test.id)!;
        if (test.skipped || rand() < RANDOM_SKIP_RATE) {
          run.results.push({ test, attempts: ['skip'], errors: [null], codeBroken: false });
          tr.skippedRuns++;
          continue;
        }
        const broken = codeBroken(test, p.code);
        const victim = outage !== null && rand() < outage.intensity;
        const attempts: AttemptStatus[] = [];
        const errors: (string | null)[] = [];
        let ownFailed = false;
        let envOnly = false;
        for (let a = 0; a <= profile.retries; a++) {
          const own = !broken && rand() < ownFailureChance(test, runAt + a * RETRY_GAP_MS, shard);
          const env = victim && (a === 0 || outage?.persistent === true);
          const fail = broken || own || env;
          attempts.push(fail ? 'fail' : 'pass');
          errors.push(broken ? brokenMessage(test) : own ? ownErrorMessage(test, rand) : env ? outageMessage(rand) : null);
          if (own) ownFailed = true;
          else if (env && !broken) envOnly = true;
          if (!fail) break;
        }
        run.results.push({ test, attempts, errors, codeBroken: broken });
        const finalFail = attempts[attempts.length - 1] === 'fail';
        if (finalFail) shardRed = true;

        // Truth events.
        tr.gradedRuns++;
        if (broken) {
          tr.brokenRuns++;
          if (test.truth === 'skippedAfterBreak' && tr.brokenRuns >= test.skipAfterFailures) test.skipped = true;
        }
        if (envOnly && !ownFailed && !broken) tr.outageFailureRuns++;
        const ownOutsideOutage = ownFailed && outage === null;
        const passed = attempts.includes('pass');
        const retryRecovered = ownOutsideOutage && passed;
        if (ownFailed && passed) tr.passedOnRetryRuns++;
        if (ownOutsideOutage) {
          tr.ownFailureRuns++;
          if (tr.ownFailureRuns === 2) tr.secondOwnFailureRun = tr.gradedRuns;
        }
        const outcomes = commitOutcomes.get(test.id)!;
        const prev = outcomes.get(p.code.sha) ?? 0;
        const sameCodeFlip = ((prev & BIT_OWN_FAIL) !== 0 && passed) || ((prev & BIT_PASS) !== 0 && ownOutsideOutage);
        if (tr.firstStrongEvidenceRun === null && (retryRecovered || sameCodeFlip)) tr.firstStrongEvidenceRun = tr.gradedRuns;
        outcomes.set(p.code.sha, prev | (passed ? BIT_PASS : 0) | (ownOutsideOutage ? BIT_OWN_FAIL : 0));
      }
      runs.push(run);
      if (shardRed && shard !== null) redShards.push(shard);
      red ||= shardRed;
    }
    // People re-run red builds (often), green ones (rarely).
    const chance = red ? (p.code.pr === null ? RERUN_AFTER_RED.main : RERUN_AFTER_RED.pr) : RERUN_AFTER_GREEN;
    if (p.rerun < MAX_RERUNS && rand() < chance) {
      const failedOnly = red && shardCount !== null && rand() < RERUN_FAILED_SHARDS_ONLY;
      pending.push({ at: at + (0.2 + rand() * 2.8) * HOUR_MS, code: p.code, rerun: p.rerun + 1, shards: failedOnly ? redShards : p.shards, id: p.id });
    }
  }

  const firstAt = runs[0]?.at ?? startAt;
  return {
    index,
    profile,
    tests,
    truth,
    runs,
    stats: {
      tests: tests.length,
      ciRuns,
      runIds: runs.length,
      reruns,
      outageRuns,
      mainCommits: sk.mainCommits.length,
      prs: {
        opened: sk.prs.length,
        merged: sk.prs.filter((p) => p.outcome === 'merged').length,
        abandoned: sk.prs.filter((p) => p.outcome === 'abandoned').length,
        open: sk.prs.filter((p) => p.outcome === 'open').length,
        mainMergedIn: sk.mergesOfMain,
      },
      days: Math.round(((lastAt - firstAt) / DAY_MS) * 10) / 10,
    },
  };
}

/** Every project's history; each project has its own seeded stream, so projects do not shift each other. */
export function generateHistories(opts: GeneratorOptions): ProjectHistory[] {
  const master = seededRandom(opts.seed);
  const profiles = opts.placeholderProject ? PROFILES : PROFILES.filter((p) => !p.placeholderCommit);
  const out: ProjectHistory[] = [];
  for (let p = 0; p < opts.projects; p++) {
    const projectSeed = Math.floor(master() * 4_294_967_296);
    out.push(generateProject(p, projectSeed, opts, profiles[p % profiles.length]!));
  }
  return out;
}
