// Flakiness scoring model (docs/architecture.md "Identity, scoring, clustering"), pure: no I/O, no clock.
//
// Per test we keep a small, JSON-serialisable state that is updated once per run the test takes
// part in (`applyObservation`, O(1) whatever the history length) and read with `scoreOf`.
//
// Evidence, strongest first. Every kind is a time-decayed sum (half-life 14 days) capped at
// EVIDENCE_CAP, so a fixed test always stabilizes:
//   PASS_ON_RERUN      a run where the test failed and then passed on a retry (or reported `flaky`).
//   SAME_SHA_VARIANCE  the test passed in one run and failed in another run of the same commit
//                      (never on the placeholder commit `0000000`, where every run looks alike).
//   FAIL_ISOLATION     a short failure episode between passes while the rest of the run passed:
//                      the test failed, not the build. Credited when the next pass arrives; full
//                      weight on stable branches (main, master, develop, trunk), a quarter elsewhere.
//   HIGH_FLIP_RATE, MIXED_OUTCOMES  weak pattern terms over the last 32 runs.
// Each failure is weighted by how much of the run passed: a failure while many other tests failed
// (an outage, a broken build) is weak evidence, down to none at all (envWeight).
// A streak of failures that is improbable for this test's own failure rate marks it `broken`:
// broken streaks never count as flaky evidence and the score is damped while it lasts.
//
// Score: L = STRONG_L·(rerun + sameSha) + ISOLATION_L_STABLE·isolation + flipTerm + mixedTerm − counter,
// score = 1 − e^(−L) (noisy-OR: each unit of evidence independently "proves" the flake with
// probability 1 − e^(−weight)), × BROKEN_DAMPING when broken. `counter` is the evidence of the
// clean passes since the last flaky sign: k passes at an estimated failure rate f weigh
// COUNTER_WEIGHT·k·(−ln(1 − f)) (the log-likelihood of k passes if the test still flaked at f).

export const REASON_CODES = ['SAME_SHA_VARIANCE', 'PASS_ON_RERUN', 'HIGH_FLIP_RATE', 'RECENT_INSTABILITY', 'MIXED_OUTCOMES', 'FAIL_ISOLATION', 'STABLE'] as const;
export type ReasonCode = (typeof REASON_CODES)[number];

/** One test's outcome in one run (all its attempts in that run, in order). */
export interface Observation {
  runId: string;
  commitSha: string; // '0000000' is a placeholder: never evidence of same-commit variance
  branch: string;
  at: number; // epoch ms of the run
  attempts: ('pass' | 'fail' | 'skip' | 'flaky')[];
  /** Share of the run's tests (final status) that failed: high = outage / broken build, weak evidence. */
  runFailRatio: number;
  runTestCount: number;
  /**
   * Optional: share of the run's tests that failed and then passed on a retry (final status
   * `flaky`). With it, an outage that retries papered over (many first attempts failed, few final
   * ones) is still recognised; absent = 0.
   */
  runFlakyRatio?: number;
}

export interface ScoreParams {
  threshold: number;
  minSamples: number;
}

export const DEFAULT_SCORE_PARAMS: ScoreParams = { threshold: 0.8, minSamples: 5 };

/** Per-run outcome letters kept in `ScoreState.ring`. */
//   P  first attempt passed
//   R  first attempt failed, a retry passed (or an attempt reported `flaky`)
//   F  failed every attempt, in a run where most other tests passed
//   O  failed in an outage run (most of its failure is the environment's): ignored by the patterns
type RunLetter = 'P' | 'R' | 'F' | 'O';

/** Commit memory bits. */
const BIT_PASS = 1;
const BIT_FAIL = 2;
const BIT_MIXED = 4; // variance on this commit already counted (once per commit)

/**
 * Bounded, JSON-serialisable model state. Its size does not depend on the history length: a few
 * decayed sums, the last RING_SIZE run letters, the last COMMIT_MEMORY commits, the last
 * RUN_ID_MEMORY run ids.
 */
export const SCORE_STATE_VERSION = 1;

export interface ScoreState {
  v: typeof SCORE_STATE_VERSION;
  /** Time the decayed sums refer to (ms), null before the first graded observation. */
  at: number | null;
  /** Graded executions ever (skips excluded). */
  samples: number;
  /** Decayed, capped evidence (half-life 14 days). */
  rerun: number;
  sameSha: number;
  isolation: number;
  /** Decayed runs where the first attempt failed and the test was retried / recovered on retry. */
  retried: number;
  recovered: number;
  /** Decayed clean first-attempt passes / failures (RECENT_INSTABILITY). */
  passW: number;
  failW: number;
  /** Decayed counts of flaky signs, fast (3.5 d) and slow (14 d) half-life: the trend. */
  trendFast: number;
  trendSlow: number;
  /** Clean first-attempt passes since the last flaky sign. */
  cleanSince: number;
  /** First-attempt failure share of the ring at the last flaky sign (the rate `counter` assumes). */
  flakeRate: number;
  /** Every failure of the current failure episode ran on a stable branch. */
  episodeStable: boolean;
  /** Last RING_SIZE run letters, oldest first. */
  ring: string;
  /** Last COMMIT_MEMORY commits seen, most recent last: [sha, bits]. */
  commits: [string, number][];
  /** Last RUN_ID_MEMORY run ids applied (idempotency). */
  runIds: string[];
  lastFlakedAt: number | null;
  /** Lifetime counts of flaky signs, for the reason messages. */
  events: { rerun: number; sameSha: number; isolation: number };
}

export interface ScoreResult {
  score: number; // [0,1]
  reasons: { code: ReasonCode; message: string }[]; // strongest first; STABLE alone when nothing else
  samples: number; // graded executions (skips are not samples)
  flipRate: number;
  passOnRerunRate: number;
  trend: 'rising' | 'falling' | 'stable';
  lastFlakedAt: number | null; // epoch ms of the last flaky evidence
  candidate: boolean; // score >= threshold && samples >= minSamples
  broken: boolean; // failing consistently: not flaky
}

// ---------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------

const DAY_MS = 86_400_000;
/** Evidence half-life (docs/architecture.md): a sign of flakiness counts half after 14 days. */
const HALF_LIFE_MS = 14 * DAY_MS;
/** Fast half-life for the trend: fast/slow sums are 3.5/14 = 0.25 apart at a steady rate. */
const TREND_HALF_LIFE_MS = 3.5 * DAY_MS;
/** Steady-state fast/slow ratio is 0.25; above RISING the flake rate has grown, below FALLING shrunk. */
const TREND_RISING = 0.5;
const TREND_FALLING = 0.125;
/** Less decayed flaky evidence than this and there is no trend to speak of. */
const TREND_MIN_EVIDENCE = 0.05;

/**
 * One unit of same-commit variance or pass-on-rerun alone scores 0.9 (L = ln 10 ≈ 2.30): the
 * same code both passed and failed, which is near-proof (Datadog and Trunk flag on one such
 * event). It stays above the default threshold 0.8 (L ≥ 1.61) for ~7 days without more evidence.
 */
const STRONG_L = Math.log(10);
/**
 * One isolated failure on a stable branch (main, master, develop, trunk) scores 0.82
 * (L = 1.7): code on those branches already passed review and CI, so a failure that the next run
 * does not repeat, while the rest of the run passed, is suspicious by itself (Trunk's
 * failure-count monitor flags a single failure on main). Elsewhere (PR branches, where work in
 * progress breaks tests for real and the next commit fixes them) one scores 0.36 (L = 0.45) and
 * it takes four within a few weeks.
 */
const ISOLATION_L_STABLE = 1.7;
const ISOLATION_L = 0.45;
const STABLE_BRANCH = /^(?:refs\/heads\/)?(?:main|master|develop|trunk)$/;
/**
 * Weight of a failure episode (consecutive failed runs between passes) by its length: a one-run
 * episode 1, two runs 0.6, longer ones that never looked broken 0.35 (a 50% flake has them).
 */
const EPISODE_WEIGHTS = [0, 1, 0.6] as const;
const EPISODE_LONG_WEIGHT = 0.35;
/** Fewer runs than this count as this many for the flip term (a few runs overstate a rate). */
const FLIP_MIN_WINDOW = 16;
/** Flip rate (first attempts, consecutive runs) at which the flip term is full. */
const FLIP_FULL = 0.3;
/** Flip term at its maximum: alone it never reaches a candidate (1 − e^−0.35 = 0.30). */
const FLIP_L = 0.35;
/** Flip rate from which HIGH_FLIP_RATE is listed. */
const FLIP_REASON = 0.2;
/** Both passes and failures among the last runs (failure share ≤ MIXED_MAX_FAIL_SHARE). */
const MIXED_L = 0.15;
const MIXED_MAX_FAIL_SHARE = 0.9;
/** Runs in the ring before the pattern terms count. */
const PATTERN_MIN_RUNS = 5;
/**
 * Cap of each decayed evidence sum (L ≤ 6.9 per strong kind). A fixed heavy flake falls below 0.8
 * by decay alone in ~4 weeks (one kind saturated) to ~7 (all); the clean passes it then records
 * (`counter`) make that days for a test that failed often.
 */
const EVIDENCE_CAP = 3;
/**
 * Weight of the clean passes since the last flaky sign (half the likelihood ratio: the model
 * leans towards "still flaky", since flaky tests are rarely fixed silently).
 */
const COUNTER_WEIGHT = 0.5;
/**
 * Failure-rate estimate used by the counter-evidence: first-attempt failure share of the last runs
 * at the last flaky sign, shrunk towards RATE_PRIOR as if RATE_PRIOR_RUNS more runs had that rate
 * (one failure in one run is not a 100% rate), within RATE_MIN..RATE_MAX.
 */
const RATE_PRIOR = 0.1;
const RATE_PRIOR_RUNS = 10;
const RATE_MIN = 0.01;
const RATE_MAX = 0.5;
/**
 * Outage handling. `others` = share of the *other* tests of the run that failed. Up to OUTAGE_LOW
 * a failure is the test's own (weight 1); from OUTAGE_HIGH on it is the environment's (weight 0);
 * linear in between. Fewer than OUTAGE_MIN_OTHERS other failures is never an outage (small suites).
 */
const OUTAGE_LOW = 0.15;
const OUTAGE_HIGH = 0.35;
const OUTAGE_MIN_OTHERS = 3;
/** Below this environment weight a failing run is an outage run ('O'): ignored by the patterns. */
const OUTAGE_LETTER = 0.5;
/**
 * Broken: a current streak of failed runs that would happen with probability < BROKEN_P if the
 * test still failed at its own rate f (estimated from the runs before the streak, with a prior of
 * BROKEN_PRIOR_RATE over BROKEN_PRIOR_RUNS runs), and at least BROKEN_MIN_STREAK runs, at most
 * BROKEN_MAX_STREAK runs needed. A test that passed 20 times needs 3 failures; a 50% flake needs 7.
 */
const BROKEN_P = 0.01;
const BROKEN_MIN_STREAK = 3;
const BROKEN_MAX_STREAK = 8;
const BROKEN_PRIOR_RATE = 0.1;
const BROKEN_PRIOR_RUNS = 2;
/** Score multiplier while broken: stays below the gate's 0.5 "known flake" and the 0.8 threshold. */
const BROKEN_DAMPING = 0.3;
/** RECENT_INSTABILITY: decayed failure share and weight from which it is listed. */
const INSTABILITY_REASON_SHARE = 0.05;
const INSTABILITY_REASON_WEIGHT = 0.5;
/** Smallest decayed evidence listed as a reason. */
const REASON_MIN_EVIDENCE = 0.05;

const RING_SIZE = 32;
const COMMIT_MEMORY = 16;
const RUN_ID_MEMORY = 8;

const PLACEHOLDER_SHA = /^0+$/;

// ---------------------------------------------------------------------------------------------

export function emptyScoreState(): ScoreState {
  return {
    v: 1,
    at: null,
    samples: 0,
    rerun: 0,
    sameSha: 0,
    isolation: 0,
    retried: 0,
    recovered: 0,
    passW: 0,
    failW: 0,
    trendFast: 0,
    trendSlow: 0,
    cleanSince: 0,
    flakeRate: 0,
    episodeStable: true,
    ring: '',
    commits: [],
    runIds: [],
    lastFlakedAt: null,
    events: { rerun: 0, sameSha: 0, isolation: 0 },
  };
}

const decayFactor = (dtMs: number, halfLifeMs: number): number => (dtMs <= 0 ? 1 : Math.pow(2, -dtMs / halfLifeMs));
const clamp01 = (x: number): number => (x < 0 ? 0 : x > 1 ? 1 : x);

/**
 * Share of a failure that is the test's own: 1 = the rest of the run passed, 0 = outage.
 * `firstFailRatio` = share of the run's tests whose first attempt failed (final fail + flaky), this
 * test included when `testFailed`.
 */
export function envWeight(firstFailRatio: number, runTestCount: number, testFailed: boolean): number {
  const n = Math.max(0, Math.round(runTestCount));
  if (n <= 1 || !Number.isFinite(firstFailRatio)) return 1;
  const others = Math.max(0, clamp01(firstFailRatio) * n - (testFailed ? 1 : 0));
  if (others < OUTAGE_MIN_OTHERS) return 1;
  const share = others / (n - 1);
  return clamp01((OUTAGE_HIGH - share) / (OUTAGE_HIGH - OUTAGE_LOW));
}

/**
 * Trailing failure episode: the failed runs at the end of the ring. Outage failures ('O') count
 * as part of an episode that has at least one failure of the test's own ('F'), since the test
 * failed there too; alone they are no episode.
 */
function trailingStreak(ring: string): { streak: number; precededByPass: boolean; before: string } {
  let streak = 0;
  let own = 0;
  let i = ring.length - 1;
  for (; i >= 0; i--) {
    const c = ring[i];
    if (c !== 'F' && c !== 'O') break;
    streak++;
    if (c === 'F') own++;
  }
  if (own === 0) return { streak: 0, precededByPass: false, before: ring };
  const prev = i >= 0 ? ring[i] : undefined;
  return { streak, precededByPass: prev === 'P' || prev === 'R', before: ring.slice(0, Math.max(0, i + 1)) };
}

function brokenNow(ring: string): { broken: boolean; streak: number } {
  const { streak, before } = trailingStreak(ring);
  if (streak < BROKEN_MIN_STREAK) return { broken: false, streak };
  let n = 0;
  let fails = 0;
  for (const c of before) {
    if (c === 'O') continue;
    n++;
    if (c === 'F') fails++;
  }
  const rate = (fails + BROKEN_PRIOR_RATE * BROKEN_PRIOR_RUNS) / (n + BROKEN_PRIOR_RUNS);
  const needed = Math.min(BROKEN_MAX_STREAK, Math.max(BROKEN_MIN_STREAK, Math.ceil(Math.log(BROKEN_P) / Math.log(rate))));
  return { broken: streak >= needed, streak };
}

/** First-attempt pattern over the ring (outage runs left out). */
function patterns(ring: string): { n: number; flips: number; reds: number } {
  let n = 0;
  let flips = 0;
  let reds = 0;
  let prevRed: boolean | null = null;
  for (const c of ring) {
    if (c === 'O') continue;
    const red = c !== 'P';
    n++;
    if (red) reds++;
    if (prevRed !== null && prevRed !== red) flips++;
    prevRed = red;
  }
  return { n, flips, reds };
}

/** A stored state of another version (or damaged) starts over rather than misleading the model. */
function usable(state: ScoreState | null | undefined): ScoreState {
  return state && state.v === SCORE_STATE_VERSION && typeof state.ring === 'string' && Array.isArray(state.commits) && Array.isArray(state.runIds)
    ? state
    : emptyScoreState();
}

/**
 * O(1) in history length. Idempotent per runId (the last RUN_ID_MEMORY run ids are kept).
 * Runs are expected in time order; a late run still counts, at its own age, but its letter joins
 * the end of the ring.
 */
export function applyObservation(stored: ScoreState, obs: Observation): ScoreState {
  const state = usable(stored);
  if (state.runIds.includes(obs.runId)) return state;
  const s: ScoreState = {
    ...state,
    ring: state.ring,
    commits: state.commits.map(([sha, bits]) => [sha, bits] as [string, number]),
    runIds: [...state.runIds, obs.runId].slice(-RUN_ID_MEMORY),
    events: { ...state.events },
  };
  const graded = obs.attempts.filter((a) => a !== 'skip');
  if (graded.length === 0) return s; // a skip is not a sample and says nothing

  // Bring the decayed sums to this run (a late, out-of-order run is added at its own age instead).
  let w14 = 1;
  let wFast = 1;
  if (s.at === null || obs.at >= s.at) {
    const f = s.at === null ? 1 : decayFactor(obs.at - s.at, HALF_LIFE_MS);
    const ff = s.at === null ? 1 : decayFactor(obs.at - s.at, TREND_HALF_LIFE_MS);
    s.rerun *= f;
    s.sameSha *= f;
    s.isolation *= f;
    s.retried *= f;
    s.recovered *= f;
    s.passW *= f;
    s.failW *= f;
    s.trendSlow *= f;
    s.trendFast *= ff;
    s.at = obs.at;
  } else {
    w14 = decayFactor(s.at - obs.at, HALF_LIFE_MS);
    wFast = decayFactor(s.at - obs.at, TREND_HALF_LIFE_MS);
  }
  s.samples += graded.length;

  const first = graded[0]!;
  const last = graded[graded.length - 1]!;
  const firstRed = first !== 'pass';
  const finalGreen = last !== 'fail';
  const anyFail = graded.some((a) => a !== 'pass');
  const anyGreen = graded.some((a) => a !== 'fail');
  const recovered = graded.includes('flaky') || (graded.indexOf('fail') >= 0 && graded.lastIndexOf('pass') > graded.indexOf('fail'));
  const firstFailRatio = clamp01(obs.runFailRatio) + clamp01(obs.runFlakyRatio ?? 0);
  // This test is among the counted failures if it failed finally, or recovered and flaky ones are counted.
  const counted = !finalGreen || obs.runFlakyRatio !== undefined;
  const env = anyFail ? envWeight(firstFailRatio, obs.runTestCount, counted) : 1;
  const letter: RunLetter = !anyFail ? 'P' : env < OUTAGE_LETTER ? 'O' : recovered || finalGreen ? 'R' : 'F';

  let flakySign = 0; // weight of the flaky evidence this run brings (for the trend)

  // PASS_ON_RERUN: failed, then passed, on the same code in the same run.
  if (firstRed && graded.length > 1) s.retried += w14;
  if (recovered) {
    if (firstRed || graded.includes('flaky')) s.recovered += w14;
    if (!(firstRed && graded.length > 1) && graded.includes('flaky')) s.retried += w14;
    s.rerun = Math.min(EVIDENCE_CAP, s.rerun + env * w14);
    if (env > 0) s.events.rerun++;
    flakySign = Math.max(flakySign, env);
  }

  // SAME_SHA_VARIANCE across runs of one commit (never the placeholder).
  const sha = String(obs.commitSha ?? '').trim();
  if (sha !== '' && !PLACEHOLDER_SHA.test(sha)) {
    const cleanFail = anyFail && env >= OUTAGE_LETTER;
    const bits = (anyGreen ? BIT_PASS : 0) | (cleanFail ? BIT_FAIL : 0);
    const idx = s.commits.findIndex(([c]) => c === sha);
    let prev = 0;
    if (idx >= 0) {
      prev = s.commits[idx]![1];
      s.commits.splice(idx, 1);
    }
    let next = prev | bits;
    if (!(prev & BIT_MIXED) && (next & BIT_PASS) && (next & BIT_FAIL)) {
      next |= BIT_MIXED;
      // Within one run it is a pass-on-rerun (counted above); across runs it is same-commit variance.
      const acrossRuns = ((prev & BIT_PASS) !== 0 && cleanFail) || ((prev & BIT_FAIL) !== 0 && anyGreen);
      if (acrossRuns && !recovered) {
        const weight = cleanFail ? env : 1;
        s.sameSha = Math.min(EVIDENCE_CAP, s.sameSha + weight * w14);
        if (weight > 0) s.events.sameSha++;
        flakySign = Math.max(flakySign, weight);
      }
    }
    s.commits.push([sha, next]);
    if (s.commits.length > COMMIT_MEMORY) s.commits.splice(0, s.commits.length - COMMIT_MEMORY);
  }

  // FAIL_ISOLATION: a failure episode between passes, closed by this passing run, that never
  // looked broken. Stored in stable-branch units (ISOLATION_L_STABLE).
  if (letter === 'P' || letter === 'R') {
    const { streak, precededByPass } = trailingStreak(s.ring);
    if (streak >= 1 && precededByPass && !brokenNow(s.ring).broken) {
      const branchFactor = s.episodeStable ? 1 : ISOLATION_L / ISOLATION_L_STABLE;
      const weight = (EPISODE_WEIGHTS[streak] ?? EPISODE_LONG_WEIGHT) * branchFactor;
      s.isolation = Math.min(EVIDENCE_CAP, s.isolation + weight * w14);
      s.events.isolation++;
      flakySign = Math.max(flakySign, weight);
    }
  }

  // RECENT_INSTABILITY: decayed first-attempt outcomes (outages left out).
  if (letter === 'P') s.passW += w14;
  else if (letter !== 'O') s.failW += w14;

  if (flakySign > 0) {
    s.trendSlow += flakySign * w14;
    s.trendFast += flakySign * wFast;
    s.cleanSince = 0;
    const p = patterns(s.ring + letter);
    s.flakeRate = (p.reds + RATE_PRIOR * RATE_PRIOR_RUNS) / (p.n + RATE_PRIOR_RUNS);
    s.lastFlakedAt = Math.max(s.lastFlakedAt ?? 0, obs.at);
  } else if (letter === 'P') s.cleanSince++;
  else if (letter !== 'O') s.cleanSince = 0;

  if (letter === 'F') {
    const stable = STABLE_BRANCH.test(String(obs.branch ?? '').trim());
    s.episodeStable = trailingStreak(s.ring).streak === 0 ? stable : s.episodeStable && stable;
  }
  s.ring = (s.ring + letter).slice(-RING_SIZE);
  return s;
}

const pct = (x: number): number => Math.round(x * 100);
const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;

export function scoreOf(stored: ScoreState, now: number, params: ScoreParams): ScoreResult {
  const state = usable(stored);
  const dt = state.at === null ? 0 : now - state.at;
  const f = decayFactor(dt, HALF_LIFE_MS);
  const ff = decayFactor(dt, TREND_HALF_LIFE_MS);
  const rerun = state.rerun * f;
  const sameSha = state.sameSha * f;
  const isolation = state.isolation * f;
  const passW = state.passW * f;
  const failW = state.failW * f;

  const { n, flips, reds } = patterns(state.ring);
  const flipRate = n >= 2 ? flips / (n - 1) : 0;
  const failShare = n > 0 ? reds / n : 0;
  const { broken, streak } = brokenNow(state.ring);

  // Each term of L, with its reason (listed = shown among the reasons).
  const contributions: { code: ReasonCode; l: number; message: string; listed: boolean }[] = [];
  if (sameSha >= REASON_MIN_EVIDENCE) {
    contributions.push({ code: 'SAME_SHA_VARIANCE', l: STRONG_L * sameSha, message: `passed and failed on the same commit (${state.events.sameSha} commit(s))`, listed: true });
  }
  if (rerun >= REASON_MIN_EVIDENCE) {
    contributions.push({ code: 'PASS_ON_RERUN', l: STRONG_L * rerun, message: `failed then passed on retry in ${state.events.rerun} run(s)`, listed: true });
  }
  if (isolation >= REASON_MIN_EVIDENCE) {
    contributions.push({ code: 'FAIL_ISOLATION', l: ISOLATION_L_STABLE * isolation, message: `failed alone between passes in ${state.events.isolation} run(s) while the rest of the run passed`, listed: true });
  }
  if (n >= PATTERN_MIN_RUNS && flipRate > 0) {
    const l = FLIP_L * Math.min(1, flips / (Math.max(n, FLIP_MIN_WINDOW) - 1) / FLIP_FULL);
    const message = `flipped between pass and fail in ${pct(flipRate)}% of the last ${n} runs`;
    contributions.push({ code: 'HIGH_FLIP_RATE', l, message, listed: flipRate >= FLIP_REASON });
  }
  if (n >= PATTERN_MIN_RUNS && reds > 0 && reds < n && failShare <= MIXED_MAX_FAIL_SHARE) {
    contributions.push({ code: 'MIXED_OUTCOMES', l: MIXED_L, message: `${reds} of the last ${n} runs failed on the first attempt, the others passed`, listed: true });
  }

  let l = contributions.reduce((a, c) => a + c.l, 0);
  if (l > 0 && state.cleanSince > 0) {
    const rate = Math.min(RATE_MAX, Math.max(RATE_MIN, state.flakeRate));
    l -= COUNTER_WEIGHT * state.cleanSince * -Math.log(1 - rate);
  }
  let score = l > 0 ? 1 - Math.exp(-l) : 0;
  if (broken) score *= BROKEN_DAMPING;
  score = round4(clamp01(score));

  const reasons: { code: ReasonCode; message: string }[] = contributions
    .filter((c) => c.listed)
    .sort((a, b) => b.l - a.l)
    .map(({ code, message }) => ({ code, message }));
  const instability = passW + failW > 0 ? failW / (passW + failW) : 0;
  if (broken) {
    reasons.unshift({ code: 'RECENT_INSTABILITY', message: `failed ${streak} runs in a row: broken, not flaky` });
  } else if (failW >= INSTABILITY_REASON_WEIGHT && instability >= INSTABILITY_REASON_SHARE) {
    reasons.push({ code: 'RECENT_INSTABILITY', message: `${pct(instability)}% of recent runs failed (time-weighted, half-life 14 days)` });
  }
  if (reasons.length === 0) reasons.push({ code: 'STABLE', message: `no sign of flakiness across ${state.samples} execution(s)` });

  const slow = state.trendSlow * f;
  const fast = state.trendFast * ff;
  let trend: ScoreResult['trend'] = 'stable';
  if (slow >= TREND_MIN_EVIDENCE) {
    const ratio = fast / slow;
    if (ratio > TREND_RISING) trend = 'rising';
    else if (ratio < TREND_FALLING) trend = 'falling';
  }

  return {
    score,
    reasons,
    samples: state.samples,
    flipRate: round4(flipRate),
    passOnRerunRate: round4(state.retried > 0 ? Math.min(1, state.recovered / state.retried) : 0),
    trend,
    lastFlakedAt: state.lastFlakedAt,
    candidate: score >= params.threshold && state.samples >= params.minSamples,
    broken,
  };
}
