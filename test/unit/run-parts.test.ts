// A run in parts counted before a part is stored (src/domain/run-parts.ts): the stored counts, with
// the part's tests taken out and counted again with its executions, must equal counting every
// execution of every part at once (countFinalStatuses, the rule within one batch).
import { describe, expect, it } from 'vitest';
import type { ExecutionInput, TestStatus } from '../../client/src/contract/batch.js';
import { countFinalStatuses, type RunCounts } from '../../src/domain/records.js';
import { countOf, countsWithPending, finalsOf, laterFinal, type PendingExecution, type TestFinal } from '../../src/domain/run-parts.js';

const T0 = Date.parse('2026-11-20T10:00:00Z');
const ex = (testId: string, status: TestStatus, attempt = 1, startedAt = T0): PendingExecution => ({ testId, status, attempt, startedAt });
const counts = (rows: readonly PendingExecution[]): RunCounts =>
  countFinalStatuses(rows.map((e): ExecutionInput => ({ filePath: 'a.test.ts', suite: 'A', title: e.testId, status: e.status, attempt: e.attempt, startedAt: e.startedAt, durationMs: 1 })));

/** The counts of `stored` plus `part` as the exporter works them out before storing `part`. */
function beforeStoring(stored: readonly PendingExecution[], part: readonly PendingExecution[]): RunCounts {
  const storedFinals = finalsOf(stored);
  const touched = new Map([...storedFinals].filter(([id]) => part.some((e) => e.testId === id)));
  return countsWithPending(counts(stored), touched, part);
}

describe('run parts: counts before a part is stored', () => {
  it('the later attempt stands; a tie goes to the second; a failure anywhere is kept', () => {
    const a: TestFinal = { status: 'fail', attempt: 1, startedAt: T0, failed: true };
    const b: TestFinal = { status: 'pass', attempt: 2, startedAt: T0 - 10, failed: false };
    expect(laterFinal(a, b)).toEqual({ ...b, failed: true });
    expect(laterFinal(b, a)).toEqual({ ...b, failed: true });
    const early = { status: 'skip', attempt: 1, startedAt: T0, failed: false } as const;
    const late = { status: 'pass', attempt: 1, startedAt: T0 + 1, failed: false } as const;
    expect(laterFinal(early, late).status).toBe('pass');
    expect(laterFinal({ ...late, startedAt: T0 }, early).status).toBe('skip');
    expect([countOf(a), countOf(b), countOf({ ...b, failed: true }), countOf(early), countOf({ ...b, status: 'flaky' })]).toEqual(['failed', 'passed', 'flaky', 'skipped', 'flaky']);
  });

  const cases: [string, PendingExecution[], PendingExecution[]][] = [
    ['new tests only', [ex('a', 'pass'), ex('b', 'fail')], [ex('c', 'pass'), ex('d', 'skip')]],
    ['a retry in the later part', [ex('a', 'fail'), ex('b', 'pass')], [ex('a', 'pass', 2, T0 + 5)]],
    ['a failed retry in the later part', [ex('a', 'pass')], [ex('a', 'fail', 2, T0 + 5)]],
    ['an earlier attempt arriving late', [ex('a', 'pass', 2, T0 + 5)], [ex('a', 'fail', 1, T0)]],
    ['a skip then a pass of one attempt', [ex('a', 'skip', 1, T0)], [ex('a', 'pass', 1, T0 + 1)]],
    ['a reporter-marked flaky test', [ex('a', 'flaky'), ex('b', 'pass')], [ex('b', 'pass', 2, T0 + 1), ex('c', 'fail')]],
    ['nothing stored yet', [], [ex('a', 'fail'), ex('a', 'pass', 2, T0 + 1), ex('b', 'skip')]],
    ['an empty part', [ex('a', 'fail')], []],
  ];
  it.each(cases)('%s: as if every part were counted at once', (_name, stored, part) => {
    expect(beforeStoring(stored, part)).toEqual(counts([...stored, ...part]));
  });

  it('a part already stored by an earlier delivery counts once', () => {
    const stored = [ex('a', 'fail'), ex('b', 'pass')];
    const part = [ex('a', 'pass', 2, T0 + 5), ex('c', 'skip')];
    const once = counts([...stored, ...part]);
    expect(beforeStoring([...stored, ...part], part)).toEqual(once);
    expect(once).toEqual({ total: 3, passed: 1, failed: 0, skipped: 1, flaky: 1 });
  });
});
