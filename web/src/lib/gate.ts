// The gate's classification of a failing test (src/domain/gate.ts CLASSIFICATIONS) in words, pure:
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
