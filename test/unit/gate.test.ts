// The merge gate's rules (client/src/contract/gate.ts), how a commit's runs merge (client/src/contract/pr-summary.ts),
// and that the PR markdown classifies by those same rules (client/src/contract/pr-markdown.ts).
import { describe, expect, it } from 'vitest';
import { BASE_WINDOW_DAYS, ESTABLISHED_EVENTS, FLAKE_FIT_P, NO_BASE_HISTORY, baseStreak, classify, classifyByState, compareGateTests, fitsFlakeRate, flakeProof, gateTestOf, knownFlake, rateLowOf, verdictOf, type BaseHistory, type Classification, type FlakeFit } from '../../client/src/contract/gate.js';
import { commentMarkdown, gateText, summaryMarkdown } from '../../client/src/contract/pr-markdown.js';
import type { GateBody, SummaryBody, SummaryTestBody } from '../../client/src/contract/pr-schemas.js';
import { compareTests, countsText, mergeCommitRuns, mergeRunStatus, mergedStatus, prStatusOf, prTally, type CommitRun } from '../../client/src/contract/pr-summary.js';

function test(over: Partial<SummaryTestBody> = {}): SummaryTestBody {
  return {
    testIdentityId: '00000000-0000-4000-8000-000000000001',
    filePath: 'src/a.test.ts',
    suite: 'cart',
    title: 'adds',
    status: 'fail',
    errorMessage: 'boom',
    score: 0,
    quarantined: false,
    topReason: null,
    topReasonCode: null,
    state: 'healthy',
    stateSince: null,
    flakeRate: 0,
    knownFlake: false,
    ...over,
  };
}

const T = Date.UTC(2026, 10, 20);
/** The base branch broken since `ed3d460` (every run since failed), `attempts` failed attempts in all. */
const brokenBase = (attempts = 3, containsBreak: boolean | null = null): BaseHistory => ({ graded: 10, bad: 3, brokenSince: { commitSha: 'ed3d460', at: T, streakAttempts: attempts }, containsBreak });
const cleanBase: BaseHistory = { graded: 10, bad: 0, brokenSince: null, containsBreak: null };
const flaky = { state: 'flaky' as const, flakeRate: 0.2, knownFlake: true };

describe('classify', () => {
  it('is a new failure when nothing explains it: not quarantined, not broken on the base branch, not a known flake', () => {
    expect(classify(test(), NO_BASE_HISTORY)).toBe('new_failure');
    expect(classify(test(), cleanBase)).toBe('new_failure');
    // A high score alone is no known flake: only the state (with minSamples) and the rate fit are.
    expect(classify(test({ score: 0.95 }), cleanBase)).toBe('new_failure');
    // Passed on a retry here, never flaky before: the change may have made it flaky.
    expect(classify(test({ status: 'flaky' }), cleanBase)).toBe('new_failure');
    // Failures on the base branch that ended (it passed since) do not make it known.
    expect(classify(test(), { graded: 10, bad: 4, brokenSince: null, containsBreak: null })).toBe('new_failure');
  });

  it('a test failing on every base-branch run since a commit is already broken there, never a known flake', () => {
    expect(classify(test(), brokenBase())).toBe('broken_on_base');
    expect(classify(test({ state: 'broken' }), brokenBase())).toBe('broken_on_base');
    // Even with a high score: its failures since that commit are no flake's bad luck.
    expect(classify(test({ score: 0.9 }), brokenBase())).toBe('broken_on_base');
    // A known 20% flake whose last base run failed one attempt: that fits its rate, still a flake.
    expect(classify(test(flaky), brokenBase(1))).toBe('known_flake');
    // The same flake failing 6 attempts in a row there (0.2^6 = 6e-5): broken.
    expect(classify(test(flaky), brokenBase(6))).toBe('broken_on_base');
  });

  it('a branch forked before the break (its merge base is older) does not contain it: its failure is new', () => {
    expect(classify(test(), brokenBase(3, false))).toBe('new_failure');
    expect(classify(test(), brokenBase(3, true))).toBe('broken_on_base');
  });

  it('a known flake is one the server called so (flaky before, failures that fit the rate)', () => {
    expect(classify(test(flaky), cleanBase)).toBe('known_flake');
    expect(classify(test({ ...flaky, knownFlake: false }), cleanBase)).toBe('new_failure');
  });

  it('puts quarantine above everything else', () => {
    expect(classify(test({ quarantined: true, status: 'flaky' }), brokenBase())).toBe('quarantined');
    expect(classify(test({ quarantined: true }))).toBe('quarantined');
  });

  it('without the base branch (summary, CLI fallback) the test state stands in: broken reads as already broken', () => {
    expect(classifyByState(test({ state: 'broken' }))).toBe('broken_on_base');
    expect(classifyByState(test(flaky))).toBe('known_flake');
    expect(classifyByState(test({ state: 'fixed' }))).toBe('new_failure');
    expect(classifyByState(test({ state: 'broken', quarantined: true }))).toBe('quarantined');
  });
});

describe('knownFlake', () => {
  const commit = { branch: 'feat/9', firstRunAt: T };
  // Established: failed then passed on a retry in 4 of 12 main runs.
  const established = { events: 4, runs: 12, flakyRuns: 4, gradedRuns: 12 };
  // Thin: one flaky execution on another branch, after 5 clean main runs.
  const thin = { events: 1, runs: 7, flakyRuns: 1, gradedRuns: 7 };
  const fit = (over: Partial<FlakeFit> = {}): FlakeFit => ({
    state: 'flaky',
    flakySince: { branch: 'main', at: T - 1000 },
    commit,
    failedAttempts: 1,
    attempts: 1,
    passedHere: false,
    evidence: established,
    minSamples: 5,
    ...over,
  });

  it('needs state flaky from before this commit ran (or another branch)', () => {
    expect(knownFlake(fit())).toBe(true);
    expect(knownFlake(fit({ state: 'healthy' }))).toBe(false);
    expect(knownFlake(fit({ state: 'broken', passedHere: true }))).toBe(false);
    // Became flaky on this very branch with this commit's own re-runs: its own flake excuses nothing.
    expect(knownFlake(fit({ flakySince: { branch: 'feat/9', at: T + 1000 } }))).toBe(false);
    expect(flakeProof(fit({ flakySince: { branch: 'feat/9', at: T + 1000 } }))).toBeNull();
    // ... but flaky evidence from another branch, even later, is the test's, not the change's.
    expect(knownFlake(fit({ flakySince: { branch: 'main', at: T + 1000 } }))).toBe(true);
  });

  it('thin evidence (one flaky event) and a PR failing 1 or 2 attempts: unproven, with how to prove it', () => {
    const one = flakeProof(fit({ evidence: thin }));
    expect(one).toMatchObject({ kind: 'unproven' });
    expect(one!.hint).toBe('failed 1 of 1 attempt; its flakiness rests on one event — re-run the test on this commit');
    expect(flakeProof(fit({ evidence: thin, failedAttempts: 2, attempts: 2 }))!.kind).toBe('unproven');
    // Under ESTABLISHED_EVENTS events, or over fewer than minSamples runs, is never established.
    expect(flakeProof(fit({ evidence: { ...established, events: ESTABLISHED_EVENTS - 1 } }))!.kind).toBe('unproven');
    expect(flakeProof(fit({ evidence: { ...established, runs: 4 } }))!.hint).toContain('in 4 runs');
    expect(flakeProof(fit({ evidence: null }))!.kind).toBe('unproven');
  });

  it('the same code passing here is proof, whatever the history', () => {
    expect(flakeProof(fit({ evidence: thin, passedHere: true, attempts: 2 }))!.kind).toBe('same_code');
    expect(flakeProof(fit({ passedHere: true, failedAttempts: 1, attempts: 2 }))!.kind).toBe('same_code');
  });

  it('an established flake: its failures here must fit the low end of its rate, not the point estimate', () => {
    const low = rateLowOf(established);
    expect(low).toBeGreaterThan(0.1);
    expect(low).toBeLessThan(4 / 12);
    expect(flakeProof(fit())!.kind).toBe('established');
    expect(flakeProof(fit({ failedAttempts: 2, attempts: 2 }))!.kind).toBe('established');
    // At the point estimate (0.33) 3 attempts would fit (0.037 ≥ 0.01); at the low end they do not.
    expect(fitsFlakeRate(4 / 12, 3)).toBe(true);
    expect(flakeProof(fit({ failedAttempts: 3, attempts: 3 }))!.kind).toBe('unproven');
    const four = flakeProof(fit({ failedAttempts: 4, attempts: 4 }))!;
    expect(four.kind).toBe('unproven');
    expect(four.hint).toMatch(/^failed 4 of 4 attempts; that many failures in a row are unlikely even for a flake of 1\d\.\d% — re-run the test on this commit$/);
  });

  it('fitsFlakeRate: one failed attempt always fits; more must be at least FLAKE_FIT_P likely', () => {
    expect(fitsFlakeRate(0.001, 1)).toBe(true);
    expect(fitsFlakeRate(0.5, 6)).toBe(true);
    expect(fitsFlakeRate(0.5, 7)).toBe(Math.pow(0.5, 7) >= FLAKE_FIT_P);
    expect(fitsFlakeRate(0.05, 2)).toBe(false);
  });
});

describe('baseStreak', () => {
  it('is the first run of the trailing streak of runs that failed every attempt', () => {
    const run = (sha: string, failed: number, green: number, at: number) => ({ commitSha: sha, at, failed, green });
    expect(baseStreak([])).toBeNull();
    expect(baseStreak([run('a', 0, 1, 1), run('b', 3, 0, 2), run('c', 3, 0, 3)])).toEqual({ commitSha: 'b', at: 2, streakAttempts: 6 });
    // A pass (or a retry that passed) ends it.
    expect(baseStreak([run('b', 3, 0, 2), run('c', 1, 1, 3)])).toBeNull();
    expect(baseStreak([run('b', 3, 0, 2), run('c', 0, 1, 3), run('d', 1, 0, 4)])).toEqual({ commitSha: 'd', at: 4, streakAttempts: 1 });
  });
});

describe('verdictOf', () => {
  const classified = (over: Partial<SummaryTestBody>, base = NO_BASE_HISTORY) => gateTestOf(test(over), base);

  it('never blocks with strictness off', () => {
    expect(verdictOf('off', [classified({})])).toBe('pass');
  });

  it('blocks with strictness new only on a new failure: already broken on the base branch is not this change', () => {
    expect(verdictOf('new', [classified({})])).toBe('block');
    expect(verdictOf('new', [classified(flaky), classified({}, brokenBase()), classified({ quarantined: true })])).toBe('pass');
    expect(verdictOf('new', [])).toBe('pass');
  });

  it('blocks with strictness any on any failed test that is not quarantined', () => {
    expect(verdictOf('any', [classified(flaky)])).toBe('block');
    expect(verdictOf('any', [classified({}, brokenBase())])).toBe('block');
    expect(verdictOf('any', [classified({ quarantined: true }), classified({ status: 'flaky' })])).toBe('pass');
  });
});

describe('gateTestOf and compareGateTests', () => {
  it('adds the classification, the base fail rate to four decimals and where the base broke', () => {
    expect(gateTestOf(test(), { graded: 3, bad: 1, brokenSince: null, containsBreak: null })).toMatchObject({ classification: 'new_failure', baseFailRate: 0.3333, baseSampleSize: 3, brokenSince: null });
    expect(gateTestOf(test(), brokenBase())).toMatchObject({ classification: 'broken_on_base', brokenSince: { commitSha: 'ed3d460', at: T } });
    expect(gateTestOf(test(), NO_BASE_HISTORY)).toMatchObject({ classification: 'new_failure', baseFailRate: 0, baseSampleSize: 0 });
  });

  it('orders new failures, already broken, known flakes, quarantined; fails before flaky; higher score first', () => {
    const tests = [
      gateTestOf(test({ testIdentityId: 'q', quarantined: true }), NO_BASE_HISTORY),
      gateTestOf(test({ testIdentityId: 'k-flaky', status: 'flaky', score: 0.9, ...flaky }), NO_BASE_HISTORY),
      gateTestOf(test({ testIdentityId: 'k-low', score: 0.6, ...flaky }), NO_BASE_HISTORY),
      gateTestOf(test({ testIdentityId: 'broken' }), brokenBase()),
      gateTestOf(test({ testIdentityId: 'k-high', score: 0.7, ...flaky }), NO_BASE_HISTORY),
      gateTestOf(test({ testIdentityId: 'new' }), NO_BASE_HISTORY),
    ];
    expect(tests.sort(compareGateTests).map((t) => t.testIdentityId)).toEqual(['new', 'broken', 'k-high', 'k-low', 'k-flaky', 'q']);
  });
});

describe('a commit of several runs', () => {
  const run = (over: Partial<CommitRun>): CommitRun => ({
    id: 'r1',
    commitSha: 'abcdef1234567890',
    branch: 'feature',
    baseBranch: '',
    mergeBase: '',
    prNumber: null,
    status: 'passed',
    shardIndex: 0,
    startedAt: 1000,
    source: 'native',
    hasRunSpan: false,
    idempotencyKey: 'k',
    ...over,
  });

  it('is nothing without runs', () => {
    expect(mergeCommitRuns([])).toBeNull();
  });

  it('merges runs of the short and the long sha, takes the PR and base from whichever run has them, and the branch of the newest', () => {
    const merged = mergeCommitRuns([
      run({ id: 'r3', commitSha: 'abcdef1', branch: 'newest', startedAt: 3000 }),
      run({ id: 'r2', prNumber: 42, startedAt: 2000 }),
      run({ id: 'r1', baseBranch: 'main', prNumber: 0, startedAt: 1000 }),
    ]);
    expect(merged).toEqual({ commitSha: 'abcdef1234567890', branch: 'newest', baseBranch: 'main', mergeBase: null, prNumber: 42, runStatus: 'passed', jobs: 1, complete: true, runIds: ['r3', 'r2', 'r1'], firstRunAt: 1000 });
  });

  it('keeps to the commit of the newest run when an abbreviation matches two commits', () => {
    const merged = mergeCommitRuns([run({ id: 'new', commitSha: 'abcdef1111' }), run({ id: 'other', commitSha: 'abcdef2222', status: 'failed' })]);
    expect(merged).toMatchObject({ commitSha: 'abcdef1111', runIds: ['new'], runStatus: 'passed' });
  });

  it('without a commit (0000000) takes only the newest run\'s CI run: its re-runs and shards, no other CI run', () => {
    const nc = (id: string, ciRunKey: string, startedAt: number): CommitRun => run({ id, commitSha: '0000000', ciRunKey, startedAt });
    expect(mergeCommitRuns([nc('rerun', 'github_actions:8', 3000), nc('other', 'github_actions:7', 2000), nc('first', 'github_actions:8', 1000)])!.runIds).toEqual(['rerun', 'first']);
    // Without a CI run id, the newest run alone.
    expect(mergeCommitRuns([nc('a', '', 3000), nc('b', '', 2000)])!.runIds).toEqual(['a']);
  });

  it('is incomplete while an OTLP trace or a split JUnit report lacks its run span', () => {
    expect(mergeCommitRuns([run({ source: 'otlp' })])!.complete).toBe(false);
    expect(mergeCommitRuns([run({ source: 'otlp', hasRunSpan: true })])!.complete).toBe(true);
    expect(mergeCommitRuns([run({ source: 'junit', idempotencyKey: 'k#part1of3' })])!.complete).toBe(false);
    expect(mergeCommitRuns([run({ source: 'junit', idempotencyKey: 'k' })])!.complete).toBe(true);
  });

  it('takes each shard’s latest run and the worst across shards', () => {
    expect(mergeRunStatus([{ shardIndex: 0, status: 'failed', startedAt: 1 }, { shardIndex: 0, status: 'passed', startedAt: 2 }])).toBe('passed');
    expect(mergeRunStatus([{ shardIndex: 0, status: 'passed', startedAt: 2 }, { shardIndex: 1, status: 'running', startedAt: 1 }, { shardIndex: 2, status: 'canceled', startedAt: 1 }])).toBe('running');
    expect(mergeRunStatus([])).toBe('passed');
  });

  it('takes each job’s latest run (source, CI run, CI job and matrix leg, shard): a newer passing job never hides an older failing one', () => {
    const failedJob = { shardIndex: 0, source: 'native', ciRunKey: 'github_actions:1', status: 'failed' as const, startedAt: 1 };
    // Another receiver's report on the same shard: another job.
    expect(mergeRunStatus([failedJob, { shardIndex: 0, source: 'junit', ciRunKey: 'github_actions:1', status: 'passed', startedAt: 2 }])).toBe('failed');
    // Another workflow on the same commit: another job.
    expect(mergeRunStatus([failedJob, { shardIndex: 0, source: 'native', ciRunKey: 'github_actions:2', status: 'passed', startedAt: 2 }])).toBe('failed');
    // Another CI job of the same CI run (a Vitest job and a Jest job of one workflow run), or another matrix leg: another job.
    const vitest = { ...failedJob, source: 'otlp', ciJobKey: 'vitest\u0000' };
    expect(mergeRunStatus([vitest, { ...vitest, ciJobKey: 'jest\u0000', status: 'passed', startedAt: 2 }])).toBe('failed');
    expect(mergeRunStatus([vitest, { ...vitest, ciJobKey: 'vitest\u0000{"node":"22"}', status: 'passed', startedAt: 2 }])).toBe('failed');
    expect(mergeRunStatus([vitest, { ...vitest, status: 'passed', startedAt: 2 }])).toBe('passed');
    // A re-run of the same job replaces it.
    expect(mergeRunStatus([failedJob, { ...failedJob, status: 'passed', startedAt: 2 }])).toBe('passed');
    const merged = mergeCommitRuns([
      run({ id: 'b', source: 'junit', status: 'passed', startedAt: 2000 }),
      run({ id: 'a', source: 'native', status: 'failed', startedAt: 1000 }),
    ]);
    expect(merged).toMatchObject({ runStatus: 'failed', jobs: 2 });
    const twoJobs = mergeCommitRuns([
      run({ id: 'jest', source: 'otlp', hasRunSpan: true, ciRunKey: 'github_actions:5', ciJobKey: 'jest\u0000', status: 'passed', startedAt: 2000 }),
      run({ id: 'vitest', source: 'otlp', hasRunSpan: true, ciRunKey: 'github_actions:5', ciJobKey: 'vitest\u0000', status: 'failed', startedAt: 1000 }),
    ]);
    expect(twoJobs).toMatchObject({ runStatus: 'failed', jobs: 2, runIds: ['jest', 'vitest'] });
  });

  it('the one summary: blocked whenever the gate blocks, whatever the runs say; counts disjoint, adding up both ways', () => {
    expect(prStatusOf('block', 'passed', true)).toBe('blocked');
    expect(prStatusOf('block', 'running', false)).toBe('blocked');
    expect(prStatusOf('pass', 'failed', true)).toBe('passed');
    expect(prStatusOf('pass', 'running', true)).toBe('running');
    expect(prStatusOf('pass', 'passed', false)).toBe('running');
    expect(prStatusOf('pass', 'canceled', true)).toBe('canceled');
    const tests = [
      { status: 'fail' as const, classification: 'new_failure' as const },
      // A new test that failed its proof counts as failed, though a retry passed.
      { status: 'flaky' as const, classification: 'new_failure' as const, newTest: { runs: 10, failed: 1 } },
      { status: 'fail' as const, classification: 'known_flake' as const },
      { status: 'flaky' as const, classification: 'known_flake' as const },
      { status: 'fail' as const, classification: 'quarantined' as const },
    ];
    const tally = prTally({ tests, verdict: 'block', runStatus: 'passed', complete: true });
    expect(tally).toEqual({ status: 'blocked', failed: 4, flaky: 1, newFailures: 2, brokenOnBase: 0, knownFlakes: 3, quarantined: 1 });
    expect(tally.failed + tally.flaky).toBe(tests.length);
    // Known flakes include the quarantined ones (the wire contract's meaning): the classes add up without them.
    expect(tally.newFailures + tally.brokenOnBase + tally.knownFlakes).toBe(tests.length);
    expect(countsText(tally)).toBe('2 new failures, 3 known flakes (1 quarantined)');
    expect(countsText({ ...tally, brokenOnBase: 1, knownFlakes: 2 })).toBe('2 new failures, 1 already broken, 2 known flakes (1 quarantined)');
    expect(countsText({ newFailures: 0, brokenOnBase: 0, knownFlakes: 1, quarantined: 0 })).toBe('1 known flake');
    expect(countsText({ newFailures: 0, brokenOnBase: 0, knownFlakes: 0, quarantined: 0 })).toBe('no failures');
  });

  it('calls a test flaky when it failed somewhere and passed somewhere, fail when it only failed', () => {
    expect(mergedStatus(2, 0, 0)).toBe('fail');
    expect(mergedStatus(1, 1, 0)).toBe('flaky');
    expect(mergedStatus(0, 3, 1)).toBe('flaky');
    expect(mergedStatus(0, 3, 0)).toBeNull();
  });

  it('orders fails first, then by score, then by file, suite and title', () => {
    const list = [test({ testIdentityId: 'f', status: 'flaky', score: 1 }), test({ testIdentityId: 'b', filePath: 'b.ts' }), test({ testIdentityId: 'a', filePath: 'a.ts' }), test({ testIdentityId: 'hi', score: 0.2 })];
    expect(list.sort(compareTests).map((t) => t.testIdentityId)).toEqual(['hi', 'a', 'b', 'f']);
  });
});

describe('the markdown classifies by the gate’s rule', () => {
  const cases = [
    test({ testIdentityId: 'new', title: 'plain failure' }),
    test({ testIdentityId: 'scored', title: 'known flake', score: 0.85, ...flaky }),
    test({ testIdentityId: 'broken', title: 'broken on main', state: 'broken', stateSince: { commitSha: 'ed3d4601234', branch: 'main', at: new Date(T).toISOString() } }),
    test({ testIdentityId: 'retried', title: 'passed on retry', status: 'flaky' }),
    test({ testIdentityId: 'q', title: 'quarantined one', quarantined: true }),
  ];
  const summary: SummaryBody = { commitSha: 'abcdef1234567890', branch: 'feature', prNumber: 7, runStatus: 'failed', complete: true, failed: 4, flaky: 1, totalTests: 10, tests: cases };
  const SECTION: Record<Classification, string> = { new_failure: '#### 🆕 New failures', broken_on_base: '#### 🧱 Already broken', known_flake: '#### 🔁 Known flaky', quarantined: '🔒 ' };

  it('the CLI comment without the gate puts each test in the section the state-based rule gives it', () => {
    const md = commentMarkdown({ summary, gate: null });
    const sectionOf = (title: string): string => {
      const at = md.indexOf(`| ${test().suite} › ${title} |`);
      expect(at).toBeGreaterThan(0);
      const headings = Object.entries(SECTION).map(([c, h]) => ({ c, at: md.lastIndexOf(h, at) }));
      return headings.sort((a, b) => b.at - a.at)[0]!.c;
    };
    for (const t of cases) expect(sectionOf(t.title)).toBe(classifyByState(t));
    expect(md).toContain('| cart › broken on main | `ed3d460` |');
    expect(md).not.toMatch(/known flak[ey][^\n]*broken on main/);
  });

  it('the server summary counts new and already-broken failures as the rule does', () => {
    const md = summaryMarkdown({ ...summary, tests: cases.map((t) => ({ ...t, owners: [] })) }, 2);
    // The gate's counts (the one summary), not a count of the failing table's own.
    expect(md).toContain('**Gate** (strictness `new`): blocks — 2 new failures, 1 already broken, 2 known flakes (1 quarantined)');
    expect(md).toContain('status blocked');
    expect(md).toContain('| 🆕 new | cart › plain failure |');
    expect(md).toContain('| 🧱 already broken on `main` since `ed3d460` | cart › broken on main |');
    expect(md).toContain('| 🔁 known flaky (0.85) | cart › known flake |');
    expect(md).toContain('| 🔒 quarantined | cart › quarantined one |');
  });

  it('the gate log names the break and never says "0% of 0"', () => {
    const gate: GateBody = {
      commitSha: 'abcdef1234567890', branch: 'main', baseBranch: 'main', prNumber: null, runStatus: 'failed', complete: true,
      newFailures: 1, knownFlakes: 0, brokenOnBase: 1, strictness: 'new', verdict: 'block',
      tests: [
        { ...gateTestOf(test({ testIdentityId: 'b', title: 'express rate' }), brokenBase()), brokenSince: { commitSha: 'ed3d460', at: new Date(T).toISOString() } },
        { ...gateTestOf(test({ testIdentityId: 'n', title: 'fresh' }), NO_BASE_HISTORY), brokenSince: null },
      ],
    };
    const text = gateText(gate);
    expect(text).toContain('ALREADY BROKEN');
    expect(text).toContain('broken on main since ed3d460');
    expect(text).toContain(`not run on main in the ${BASE_WINDOW_DAYS} days before`);
    expect(text).not.toContain('known flake ');
    expect(text).not.toContain('0% of 0');
  });
});
