// A test's state (src/domain/score.ts TEST_STATES) in words, pure: tested in test/unit/dashboard-web.test.ts.
import type { Outputs } from '../api.js';

export type TestState = Outputs['flaky']['board']['items'][number]['state'];
export type StateSince = Outputs['flaky']['board']['items'][number]['stateSince'];
type EventKind = Outputs['test']['quarantineLog']['events'][number]['kind'];

/** What each state means: the sentence under the state on the test page. */
export const STATE_TEXT: Record<TestState, string> = {
  new: 'Too few graded executions to judge yet.',
  healthy: 'Passing, with no sign of flakiness.',
  flaky: 'Passes and fails on the same code: a quarantine candidate.',
  broken: 'Failing on its own mainline branch since a commit: a real failure to fix, not a flake.',
  fixed: 'Was broken or flaky, and has passed since a commit.',
};

/** A commit as the state words show it: git's usual 7-character abbreviation. */
export function sinceSha(sha: string): string {
  return sha.slice(0, 7);
}

/**
 * Only broken and fixed name their commit on the board ("broken since ed3d460", "fixed since
 * 1a2b3c4"; flaky, new and healthy are the word alone): that commit is what people act on.
 */
export function showsSince(state: TestState): boolean {
  return state === 'broken' || state === 'fixed';
}

/** A flake rate as a share: "12%", one decimal under 1% so a rare flake does not read as "0%". */
export function flakeShare(rate: number): string {
  const share = rate * 100;
  return `${share > 0 && share < 1 ? share.toFixed(1) : Math.round(share)}%`;
}

/** Why a flake rate and its raw share differ (beside the raw share, on hover and focus). */
export const RAW_RATE_DEF =
  'The flake rate is an estimate: recent runs weigh more (half-life 30 days) and it starts from 10% until there are enough runs. The raw share is simply its recent runs (up to 32) with a failed attempt; runs where many other tests failed too (an outage) count for neither.';

/** The raw rate behind a smoothed flake rate: "raw 40%: 4 of 10 runs"; null before any graded run. */
export function rawShare(recent: { runs: number; failed: number }): string | null {
  if (recent.runs === 0) return null;
  return `raw ${flakeShare(recent.failed / recent.runs)}: ${recent.failed} of ${recent.runs} ${recent.runs === 1 ? 'run' : 'runs'}`;
}

/**
 * A person's quarantine outlives the scorer's release of a broken test: the test page says so
 * instead of leaving "quarantined" next to "broken" unexplained.
 */
export function heldByPerson(t: { state: TestState; quarantineOverride: 'quarantined' | 'released' | null }): boolean {
  return t.state === 'broken' && t.quarantineOverride === 'quarantined';
}

/** The health log's kinds (src/domain/processor-outputs.ts HEALTH_EVENT_KINDS) in words. */
export const EVENT_TEXT: Record<EventKind, string> = {
  flaked: 'became flaky',
  broke: 'broke: started failing on its own branch',
  fixed: 'fixed: passing again',
  stabilized: 'score dipped under the threshold (older model: not a proven fix)',
  quarantined: 'quarantined',
  released: 'released from quarantine',
};

export function eventText(kind: string): string {
  return (EVENT_TEXT as Record<string, string | undefined>)[kind] ?? kind;
}
