// One test's outcome in one run, as the model reads it: its graded attempts, whether the same code
// passed after failing (a retry), and how much of a failure is the test's own rather than an outage's.
import { OUTAGE_HIGH, OUTAGE_LETTER, OUTAGE_LOW, OUTAGE_MIN_OTHERS } from './constants.js';

export type Attempt = 'pass' | 'fail' | 'skip' | 'flaky';

/**
 * Per-run outcome letters (kept in the state's ring, oldest first):
 *   P  first attempt passed
 *   R  first attempt failed, a retry passed (or an attempt reported `flaky`)
 *   F  failed every attempt, in a run where most other tests passed
 *   O  failed in an outage run (most of its failure is the environment's): no evidence either way
 */
export type RunLetter = 'P' | 'R' | 'F' | 'O';

export interface RunOutcome {
  letter: RunLetter;
  /** Graded attempts (skips left out), in order. */
  graded: Attempt[];
  /** Share of a failure that is the test's own: 1 = the rest of the run passed, 0 = outage. */
  env: number;
  /** Failed, then passed within the run (same code): pass on rerun. */
  recovered: boolean;
  /** At least one graded attempt passed (or reported flaky). */
  anyGreen: boolean;
  /** Attempts that failed (a `flaky` attempt counts one failure). */
  failedAttempts: number;
}

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

/** Null when every attempt was skipped: a skip says nothing. */
export function runOutcome(attempts: readonly Attempt[], runFailRatio: number, runFlakyRatio: number | undefined, runTestCount: number): RunOutcome | null {
  const graded = attempts.filter((a) => a !== 'skip');
  if (graded.length === 0) return null;
  const last = graded[graded.length - 1]!;
  const finalGreen = last !== 'fail';
  const anyFail = graded.some((a) => a !== 'pass');
  const anyGreen = graded.some((a) => a !== 'fail');
  const recovered = graded.includes('flaky') || (graded.indexOf('fail') >= 0 && graded.lastIndexOf('pass') > graded.indexOf('fail'));
  const firstFailRatio = clamp01(runFailRatio) + clamp01(runFlakyRatio ?? 0);
  // This test is among the counted failures if it failed finally, or recovered and flaky ones are counted.
  const counted = !finalGreen || runFlakyRatio !== undefined;
  const env = anyFail ? envWeight(firstFailRatio, runTestCount, counted) : 1;
  const letter: RunLetter = !anyFail ? 'P' : env < OUTAGE_LETTER ? 'O' : recovered || finalGreen ? 'R' : 'F';
  const failedAttempts = graded.filter((a) => a === 'fail' || a === 'flaky').length;
  return { letter, graded, env, recovered, anyGreen, failedAttempts };
}
