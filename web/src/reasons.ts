// One sentence per score reason code (src/domain/score.ts REASON_CODES), for people who have not
// read the model: what the evidence is and why it points at a flaky test.
export const REASON_TEXT: Record<string, string> = {
  SAME_SHA_VARIANCE: 'The test both passed and failed on the same commit: the code did not change, so the outcome depends on something else (timing, order, environment).',
  PASS_ON_RERUN: 'The test failed and then passed when it was retried in the same run, the clearest sign of a flaky test.',
  FAIL_ISOLATION: 'On one branch\'s own history the test failed on one commit and passed on the next, with passes before. Once is weak (a break fixed by the next commit looks the same); again and again, it is flaky. It weighs more on the mainline than on pull-request branches.',
  HIGH_FLIP_RATE: 'Over its last 32 runs the test keeps switching between passing and failing more often than a real regression would.',
  MIXED_OUTCOMES: 'Some of its recent runs failed on the first attempt and the others passed, with no clean streak in between.',
  RECENT_INSTABILITY: 'How often its recent runs failed on the first attempt; or, for a broken test, since which commit its branch has failed every run — a real break, not a flake.',
  STABLE: 'No sign of flakiness in the executions scored so far.',
};

/** Each reason code's plain name, shown instead of the code (the code stays beside it, small, for searching the docs). */
export const REASON_NAME: Record<string, string> = {
  SAME_SHA_VARIANCE: 'Passed and failed on the same commit',
  PASS_ON_RERUN: 'Passed on a retry',
  FAIL_ISOLATION: 'Failed once between passes',
  HIGH_FLIP_RATE: 'Keeps flipping between pass and fail',
  MIXED_OUTCOMES: 'Mixed results',
  RECENT_INSTABILITY: 'Recent failures',
  STABLE: 'Stable',
};

export function reasonName(code: string): string {
  return REASON_NAME[code] ?? code.toLowerCase().replace(/_/g, ' ');
}

export function reasonText(code: string): string {
  return REASON_TEXT[code] ?? 'A reason this version of the dashboard does not describe yet.';
}
