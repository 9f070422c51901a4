// The merge gate's rules (docs/contract.md §6): when a failing test of a pull request is new, a
// known flake or quarantined, and when the gate blocks. The gate route decides with the base
// branch's history; the CLI applies the same rule without it when the gate does not answer. Pure.
import { compareTests, type SortableTest } from './pr-summary.js';

/** Score from which a test counts as a known flake on its own (docs/contract.md §6). */
export const KNOWN_FLAKE_SCORE = 0.5;
/** How far back the base branch's history decides whether a failure is known. */
export const BASE_WINDOW_DAYS = 14;

export const STRICTNESS = ['off', 'new', 'any'] as const;
export type Strictness = (typeof STRICTNESS)[number];
export const CLASSIFICATIONS = ['new_failure', 'known_flake', 'quarantined'] as const;
export type Classification = (typeof CLASSIFICATIONS)[number];
export const VERDICTS = ['pass', 'block'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** What the rules read of a failing (fail or flaky) test of the pull request. */
export interface FailingTest {
  status: 'fail' | 'flaky';
  score: number;
  quarantined: boolean;
}

/** The test's graded runs on the base branch within `BASE_WINDOW_DAYS`, and how many failed or flaked. */
export interface BaseHistory {
  graded: number;
  bad: number;
}

/** No base-branch history: a test never run there, or a caller that could not ask. */
export const NO_BASE_HISTORY: BaseHistory = { graded: 0, bad: 0 };

/** Classification of one failing test of the PR. */
export function classify(t: FailingTest, base: BaseHistory = NO_BASE_HISTORY): Classification {
  if (t.quarantined) return 'quarantined';
  if (t.score >= KNOWN_FLAKE_SCORE || base.bad > 0) return 'known_flake';
  // Passed on a retry (or in another run of the commit): flaky by definition, never a new failure.
  if (t.status === 'flaky') return 'known_flake';
  return 'new_failure';
}

export function verdictOf(strictness: Strictness, tests: readonly (FailingTest & { classification: Classification })[]): Verdict {
  if (strictness === 'off') return 'pass';
  if (strictness === 'new') return tests.some((t) => t.classification === 'new_failure') ? 'block' : 'pass';
  return tests.some((t) => t.status === 'fail' && !t.quarantined) ? 'block' : 'pass';
}

/** A failing test as the gate reports it: classified, with its base branch's fail rate. */
export function gateTestOf<T extends FailingTest>(t: T, base: BaseHistory): T & { classification: Classification; baseFailRate: number; baseSampleSize: number } {
  return { ...t, classification: classify(t, base), baseFailRate: base.graded > 0 ? round4(base.bad / base.graded) : 0, baseSampleSize: base.graded };
}

const CLASSIFICATION_RANK: Record<Classification, number> = { new_failure: 0, known_flake: 1, quarantined: 2 };

/** New failures first, then known flakes, then quarantined; within each, the summary's order. */
export function compareGateTests(a: SortableTest & { classification: Classification }, b: SortableTest & { classification: Classification }): number {
  return CLASSIFICATION_RANK[a.classification] - CLASSIFICATION_RANK[b.classification] || compareTests(a, b);
}

/** Scores and rates go out with four decimals. */
export function round4(n: number): number {
  return Math.round(n * 10_000) / 10_000;
}
