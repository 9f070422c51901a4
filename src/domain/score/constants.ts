// The flakiness model's constants (docs/data-model.md "The flakiness model"). Each follows from the
// evidence model rather than from a benchmark: what one kind of observation proves, and how long a
// proof is kept.

export const DAY_MS = 86_400_000;

/**
 * Half-life of flaky evidence and of the rate estimate. Long: a 2% flake fails about once in 50
 * runs, and a proof must outlive the quiet stretch between two failures (14 days forgot 32 of 33
 * observable 1–2% flakes before they failed again).
 */
export const HALF_LIFE_MS = 30 * DAY_MS;
/** Fast half-life for the trend: fast/slow sums are 3.5/30 ≈ 0.12 apart at a steady rate. */
export const TREND_HALF_LIFE_MS = 3.5 * DAY_MS;
/** Fast/slow above this: the flake rate has grown; below TREND_FALLING: shrunk. */
export const TREND_RISING = 0.25;
export const TREND_FALLING = 0.06;
/** Less decayed flaky evidence than this and there is no trend to speak of. */
export const TREND_MIN_EVIDENCE = 0.05;

/**
 * One unit of same-code evidence (a retry passing after a failure, a re-run or another shard of the
 * same commit with the other outcome) scores 0.9 alone (L = ln 10): the same code both passed and
 * failed, which is near-proof (Datadog and Trunk flag on one such event).
 */
export const STRONG_L = Math.log(10);
/**
 * One isolated failure on a mainline branch (failed on one commit, passed on the next, with passes
 * before): 0.70 alone (L = 1.2). A single flip across commits never makes a candidate (a break fixed
 * by the next commit looks the same); two within a few weeks do (0.91), since a test broken and
 * fixed commit after commit, again and again, is flaky.
 */
export const ISOLATION_L = 1.2;
/**
 * Off the mainline (PR and feature branches, where work in progress breaks tests for real and the
 * next commit fixes them) an isolated failure weighs 0.4 of that: four are needed.
 */
export const SIDE_BRANCH_FACTOR = 0.4;
/**
 * Weight of a closed failure episode by how many distinct commits it failed on: one 1, two 0.5,
 * more 0 (a failure that lasted three commits and then stopped was a break that was fixed).
 */
export const EPISODE_WEIGHTS: readonly number[] = [0, 1, 0.5];
/** Cap of each decayed evidence sum, so a fixed heavy flake is released in a bounded time. */
export const EVIDENCE_CAP = 3;

// The flake rate's prior (RATE_PRIOR_FLAKY flaky runs in RATE_PRIOR_RUNS) is the client's contract
// too: the gate judges a failure against it on both sides.
export { RATE_PRIOR_FLAKY, RATE_PRIOR_RUNS } from '../../../client/src/contract/test-states.js';
export const RATE_MIN = 0.002;
export const RATE_MAX = 0.6;

/**
 * A flaky test is fixed once the clean runs since its last flake would happen less than this often
 * if it still flaked at its own rate: (1 − f)^k ≤ FIXED_P. A 35% flake needs 11 clean runs, a 2%
 * flake about 230: a quiet flake is not forgotten after 70 (it passes 70 in a row 24% of the time).
 */
export const FIXED_P = 0.01;
/**
 * A known flake's failure streak on its branch is a break once it would happen less than this often
 * at the test's own rate: f^(failed attempts) < BROKEN_P. A test that is not known to be flaky is
 * broken from its first failing run on the branch (when unsure, say broken, not flaky).
 */
export const BROKEN_P = 0.01;
/** Score multiplier while broken: stays below the 0.8 threshold and reads as "not flaky". */
export const BROKEN_DAMPING = 0.3;
/** How long a test stays `fixed` after its fix before it is simply `healthy`. */
export const FIXED_HOLD_MS = 7 * DAY_MS;

/**
 * Outage handling. `others` = share of the *other* tests of the run whose first attempt failed. Up
 * to OUTAGE_LOW a failure is the test's own (weight 1); from OUTAGE_HIGH on it is the environment's
 * (weight 0); linear in between. Fewer than OUTAGE_MIN_OTHERS other failures is never an outage.
 */
export const OUTAGE_LOW = 0.15;
export const OUTAGE_HIGH = 0.35;
export const OUTAGE_MIN_OTHERS = 3;
/** Below this environment weight a failing run is an outage run: no evidence either way. */
export const OUTAGE_LETTER = 0.5;

/** RECENT_INSTABILITY is listed from this first-attempt failure share of the last runs (and 2 runs). */
export const INSTABILITY_REASON_SHARE = 0.05;
/** Smallest decayed evidence listed as a reason. */
export const REASON_MIN_EVIDENCE = 0.05;

export const RING_SIZE = 32;
export const COMMIT_MEMORY = 16;
export const RUN_ID_MEMORY = 8;
/** Branches whose own history is kept per test (mainline ones are kept first). */
export const BRANCH_MEMORY = 6;
/** Base branches learned from pull requests' runs, per test. */
export const BASE_MEMORY = 4;

/** Branches that are mainline by name when no pull request runs on them. */
export const STABLE_BRANCH = /^(?:refs\/heads\/)?(?:main|master|develop|trunk)$/;
/** A commit of zeros is the placeholder for "no commit sent": never same-code evidence. */
export const PLACEHOLDER_SHA = /^0+$/;
