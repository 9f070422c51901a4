// Splitting a large report's executions into bounded parts, retry chains kept whole.
import { describe, expect, it } from 'vitest';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { parseReportPartKey, reportPartKey, splitExecutions } from '../../client/src/contract/report-parts.js';

function exec(title: string, extra: Partial<ExecutionInput> = {}): ExecutionInput {
  return { filePath: 'a.ts', suite: 's', title, status: 'pass', attempt: 1, startedAt: 0, durationMs: 1, ...extra };
}

describe('splitExecutions', () => {
  it('one part when it fits; parts of at most the size otherwise, in order, nothing lost', () => {
    const xs = Array.from({ length: 10 }, (_, i) => exec(`t${i}`));
    expect(splitExecutions(xs, 10)).toEqual([xs]);
    const parts = splitExecutions(xs, 4);
    expect(parts.map((p) => p.length)).toEqual([4, 4, 2]);
    expect(parts.flat().map((e) => e.title)).toEqual(xs.map((e) => e.title));
  });

  it('keeps the attempts of a test in one part and re-indexes retryOfIndex to the part', () => {
    // t0 fails at index 0 and is retried at index 4 (a flaky pass), across what would be a boundary at 3.
    const xs = [
      exec('t0', { status: 'fail' }),
      exec('t1'),
      exec('t2'),
      exec('t3'),
      exec('t0', { status: 'flaky', attempt: 2, retryOfIndex: 0 }),
      exec('t5', { status: 'fail' }),
      exec('t5', { status: 'fail', attempt: 2, retryOfIndex: 5 }),
      exec('t5', { status: 'pass', attempt: 3, retryOfIndex: 5 }),
    ];
    const parts = splitExecutions(xs, 3);
    expect(parts.every((p) => p.length <= 3)).toBe(true);
    expect(parts.flat()).toHaveLength(xs.length);
    for (const part of parts) {
      part.forEach((e, i) => {
        if (e.retryOfIndex === undefined) return;
        expect(e.retryOfIndex).toBeLessThan(i);
        expect(part[e.retryOfIndex]!.title).toBe(e.title);
        expect(part[e.retryOfIndex]!.attempt).toBe(1);
      });
    }
    const t0 = parts.find((p) => p.some((e) => e.title === 't0'))!;
    expect(t0.filter((e) => e.title === 't0').map((e) => e.attempt)).toEqual([1, 2]);
    const t5 = parts.find((p) => p.some((e) => e.title === 't5'))!;
    expect(t5.filter((e) => e.title === 't5')).toHaveLength(3);
    // The input is not modified.
    expect(xs[4]!.retryOfIndex).toBe(0);
  });

  it('a retry chain longer than a part is a part of its own', () => {
    const xs = [exec('a'), exec('b'), exec('b', { attempt: 2, retryOfIndex: 1 }), exec('b', { attempt: 3, retryOfIndex: 1 }), exec('c')];
    const parts = splitExecutions(xs, 2);
    expect(parts.map((p) => p.map((e) => e.title).join(''))).toEqual(['a', 'bbb', 'c']);
  });
});

describe('report part keys', () => {
  it('round-trip, and plain keys are not parts', () => {
    expect(reportPartKey('ci-run-42', 2, 20)).toBe('ci-run-42#part3of20');
    expect(parseReportPartKey('ci-run-42#part3of20')).toEqual({ index: 2, count: 20 });
    expect(parseReportPartKey('ci-run-42')).toBeUndefined();
  });
});
