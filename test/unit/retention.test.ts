// Retention windows, cutoffs and the drop-or-delete plan, pure.
import { describe, expect, it } from 'vitest';
import { cutoffDay, planPrune, retentionWindows } from '../../client/src/contract/retention.js';

describe('retentionWindows', () => {
  it('keeps everything without a window', () => {
    expect(retentionWindows({})).toEqual({ executionDays: null, artifactDays: null });
  });

  it('clamps the artifact window to at least the execution window', () => {
    expect(retentionWindows({ rawDays: 30, artifactDays: 7 })).toEqual({ executionDays: 30, artifactDays: 30 });
    expect(retentionWindows({ rawDays: 7, artifactDays: 30 })).toEqual({ executionDays: 7, artifactDays: 30 });
    // No execution window: nothing to clamp to, artifacts keep their own; no artifact window keeps them all.
    expect(retentionWindows({ artifactDays: 5 })).toEqual({ executionDays: null, artifactDays: 5 });
    expect(retentionWindows({ rawDays: 7 })).toEqual({ executionDays: 7, artifactDays: null });
  });
});

describe('cutoffDay', () => {
  it('keeps today and N whole UTC days before it', () => {
    expect(cutoffDay(Date.parse('2026-11-21T10:00:00Z'), 7)).toBe('2026-11-14');
    expect(cutoffDay(Date.parse('2026-11-21T00:00:00Z'), 7)).toBe('2026-11-14');
    expect(cutoffDay(Date.parse('2026-11-21T23:59:59.999Z'), 7)).toBe('2026-11-14');
    expect(cutoffDay(Date.parse('2026-03-01T05:00:00Z'), 1)).toBe('2026-02-28');
  });
});

describe('planPrune', () => {
  const A = 'a';
  const B = 'b';

  it('drops a partition only when every project’s rows in it are past their windows', () => {
    const plan = planPrune([
      { partition: '202601', projectId: A, rows: 10, expired: 10 },
      { partition: '202601', projectId: B, rows: 4, expired: 4 },
      { partition: '202602', projectId: A, rows: 5, expired: 5 },
      { partition: '202602', projectId: B, rows: 3, expired: 0 }, // B keeps February
      { partition: '202603', projectId: A, rows: 8, expired: 2 },
    ]);
    expect(plan.dropPartitions).toEqual(['202601']);
    expect(plan.droppedRows).toEqual(new Map([[A, 10], [B, 4]]));
    expect(plan.deleteRows).toEqual(new Map([[A, 7]]));
  });

  it('plans nothing when nothing is expired', () => {
    const plan = planPrune([{ partition: '202601', projectId: A, rows: 3, expired: 0 }]);
    expect(plan.dropPartitions).toEqual([]);
    expect(plan.deleteRows.size).toBe(0);
    expect(planPrune([]).dropPartitions).toEqual([]);
  });
});
