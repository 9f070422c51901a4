// The merge gate's rules (docs/contract.md §6): what a failing test of a commit is — a new failure,
// already broken on the base branch, a known flake, or quarantined — and when the gate blocks. The
// gate route decides with the base branch's history; the CLI and the summary apply the same rule
// without it. Pure.
//
// Never call a real break flaky: a known flake is a test in state `flaky` (on evidence that is not
// this commit's own) whose failure here is proven to be a flake — this very code also passed it (a
// retry, re-run, shard or matrix cell), or its flakiness is established (several flaky events over
// enough runs) and the failures here fit even the low end of its rate. Anything else that is flaky
// is *unproven* and blocks like a new failure. A test failing on every base-branch run since a
// commit is "already broken", never a known flake; a failure nothing explains is new, also when it
// passed on a retry here (the change may have made it flaky).
import { compareTests, type SortableTest } from './pr-summary.js';
import { betaQuantile } from './beta.js';
import { RATE_PRIOR_FLAKY, RATE_PRIOR_RUNS, type TestState } from './test-states.js';

/** How far back the base branch's history decides whether a failure is already there. */
export const BASE_WINDOW_DAYS = 14;
/**
 * A known flake's failures in this commit must be at least this probable at its own flake rate
 * (f^failed attempts): a 5% flake that failed three attempts in a row here (p = 0.0001) was
 * most likely broken by the change, not unlucky.
 */
export const FLAKE_FIT_P = 0.01;

export const STRICTNESS = ['off', 'new', 'any'] as const;
export type Strictness = (typeof STRICTNESS)[number];
export const CLASSIFICATIONS = ['new_failure', 'broken_on_base', 'known_flake', 'quarantined'] as const;
export type Classification = (typeof CLASSIFICATIONS)[number];
export const VERDICTS = ['pass', 'block'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** What the rules read of a failing (fail or flaky) test of the commit. */
export interface FailingTest {
  status: 'fail' | 'flaky';
  quarantined: boolean;
  /** The test's state (its since-commit tells the reader where a break or fix began). */
  state: TestState;
  /** Share of its runs in which it flakes (0..1). */
  flakeRate: number;
  /** A known flake here (see flakeProof): decided where the commit's runs are known. */
  knownFlake: boolean;
  /** A new test re-run by `flakehouse run --verify-new`: its attempts here and how many failed. */
  newTest?: { runs: number; failed: number } | null;
}

/**
 * A brand-new test (never run on the base branch) that failed any attempt of its proof here: a new
 * failure, whatever a retry did. The change brought a test that fails sometimes; it is not a flake
 * to let through.
 */
export function newTestFailed(t: Pick<FailingTest, 'newTest'>): boolean {
  return !!t.newTest && t.newTest.failed > 0;
}

/**
 * What of a flaky test's history the gate weighs (src/domain/score.ts flakeEvidenceOf): since its
 * evidence began (a proven fix starts it over).
 */
export interface FlakeEvidence {
  /** Flaky events: runs where a retry passed, commits that both passed and failed, isolated failures. */
  events: number;
  /** Graded runs. */
  runs: number;
  /** Decayed runs with a flaky sign and graded runs (the flake rate's data). */
  flakyRuns: number;
  gradedRuns: number;
}

/** What decides `knownFlake` for a failing test of a commit. */
export interface FlakeFit {
  state: TestState;
  /** Where the test became flaky (null: unknown). */
  flakySince: { branch: string; at: number } | null;
  /** The commit's branch and its first run's start. */
  commit: { branch: string; firstRunAt: number };
  /** Attempts that failed in the commit's runs, and all its graded attempts there. */
  failedAttempts: number;
  attempts: number;
  /**
   * This code also passed the test: a retry, a re-run, another shard or matrix cell of the commit
   * (an execution reported `flaky` is one that failed, then passed on a retry).
   */
  passedHere: boolean;
  /** Its flaky history (null: unknown, so never established). */
  evidence: FlakeEvidence | null;
  /** The project's `flaky.minSamples`: an established flake has flaked over at least this many runs. */
  minSamples: number;
}

/** Flaky events, independent of each other, that make a test's flakiness established. */
export const ESTABLISHED_EVENTS = 3;
/**
 * The low end of a flake rate's uncertainty: this quantile of its Beta posterior (the model's prior
 * of RATE_PRIOR_FLAKY flaky runs in RATE_PRIOR_RUNS). A 4-in-12 flake's is 0.12, one event in 7
 * runs 0.009.
 */
export const RATE_LOW_QUANTILE = 0.05;

/**
 * Why a failure of a flaky test is (or is not) let through as a known flake:
 * `same_code` — this commit also passed it; `established` — its flakiness is established and the
 * failures here fit the low end of its rate; `unproven` — neither (blocks, with how to prove it).
 */
export const FLAKE_PROOFS = ['same_code', 'established', 'unproven'] as const;
export type FlakeProofKind = (typeof FLAKE_PROOFS)[number];
export interface FlakeProof {
  kind: FlakeProofKind;
  /** The low end of its flake rate (null when there is no history to estimate it from). */
  rateLow: number | null;
  /** Unproven: what is missing and how to prove it, in a sentence. Null otherwise. */
  hint: string | null;
}

/** Where the base branch's own history stands for a test, before the commit's runs. */
export interface BaseHistory {
  /** Graded runs on the base branch within `BASE_WINDOW_DAYS`, and how many failed or flaked. */
  graded: number;
  bad: number;
  /**
   * The base branch's last runs of the test all failed every attempt since this commit (its first
   * failing run), with `streakAttempts` failed attempts in all: broken there, unless that fits a
   * known flake's rate. Null when its last run passed, or there is none.
   */
  brokenSince: { commitSha: string; at: number; streakAttempts: number } | null;
  /**
   * False when the commit is known not to contain the break: its branch forked from the base branch
   * (merge base) before the break's first failing run. Null when unknown (no merge base sent).
   */
  containsBreak: boolean | null;
}

/** No base-branch history: a test never run there, or a caller that could not ask. */
export const NO_BASE_HISTORY: BaseHistory = { graded: 0, bad: 0, brokenSince: null, containsBreak: null };

/** The failures fit a flake at `rate`: as probable as FLAKE_FIT_P or more. */
export function fitsFlakeRate(rate: number, failedAttempts: number): boolean {
  return failedAttempts <= 1 || Math.pow(rate, failedAttempts) >= FLAKE_FIT_P;
}

/** The low end of a flake rate's uncertainty, from its (decayed) flaky and graded runs. */
export function rateLowOf(e: Pick<FlakeEvidence, 'flakyRuns' | 'gradedRuns'>): number {
  const flaky = Math.max(0, e.flakyRuns);
  const clean = Math.max(0, e.gradedRuns - flaky);
  return betaQuantile(RATE_LOW_QUANTILE, flaky + RATE_PRIOR_FLAKY, clean + RATE_PRIOR_RUNS - RATE_PRIOR_FLAKY);
}

/** Several flaky events over at least `minSamples` runs. */
export function establishedFlake(e: FlakeEvidence | null, minSamples: number): boolean {
  return e !== null && e.events >= ESTABLISHED_EVENTS && e.runs >= minSamples;
}

/**
 * The one rule for a known flake (the route, the markdown and the CLI read its outcome). Null for a
 * test that is not flaky on evidence from before this commit (or another branch): a plain new
 * failure. A change that makes a test flaky, and is then re-run, must not have its own flake excuse it.
 */
export function flakeProof(f: FlakeFit): FlakeProof | null {
  if (f.state !== 'flaky') return null;
  const before = f.flakySince === null || f.flakySince.at < f.commit.firstRunAt || f.flakySince.branch !== f.commit.branch;
  if (!before) return null;
  const rateLow = f.evidence ? rateLowOf(f.evidence) : null;
  if (f.passedHere) return { kind: 'same_code', rateLow, hint: null };
  const established = establishedFlake(f.evidence, f.minSamples);
  if (established && rateLow !== null && Math.pow(rateLow, f.failedAttempts) >= FLAKE_FIT_P) return { kind: 'established', rateLow, hint: null };
  const failed = `failed ${f.failedAttempts} of ${f.attempts} attempt${f.attempts === 1 ? '' : 's'}`;
  const events = f.evidence?.events ?? 0;
  const why = !established
    ? `its flakiness rests on ${events === 0 ? 'no recorded event' : events === 1 ? 'one event' : `${events} events`}${f.evidence && f.evidence.runs < f.minSamples ? ` in ${f.evidence.runs} runs` : ''}`
    : `that many failures in a row are unlikely even for a flake of ${Math.round((rateLow ?? 0) * 1000) / 10}%`;
  return { kind: 'unproven', rateLow, hint: `${failed}; ${why} — re-run the test on this commit` };
}

/** A known flake: proven by the same code or by an established flakiness its failures here fit (flakeProof). */
export function knownFlake(f: FlakeFit): boolean {
  const p = flakeProof(f);
  return p !== null && p.kind !== 'unproven';
}

/** The base branch is broken for this test (not a known flake's bad luck), and the commit contains the break. */
export function brokenOnBase(t: FailingTest, base: BaseHistory): boolean {
  if (!base.brokenSince || base.containsBreak === false) return false;
  return !(t.state === 'flaky' && fitsFlakeRate(t.flakeRate, base.brokenSince.streakAttempts));
}

/** Classification of one failing test of the commit. */
export function classify(t: FailingTest, base: BaseHistory = NO_BASE_HISTORY): Classification {
  if (t.quarantined) return 'quarantined';
  if (newTestFailed(t)) return 'new_failure';
  if (brokenOnBase(t, base)) return 'broken_on_base';
  if (t.knownFlake) return 'known_flake';
  return 'new_failure';
}

/**
 * Without the base branch's history (the summary, or the CLI when the gate does not answer): the
 * test's own state stands in for it — broken on its mainline since a commit reads as already broken.
 */
export function classifyByState(t: FailingTest): Classification {
  if (t.quarantined) return 'quarantined';
  if (newTestFailed(t)) return 'new_failure';
  if (t.state === 'broken') return 'broken_on_base';
  if (t.knownFlake) return 'known_flake';
  return 'new_failure';
}

/**
 * `new` blocks on new failures: a test already broken on the base branch is not this change's doing
 * (it is reported as such, never as a flake). `any` blocks on any failure not quarantined.
 */
export function verdictOf(strictness: Strictness, tests: readonly (FailingTest & { classification: Classification })[]): Verdict {
  if (strictness === 'off') return 'pass';
  if (strictness === 'new') return tests.some((t) => t.classification === 'new_failure') ? 'block' : 'pass';
  return tests.some((t) => (t.status === 'fail' || newTestFailed(t)) && !t.quarantined) ? 'block' : 'pass';
}

/** A failing test as the gate reports it: classified, with its base branch's fail rate and break. */
export function gateTestOf<T extends FailingTest>(
  t: T,
  base: BaseHistory,
): T & { classification: Classification; baseFailRate: number; baseSampleSize: number; brokenSince: { commitSha: string; at: number } | null } {
  const classification = classify(t, base);
  return {
    ...t,
    classification,
    baseFailRate: base.graded > 0 ? round4(base.bad / base.graded) : 0,
    baseSampleSize: base.graded,
    brokenSince: classification === 'broken_on_base' && base.brokenSince ? { commitSha: base.brokenSince.commitSha, at: base.brokenSince.at } : null,
  };
}

const CLASSIFICATION_RANK: Record<Classification, number> = { new_failure: 0, broken_on_base: 1, known_flake: 2, quarantined: 3 };

/** New failures first, then those already broken on the base branch, known flakes, quarantined; within each, the summary's order. */
export function compareGateTests(a: SortableTest & { classification: Classification }, b: SortableTest & { classification: Classification }): number {
  return CLASSIFICATION_RANK[a.classification] - CLASSIFICATION_RANK[b.classification] || compareTests(a, b);
}

/**
 * The base branch's runs of a test, oldest first, before the commit's runs: whether they end in a
 * failure streak (every attempt of every run failed) and since which commit.
 */
export function baseStreak(runsOldestFirst: readonly { commitSha: string; at: number; failed: number; green: number }[]): BaseHistory['brokenSince'] {
  let start = -1;
  let attempts = 0;
  runsOldestFirst.forEach((r, i) => {
    if (r.green > 0) {
      start = -1;
      attempts = 0;
    } else if (r.failed > 0) {
      if (start < 0) start = i;
      attempts += r.failed;
    }
  });
  const first = start < 0 ? undefined : runsOldestFirst[start];
  return first ? { commitSha: first.commitSha, at: first.at, streakAttempts: attempts } : null;
}

/** Scores and rates go out with four decimals. */
export function round4(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}
