// The scoring processor's cache of committed states: recent ones as objects, older ones as JSON.
import { describe, expect, it } from 'vitest';
import { applyObservation, emptyScoreState, scoreOf, type Observation, type ScoreState } from '../../src/domain/score.js';
import { StateCache } from '../../src/processors/scoring.js';
import type { TestStateRecord } from '../../src/store/tests.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);
const PARAMS = { threshold: 0.8, minSamples: 5 };

/** A state as the scorer commits it, after `runs` observations of one test. */
function record(testId: string, runs: Observation['attempts'][], opts: Partial<Observation> = {}): TestStateRecord {
  let model: ScoreState = emptyScoreState();
  let at = T0;
  runs.forEach((attempts, i) => {
    at += 6 * HOUR;
    model = applyObservation(model, { runId: `${testId}-run-${i}`, commitSha: `c${String(i).padStart(6, '0')}`, branch: 'main', at, attempts, runFailRatio: 0.01, runTestCount: 100, ...opts }, PARAMS);
  });
  const r = scoreOf(model, at, PARAMS);
  return {
    projectId: '0190a0e0-0000-7000-8000-000000000001',
    testId,
    filePath: 'src/checkout/cart.test.ts',
    suite: 'cart › totals',
    title: `adds up ${testId} — ünïcödé`,
    score: r.score,
    candidate: r.candidate,
    broken: r.broken,
    samples: r.samples,
    flipRate: r.flipRate,
    passOnRerunRate: r.passOnRerunRate,
    trend: r.trend,
    lastFlakedAt: r.lastFlakedAt,
    state: r.state,
    stateSince: r.stateSince,
    flakeRate: r.flakeRate,
    reasons: r.reasons,
    model,
    auto: { autoQuarantined: false, reason: '', quarantinedAt: null, cleanRuns: 0, scoredAt: null, releasedAt: null },
    lastRunId: `${testId}-run-${runs.length - 1}`,
    lastStatus: 'pass',
    lastSeenAt: at,
    appliedLease: 'lease-1',
    version: at,
  };
}

describe('StateCache', () => {
  it('gives back a state kept as JSON equal to the one committed, for states of every kind', () => {
    const states = [
      record('new', [['pass']]),
      record('healthy', Array.from({ length: 12 }, () => ['pass'] as Observation['attempts'])),
      record('flaky', Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? ['fail', 'pass'] : ['pass']) as Observation['attempts'])),
      record('broken', [['pass'], ['pass'], ['fail'], ['fail'], ['fail'], ['fail']]),
      record('pr', [['pass'], ['fail', 'pass'], ['fail']], { branch: 'feat/7', prNumber: 7, baseBranch: 'main', mergeBase: 'c000000' }),
      record('no-commit', [['fail', 'pass'], ['pass']], { commitSha: undefined, ciRunKey: 'github_actions:991' }),
    ];
    expect(new Set(states.map((s) => s.state)).size).toBeGreaterThan(2);
    // One state as objects: every other is kept as JSON.
    const cache = new StateCache(100, 1);
    states.forEach((s, i) => cache.set(s.testId, s, i));
    for (const [i, s] of states.entries()) {
      const got = cache.peek(s.testId)!;
      expect(got.record).toEqual(s);
      expect(got.dirty).toBe(i);
      // Scoring the next run from the decoded state gives what scoring from the original gives.
      const next: Observation = { runId: 'next', commitSha: 'd000001', branch: 'main', at: T0 + 400 * HOUR, attempts: ['fail', 'pass'], runFailRatio: 0.01, runTestCount: 100 };
      expect(scoreOf(applyObservation(got.record.model, next, PARAMS), next.at, PARAMS)).toEqual(scoreOf(applyObservation(s.model, next, PARAMS), next.at, PARAMS));
    }
  });

  it('forgets the least recently committed first, whichever form it is kept in', () => {
    const cache = new StateCache(3, 1);
    for (const id of ['a', 'b', 'c']) cache.set(id, record(id, [['pass']]), 0);
    // Committed again: b is the most recent now, a the least.
    cache.set('b', record('b', [['pass'], ['pass']]), 1);
    cache.set('d', record('d', [['pass']]), 0);
    expect(cache.size).toBe(3);
    expect(cache.peek('a')).toBeUndefined();
    expect(cache.peek('b')?.record.samples).toBe(2);
    expect(cache.dirty('b')).toBe(1);
    expect(cache.peek('c')).toBeDefined();
    expect(cache.peek('d')).toBeDefined();
    cache.set('e', record('e', [['pass']]), 0);
    expect(cache.peek('c')).toBeUndefined();
  });

  it('lists the states not written yet, least recently committed first', () => {
    const cache = new StateCache(10, 2);
    cache.set('a', record('a', [['pass']]), 2);
    cache.set('b', record('b', [['pass']]), 0);
    cache.set('c', record('c', [['pass']]), 1);
    cache.set('d', record('d', [['pass']]), 3);
    expect([...cache.dirtyEntries()].map(([key, r]) => [key, r.testId])).toEqual([
      ['a', 'a'],
      ['c', 'c'],
      ['d', 'd'],
    ]);
  });
});
