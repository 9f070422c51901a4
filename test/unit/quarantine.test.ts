// Automatic quarantine (src/domain/quarantine.ts): only flaky tests, released after clean runs, and
// never holding a broken test; a person's decision always wins.
import { describe, expect, it } from 'vitest';
import { effectiveQuarantine, stepQuarantine, type AutoState, type OverrideRow, type ScoredTest } from '../../src/domain/quarantine.js';

const NOW = Date.UTC(2026, 10, 20);
const policy = { enabled: true, cooldownRuns: 3 };
const flaky: ScoredTest = { candidate: true, broken: false, brokenSince: null, score: 0.92, lastFlakedAt: NOW - 1000 };
const broken: ScoredTest = { candidate: false, broken: true, brokenSince: 'ed3d4601234567', score: 0.1, lastFlakedAt: NOW - 1000 };
const healthy: ScoredTest = { candidate: false, broken: false, brokenSince: null, score: 0.1, lastFlakedAt: null };

function quarantinedAuto(): AutoState {
  return stepQuarantine(null, null, policy, { runs: [false] }, flaky, NOW - 5000).next;
}

describe('stepQuarantine', () => {
  it('quarantines a flaky test when enabled, and nothing else', () => {
    const q = stepQuarantine(null, null, policy, { runs: [false] }, flaky, NOW);
    expect(q.changed).toBe('quarantined');
    expect(q.next).toMatchObject({ autoQuarantined: true, reason: 'auto: flaky score 0.92', quarantinedAt: NOW });
    expect(stepQuarantine(null, null, policy, { runs: [false] }, healthy, NOW).changed).toBeNull();
    expect(stepQuarantine(null, null, policy, { runs: [false] }, broken, NOW).changed).toBeNull();
    expect(stepQuarantine(null, null, { ...policy, enabled: false }, { runs: [false] }, flaky, NOW).changed).toBeNull();
  });

  it('releases after cooldownRuns clean runs (a retry-pass is not clean)', () => {
    let s = quarantinedAuto();
    s = stepQuarantine(s, null, policy, { runs: [true, true, false] }, flaky, NOW).next;
    expect(s.autoQuarantined).toBe(true);
    const r = stepQuarantine(s, null, policy, { runs: [true, true, true] }, flaky, NOW);
    expect(r.changed).toBe('released');
    expect(r.next.releasedAt).toBe(NOW);
    // Not quarantined again on the same evidence; only on a flake newer than the release.
    expect(stepQuarantine(r.next, null, policy, { runs: [false] }, flaky, NOW + 1).changed).toBeNull();
    expect(stepQuarantine(r.next, null, policy, { runs: [false] }, { ...flaky, lastFlakedAt: NOW + 1 }, NOW + 2).changed).toBe('quarantined');
  });

  it('releases an automatically quarantined test the moment it is broken, saying why', () => {
    const r = stepQuarantine(quarantinedAuto(), null, policy, { runs: [false] }, broken, NOW);
    expect(r.changed).toBe('released');
    expect(r.next).toMatchObject({ autoQuarantined: false, quarantinedAt: null, releasedAt: NOW });
    expect(r.next.reason).toBe('auto: released, broken since ed3d460 (not flaky: a quarantine would hide the break)');
    // A test that never passes is released without waiting for clean runs it could never earn.
    expect(effectiveQuarantine(r.next, null).quarantined).toBe(false);
  });

  it("keeps a person's quarantine of a broken test: people decide", () => {
    const person: OverrideRow = { override: 'quarantined', reason: 'blocks the release', stateAfter: true, decidedAt: NOW - 100 };
    const r = stepQuarantine(quarantinedAuto(), person, policy, { runs: [false] }, broken, NOW);
    expect(r.changed).toBeNull();
    expect(effectiveQuarantine(r.next, person)).toEqual({ quarantined: true, reason: 'blocks the release' });
  });
});
