// The states the flakiness model puts a test in (src/domain/score.ts), and the prior of its flake
// rate estimate: the server scores with them, the PR answers carry the states (pr-schemas.ts) and the
// gate (gate.ts) judges a failure against the same prior on both sides.

export const TEST_STATES = ['new', 'healthy', 'flaky', 'broken', 'fixed'] as const;
export type TestState = (typeof TEST_STATES)[number];

/**
 * Flake rate estimate: flaky runs / graded runs (decayed), with a prior of RATE_PRIOR_FLAKY flaky
 * runs in RATE_PRIOR_RUNS runs (one failure in one run is not a 100% rate).
 */
export const RATE_PRIOR_FLAKY = 0.1;
export const RATE_PRIOR_RUNS = 2;
