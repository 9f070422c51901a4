// Without a commit, a re-run (or shard) of the same CI run is same-code evidence (src/domain/score.ts
// runCodeKey); different CI runs are not. Issue 38.
import { describe, expect, it } from 'vitest';
import { applyObservation, emptyScoreState, runCodeKey, scoreOf, type Observation, type ScoreState } from '../../src/domain/score.js';

const T = Date.parse('2026-11-01T00:00:00Z');
const MIN = 60_000;
let n = 0;
const obs = (i: number, attempts: Observation['attempts'], ciRunKey: string | null): Observation => ({
  runId: `run-${n++}`,
  commitSha: '0000000',
  ciRunKey,
  branch: 'main',
  at: T + i * MIN,
  attempts,
  runFailRatio: 0,
  runTestCount: 10,
});

function history(keys: (i: number) => string | null): ScoreState {
  let s = emptyScoreState();
  for (let i = 0; i < 6; i++) s = applyObservation(s, obs(i, ['pass'], `github_actions:${100 + i}`));
  // CI run 200 fails; its re-run (same run id, attempt 2) passes.
  s = applyObservation(s, obs(10, ['fail'], keys(0)));
  s = applyObservation(s, obs(11, ['pass'], keys(1)));
  return s;
}

describe('same CI run without a commit', () => {
  it('a re-run of the same CI run that passes after a failure is same-code evidence: flaky', () => {
    const s = history(() => 'github_actions:200');
    const r = scoreOf(s, T + 12 * MIN);
    expect(r.state).toBe('flaky');
    expect(r.reasons[0]!.code).toBe('SAME_SHA_VARIANCE');
    // Never shown as a commit.
    expect(r.stateSince?.commitSha).toBe('');
  });

  it('another CI run, or none, is no such evidence (a break fixed by the next push looks the same)', () => {
    for (const keys of [(i: number) => `github_actions:${200 + i}`, () => null]) {
      const r = scoreOf(history(keys), T + 12 * MIN);
      expect(r.state).not.toBe('flaky');
      expect(r.reasons.map((x) => x.code)).not.toContain('SAME_SHA_VARIANCE');
    }
  });

  it('keys are short, never hex, and differ by provider and id', () => {
    expect(runCodeKey('github_actions:200')).toMatch(/^r[0-9a-f]{11}$/);
    expect(runCodeKey('github_actions:200')).not.toBe(runCodeKey('gitlab_ci:200'));
    expect(runCodeKey(null)).toBe('');
    expect(runCodeKey('  ')).toBe('');
  });
});
