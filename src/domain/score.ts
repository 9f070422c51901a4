// Flakiness model (docs/data-model.md "The flakiness model"), pure: no I/O, no clock.
//
// Per test we keep a small, JSON-serialisable state that is updated once per run the test takes
// part in (`applyObservation`, O(1) whatever the history length) and read with `scoreOf`.
//
// Evidence is judged by code version. A failure is strong evidence of flakiness only against a pass
// of the same code: a retry within the run (PASS_ON_RERUN), another run of the same commit — a
// re-run, another shard or matrix cell (SAME_SHA_VARIANCE). Different outcomes on different commits
// are weak evidence, and only along one branch's own history (FAIL_ISOLATION: failed on one commit,
// passed on the next, with passes before); passes on another branch are no evidence at all (a PR
// branch forked before a break does not contain it). A single flip across commits never makes a
// candidate; such flips that recur do. A failure streak on a branch's own history is `broken`.
//
// Each test has a state: `new` (fewer than minSamples graded executions), `healthy`, `flaky` (the
// only state that can be a quarantine candidate), `broken` (failing on its mainline since commit X)
// and `fixed` (was broken or flaky; passing since commit Y). A test enters `flaky` when its score
// reaches the threshold, and leaves it only when the clean runs since its last flake would be
// improbable at its own flake rate (fixed), or when it breaks.
//
// Score: L = STRONG_L·(rerun + sameSha) + ISOLATION_L·isolation − counter, score = 1 − e^(−L)
// (noisy-OR), × BROKEN_DAMPING while broken. `counter` = k·(−ln(1 − f)): the log-likelihood of the
// k clean passes since the last flaky sign if the test still flaked at its rate f.
import {
  BASE_MEMORY,
  BROKEN_DAMPING,
  BROKEN_P,
  COMMIT_MEMORY,
  EPISODE_WEIGHTS,
  EVIDENCE_CAP,
  FIXED_HOLD_MS,
  FIXED_P,
  HALF_LIFE_MS,
  ISOLATION_L,
  PLACEHOLDER_SHA,
  RATE_MAX,
  RATE_MIN,
  RATE_PRIOR_FLAKY,
  RATE_PRIOR_RUNS,
  RING_SIZE,
  RUN_ID_MEMORY,
  SIDE_BRANCH_FACTOR,
  STABLE_BRANCH,
  STRONG_L,
  TREND_FALLING,
  TREND_HALF_LIFE_MS,
  TREND_MIN_EVIDENCE,
  TREND_RISING,
} from './score/constants.js';
import { commitKey, mainlineFailing, olderThanHead, recordFailure, recordGreen, referenceTracks, trackOf, type BranchTrack } from './score/lineage.js';
import { brokenReason, evidenceTerms, instabilityReason, type Reason } from './score/reasons.js';
import { runOutcome, type Attempt } from './score/run-outcome.js';

export { REASON_CODES, type ReasonCode, type Reason } from './score/reasons.js';
export { envWeight } from './score/run-outcome.js';
export type { BranchTrack } from './score/lineage.js';

// The states are the client's contract too (the PR answers carry them).
import type { TestState } from '../../client/src/contract/test-states.js';
export { TEST_STATES, type TestState } from '../../client/src/contract/test-states.js';

/** Where a state began: the commit (and branch) of the run it began with. */
export interface StateSince {
  commitSha: string;
  branch: string;
  at: number;
}

/** One test's outcome in one run (all its attempts in that run, in order), and the run's context. */
export interface Observation {
  runId: string;
  commitSha: string; // '0000000' is a placeholder: never same-code evidence
  /**
   * The CI run it belongs to, `provider:id`, an id its re-runs keep (GitHub's run id, GitLab's
   * pipeline, Buildkite's build; or one the reporter was given). Without a commit, runs of the same
   * CI run are the same code: a re-run, shard or matrix cell of it is same-code evidence.
   */
  ciRunKey?: string | null;
  branch: string;
  /** The run's pull request: its branch is a side branch, whatever its name. */
  prNumber?: number | null;
  /** The branch the pull request merges into (learned as a mainline branch). */
  baseBranch?: string | null;
  /** The commit the branch forked from (`git merge-base`), when the reporter sent it. */
  mergeBase?: string | null;
  at: number; // epoch ms of the run
  attempts: Attempt[];
  /** Share of the run's tests (final status) that failed: high = outage / broken build, weak evidence. */
  runFailRatio: number;
  runTestCount: number;
  /**
   * Optional: share of the run's tests that failed and then passed on a retry (final status
   * `flaky`). With it, an outage that retries papered over (many first attempts failed, few final
   * ones) is still recognised; absent = 0.
   */
  runFlakyRatio?: number;
  /**
   * `flakehouse run --verify-fix` re-ran the test in this run (attempts marked `flakehouse.verify:
   * fix`, part of `attempts`) and every re-run passed: a verified fix. Absent = none.
   */
  verifiedFix?: boolean;
}

export interface ScoreParams {
  threshold: number;
  minSamples: number;
}

export const DEFAULT_SCORE_PARAMS: ScoreParams = { threshold: 0.8, minSamples: 5 };

/** Commit memory bits. */
const BIT_PASS = 1;
const BIT_FAIL = 2;
const BIT_MIXED = 4; // variance on this commit already counted (once per commit)

export const SCORE_STATE_VERSION = 2;

/**
 * Bounded, JSON-serialisable model state. Its size does not depend on the history length: a few
 * decayed sums, the last RING_SIZE run letters, the last COMMIT_MEMORY commits, the last
 * RUN_ID_MEMORY run ids, the last BRANCH_MEMORY branches' own histories.
 */
export interface ScoreState {
  v: typeof SCORE_STATE_VERSION;
  /** Time the decayed sums refer to (ms), null before the first graded observation. */
  at: number | null;
  /** Graded executions ever (skips excluded). */
  samples: number;
  /** Decayed, capped flaky evidence (half-life 30 days). */
  rerun: number;
  sameSha: number;
  isolation: number;
  /** Decayed runs where the first attempt failed and the test was retried / recovered on retry. */
  retried: number;
  recovered: number;
  /** Decayed runs with a flaky sign and graded runs outside outages: the flake rate. */
  flakyRuns: number;
  gradedRuns: number;
  /** Decayed flaky signs, fast (3.5 d) and slow (30 d) half-life: the trend. */
  trendFast: number;
  trendSlow: number;
  /** Clean first-attempt passes since the last flaky sign, and the first of them. */
  cleanSince: number;
  cleanFrom: StateSince | null;
  /** Last RING_SIZE run letters, oldest first (RunLetter). */
  ring: string;
  /** Last COMMIT_MEMORY commits seen, most recent last: [sha, bits, first seen (ms)]. */
  commits: [string, number, number?][];
  /** Last RUN_ID_MEMORY run ids applied (idempotency). */
  runIds: string[];
  /** Each recent branch's own history. */
  tracks: BranchTrack[];
  /** Branches pull requests were seen merging into: mainline when pushed to. */
  bases: string[];
  lastFlakedAt: number | null;
  /** Counts behind the evidence since it began (a proven fix starts them over), for the reasons. */
  events: { rerun: number; sameSha: number; isolation: number; runs: number };
  state: TestState;
  since: StateSince | null;
  /** The threshold in force when it became flaky: raising it past its score takes it out again. */
  flakyThreshold: number | null;
  /**
   * A fix `--verify-fix` verified while the test was flaky, not yet on a mainline branch: the first
   * clean mainline run of code first seen after it is the merge, and makes the test `fixed`.
   */
  fixPending?: StateSince | null;
  /**
   * When a verified fix made it `fixed`: from then on only same-code evidence (a retry passing, a
   * commit both passing and failing) makes it flaky again, never failures across commits alone.
   */
  verifiedFixAt?: number | null;
}

export interface ScoreResult {
  score: number; // [0,1]
  reasons: Reason[]; // strongest first; STABLE alone when nothing else
  samples: number; // graded executions (skips are not samples)
  flipRate: number;
  passOnRerunRate: number;
  trend: 'rising' | 'falling' | 'stable';
  lastFlakedAt: number | null; // epoch ms of the last flaky evidence
  state: TestState;
  /** Where the state began (broken: the first failing commit; fixed: the first passing one). */
  stateSince: StateSince | null;
  /** Estimated share of its runs in which the test flakes (0..1). */
  flakeRate: number;
  candidate: boolean; // state === 'flaky': the one predicate for board, badge, gate and events
  broken: boolean; // state === 'broken'
}

/** The one predicate for "a quarantine candidate" (board, badge, gate, events). */
export function isCandidate(state: TestState): boolean {
  return state === 'flaky';
}

/** One frozen empty list for every state without bases (most): `bases` is only ever replaced. */
const NO_BASES = Object.freeze([]) as readonly string[] as string[];

export function emptyScoreState(): ScoreState {
  return {
    v: SCORE_STATE_VERSION,
    at: null,
    samples: 0,
    rerun: 0,
    sameSha: 0,
    isolation: 0,
    retried: 0,
    recovered: 0,
    flakyRuns: 0,
    gradedRuns: 0,
    trendFast: 0,
    trendSlow: 0,
    cleanSince: 0,
    cleanFrom: null,
    ring: '',
    commits: [],
    runIds: [],
    tracks: [],
    bases: NO_BASES,
    lastFlakedAt: null,
    events: { rerun: 0, sameSha: 0, isolation: 0, runs: 0 },
    state: 'new',
    since: null,
    flakyThreshold: null,
    fixPending: null,
    verifiedFixAt: null,
  };
}

const decayFactor = (dtMs: number, halfLifeMs: number): number => (dtMs <= 0 ? 1 : Math.pow(2, -dtMs / halfLifeMs));
const clamp01 = (x: number): number => (x < 0 ? 0 : x > 1 ? 1 : x);
const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;

/** The first model's state (before test states), as stored by databases written then. */
interface ScoreStateV1 {
  v: 1;
  at: number | null;
  samples: number;
  rerun: number;
  sameSha: number;
  retried: number;
  recovered: number;
  ring: string;
  commits: [string, number][];
  runIds: string[];
  lastFlakedAt: number | null;
  events: { rerun: number; sameSha: number };
}

/**
 * A state of the first model keeps its same-code evidence (retries, same-commit variance), its
 * commits and ring; its cross-commit evidence is dropped (it mixed branches, which is what called
 * regressions flaky) and branch histories start now. A test flaky on same-code evidence is flaky
 * again at its next run.
 */
function upgradeV1(old: ScoreStateV1): ScoreState {
  const s = emptyScoreState();
  const ring = typeof old.ring === 'string' ? old.ring : '';
  const graded = [...ring].filter((c) => c !== 'O').length;
  return {
    ...s,
    at: old.at ?? null,
    samples: Number(old.samples) || 0,
    rerun: Number(old.rerun) || 0,
    sameSha: Number(old.sameSha) || 0,
    retried: Number(old.retried) || 0,
    recovered: Number(old.recovered) || 0,
    flakyRuns: [...ring].filter((c) => c === 'R').length,
    gradedRuns: graded,
    ring,
    commits: Array.isArray(old.commits) ? old.commits.map(([sha, bits]) => [sha, bits] as [string, number, number?]) : [],
    runIds: Array.isArray(old.runIds) ? [...old.runIds] : [],
    lastFlakedAt: old.lastFlakedAt ?? null,
    events: { rerun: old.events?.rerun ?? 0, sameSha: old.events?.sameSha ?? 0, isolation: 0, runs: graded },
    state: (Number(old.samples) || 0) > 0 ? 'healthy' : 'new',
  };
}

/** A stored state of another version (or damaged) starts over rather than misleading the model. */
function usable(state: ScoreState | ScoreStateV1 | null | undefined): ScoreState {
  if (state && state.v === 1 && typeof state.ring === 'string') return upgradeV1(state);
  if (!(state && state.v === SCORE_STATE_VERSION && typeof state.ring === 'string' && Array.isArray(state.commits) && Array.isArray(state.tracks))) return emptyScoreState();
  if (state.flakyThreshold === undefined || state.fixPending === undefined || state.verifiedFixAt === undefined) {
    return { ...state, flakyThreshold: state.flakyThreshold ?? null, fixPending: state.fixPending ?? null, verifiedFixAt: state.verifiedFixAt ?? null };
  }
  return state;
}

/** Share of its graded runs in which the test flakes, shrunk towards a prior (decayed sums). */
export function flakeRateOf(s: Pick<ScoreState, 'flakyRuns' | 'gradedRuns'>): number {
  const rate = (s.flakyRuns + RATE_PRIOR_FLAKY) / (s.gradedRuns + RATE_PRIOR_RUNS);
  return Math.min(RATE_MAX, Math.max(RATE_MIN, rate));
}

/**
 * What the gate weighs of a test's flakiness (client/src/contract/gate.ts flakeProof): its flaky events and
 * graded runs since its evidence began, and the decayed sums its rate comes from.
 */
export function flakeEvidenceOf(stored: ScoreState): { events: number; runs: number; flakyRuns: number; gradedRuns: number } {
  const s = usable(stored);
  return { events: s.events.rerun + s.events.sameSha + s.events.isolation, runs: s.events.runs, flakyRuns: s.flakyRuns, gradedRuns: s.gradedRuns };
}

/** L of the flaky evidence at the sums' own time, less the clean runs since the last flaky sign. */
function evidenceL(s: ScoreState, decay: number, rate: number): number {
  const l = STRONG_L * (s.rerun + s.sameSha) * decay + ISOLATION_L * s.isolation * decay;
  return l > 0 && s.cleanSince > 0 ? l - s.cleanSince * -Math.log(1 - rate) : l;
}

/** The reference branch failing in a way that is a break, not a flake (see BROKEN_P). */
function brokenTrack(s: ScoreState, knownFlaky: boolean, rate: number): BranchTrack | null {
  let worst: BranchTrack | null = null;
  for (const t of referenceTracks(s.tracks)) {
    if (t.streak === 0 || t.inherited) continue;
    if (knownFlaky && Math.pow(rate, t.streakAttempts) >= BROKEN_P) continue;
    if (!worst || (t.since?.at ?? 0) < (worst.since?.at ?? 0)) worst = t;
  }
  return worst;
}

/**
 * The code key of a run that sent no commit: its CI run, hashed to 12 characters that start with
 * `r` (never hex, so never a commit's); '' without one. Hashed so the state stays small.
 */
export function runCodeKey(ciRunKey: string | null | undefined): string {
  const k = String(ciRunKey ?? '').trim();
  if (k === '') return '';
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x85ebca6b) >>> 0;
  }
  return `r${a.toString(16).padStart(8, '0')}${b.toString(16).padStart(8, '0').slice(0, 3)}`;
}

/** A code key as a state shows it: a CI run's key is no commit anyone could look up. */
const shownSha = (sha: string): string => (sha.startsWith('r') ? '' : sha);

function normalSha(sha: string | undefined): string {
  const s = String(sha ?? '').trim().toLowerCase();
  return s === '' || PLACEHOLDER_SHA.test(s) ? '' : s;
}

const sameCommitKey = (a: string, b: string): boolean => a !== '' && b !== '' && (a.startsWith(b) || b.startsWith(a));

/**
 * The copy of a state that applyObservation (and nextState) then change in place: every field
 * written out, so every copy has one shape (a spread of states of several shapes is slower), and
 * the lists it changes copied. `bases` is only ever replaced, never changed in place.
 */
function ownCopy(state: ScoreState): ScoreState {
  const copy: Required<ScoreState> = {
    v: state.v,
    at: state.at,
    samples: state.samples,
    rerun: state.rerun,
    sameSha: state.sameSha,
    isolation: state.isolation,
    retried: state.retried,
    recovered: state.recovered,
    flakyRuns: state.flakyRuns,
    gradedRuns: state.gradedRuns,
    trendFast: state.trendFast,
    trendSlow: state.trendSlow,
    cleanSince: state.cleanSince,
    cleanFrom: state.cleanFrom,
    ring: state.ring,
    commits: state.commits.slice(),
    runIds: state.runIds,
    tracks: state.tracks.slice(),
    bases: state.bases,
    lastFlakedAt: state.lastFlakedAt,
    events: { rerun: state.events.rerun, sameSha: state.events.sameSha, isolation: state.events.isolation, runs: state.events.runs },
    state: state.state,
    since: state.since,
    flakyThreshold: state.flakyThreshold,
    fixPending: state.fixPending ?? null,
    verifiedFixAt: state.verifiedFixAt ?? null,
  };
  return copy;
}

/**
 * O(1) in history length. Idempotent per runId (the last RUN_ID_MEMORY run ids are kept). Runs are
 * expected in time order; a late run still counts as evidence, at its own age, but does not rewrite
 * its branch's history.
 */
export function applyObservation(stored: ScoreState, obs: Observation, params: ScoreParams = DEFAULT_SCORE_PARAMS): ScoreState {
  const state = usable(stored);
  if (state.runIds.includes(obs.runId)) return state;
  const s = ownCopy(state);
  s.runIds = state.runIds.concat(obs.runId).slice(-RUN_ID_MEMORY);
  const run = runOutcome(obs.attempts, obs.runFailRatio, obs.runFlakyRatio, obs.runTestCount);
  if (run === null) return s; // a skip is not a sample and says nothing; evidence ages by time alone

  // Bring the decayed sums to this run (a late, out-of-order run is added at its own age instead).
  let w = 1;
  let wFast = 1;
  if (s.at === null || obs.at >= s.at) {
    const f = s.at === null ? 1 : decayFactor(obs.at - s.at, HALF_LIFE_MS);
    const ff = s.at === null ? 1 : decayFactor(obs.at - s.at, TREND_HALF_LIFE_MS);
    s.rerun *= f;
    s.sameSha *= f;
    s.isolation *= f;
    s.retried *= f;
    s.recovered *= f;
    s.flakyRuns *= f;
    s.gradedRuns *= f;
    s.trendSlow *= f;
    s.trendFast *= ff;
    s.at = obs.at;
  } else {
    w = decayFactor(s.at - obs.at, HALF_LIFE_MS);
    wFast = decayFactor(s.at - obs.at, TREND_HALF_LIFE_MS);
  }
  s.samples += run.graded.length;
  const { letter, graded, env, recovered } = run;
  if (letter !== 'O') {
    s.gradedRuns += w;
    s.events.runs++;
  }

  let flakySign = 0; // weight of the flaky evidence this run brings (for the trend)
  let flakyRuns = 0; // runs it shows flaking (for the rate)

  // PASS_ON_RERUN: failed, then passed, on the same code in the same run.
  const firstRed = graded[0] !== 'pass';
  if (firstRed && graded.length > 1) s.retried += w;
  if (recovered) {
    if (firstRed || graded.includes('flaky')) s.recovered += w;
    if (!(firstRed && graded.length > 1) && graded.includes('flaky')) s.retried += w;
    s.rerun = Math.min(EVIDENCE_CAP, s.rerun + env * w);
    if (env > 0) s.events.rerun++;
    flakySign = Math.max(flakySign, env);
    flakyRuns = 1;
  }

  // SAME_SHA_VARIANCE across runs of one commit (a re-run, another shard or matrix cell).
  // Without a commit, the CI run stands in for it (its re-runs and shards test the same code).
  const commit = normalSha(obs.commitSha);
  const sha = commit !== '' ? commit : runCodeKey(obs.ciRunKey);
  const key = commitKey(sha);
  let failedOnPassedCommit = false;
  /** When this commit was first seen (null: new), to tell a re-run of older code from the branch's head. */
  let firstSeen: number | null = null;
  if (sha !== '') {
    const cleanFail = letter !== 'O' && !run.anyGreen;
    const bits = (run.anyGreen ? BIT_PASS : 0) | (cleanFail ? BIT_FAIL : 0);
    const idx = s.commits.findIndex((commit) => sameCommitKey(commit[0], key));
    let prev = 0;
    if (idx >= 0) {
      prev = s.commits[idx]![1];
      firstSeen = s.commits[idx]![2] ?? null;
      s.commits.splice(idx, 1);
    }
    failedOnPassedCommit = cleanFail && (prev & BIT_PASS) !== 0;
    let next = prev | bits;
    if (!(prev & BIT_MIXED) && next & BIT_PASS && next & BIT_FAIL) {
      next |= BIT_MIXED;
      // Within one run it is a pass-on-rerun (counted above); across runs it is same-commit variance.
      const acrossRuns = ((prev & BIT_PASS) !== 0 && cleanFail) || ((prev & BIT_FAIL) !== 0 && run.anyGreen);
      if (acrossRuns && !recovered) {
        const weight = cleanFail ? env : 1;
        s.sameSha = Math.min(EVIDENCE_CAP, s.sameSha + weight * w);
        if (weight > 0) s.events.sameSha++;
        flakySign = Math.max(flakySign, weight);
        flakyRuns = 1;
      }
    }
    s.commits.push([key, next, Math.min(firstSeen ?? obs.at, obs.at)]);
    // A copy of exactly its length: a pushed-to array keeps ~16 spare slots, and states are kept.
    s.commits = s.commits.slice(-COMMIT_MEMORY);
  }

  // The branch's own history (outage runs say nothing; a late run does not rewrite it).
  const pr = typeof obs.prNumber === 'number' && obs.prNumber > 0;
  const branch = String(obs.branch ?? '').trim();
  const base = String(obs.baseBranch ?? '').trim();
  if (pr && base !== '' && base !== branch && !s.bases.includes(base)) s.bases = [...s.bases, base].slice(-BASE_MEMORY);
  const mainline = !pr && (STABLE_BRANCH.test(branch) || s.bases.includes(branch));
  if (letter !== 'O') {
    const fresh = !s.tracks.some((t) => t.branch === branch);
    const t = trackOf(s.tracks, branch, mainline, pr, obs.at);
    if (fresh) {
      s.tracks = s.tracks.slice(); // exactly its length, as commits
      // A branch's history begins where it forked: a fork commit the test passed on is a pass before.
      const forkedFrom = commitKey(normalSha(obs.mergeBase ?? undefined));
      const fork = forkedFrom === '' ? undefined : s.commits.find((commit) => sameCommitKey(commit[0], forkedFrom));
      t.green = fork !== undefined && (fork[1] & BIT_PASS) !== 0;
    }
    // A re-run of an older commit says nothing about the code the branch runs now: it neither
    // fixes nor extends a failure streak (a re-run of the streak's own commit is same-code evidence).
    const seenAt = firstSeen ?? obs.at;
    const olderCode = olderThanHead(t, key, seenAt) && !sameCommitKey(key, commitKey(t.since?.sha ?? ''));
    if (obs.at >= t.at && !olderCode) {
      if (letter === 'F') {
        // A failure of a commit that already passed is a flake of that commit (counted above), not a break.
        if (!failedOnPassedCommit) recordFailure(t, sha, obs.at, seenAt, run.failedAttempts, !t.mainline && mainlineFailing(s.tracks));
      } else {
        const closed = recordGreen(t, sha, obs.at, seenAt);
        // FAIL_ISOLATION: a failure episode between passes of this branch, ended by another commit.
        if (closed && closed.isolated && !closed.sameCode && !closed.inherited) {
          const weight = (EPISODE_WEIGHTS[closed.commits] ?? 0) * (t.mainline ? 1 : SIDE_BRANCH_FACTOR);
          if (weight > 0) {
            s.isolation = Math.min(EVIDENCE_CAP, s.isolation + weight * w);
            s.events.isolation++;
            flakySign = Math.max(flakySign, weight);
            flakyRuns = Math.max(flakyRuns, closed.runs);
          }
        }
      }
    }
  }

  s.flakyRuns = Math.min(s.gradedRuns, s.flakyRuns + flakyRuns * w);
  const here = sinceOf(commit, branch, obs.at);
  if (flakySign > 0) {
    s.trendSlow += flakySign * w;
    s.trendFast += flakySign * wFast;
    s.cleanSince = 0;
    s.cleanFrom = null;
    s.lastFlakedAt = Math.max(s.lastFlakedAt ?? 0, obs.at);
  } else if (letter === 'P') {
    s.cleanSince++;
    s.cleanFrom ??= here;
  } else if (letter !== 'O') {
    s.cleanSince = 0;
    s.cleanFrom = null;
  }
  s.ring = (s.ring + letter).slice(-RING_SIZE);
  const next = nextState(s, here, params);
  return verifiedFixStep(next, obs, here, letter, mainline, flakySign > 0, firstSeen);
}

/**
 * Where a run puts a state that begins with it, one frozen object for every test of the run: each
 * state kept in memory held its own (~48 B, ~5 MB for 100,000 tests).
 */
function sinceOf(commitSha: string, branch: string, at: number): StateSince {
  const last = lastSince;
  if (last !== null && last.at === at && last.commitSha === commitSha && last.branch === branch) return last;
  lastSince = Object.freeze({ commitSha, branch, at });
  return lastSince;
}
let lastSince: Readonly<StateSince> | null = null;

/**
 * A fix `--verify-fix` proved (every re-run passed) on a flaky test waits for its merge: the first
 * clean run on a mainline branch of code first seen after the verification makes the test `fixed`
 * there, its evidence paid off (a verification on the mainline itself is the merge). A new flake
 * before that cancels it (the fix did not hold).
 */
function verifiedFixStep(s: ScoreState, obs: Observation, here: StateSince, letter: string, mainline: boolean, flaked: boolean, firstSeen: number | null): ScoreState {
  if (flaked && s.fixPending) return { ...s, fixPending: null };
  if (obs.verifiedFix && s.state === 'flaky' && letter !== 'O' && !flaked) {
    if (!mainline) return { ...s, fixPending: here };
    return fixedByVerification(s, here);
  }
  const pending = s.fixPending;
  if (!pending || s.state !== 'flaky' || !mainline || letter !== 'P') return s;
  // A re-run of code older than the verification is not the fix landing.
  if ((firstSeen ?? obs.at) < pending.at) return s;
  return fixedByVerification(s, here);
}

function fixedByVerification(s: ScoreState, here: StateSince): ScoreState {
  return {
    ...s,
    rerun: 0,
    sameSha: 0,
    isolation: 0,
    trendFast: 0,
    trendSlow: 0,
    events: { rerun: 0, sameSha: 0, isolation: 0, runs: 0 },
    state: 'fixed',
    since: here,
    flakyThreshold: null,
    fixPending: null,
    verifiedFixAt: here.at,
  };
}

/**
 * The state machine: where the test stands after this run (see the file header). It changes `s`
 * in place: applyObservation's own copy (ownCopy), so no second copy of the whole state per run.
 */
function nextState(s: ScoreState, here: StateSince, params: ScoreParams): ScoreState {
  const prev = s.state;
  const rate = flakeRateOf(s);
  const broken = brokenTrack(s, prev === 'flaky', rate);
  if (broken) {
    const since = { commitSha: shownSha(broken.since?.sha ?? ''), branch: broken.branch, at: broken.since?.at ?? here.at };
    return Object.assign(s, { state: 'broken', since });
  }
  const l = evidenceL(s, 1, rate);
  const score = l > 0 ? 1 - Math.exp(-l) : 0;
  // A person raised the threshold past its score since it became flaky: no longer called flaky.
  const raised = prev === 'flaky' && s.flakyThreshold !== null && params.threshold > s.flakyThreshold && score < params.threshold;
  if (prev === 'flaky' && !raised) {
    // Fixed once k clean runs would be improbable (< FIXED_P) if it still flaked at its rate.
    const proven = s.cleanSince > 0 && s.cleanSince * -Math.log(1 - rate) >= Math.log(1 / FIXED_P);
    if (!proven) return s;
    // The old evidence is paid off: a new flake starts a new case.
    return Object.assign(s, {
      rerun: 0,
      sameSha: 0,
      isolation: 0,
      events: { rerun: 0, sameSha: 0, isolation: 0, runs: 0 },
      state: 'fixed',
      since: s.cleanFrom ?? here,
      flakyThreshold: null,
    });
  }
  // After a verified fix, only same-code evidence makes it flaky again (never cross-commit failures alone).
  const sameCodeSinceFix = s.verifiedFixAt == null || s.events.rerun + s.events.sameSha > 0;
  if (score >= params.threshold && s.samples >= params.minSamples && sameCodeSinceFix) return Object.assign(s, { state: 'flaky', since: here, flakyThreshold: params.threshold });
  if (prev === 'broken') {
    const fix = s.tracks.find((t) => t.branch === s.since?.branch)?.fixed;
    if (fix) return Object.assign(s, { state: 'fixed', since: { commitSha: shownSha(fix.sha), branch: s.since!.branch, at: fix.at } });
  }
  if (prev === 'fixed' && s.since && here.at - s.since.at < FIXED_HOLD_MS) return s;
  if (s.samples < params.minSamples) {
    if (!(prev === 'new' && s.since)) s.since = here;
    s.state = 'new';
    return s;
  }
  if (prev !== 'healthy') s.since = here;
  s.state = 'healthy';
  s.flakyThreshold = null;
  return s;
}

/** First-attempt pattern over the ring (outage runs left out). */
function patterns(ring: string): { n: number; flips: number } {
  let n = 0;
  let flips = 0;
  let prevRed: boolean | null = null;
  for (const c of ring) {
    if (c === 'O') continue;
    const red = c !== 'P';
    n++;
    if (prevRed !== null && prevRed !== red) flips++;
    prevRed = red;
  }
  return { n, flips };
}

/**
 * A stable test's reasons, the same for every test with as many executions: shared, and frozen so
 * that no holder can change them for the others. Most tests are stable, and a state kept in memory
 * held its own array, object and message (~300 B each, ~30 MB for 100,000 tests).
 */
function stableReasons(samples: number): Reason[] {
  let reasons = STABLE_REASONS.get(samples);
  if (reasons === undefined) {
    if (STABLE_REASONS.size >= STABLE_REASONS_KEPT) STABLE_REASONS.clear();
    reasons = Object.freeze([Object.freeze({ code: 'STABLE', message: `no sign of flakiness across ${samples} execution(s)` } as const)]) as Reason[];
    STABLE_REASONS.set(samples, reasons);
  }
  return reasons;
}
const STABLE_REASONS_KEPT = 1024;
const STABLE_REASONS = new Map<number, Reason[]>();

export function scoreOf(stored: ScoreState, now: number, params: ScoreParams = DEFAULT_SCORE_PARAMS): ScoreResult {
  void params; // the state machine applied them with each run
  const s = usable(stored);
  const dt = s.at === null ? 0 : now - s.at;
  const decay = decayFactor(dt, HALF_LIFE_MS);
  const rate = flakeRateOf(s);
  const l = evidenceL(s, decay, rate);
  let score = l > 0 ? 1 - Math.exp(-l) : 0;
  const state: TestState = s.state === 'fixed' && s.since && now - s.since.at >= FIXED_HOLD_MS ? 'healthy' : s.state;
  const broken = state === 'broken' ? (s.tracks.find((t) => t.branch === s.since?.branch && t.streak > 0) ?? null) : null;
  if (state === 'broken') score *= BROKEN_DAMPING;
  score = round4(clamp01(score));

  let reasons: Reason[] = evidenceTerms({ rerun: s.rerun * decay, sameSha: s.sameSha * decay, isolation: s.isolation * decay, events: s.events }).map(({ code, message }) => ({ code, message }));
  if (broken) reasons.unshift(brokenReason(broken));
  else {
    const instability = instabilityReason(s.ring);
    if (instability) reasons.push(instability);
  }
  if (reasons.length === 0) {
    const since = s.state === 'fixed' && s.since ? `, passing since ${s.since.commitSha === '' ? 'its fix' : s.since.commitSha.slice(0, 7)}` : '';
    reasons = since === '' ? stableReasons(s.samples) : [{ code: 'STABLE', message: `no sign of flakiness across ${s.samples} execution(s)${since}` }];
  }

  const slow = s.trendSlow * decay;
  const fast = s.trendFast * decayFactor(dt, TREND_HALF_LIFE_MS);
  let trend: ScoreResult['trend'] = 'stable';
  if (slow >= TREND_MIN_EVIDENCE) {
    const ratio = fast / slow;
    if (ratio > TREND_RISING) trend = 'rising';
    else if (ratio < TREND_FALLING) trend = 'falling';
  }
  const { n, flips } = patterns(s.ring);

  return {
    score,
    reasons,
    samples: s.samples,
    flipRate: round4(n >= 2 ? flips / (n - 1) : 0),
    passOnRerunRate: round4(s.retried > 0 ? Math.min(1, s.recovered / s.retried) : 0),
    trend,
    lastFlakedAt: s.lastFlakedAt,
    state,
    stateSince: state === 'healthy' ? null : s.since,
    flakeRate: round4(s.flakyRuns > 0 ? rate : 0),
    candidate: isCandidate(state),
    broken: state === 'broken',
  };
}
