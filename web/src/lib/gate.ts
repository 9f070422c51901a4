// The gate's classification of a failing test (client/src/contract/gate.ts CLASSIFICATIONS) in words, pure:
// tested in test/unit/dashboard-web.test.ts.
import type { Outputs } from '../api.js';

export type GateTest = Exclude<Outputs['pr']['summary']['gate'], null>['tests'][number];
export type Classification = GateTest['classification'];

/** broken_on_base reads "already broken on <base> since <commit>" on the page, which links the commit. */
export const CLASSIFICATION_TEXT: Record<Classification, string> = {
  new_failure: 'new failure',
  broken_on_base: 'already broken',
  known_flake: 'known flake',
  quarantined: 'quarantined',
};

/** The one summary of a commit (client/src/contract/pr-summary.ts prTally) as the gate answers it. */
export type Gate = Exclude<Outputs['pr']['summary']['gate'], null>;
/** blocked | running | canceled | passed: the gate's verdict over every job of the commit. */
export type PrStatus = NonNullable<Gate['status']>;

/** The status of a gate answer; an older server's (no `status`) from its verdict: blocked never reads as passed. */
export function statusOf(g: Pick<Gate, 'status' | 'verdict' | 'complete' | 'runStatus'>): PrStatus {
  if (g.status) return g.status;
  if (g.verdict === 'block') return 'blocked';
  if (!g.complete || g.runStatus === 'running') return 'running';
  return g.runStatus === 'canceled' ? 'canceled' : 'passed';
}

/** The status pill's colour class (ui/status.tsx): blocked is a failure's red. */
export const STATUS_CLASS: Record<PrStatus, string> = { blocked: 'status-failed', running: 'status-running', canceled: 'status-canceled', passed: 'status-passed' };
