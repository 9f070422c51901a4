// The merge gate's rules (src/domain/gate.ts), how a commit's runs merge (src/domain/pr-summary.ts),
// and that the PR markdown classifies by those same rules (src/domain/pr-markdown.ts).
import { describe, expect, it } from 'vitest';
import { BASE_WINDOW_DAYS, KNOWN_FLAKE_SCORE, NO_BASE_HISTORY, classify, compareGateTests, gateTestOf, verdictOf, type Classification } from '../../src/domain/gate.js';
import { commentMarkdown, summaryMarkdown } from '../../src/domain/pr-markdown.js';
import type { SummaryBody, SummaryTestBody } from '../../src/domain/pr-schemas.js';
import { compareTests, mergeCommitRuns, mergeRunStatus, mergedStatus, type CommitRun } from '../../src/domain/pr-summary.js';

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
    ...over,
  };
}

describe('classify', () => {
  it('is a new failure only when failed, unquarantined, below the known-flake score and clean on the base branch', () => {
    expect(classify(test(), NO_BASE_HISTORY)).toBe('new_failure');
    expect(classify(test({ score: KNOWN_FLAKE_SCORE - 0.0001 }), { graded: 10, bad: 0 })).toBe('new_failure');
    expect(classify(test({ score: KNOWN_FLAKE_SCORE }))).toBe('known_flake');
    expect(classify(test(), { graded: 10, bad: 1 })).toBe('known_flake');
    // Passed on a retry or in another run of the commit: flaky by definition.
    expect(classify(test({ status: 'flaky' }))).toBe('known_flake');
  });

  it('puts quarantine above everything else', () => {
    expect(classify(test({ quarantined: true, score: 0.9, status: 'flaky' }), { graded: 3, bad: 3 })).toBe('quarantined');
    expect(classify(test({ quarantined: true }))).toBe('quarantined');
  });

  it('without history (the CLI when the gate does not answer) is the rule with a clean base branch', () => {
    for (const status of ['fail', 'flaky'] as const)
      for (const score of [0, 0.49, 0.5, 1])
        for (const quarantined of [false, true]) {
          const t = test({ status, score, quarantined });
          expect(classify(t)).toBe(classify(t, { graded: 5, bad: 0 }));
        }
  });
});

describe('verdictOf', () => {
  const classified = (over: Partial<SummaryTestBody>, base = NO_BASE_HISTORY) => gateTestOf(test(over), base);

  it('never blocks with strictness off', () => {
    expect(verdictOf('off', [classified({})])).toBe('pass');
  });

  it('blocks with strictness new only on a new failure', () => {
    expect(verdictOf('new', [classified({})])).toBe('block');
    expect(verdictOf('new', [classified({ score: 0.8 }), classified({}, { graded: 4, bad: 2 }), classified({ quarantined: true })])).toBe('pass');
    expect(verdictOf('new', [])).toBe('pass');
  });

  it('blocks with strictness any on any failed test that is not quarantined, known flake or not', () => {
    expect(verdictOf('any', [classified({ score: 0.8 })])).toBe('block');
    expect(verdictOf('any', [classified({ quarantined: true }), classified({ status: 'flaky' })])).toBe('pass');
  });
});

describe('gateTestOf and compareGateTests', () => {
  it('adds the classification and the base fail rate to four decimals', () => {
    expect(gateTestOf(test(), { graded: 3, bad: 1 })).toMatchObject({ title: 'adds', classification: 'known_flake', baseFailRate: 0.3333, baseSampleSize: 3 });
    expect(gateTestOf(test(), NO_BASE_HISTORY)).toMatchObject({ classification: 'new_failure', baseFailRate: 0, baseSampleSize: 0 });
  });

  it('orders new failures, then known flakes, then quarantined; fails before flaky; higher score first', () => {
    const tests = [
      gateTestOf(test({ testIdentityId: 'q', quarantined: true }), NO_BASE_HISTORY),
      gateTestOf(test({ testIdentityId: 'k-flaky', status: 'flaky', score: 0.9 }), NO_BASE_HISTORY),
      gateTestOf(test({ testIdentityId: 'k-low', score: 0.6 }), NO_BASE_HISTORY),
      gateTestOf(test({ testIdentityId: 'k-high', score: 0.7 }), NO_BASE_HISTORY),
      gateTestOf(test({ testIdentityId: 'new' }), NO_BASE_HISTORY),
    ];
    expect(tests.sort(compareGateTests).map((t) => t.testIdentityId)).toEqual(['new', 'k-high', 'k-low', 'k-flaky', 'q']);
  });
});

describe('a commit of several runs', () => {
  const run = (over: Partial<CommitRun>): CommitRun => ({
    id: 'r1',
    commitSha: 'abcdef1234567890',
    branch: 'feature',
    baseBranch: '',
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
    expect(merged).toEqual({ commitSha: 'abcdef1234567890', branch: 'newest', baseBranch: 'main', prNumber: 42, runStatus: 'passed', complete: true, runIds: ['r3', 'r2', 'r1'] });
  });

  it('keeps to the commit of the newest run when an abbreviation matches two commits', () => {
    const merged = mergeCommitRuns([run({ id: 'new', commitSha: 'abcdef1111' }), run({ id: 'other', commitSha: 'abcdef2222', status: 'failed' })]);
    expect(merged).toMatchObject({ commitSha: 'abcdef1111', runIds: ['new'], runStatus: 'passed' });
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
    test({ testIdentityId: 'scored', title: 'high score', score: KNOWN_FLAKE_SCORE }),
    test({ testIdentityId: 'retried', title: 'passed on retry', status: 'flaky' }),
    test({ testIdentityId: 'q', title: 'quarantined one', quarantined: true }),
  ];
  const summary: SummaryBody = { commitSha: 'abcdef1234567890', branch: 'feature', prNumber: 7, runStatus: 'failed', complete: true, failed: 3, flaky: 1, totalTests: 10, tests: cases };
  const SECTION: Record<Classification, string> = { new_failure: '#### 🆕 New failures', known_flake: '#### 🔁 Known flaky', quarantined: '🔒 ' };

  it('the CLI comment without the gate puts each test in the section classify gives it', () => {
    const md = commentMarkdown({ summary, gate: null });
    const sectionOf = (title: string): string => {
      const at = md.indexOf(`| ${test().suite} › ${title} |`);
      expect(at).toBeGreaterThan(0);
      const headings = Object.entries(SECTION).map(([c, h]) => ({ c, at: md.lastIndexOf(h, at) }));
      return headings.sort((a, b) => b.at - a.at)[0]!.c;
    };
    for (const t of cases) expect(sectionOf(t.title)).toBe(classify(t));
    expect(md).toContain(`in the last ${BASE_WINDOW_DAYS} days`);
  });

  it('the server summary counts as new exactly the failed tests classify calls new', () => {
    const md = summaryMarkdown({ ...summary, tests: cases.map((t) => ({ ...t, owners: [] })) }, 2);
    const newFails = cases.filter((t) => t.status === 'fail' && classify(t) === 'new_failure').length;
    expect(md).toContain(`**Failing tests** (${newFails} new failure, 2 known flaky or quarantined)`);
    expect(md).toContain('| 🆕 new | cart › plain failure |');
    expect(md).toContain('| 🔁 known flaky (0.50) | cart › high score |');
    expect(md).toContain('| 🔒 quarantined | cart › quarantined one |');
  });
});
