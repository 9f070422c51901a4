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
import { commitKey } from '../../src/domain/score/lineage.js';
import { flakemetryScore, type GradedExecution } from '../../bench/baselines/flakemetry-score.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 5, 8, 0, 0);
const PARAMS = { threshold: 0.8, minSamples: 5 };

type Attempts = Observation['attempts'];

/** Builds runs of one test: every run on a new commit of `main` unless told otherwise. */
class History {
  state: ScoreState = emptyScoreState();
  private n = 0;
  at = T0;
  readonly results: ScoreResult[] = [];
  lastSha = '';

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
    this.lastSha = o.commitSha;
    // The model changes its own copy in place (ownCopy, nextState): never the state it is given.
    const given = JSON.stringify(this.state);
    const previous = this.state;
    this.state = applyObservation(this.state, o, PARAMS);
    expect(JSON.stringify(previous)).toBe(given);
    const r = scoreOf(this.state, this.at, PARAMS);
    this.results.push(r);
    return r;
  }

  /** A run of a pull request's branch. */
  pr(attempts: Attempts, n: number, opts: Partial<Observation> = {}): ScoreResult {
    return this.run(attempts, { branch: `feat/${n}`, prNumber: n, baseBranch: 'main', ...opts });
  }

  last(): ScoreResult {
    return this.results.at(-1)!;
  }

  /** Index (1-based) of the first run after which the test was a candidate, or null. */
  firstCandidate(): number | null {
    const i = this.results.findIndex((r) => r.candidate);
    return i < 0 ? null : i + 1;
  }

  everCandidate(): boolean {
    return this.results.some((r) => r.candidate);
  }

  codes(): string[] {
    return scoreOf(this.state, this.at, PARAMS).reasons.map((r) => r.code);
  }
}

describe('score model: flakes shown by the same code', () => {
  it('a test that fails then passes on retry is flaky within 5–10 runs, never before minSamples', () => {
    const h = new History();
    for (let i = 1; i <= 10; i++) h.run(i % 3 === 0 ? ['fail', 'pass'] : ['pass']);
    expect(h.firstCandidate()).not.toBeNull();
    expect(h.firstCandidate()!).toBeLessThanOrEqual(10);
    for (const r of h.results) if (r.samples < PARAMS.minSamples) expect(r.candidate).toBe(false);
    const last = h.last();
    expect(last.state).toBe('flaky');
    expect(last.candidate).toBe(true);
    expect(last.reasons[0]!.code).toBe('PASS_ON_RERUN');
    expect(last.passOnRerunRate).toBe(1);
    expect(last.broken).toBe(false);
    expect(last.lastFlakedAt).not.toBeNull();
    expect(last.flakeRate).toBeGreaterThan(0.15);
    expect(last.flakeRate).toBeLessThan(0.6);
  });

  it('passing and failing on one commit (a re-run) makes it flaky, with SAME_SHA_VARIANCE', () => {
    const h = new History();
    for (let i = 0; i < 4; i++) {
      h.run(['pass'], { commitSha: `sha-${i}` });
      h.run(i % 2 === 0 ? ['fail'] : ['pass'], { commitSha: `sha-${i}` }); // same-commit rerun
    }
    expect(h.firstCandidate()).not.toBeNull();
    expect(h.codes()[0]).toBe('SAME_SHA_VARIANCE');
  });

  it('a failure streak on one commit that a re-run of that commit ends is a flake (a burst), not a break and not a fix', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    const sha = 'burst00';
    h.run(['fail'], { commitSha: sha });
    expect(h.last().state).toBe('broken');
    h.run(['fail'], { commitSha: sha });
    h.run(['pass'], { commitSha: sha });
    expect(h.last().state).not.toBe('fixed');
    expect(h.last().state).not.toBe('broken');
    expect(h.codes()).toContain('SAME_SHA_VARIANCE');
    expect(h.last().candidate).toBe(true);
  });

  it('a JUnit `flaky` attempt counts as a pass on rerun', () => {
    const h = new History();
    for (let i = 1; i <= 8; i++) h.run(i % 4 === 0 ? ['flaky'] : ['pass']);
    expect(h.firstCandidate()).not.toBeNull();
    expect(h.codes()).toContain('PASS_ON_RERUN');
  });
});

describe('score model: a real break is never flaky', () => {
  it('a regression is broken from its first failing main run, and PR branches forked before it change nothing', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    const broke = h.run(['fail', 'fail', 'fail']);
    const breakSha = h.lastSha;
    expect(broke.state).toBe('broken');
    expect(broke.stateSince).toMatchObject({ commitSha: breakSha, branch: 'main' });
    expect(broke.reasons[0]).toEqual({ code: 'RECENT_INSTABILITY', message: expect.stringMatching(/^failing on main since c000011 .*broken, not flaky$/) });
    // Main keeps failing; PR branches forked before the break keep passing in between.
    for (let i = 0; i < 8; i++) {
      h.pr(['pass'], 100 + i);
      const r = h.run(['fail', 'fail', 'fail']);
      expect(r.state).toBe('broken');
      expect(r.stateSince?.commitSha).toBe(breakSha);
    }
    expect(h.everCandidate()).toBe(false);
    expect(h.last().score).toBeLessThan(0.5);
    // The fix: fixed since the fixing commit, healthy a week later.
    const fixed = h.run(['pass']);
    expect(fixed.state).toBe('fixed');
    expect(fixed.stateSince?.commitSha).toBe(h.lastSha);
    expect(h.codes()).not.toContain('FAIL_ISOLATION');
    h.run(['pass'], { gapMs: 8 * DAY });
    expect(h.last().state).toBe('healthy');
    expect(h.everCandidate()).toBe(false);
  });

  it('PR branches forked after the break fail too, then pass once the fix is in: inherited, no evidence', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    h.run(['fail']);
    for (let k = 0; k < 6; k++) h.pr(['fail'], 200 + k); // contain the break
    h.run(['fail']);
    h.run(['fail']);
    h.run(['pass']); // fixed on main, three commits later
    for (let k = 0; k < 6; k++) h.pr(['pass'], 200 + k); // each PR merges the fix in
    expect(h.everCandidate()).toBe(false);
    expect(h.codes()).not.toContain('FAIL_ISOLATION');
  });

  it('a test that always fails is broken, never a candidate', () => {
    const h = new History();
    for (let i = 0; i < 40; i++) h.run(['fail', 'fail', 'fail']);
    expect(h.everCandidate()).toBe(false);
    expect(h.last().state).toBe('broken');
    expect(h.last().score).toBeLessThan(0.5);
  });

  it('a test skipped after breaking stays broken; skips are neither samples nor evidence', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    h.run(['fail']);
    h.run(['fail']);
    const since = h.last().stateSince;
    for (let i = 0; i < 20; i++) h.run(['skip']);
    expect(h.last().state).toBe('broken');
    expect(h.last().stateSince).toEqual(since);
    expect(h.last().samples).toBe(12);
    expect(h.everCandidate()).toBe(false);
  });

  it('a break on one pull request only never makes it flaky, and the test stays healthy on main', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    for (let i = 0; i < 3; i++) h.pr(['fail'], 9);
    h.pr(['pass'], 9); // the PR fixes its own break
    h.run(['pass']);
    expect(h.everCandidate()).toBe(false);
    expect(h.last().state).toBe('healthy');
  });

  it("PR 9's failure gets no credit from passes on other branches", () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    h.pr(['fail'], 9);
    const before = h.last().score;
    for (let k = 0; k < 5; k++) h.pr(['pass'], 20 + k);
    h.run(['pass']);
    expect(h.last().score).toBeLessThanOrEqual(before);
    expect(h.last().score).toBeLessThan(0.3);
    expect(h.everCandidate()).toBe(false);
  });

  it('failures only in outage runs (60% of the run failing) never make a candidate', () => {
    const h = new History();
    for (let i = 0; i < 60; i++) {
      if (i % 4 === 3) {
        const sha = `outage-${i}`;
        h.run(i % 8 === 3 ? ['fail', 'pass'] : ['fail', 'fail'], { commitSha: sha, runFailRatio: 0.6 });
        h.run(['pass'], { commitSha: sha });
      } else h.run(['pass']);
    }
    expect(h.everCandidate()).toBe(false);
    expect(h.results.every((r) => r.state !== 'broken')).toBe(true);
    expect(h.codes()).not.toContain('PASS_ON_RERUN');
    expect(h.codes()).not.toContain('SAME_SHA_VARIANCE');
  });

  it('an outage that retries papered over is recognised with runFlakyRatio', () => {
    const h = new History();
    for (let i = 0; i < 40; i++) {
      if (i % 5 === 4) h.run(['fail', 'pass'], { runFailRatio: 0.05, runFlakyRatio: 0.55 });
      else h.run(['pass']);
    }
    expect(h.everCandidate()).toBe(false);
  });
});

describe('score model: isolated failures across commits', () => {
  it('one isolated failure on main is a break then a fix, never a candidate; a second within weeks makes it flaky', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    expect(h.run(['fail']).state).toBe('broken');
    const after = h.run(['pass']);
    expect(after.state).toBe('fixed');
    expect(after.candidate).toBe(false);
    expect(after.score).toBeLessThan(PARAMS.threshold);
    for (let i = 0; i < 20; i++) h.run(['pass']);
    expect(h.everCandidate()).toBe(false);
    h.run(['fail']);
    const second = h.run(['pass']);
    expect(second.state).toBe('flaky');
    expect(h.codes()[0]).toBe('FAIL_ISOLATION');
    expect(second.reasons[0]!.message).toMatch(/^failed on one commit and passed on the next of the same branch, 2 times in its last 34 runs$/);
  });

  it('a re-run of an older commit that passes after the branch broke is no fix and no flaky evidence', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    const older = h.lastSha;
    h.run(['fail', 'fail', 'fail']);
    h.run(['pass'], { commitSha: older }); // someone re-runs the commit before the break
    expect(h.last().state).toBe('broken');
    expect(h.codes()).not.toContain('FAIL_ISOLATION');
  });

  it('a re-run of a broken commit after the fix is no new break, and adds no flaky evidence', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(['pass']);
    h.run(['fail', 'fail', 'fail']);
    h.run(['fail', 'fail', 'fail']);
    const broken = h.lastSha;
    h.run(['pass']);
    expect(h.last().state).toBe('fixed');
    h.run(['fail', 'fail', 'fail'], { commitSha: broken }); // someone re-runs the old red build
    expect(h.last().state).toBe('fixed');
    h.run(['pass']);
    expect(h.everCandidate()).toBe(false);
    expect(h.state.events.isolation).toBe(1);
  });

  it('a break that lasted three commits and was fixed is no flaky evidence at all', () => {
    const h = new History();
    for (let k = 0; k < 3; k++) {
      for (let i = 0; i < 10; i++) h.run(['pass']);
      for (let i = 0; i < 3; i++) h.run(['fail']);
    }
    h.run(['pass']);
    expect(h.everCandidate()).toBe(false);
    expect(h.codes()).not.toContain('FAIL_ISOLATION');
  });

  it('on a PR branch (work in progress breaks tests for real) up to three isolated failures are not enough; four are', () => {
    const h = new History();
    const pr = { branch: 'feature/x' };
    for (let i = 0; i < 10; i++) h.run(['pass'], pr);
    const episodes: boolean[] = [];
    for (let k = 0; k < 4; k++) {
      h.run(['fail'], pr);
      h.run(['pass'], pr);
      episodes.push(h.last().candidate);
      for (let i = 0; i < 2; i++) h.run(['pass'], pr);
    }
    expect(episodes.slice(0, 3)).toEqual([false, false, false]);
    expect(episodes[3]).toBe(true);
  });

  it('a PR branch whose fork commit passed starts with a pass before (merge base); without it, a first-commit failure is no episode', () => {
    const withBase = new History();
    const without = new History();
    for (const h of [withBase, without]) for (let i = 0; i < 10; i++) h.run(['pass']);
    const fork = withBase.lastSha;
    withBase.pr(['fail'], 5, { mergeBase: fork });
    withBase.pr(['pass'], 5, { mergeBase: fork });
    without.pr(['fail'], 5);
    without.pr(['pass'], 5);
    expect(withBase.codes()).toContain('FAIL_ISOLATION');
    expect(without.codes()).not.toContain('FAIL_ISOLATION');
    expect(withBase.everCandidate()).toBe(false);
  });
});

describe('score model: flaky until proven fixed', () => {
  it('a quiet flake (2%, retries) is not forgotten after 70 clean runs', () => {
    const h = new History();
    for (let i = 0; i < 30; i++) h.run(i === 10 ? ['fail', 'pass'] : ['pass']);
    h.run(['fail', 'pass']);
    expect(h.last().state).toBe('flaky');
    for (let i = 0; i < 70; i++) h.run(['pass'], { gapMs: 4 * HOUR });
    expect(h.last().state).toBe('flaky');
    expect(h.last().candidate).toBe(true);
  });

  it('a heavy flake that is fixed is released after the clean runs its rate makes improbable, then scores ~0', () => {
    const h = new History();
    for (let i = 0; i < 30; i++) h.run(i % 3 === 0 ? ['fail', 'pass'] : ['pass']);
    const flaky = h.last();
    expect(flaky.state).toBe('flaky');
    const f = flaky.flakeRate;
    const needed = Math.ceil(Math.log(100) / -Math.log(1 - f));
    let k = 0;
    while (h.last().state === 'flaky' && k < 200) {
      h.run(['pass']);
      k++;
    }
    // Released when k·(−ln(1 − f)) reaches ln 100 at the rate of that moment (which falls as the clean runs come in).
    // (The last flake was run 28: two clean runs came before the loop.)
    const clean = k + 2;
    expect(clean).toBeGreaterThanOrEqual(needed);
    expect(clean).toBeLessThan(2 * needed);
    const proof = (runs: number, rate: number): number => runs * -Math.log(1 - rate);
    expect(proof(clean - 1, h.results.at(-2)!.flakeRate)).toBeLessThan(Math.log(100) + 0.01);
    expect(proof(clean, h.last().flakeRate)).toBeGreaterThan(Math.log(100) - 0.01);
    expect(h.last().state).toBe('fixed');
    expect(h.last().score).toBe(0);
    // Fixed since the first clean run after its last flake.
    expect(h.last().stateSince?.at).toBe(h.at - (clean - 1) * 6 * HOUR);
  });

  it('raising flaky.threshold past its score takes a flaky test out (the threshold is the bar for entering)', () => {
    const h = new History();
    for (let i = 0; i < 12; i++) h.run(i === 3 ? ['fail', 'pass'] : ['pass']);
    expect(h.last().state).toBe('flaky');
    expect(h.last().score).toBeLessThan(0.95);
    h.state = applyObservation(h.state, { runId: 'raised', commitSha: 'r000001', branch: 'main', at: h.at + HOUR, attempts: ['pass'], runFailRatio: 0, runTestCount: 10 }, { threshold: 0.95, minSamples: 5 });
    expect(scoreOf(h.state, h.at + HOUR, PARAMS).state).toBe('healthy');
  });

  it('a known flake that starts failing every attempt is broken once that is improbable at its rate', () => {
    const h = new History();
    for (let i = 0; i < 30; i++) h.run(i % 4 === 0 ? ['fail', 'pass'] : ['pass']);
    expect(h.last().state).toBe('flaky');
    // One all-fail run of 3 attempts at a ~25% rate: 0.25^3 = 0.016, still a flake's bad luck.
    h.run(['fail', 'fail', 'fail']);
    expect(h.last().state).toBe('flaky');
    h.run(['fail', 'fail', 'fail']);
    expect(h.last().state).toBe('broken');
    expect(h.last().candidate).toBe(false);
  });
});

describe('score model: states and reasons', () => {
  it('a stable test is new before minSamples and healthy after, scoring 0 with STABLE alone', () => {
    const h = new History();
    for (let i = 0; i < 4; i++) h.run(['pass']);
    expect(h.last().state).toBe('new');
    for (let i = 0; i < 46; i++) h.run(['pass']);
    const r = h.last();
    expect(r.state).toBe('healthy');
    expect(r.stateSince).toBeNull();
    expect(r.score).toBe(0);
    expect(r.reasons).toEqual([{ code: 'STABLE', message: expect.stringContaining('50 execution') }]);
    expect(r.trend).toBe('stable');
    expect(r.flipRate).toBe(0);
    expect(r.flakeRate).toBe(0);
  });

  it('says how often the first attempt failed, counting retries that passed, never "100% failed" for a test that passed on retry', () => {
    const h = new History();
    for (let i = 0; i < 10; i++) h.run(i % 2 === 0 ? ['fail', 'pass'] : ['pass']);
    const instability = h.last().reasons.find((r) => r.code === 'RECENT_INSTABILITY')!;
    expect(instability.message).toBe('failed its first attempt in 5 of the last 10 runs (5 of them passed on a retry)');
    const rerun = h.last().reasons.find((r) => r.code === 'PASS_ON_RERUN')!;
    expect(rerun.message).toBe('failed, then passed on a retry of the same code, 5 times in its last 10 runs');
  });

  it('only known codes, strongest first, STABLE never mixed with others', () => {
    const h = new History();
    for (let i = 0; i < 40; i++) h.run(i % 3 === 0 ? ['fail', 'pass'] : i % 5 === 0 ? ['fail'] : ['pass']);
    const r = h.last();
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

  it('a test that starts flaking is rising', () => {
    const h = new History();
    for (let i = 0; i < 40; i++) h.run(['pass'], { gapMs: DAY });
    for (let i = 0; i < 6; i++) h.run(i % 2 === 0 ? ['fail', 'pass'] : ['pass'], { gapMs: 6 * HOUR });
    expect(h.last().trend).toBe('rising');
  });

  it('runs on 0000000 never give SAME_SHA_VARIANCE', () => {
    const ph = new History();
    const real = new History();
    for (let i = 0; i < 30; i++) {
      const attempts: Attempts = i % 4 === 1 ? ['fail'] : ['pass'];
      ph.run(attempts, { commitSha: '0000000' });
      real.run(attempts, { commitSha: 'abcdef1' }); // one real commit re-run: variance
    }
    expect(ph.codes()).not.toContain('SAME_SHA_VARIANCE');
    expect(real.codes()).toContain('SAME_SHA_VARIANCE');
  });
});

describe('score model: the state it keeps', () => {
  it('re-applying the same run id changes nothing', () => {
    const h = new History();
    for (let i = 0; i < 5; i++) h.run(i === 2 ? ['fail', 'pass'] : ['pass']);
    const o: Observation = { runId: 'dup', commitSha: 'abc1234', branch: 'main', at: h.at + HOUR, attempts: ['fail', 'pass'], runFailRatio: 0, runTestCount: 50 };
    const once = applyObservation(h.state, o, PARAMS);
    const twice = applyObservation(once, o, PARAMS);
    expect(twice).toEqual(once);
    const o2 = { ...o, runId: 'other', at: o.at + HOUR, attempts: ['pass'] as Attempts };
    const between = applyObservation(once, o2, PARAMS);
    expect(applyObservation(between, o, PARAMS)).toEqual(between);
  });

  it('does not change the state it is given', () => {
    const s0 = applyObservation(emptyScoreState(), { runId: 'a', commitSha: 'abc1234', branch: 'main', at: T0, attempts: ['pass'], runFailRatio: 0, runTestCount: 10 }, PARAMS);
    const s1 = applyObservation(s0, { runId: 'b', commitSha: 'abc1235', branch: 'main', at: T0 + HOUR, attempts: ['fail'], runFailRatio: 0, runTestCount: 10 }, PARAMS);
    const copy = JSON.parse(JSON.stringify(s1)) as ScoreState;
    applyObservation(s1, { runId: 'c', commitSha: 'abc1236', branch: 'main', at: T0 + 2 * HOUR, attempts: ['pass'], runFailRatio: 0, runTestCount: 10 }, PARAMS);
    applyObservation(s1, { runId: 'd', commitSha: 'abc1237', branch: 'feat/1', prNumber: 1, at: T0 + 2 * HOUR, attempts: ['fail'], runFailRatio: 0, runTestCount: 10 }, PARAMS);
    expect(s1).toEqual(copy);
  });

  it('is bounded after 10,000 observations over many branches, and survives a JSON round trip', () => {
    const h = new History();
    const sizes: number[] = [];
    for (let i = 0; i < 10_000; i++) {
      const attempts: Attempts = i % 7 === 0 ? ['fail', 'pass'] : i % 11 === 0 ? ['fail'] : i % 13 === 0 ? ['skip'] : ['pass'];
      const onPr = i % 3 === 0 ? { branch: `feature/a-long-branch-name-${i % 50}`, prNumber: 1000 + (i % 50), baseBranch: 'main' } : {};
      h.run(attempts, { runId: `a-long-run-identifier-${i}-${'x'.repeat(20)}`, commitSha: `${i.toString(16).padStart(40, 'f')}`, gapMs: HOUR, ...onPr });
      if (i === 999 || i === 9_999) sizes.push(JSON.stringify(h.state).length);
    }
    expect(sizes[1]!).toBeLessThan(3_500);
    expect(Math.abs(sizes[1]! - sizes[0]!)).toBeLessThan(300);
    const roundTrip = JSON.parse(JSON.stringify(h.state)) as ScoreState;
    expect(scoreOf(roundTrip, h.at, PARAMS)).toEqual(scoreOf(h.state, h.at, PARAMS));
  });

  it('a short sha and its full form are one commit (a re-run reported either way is the same code)', () => {
    const h = new History();
    const full = 'abcdef0123456789abcdef0123456789abcdef01';
    for (let i = 0; i < 6; i++) h.run(['pass']);
    h.run(['pass'], { commitSha: full });
    h.run(['fail'], { commitSha: full.slice(0, 7) });
    expect(h.codes()).toContain('SAME_SHA_VARIANCE');
  });

  it('stable tests with as many executions share one frozen list of reasons; a fixed one names its commit', () => {
    const a = new History();
    const b = new History();
    for (let i = 0; i < 6; i++) {
      a.run(['pass']);
      b.run(['pass'], { commitSha: `d${String(i).padStart(6, '0')}` });
    }
    const ra = a.results.at(-1)!.reasons;
    const rb = b.results.at(-1)!.reasons;
    expect(ra).toEqual([{ code: 'STABLE', message: 'no sign of flakiness across 6 execution(s)' }]);
    expect(rb).toBe(ra);
    expect(Object.isFrozen(ra) && Object.isFrozen(ra[0])).toBe(true);
    a.run(['pass']);
    expect(a.results.at(-1)!.reasons[0]!.message).toBe('no sign of flakiness across 7 execution(s)');
    expect(rb[0]!.message).toBe('no sign of flakiness across 6 execution(s)');

    const fixed = new History();
    for (let i = 0; i < 6; i++) fixed.run(['pass']);
    for (let i = 0; i < 3; i++) fixed.run(['fail']);
    fixed.run(['pass'], { commitSha: 'f1xf1x0000' });
    for (let i = 0; i < 32; i++) fixed.run(['pass'], { gapMs: HOUR }); // the failures leave the ring
    const last = fixed.results.at(-1)!;
    expect(last.state).toBe('fixed');
    expect(last.reasons).toEqual([{ code: 'STABLE', message: 'no sign of flakiness across 42 execution(s), passing since f1xf1x0' }]);
    expect(Object.isFrozen(last.reasons)).toBe(false);
  });

  it('tests that begin a state in the same run share where it began, frozen', () => {
    const o: Observation = { runId: 'r1', commitSha: 'abc1234', branch: 'main', at: T0, attempts: ['pass'], runFailRatio: 0, runTestCount: 2 };
    const a = applyObservation(emptyScoreState(), o, PARAMS);
    const b = applyObservation(emptyScoreState(), { ...o, attempts: ['pass'] }, PARAMS);
    expect(a.since).toEqual({ commitSha: 'abc1234', branch: 'main', at: T0 });
    expect(b.since).toBe(a.since);
    expect(Object.isFrozen(a.since)).toBe(true);
    const c = applyObservation(emptyScoreState(), { ...o, runId: 'r2', at: T0 + HOUR }, PARAMS);
    expect(c.since).toEqual({ commitSha: 'abc1234', branch: 'main', at: T0 + HOUR });
    // No pull request named a base: one frozen empty list; one that does gets a list of its own.
    expect(b.bases).toBe(a.bases);
    expect(Object.isFrozen(a.bases)).toBe(true);
    const pr = applyObservation(a, { ...o, runId: 'r3', branch: 'feat/x', prNumber: 7, baseBranch: 'develop', at: T0 + 2 * HOUR }, PARAMS);
    expect(pr.bases).toEqual(['develop']);
    expect(a.bases).toEqual([]);
  });

  it('keeps a commit by its first 12 characters, short shas as they are, past the keys it remembers', () => {
    const shas = Array.from({ length: 600 }, (_, i) => i.toString(16).padStart(40, 'a'));
    for (const sha of [...shas, ...shas]) expect(commitKey(sha)).toBe(sha.slice(0, 12));
    expect(commitKey('abc1234')).toBe('abc1234');
    expect(commitKey('')).toBe('');
  });

  it('a state of the first model keeps its same-code evidence; another version starts over', () => {
    const v1 = {
      v: 1, at: T0, samples: 20, rerun: 2, sameSha: 0, isolation: 3, retried: 2, recovered: 2, passW: 10, failW: 2, trendFast: 0, trendSlow: 0,
      cleanSince: 0, flakeRate: 0.1, episodeStable: true, ring: 'PPPPRPPPPRPPPPPP', commits: [['abc1234', 1]], runIds: ['x'], lastFlakedAt: T0, events: { rerun: 2, sameSha: 0, isolation: 4 },
    } as unknown as ScoreState;
    const upgraded = applyObservation(v1, { runId: 'next', commitSha: 'abc1235', branch: 'main', at: T0 + HOUR, attempts: ['pass'], runFailRatio: 0, runTestCount: 10 }, PARAMS);
    expect(upgraded.v).toBe(2);
    expect(upgraded.samples).toBe(21);
    expect(upgraded.isolation).toBe(0); // cross-commit evidence of the old model mixed branches: dropped
    expect(upgraded.state).toBe('flaky');
    const bogus = { v: 99 } as unknown as ScoreState;
    expect(scoreOf(bogus, T0, PARAMS).reasons[0]!.code).toBe('STABLE');
    expect(applyObservation(bogus, { runId: 'a', commitSha: 'abc1234', branch: 'main', at: T0, attempts: ['pass'], runFailRatio: 0, runTestCount: 10 }, PARAMS).samples).toBe(1);
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
    expect(flakemetryScore([...history].reverse(), now)).toBeCloseTo(expected, 10);
  });

  it('a second example: no shared commit, one failure among passes, all now', () => {
    const history = [ex('pass', 'a', 'r1', now), ex('pass', 'b', 'r2', now + 1), ex('fail', 'c', 'r3', now + 2), ex('pass', 'd', 'r4', now + 3)];
    const entropy = -(0.75 * Math.log2(0.75) + 0.25 * Math.log2(0.25));
    expect(flakemetryScore(history, now + 3)).toBeCloseTo(0.2 * (1 / 3) + 0.15 * (2 / 3) + 0.1 * entropy, 6);
  });

  it('looks at the last 500 graded executions only', () => {
    const history: GradedExecution[] = [];
    for (let i = 0; i < 100; i++) history.push(ex('fail', `s${i}`, `r${i}`, now - 1000 + i));
    for (let i = 100; i < 600; i++) history.push(ex('pass', `s${i}`, `r${i}`, now));
    expect(flakemetryScore(history, now)).toBeCloseTo(0.2 * (1 / 502), 9);
    expect(flakemetryScore([], now)).toBe(0);
  });

  it('cannot tell the placeholder commit from a real one (why ours ignores it)', () => {
    const history = [ex('pass', '0000000', 'r1', now - 2), ex('fail', '0000000', 'r2', now - 1), ex('pass', '0000000', 'r3', now)];
    expect(flakemetryScore(history, now)).toBeGreaterThan(0.4);
  });
});
