// `flakehouse run --retry-failed`: which tests are retried (client/src/contract/verify.ts selectRetries) and
// how their attempts join the run (appendAttempts, marked `retry`). Issue 38.
import { describe, expect, it } from 'vitest';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { appendAttempts, selectRetries, verifyLine, VERIFY_ATTRIBUTE } from '../../client/src/contract/verify.js';

const e = (title: string, status: ExecutionInput['status'], attempt = 1): ExecutionInput => ({ filePath: 'a.test.ts', suite: 's', title, status, attempt, startedAt: 1, durationMs: 1 });

describe('selectRetries', () => {
  it('takes the tests whose last attempt failed: not a pass, not one a runner retry already passed', () => {
    const run = [e('ok', 'pass'), e('red', 'fail'), e('healed', 'fail'), e('healed', 'pass', 2), e('flaky', 'flaky'), e('skipped', 'skip')];
    const sel = selectRetries(run, 20);
    expect(sel.kind === 'selected' && sel.tests.map((t) => t.title)).toEqual(['red']);
    expect(selectRetries([e('ok', 'pass')], 20)).toEqual({ kind: 'none' });
  });

  it('retries nothing when more tests failed than the cap (a broken build, not flakes)', () => {
    expect(selectRetries([e('a', 'fail'), e('b', 'fail'), e('c', 'fail')], 2)).toEqual({ kind: 'too_many', count: 3, max: 2 });
  });

  it('appends the retries as the next attempts of the test, marked retry', () => {
    const out = appendAttempts([e('red', 'fail'), e('ok', 'pass')], selectRetriesFp('red'), [e('red', 'pass')], 'retry');
    expect(out[2]).toMatchObject({ title: 'red', status: 'pass', attempt: 2, retryOfIndex: 0, attributes: { [VERIFY_ATTRIBUTE]: 'retry' } });
  });

  it('says whether a retry passed', () => {
    const t = { fingerprint: 'x', filePath: 'a.test.ts', suite: 's', title: 'red' };
    expect(verifyLine('retry', t, { runs: 2, failed: 1, missing: 0, skipped: 0 }).line).toMatch(/^passed on a retry of the same code \(1 failed retry before\)/);
    expect(verifyLine('retry', t, { runs: 3, failed: 3, missing: 0, skipped: 0 }).line).toMatch(/^failed every retry \(3\)/);
  });
});

function selectRetriesFp(title: string): string {
  const sel = selectRetries([e(title, 'fail')], 1);
  if (sel.kind !== 'selected') throw new Error('not selected');
  return sel.tests[0]!.fingerprint;
}
