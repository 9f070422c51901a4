import { describe, expect, it } from 'vitest';
import {
  applyObservation,
  emptyScoreState,
  REASON_CODES,
  scoreOf,
  type Observation,
  type ScoreResult,
  type ScoreState,
} from '../../src/domain/score.js';
import { flakemetryScore, type GradedExecution } from '../../bench/baselines/flakemetry-score.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);
const PARAMS = { threshold: 0.8, minSamples: 5 };

type Attempts = Observation['attempts'];

/** Builds runs of one test: every run on a new commit unless `sha` says otherwise. */
class History {
  state: ScoreState = emptyScoreState();
  private n = 0;
  at = T0;
  readonly results: ScoreResult[] = [];

  run(attempts: Attempts, opts: Partial<Observation> & { gapMs?: number } = {}): ScoreResult {
    const { gapMs = 6 * HOUR, ...over } = opts;
    this.n++;
    this.at += gapMs;
    const o: Observation = {
      runId: `run-${this.n}`,
      commitSha: `c${String(this.n).padStart(6, '0')}`,
      branch: 'main',
      at: this.at,
      attempts,
      runFailRatio: attempts[attempts.length - 1] === 'fail' ? 0.01 : 0,
      runTestCount: 100,
      ...over,
    };
    this.state = applyObservation(this.state, o);
    const r = scoreOf(this.state, this.at, PARAMS);
    this.results.push(r);
    return r;
  }

  /** Index (1-based) of the first run after which the test was a candidate, or null. */
  firstCandidate(): number | null {
    const i = this.results.findIndex((r) => r.candidate);
    return i < 0 ? null : i + 1;
  }

  codes(): string[] {
    return scoreOf(this.state, this.at, PARAMS).reasons.map((r) => r.code);
  }
}

describe('score model: obvious flakes', () => {
  it('a test that fails then passes on retry becomes a candidate within 5–10 runs', () => {
    const h = new History();
    for (let i = 1; i <= 10; i++) h.run(i % 3 === 0 ? ['fail', 'pass'] : ['pass']);
    const first = h.firstCandidate();
    expect(first).not.toBeNull();
    expect(first!).toBeLessThanOrEqual(10);
    // Never before minSamples graded executions.
    for (const r of h.results) if (r.samples < PARAMS.minSamples) expect(r.candidate).toBe(false);
    const last = h.results.at(-1)!;
    expect(last.reasons[0]!.code).toBe('PASS_ON_RERUN');
    expect(last.passOnRerunRate).toBe(1);
    expect(last.broken).toBe(false);
    expect(last.lastFlakedAt).not.toBeNull();
  });

  it('passing and failing on one commit (a rerun) makes a candidate, with SAME_SHA_VARIANCE', () => {
    const h = new History();
    for (let i = 0; i < 4; i++) {
      h.run(['pass'], { commitSha: `sha-${i}` });
      h.run(i % 2 === 0 ? ['fail'] : ['pass'], { commitSha: `sha-${i}` }); // same-commit rerun
    }
    expect(h.firstCandidate()).not.toBeNull();
    expect(h.firstCandidate()!).toBeLessThanOrEqual(8);
    expect(h.codes()).toContain('SAME_SHA_VARIANCE');
    expect(h.codes()[0]).toBe('SAME_SHA_VARIANCE');
  });

  it('a JUnit `flaky` attempt counts as a pass on rerun', () => {
    const h = new History();
    for (let i = 1; i <= 8; i++) h.run(i % 4 === 0 ? ['flaky'] : ['pass']);
    expect(h.firstCandidate()).not.toBeNull();
    expect(h.codes()).toContain('PASS_ON_RERUN');
  });
});

describe('score model: what is not flaky', () => {
  it('a test that always fails is broken, never a candidate', () => {
    const h = new History();
    for (let i = 0; i < 40; i++) {
      // Retried, and the same commit re-run now and then: it fails every time.
      h.run(['fail', 'fail', 'fail'], i % 5 === 1 ? { commitSha: 'c000001' } : {});
    }
    expect(h.results.every((r) => !r.candidate)).toBe(true);
    const last = h.results.at(-1)!;
    expect(last.broken).toBe(true);
    expect(last.score).toBeLessThan(0.5);
    expect(last.reasons[0]!.code).toBe('RECENT_INSTABILITY');
    expect(last.reasons[0]!.message).toMatch(/broken/);
  });

  it('a stable test that breaks (a regression) is broken, not a candidate, and stays clean once fixed', () => {
    const h = new History();
    for (let i = 0; i < 20; i++) h.run(['pass']);
    for (let i = 0; i < 6; i++) h.run(['fail']);
    expect(h.results.at(-1)!.broken).toBe(true);
    for (let i = 0; i < 10; i++) h.run(['pass']);
    expect(h.results.every((r) => !r.candidate)).toBe(true);
    expect(h.results.at(-1)!.broken).toBe(false);
  });

  it('failures only in outage runs (60% of the run failing) never make a candidate', () => {
    const h = new History();
    for (let i = 0; i < 60; i++) {
      if (i % 4 === 3) {
        // Outage: 60% of the run fails; sometimes the retry passes; the commit is then re-run and passes.
        const sha = `outage-${i}`;
        h.run(i % 8 === 3 ? ['fail', 'pass'] : ['fail', 'fail'], { commitSha: sha, runFailRatio: 0.6 });
        h.run(['pass'], { commitSha: sha });
      } else h.run(['pass']);
    }
    expect(h.results.every((r) => !r.candidate)).toBe(true);
    expect(h.results.at(-1)!.score).toBeLessThan(0.3);
    expect(h.codes()).not.toContain('PASS_ON_RERUN');
    expect(h.codes()).not.toContain('SAME_SHA_VARIANCE');
  });

  it('an outage that retries papered over is recognised with runFlakyRatio', () => {
    const h = new History();
    for (let i = 0; i < 40; i++) {
      // 60% of the tests failed their first attempt, most passed on retry: few final failures.
      if (i % 5 === 4) h.run(['fail', 'pass'], { runFailRatio: 0.05, runFlakyRatio: 0.55 });
      else h.run(['pass']);
    }
    expect(h.results.every((r) => !r.candidate)).toBe(true);
  });

  it('a stable test scores ~0 with STABLE alone', () => {
    const h = new History();
    for (let i = 0; i < 50; i++) h.run(['pass']);
    const r = h.results.at(-1)!;
    expect(r.score).toBe(0);
    expect(r.reasons).toEqual([{ code: 'STABLE', message: expect.stringContaining('50 execution') }]);
    expect(r.candidate).toBe(false);
    expect(r.trend).toBe('stable');
    expect(r.flipRate).toBe(0);
    expect(r.lastFlakedAt).toBeNull();
  });

  it('skips are not samples', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['skip']);
    expect(h.results.at(-1)!.samples).toBe(0);
    h.run(['pass', 'skip']);
    expect(h.results.at(-1)!.samples).toBe(1);
  });
});

describe('score model: isolated failures', () => {
  it('one failure on a stable branch while the rest of the run passed, between passes, is a candidate', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    h.run(['fail']);
    expect(h.results.at(-1)!.candidate).toBe(false); // credited once the next run passes
    h.run(['pass']);
    expect(h.results.at(-1)!.candidate).toBe(true);
    expect(h.codes()[0]).toBe('FAIL_ISOLATION');
  });

  it('on a PR branch (work in progress breaks tests for real) one or two isolated failures are not enough', () => {
    const h = new History();
    const pr = { branch: 'feature/x' };
    for (let i = 0; i < 10; i++) h.run(['pass'], pr);
    const episodes: boolean[] = [];
    for (let k = 0; k < 4; k++) {
      h.run(['fail'], pr);
      h.run(['pass'], pr);
      episodes.push(h.results.at(-1)!.candidate);
      for (let i = 0; i < 2; i++) h.run(['pass'], pr);
    }
    expect(episodes.slice(0, 2)).toEqual([false, false]);
    expect(episodes[3]).toBe(true); // four, with the flips they bring, are
    expect(h.codes()[0]).toBe('FAIL_ISOLATION');
  });

  it('a PR-branch failure closed by a pass on main is still a PR-branch failure', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    h.run(['fail'], { branch: 'feature/y' });
    h.run(['pass'], { branch: 'main' });
    expect(h.results.at(-1)!.candidate).toBe(false);
  });
});

describe('score model: state', () => {
  it('re-applying the same run id changes nothing', () => {
    const h = new History();
    for (let i = 0; i < 5; i++) h.run(i === 2 ? ['fail', 'pass'] : ['pass']);
    const o: Observation = { runId: 'dup', commitSha: 'abc1234', branch: 'main', at: h.at + HOUR, attempts: ['fail', 'pass'], runFailRatio: 0, runTestCount: 50 };
    const once = applyObservation(h.state, o);
    const twice = applyObservation(once, o);
    expect(twice).toEqual(once);
    expect(JSON.stringify(twice)).toBe(JSON.stringify(once));
    // Also when another run came in between.
    const o2 = { ...o, runId: 'other', at: o.at + HOUR, attempts: ['pass'] as Attempts };
    const between = applyObservation(once, o2);
    expect(applyObservation(between, o)).toEqual(between);
  });

  it('does not change the state it is given', () => {
    const s0 = applyObservation(emptyScoreState(), { runId: 'a', commitSha: 'abc1234', branch: 'main', at: T0, attempts: ['pass'], runFailRatio: 0, runTestCount: 10 });
    const copy = JSON.parse(JSON.stringify(s0));
    applyObservation(s0, { runId: 'b', commitSha: 'abc1234', branch: 'main', at: T0 + HOUR, attempts: ['fail', 'pass'], runFailRatio: 0, runTestCount: 10 });
    expect(s0).toEqual(copy);
  });

  it('state size is bounded after 10,000 observations, and survives a JSON round trip', () => {
    const h = new History();
    const sizes: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      const attempts: Attempts = i % 7 === 0 ? ['fail', 'pass'] : i % 11 === 0 ? ['fail'] : i % 13 === 0 ? ['skip'] : ['pass'];
      h.run(attempts, { runId: `a-long-run-identifier-${i}-${'x'.repeat(20)}`, commitSha: `${i.toString(16).padStart(40, 'f')}`, gapMs: HOUR });
      if (i === 999 || i === 9_999) sizes.push(JSON.stringify(h.state).length);
    }
    expect(sizes[1]!).toBeLessThan(3_000);
    expect(Math.abs(sizes[1]! - sizes[0]!)).toBeLessThan(200);
    const roundTrip = JSON.parse(JSON.stringify(h.state)) as ScoreState;
    expect(scoreOf(roundTrip, h.at, PARAMS)).toEqual(scoreOf(h.state, h.at, PARAMS));
    expect(h.results.at(-1)!.samples).toBeGreaterThan(9_000);
  });

  it('a state of another version starts over', () => {
    const bogus = { v: 99 } as unknown as ScoreState;
    expect(scoreOf(bogus, T0, PARAMS).reasons[0]!.code).toBe('STABLE');
    const s = applyObservation(bogus, { runId: 'a', commitSha: 'abc1234', branch: 'main', at: T0, attempts: ['pass'], runFailRatio: 0, runTestCount: 10 });
    expect(s.v).toBe(1);
    expect(s.samples).toBe(1);
  });
});

describe('score model: decay and trend', () => {
  it('a flaky test that then passes for 60 days falls below the threshold, trend falling', () => {
    const h = new History();
    for (let i = 0; i < 30; i++) h.run(i % 3 === 0 ? ['fail', 'pass'] : ['pass'], { gapMs: 8 * HOUR });
    const flaky = h.results.at(-1)!;
    expect(flaky.candidate).toBe(true);
    expect(flaky.score).toBeGreaterThan(0.95);
    for (let d = 0; d < 60; d++) h.run(['pass'], { gapMs: DAY });
    const after = h.results.at(-1)!;
    expect(after.candidate).toBe(false);
    expect(after.score).toBeLessThan(PARAMS.threshold);
    expect(after.trend).toBe('falling');
    // lastFlakedAt stays where the evidence was.
    expect(after.lastFlakedAt).toBe(flaky.lastFlakedAt);
  });

  it('evidence fades with time alone (half-life 14 days)', () => {
    const h = new History();
    for (let i = 0; i < 6; i++) h.run(i === 4 ? ['fail', 'pass'] : ['pass']);
    const now = scoreOf(h.state, h.at, PARAMS).score;
    const later = scoreOf(h.state, h.at + 28 * DAY, PARAMS).score;
    expect(now).toBeGreaterThanOrEqual(0.8);
    expect(later).toBeLessThan(now);
    expect(later).toBeLessThan(0.8);
  });

  it('a test that starts flaking is rising', () => {
    const h = new History();
    for (let i = 0; i < 40; i++) h.run(['pass'], { gapMs: DAY });
    for (let i = 0; i < 6; i++) h.run(i % 2 === 0 ? ['fail', 'pass'] : ['pass'], { gapMs: 6 * HOUR });
    expect(h.results.at(-1)!.trend).toBe('rising');
  });
});

describe('score model: placeholder commit', () => {
  it('runs on 0000000 never give SAME_SHA_VARIANCE', () => {
    const ph = new History();
    const real = new History();
    for (let i = 0; i < 30; i++) {
      const attempts: Attempts = i % 4 === 1 ? ['fail'] : ['pass'];
      const r = ph.run(attempts, { commitSha: '0000000' });
      expect(r.reasons.map((x) => x.code)).not.toContain('SAME_SHA_VARIANCE');
      real.run(attempts, { commitSha: 'abcdef1' }); // one real commit re-run: variance
    }
    expect(ph.codes()).not.toContain('SAME_SHA_VARIANCE');
    expect(real.codes()).toContain('SAME_SHA_VARIANCE');
  });
});

describe('score model: reasons', () => {
  it('only known codes, strongest first, STABLE never mixed with others', () => {
    const h = new History();
    for (let i = 0; i < 40; i++) h.run(i % 3 === 0 ? ['fail', 'pass'] : i % 5 === 0 ? ['fail'] : ['pass']);
    const r = h.results.at(-1)!;
    for (const x of r.reasons) {
      expect(REASON_CODES).toContain(x.code);
      expect(x.message.length).toBeGreaterThan(0);
    }
    expect(r.reasons.map((x) => x.code)).not.toContain('STABLE');
    expect(r.reasons[0]!.code).toBe('PASS_ON_RERUN');
    expect(r.score).toBeGreaterThanOrEqual(0);
    expect(r.score).toBeLessThanOrEqual(1);
    expect(r.flipRate).toBeGreaterThan(0);
  });
});

describe('flakemetryScore (Flakemetry model 0.2.0, the baseline)', () => {
  const now = T0 + 30 * DAY;
  const ex = (status: GradedExecution['status'], commitSha: string, runId: string, at: number, attempt = 1, failedAloneInRun = false): GradedExecution => ({
    status,
    commitSha,
    runId,
    at,
    attempt,
    failedAloneInRun,
  });

  it('reproduces the docs/architecture.md formula on a hand-computed example', () => {
    // e1 pass on A, 14 days old (w = 0.5); on B: e2 fail (alone in its run), e3 pass on retry, now (w = 1).
    //   sameShaVariance = 1 (B has ≥ 2 executions, green and red; A has one)
    //   instability = β/(α+β) = (1 + 1) / ((1 + 0.5 + 1) + (1 + 1)) = 2 / 4.5
    //   flipRate = 2 changes / 2 = 1; passOnRerun = 1/1; entropy = H(2/3, 1/3) = 0.918296; failIsolation = 1/1
    //   score = 0.4 + 0.2·0.444444 + 0.15 + 0.1 + 0.1·0.918296 + 0.05 = 0.8807185
    const history = [ex('pass', 'A', 'r1', now - 14 * DAY), ex('fail', 'B', 'r2', now, 1, true), ex('pass', 'B', 'r2', now, 2)];
    const entropy = -((2 / 3) * Math.log2(2 / 3) + (1 / 3) * Math.log2(1 / 3));
    const expected = 0.4 * 1 + 0.2 * (2 / 4.5) + 0.15 * 1 + 0.1 * 1 + 0.1 * entropy + 0.05 * 1;
    expect(flakemetryScore(history, now)).toBeCloseTo(0.8807185, 6);
    expect(flakemetryScore(history, now)).toBeCloseTo(expected, 10);
    // Order of the input does not matter.
    expect(flakemetryScore([...history].reverse(), now)).toBeCloseTo(expected, 10);
  });

  it('a second example: no shared commit, one failure among passes, all now', () => {
    // instability = (1 + 1) / ((1 + 3) + (1 + 1)) = 1/3; flipRate = 2/3; entropy = H(0.75, 0.25) = 0.811278
    const history = [ex('pass', 'a', 'r1', now), ex('pass', 'b', 'r2', now + 1), ex('fail', 'c', 'r3', now + 2), ex('pass', 'd', 'r4', now + 3)];
    const entropy = -(0.75 * Math.log2(0.75) + 0.25 * Math.log2(0.25));
    expect(flakemetryScore(history, now + 3)).toBeCloseTo(0.2 * (1 / 3) + 0.15 * (2 / 3) + 0.1 * entropy, 6);
  });

  it('looks at the last 500 graded executions only', () => {
    const history: GradedExecution[] = [];
    for (let i = 0; i < 100; i++) history.push(ex('fail', `s${i}`, `r${i}`, now - 1000 + i));
    for (let i = 100; i < 600; i++) history.push(ex('pass', `s${i}`, `r${i}`, now));
    // Window = the 500 passes: α = 1 + 500, β = 1; every other term 0.
    expect(flakemetryScore(history, now)).toBeCloseTo(0.2 * (1 / 502), 9);
    expect(flakemetryScore([], now)).toBe(0);
  });

  it('cannot tell the placeholder commit from a real one (why ours ignores it)', () => {
    const history = [ex('pass', '0000000', 'r1', now - 2), ex('fail', '0000000', 'r2', now - 1), ex('pass', '0000000', 'r3', now)];
    // sameShaVariance = 1 for three unrelated runs.
    expect(flakemetryScore(history, now)).toBeGreaterThan(0.4);
  });
});
