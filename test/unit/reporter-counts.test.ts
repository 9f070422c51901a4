// The `sent …` line of `flakehouse report`: per-test statuses add up to the tests, and the tests
// plus the earlier attempts add up to the executions.
import { describe, expect, it } from 'vitest';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { describeCounts } from '../../client/src/reporter/send.js';

const exec = (title: string, status: ExecutionInput['status'], attempt = 1, retryOfIndex?: number): ExecutionInput =>
  ({ filePath: 'a.test.ts', suite: 's', title, status, attempt, startedAt: 0, durationMs: 1, ...(retryOfIndex !== undefined ? { retryOfIndex } : {}) });

describe('describeCounts', () => {
  it('without retries, executions and tests are the same number', () => {
    expect(describeCounts([exec('a', 'pass'), exec('b', 'fail'), exec('c', 'skip')])).toBe('3 executions: 3 tests (1 passed, 1 failed, 1 skipped)');
  });

  it('retries: statuses are of each test’s final attempt; earlier attempts are counted apart', () => {
    // a: fail → pass (chain, as runner reporters link); b: fail, fail, fail (star, as the JUnit parser links); c: pass.
    const executions = [exec('a', 'fail'), exec('a', 'flaky', 2, 0), exec('b', 'fail'), exec('b', 'fail', 2, 2), exec('b', 'fail', 3, 2), exec('c', 'pass')];
    expect(describeCounts(executions)).toBe('6 executions: 3 tests (1 passed, 1 failed, 1 flaky) + 3 earlier attempts');
  });

  it('singular words for one', () => {
    expect(describeCounts([exec('a', 'fail'), exec('a', 'pass', 2, 0)])).toBe('2 executions: 1 test (1 passed) + 1 earlier attempt');
    expect(describeCounts([])).toBe('0 executions: 0 tests');
  });
});
