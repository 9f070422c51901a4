// A fix `--verify-fix` verified makes a flaky test `fixed` when it reaches a mainline branch
// (src/domain/score.ts verifiedFixStep), and automatic quarantine lets a fixed test go
// (src/domain/quarantine.ts). Issue 38, defect 2.
import { describe, expect, it } from 'vitest';
import { stepQuarantine } from '../../src/domain/quarantine.js';
import { applyObservation, emptyScoreState, scoreOf, type Observation, type ScoreState } from '../../src/domain/score.js';

const T = Date.parse('2026-11-01T00:00:00Z');
const MIN = 60_000;
let n = 0;
const obs = (at: number, attempts: Observation['attempts'], over: Partial<Observation> = {}): Observation => ({
  runId: `r${n++}`,
  commitSha: (0x1000000 + n).toString(16).padStart(12, 'c') + 'f'.repeat(28),
  branch: 'main',
  at,
  attempts,
  runFailRatio: 0,
  runTestCount: 10,
  ...over,
});

function flakyOnMain(): ScoreState {
  let s = emptyScoreState();
  for (let i = 0; i < 8; i++) s = applyObservation(s, obs(T + i * MIN, i % 2 === 1 ? ['fail', 'pass'] : ['pass']));
  expect(s.state).toBe('flaky');
  return s;
}

const pr = { branch: 'fix/x', prNumber: 3, baseBranch: 'main' };

describe('a verified fix', () => {
  it('waits on its branch, then makes the test fixed at the first clean mainline run of newer code', () => {
    let s = flakyOnMain();
    s = applyObservation(s, obs(T + 20 * MIN, Array(11).fill('pass'), { ...pr, verifiedFix: true }));
    expect(s.state).toBe('flaky');
    expect(s.fixPending).toMatchObject({ branch: 'fix/x' });
    s = applyObservation(s, obs(T + 30 * MIN, ['pass']));
    expect(s.state).toBe('fixed');
    expect(s.since).toMatchObject({ branch: 'main', at: T + 30 * MIN });
    const r = scoreOf(s, T + 31 * MIN);
    expect(r).toMatchObject({ state: 'fixed', score: 0, candidate: false, trend: 'stable' });
  });

  it('a fix that failed a re-run is not verified; a flake before the merge cancels a verified one', () => {
    let s = flakyOnMain();
    s = applyObservation(s, obs(T + 20 * MIN, ['pass', 'pass', 'fail', 'pass'], { ...pr, verifiedFix: false }));
    s = applyObservation(s, obs(T + 30 * MIN, ['pass']));
    expect(s.state).toBe('flaky');
    let t = flakyOnMain();
    t = applyObservation(t, obs(T + 20 * MIN, Array(11).fill('pass'), { ...pr, verifiedFix: true }));
    t = applyObservation(t, obs(T + 25 * MIN, ['fail', 'pass']));
    t = applyObservation(t, obs(T + 30 * MIN, ['pass']));
    expect(t.state).toBe('flaky');
  });

  it('after it, failures across commits alone never make it flaky again; a retry passing does', () => {
    let s = flakyOnMain();
    s = applyObservation(s, obs(T + 20 * MIN, Array(11).fill('pass'), { verifiedFix: true }));
    expect(s.state).toBe('fixed');
    // Isolated failures on main (failed on one commit, passed on the next), twice: broken, then fixed, never flaky.
    for (let i = 0; i < 6; i++) {
      s = applyObservation(s, obs(T + (30 + i) * MIN, [i % 3 === 1 ? 'fail' : 'pass']));
      expect(s.state).not.toBe('flaky');
    }
    s = applyObservation(s, obs(T + 40 * MIN, ['fail', 'pass']));
    expect(s.state).toBe('flaky');
  });
});

describe('automatic quarantine of a fixed test', () => {
  const policy = { enabled: true, cooldownRuns: 20 };
  const held = { autoQuarantined: true, reason: 'auto: flaky score 0.99', quarantinedAt: T, cleanRuns: 0, scoredAt: T, releasedAt: null };
  it('releases it at once and never quarantines it', () => {
    const fixed = { candidate: false, broken: false, brokenSince: null, score: 0, lastFlakedAt: T, fixed: true, fixedSince: 'abcdef1234' };
    const step = stepQuarantine(held, null, policy, { runs: [true] }, fixed, T + MIN);
    expect(step).toMatchObject({ changed: 'released', next: { autoQuarantined: false, reason: 'auto: released, fixed since abcdef1' } });
    expect(stepQuarantine(null, null, policy, { runs: [true] }, { ...fixed, candidate: true }, T + MIN).next.autoQuarantined).toBe(false);
  });
});
