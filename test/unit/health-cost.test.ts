// Health's cost of flakiness (issue 31, defect 6): retried attempts and whole-job re-runs billed as CI
// minutes, in the configured currency; a re-run is a later run of the same commit, branch, trigger
// and shard.
import { describe, expect, it } from 'vitest';
import { costOf } from '../../src/usecases/project-health.js';
import { serviceConfigSchema } from '../../src/config/service-yml.js';
import { reRunsOf, type RunKeyRow } from '../../src/store/project-health.js';

const MIN = 60_000;
const key = (commit: string, shard = 0, trigger = 'push'): string => [commit, 'main', trigger, shard, shard ? 2 : 0].join('\u0000');

describe('reRunsOf', () => {
  it('counts every later run of the same commit and job as a re-run, the first as the original', () => {
    const runs: RunKeyRow[] = [
      { id: 'a1', key: key('c1'), startedAt: 1_000, durationMs: 2 * MIN },
      { id: 'a2', key: key('c1'), startedAt: 5_000, durationMs: 3 * MIN }, // the re-run
      { id: 'a3', key: key('c1'), startedAt: 9_000, durationMs: 1 * MIN }, // and another
      { id: 'b1', key: key('c2'), startedAt: 2_000, durationMs: 2 * MIN }, // another commit: no re-run
      { id: 's1', key: key('c3', 1), startedAt: 2_000, durationMs: MIN }, // shards of one commit: none
      { id: 's2', key: key('c3', 2), startedAt: 2_001, durationMs: MIN },
      { id: 'p1', key: key('c1', 0, 'pull_request'), startedAt: 6_000, durationMs: MIN }, // the PR event's own run
    ];
    expect(reRunsOf(runs, 0).map((r) => r.id)).toEqual(['a2', 'a3']);
  });

  it('keeps a re-run whose original is older than the window, and leaves out re-runs before it', () => {
    const runs: RunKeyRow[] = [
      { id: 'old', key: key('c1'), startedAt: 1_000, durationMs: MIN },
      { id: 'before', key: key('c1'), startedAt: 4_000, durationMs: MIN },
      { id: 'inside', key: key('c1'), startedAt: 10_000, durationMs: MIN },
    ];
    expect(reRunsOf(runs, 5_000).map((r) => r.id)).toEqual(['inside']);
  });
});

describe('costOf', () => {
  const service = serviceConfigSchema.parse({ cost: { ciMinute: 0.5, developerHour: 60, investigationMinutes: 10, currency: 'EUR' } });

  it('defaults the currency to USD and refuses what is no ISO 4217 code', () => {
    expect(serviceConfigSchema.parse({}).cost.currency).toBe('USD');
    expect(serviceConfigSchema.safeParse({ cost: { currency: 'dollars' } }).success).toBe(false);
  });

  it('bills retried attempts and re-runs as CI minutes, in the configured currency', () => {
    const c = costOf(service, 3 * MIN, 2, { count: 1, ms: 8 * MIN });
    expect(c).toMatchObject({ currency: 'EUR', rerunMs: 3 * MIN, reRunMs: 8 * MIN, reRunCount: 1, flakyOccurrences: 2 });
    expect(c.ciSpend).toBeCloseTo((3 + 8) * 0.5, 6);
    expect(c.peopleSpend).toBeCloseTo(2 * (10 / 60) * 60, 6);
    expect(c.total).toBeCloseTo(5.5 + 20, 6);
  });
});
