// The counts of a run that arrives in parts (an OTLP trace in several requests, a JUnit report sent
// in parts), worked out before a part's executions are stored: the counts of what is stored, with
// the tests this part touches taken out and counted again with the part's executions. Counts count
// tests, not attempts, across every part (as countFinalStatuses does within one batch): a test's
// last attempt decides, and a pass after a failure, in any part, is one flaky test.
import type { TestStatus } from '../../client/src/contract/batch.js';
import type { RunCounts } from './records.js';

/** An execution of a part, not stored yet: what its run's counts read of it. */
export interface PendingExecution {
  testId: string;
  status: TestStatus;
  attempt: number;
  /** Epoch milliseconds. */
  startedAt: number;
}

/** Where a test stands in a run: its last attempt (by attempt, then start) and whether any attempt failed. */
export interface TestFinal {
  status: TestStatus;
  attempt: number;
  startedAt: number;
  failed: boolean;
}

/** The later of two standings of one test (on a tie, `b`), failed if either failed. */
export function laterFinal(a: TestFinal, b: TestFinal): TestFinal {
  const later = a.attempt > b.attempt || (a.attempt === b.attempt && a.startedAt > b.startedAt) ? a : b;
  return { ...later, failed: a.failed || b.failed };
}

/** Which count a test goes to. */
export function countOf(f: TestFinal): Exclude<keyof RunCounts, 'total'> {
  if (f.status === 'pass') return f.failed ? 'flaky' : 'passed';
  if (f.status === 'fail') return 'failed';
  if (f.status === 'skip') return 'skipped';
  return 'flaky';
}

/** Each test's standing over `executions`. */
export function finalsOf(executions: readonly PendingExecution[]): Map<string, TestFinal> {
  const out = new Map<string, TestFinal>();
  for (const e of executions) {
    const f: TestFinal = { status: e.status, attempt: e.attempt, startedAt: e.startedAt, failed: e.status === 'fail' };
    const prev = out.get(e.testId);
    out.set(e.testId, prev ? laterFinal(prev, f) : f);
  }
  return out;
}

/**
 * The run's counts once `pending` is stored. `stored`: the counts over its stored executions;
 * `storedFinals`: the stored standing of each test `pending` touches that has stored executions in
 * the run (tests without any are absent). An execution both stored and pending (an earlier delivery
 * of the same part stored it) is the same attempt twice and changes nothing.
 */
export function countsWithPending(stored: RunCounts, storedFinals: ReadonlyMap<string, TestFinal>, pending: readonly PendingExecution[]): RunCounts {
  const counts = { ...stored };
  for (const [testId, mine] of finalsOf(pending)) {
    const before = storedFinals.get(testId);
    if (before) counts[countOf(before)]--;
    else counts.total++;
    counts[countOf(before ? laterFinal(before, mine) : mine)]++;
  }
  return counts;
}
