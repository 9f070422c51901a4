// `flakehouse run --verify-new` / `--verify-fix`, the pure parts (client/src/contract/verify.ts): which
// tests are new, the re-run order and budget, the runner adapters and the `--rerun` template (no
// shell, quote-safe), `Fixes-flaky:` trailers, how re-run attempts join the run; and the gate's
// rule that a new test failing any attempt is a new failure, never a known flake.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { classify, classifyByState, verdictOf, type FailingTest } from '../../client/src/contract/gate.js';
import { executionFingerprint, failingTests } from '../../client/src/contract/mute.js';
import { gateMarkdown, summaryMarkdown } from '../../client/src/contract/pr-markdown.js';
import {
  VERIFY_ATTRIBUTE,
  adapterCommand,
  appendAttempts,
  detectRunner,
  fillRerunTemplate,
  markVerified,
  matchFixRef,
  parseFixTrailers,
  rerunSchedule,
  selectNewTests,
  shellQuote,
  splitCommandLine,
  tally,
  testsOfRun,
  verifyLine,
  withinBudget,
} from '../../client/src/contract/verify.js';

const e = (title: string, status: ExecutionInput['status'], extra: Partial<ExecutionInput> = {}): ExecutionInput => ({
  filePath: 'src/cart.test.ts',
  suite: 'cart > coupons',
  title,
  status,
  attempt: 1,
  startedAt: 1_800_000_000_000,
  durationMs: 5,
  ...extra,
});

describe('new-test selection', () => {
  const run = [e('a', 'pass'), e('b', 'fail'), e('b', 'pass', { attempt: 2 }), e('c', 'skip'), e('d', 'pass')];
  const tests = testsOfRun(run);

  it('takes each test that ran once, skipped-only tests left out', () => {
    expect(tests.map((t) => t.title)).toEqual(['a', 'b', 'd']);
    expect(tests[1]!.fingerprint).toBe(executionFingerprint(run[1]!));
  });

  it('selects the tests not seen on the base branch; none; too many', () => {
    const seen = new Set([tests[0]!.fingerprint]);
    expect(selectNewTests(tests, seen, 50)).toEqual({ kind: 'selected', tests: [tests[1], tests[2]] });
    expect(selectNewTests(tests, new Set(tests.map((t) => t.fingerprint)), 50)).toEqual({ kind: 'none' });
    expect(selectNewTests(tests, seen, 1)).toEqual({ kind: 'too_many', count: 2, max: 1 });
  });
});

describe('schedule and budget', () => {
  it('goes round by round, so a budget cut leaves the tests even', () => {
    expect(rerunSchedule(['x', 'y'], 3).map((s) => `${s.test}${s.round}`)).toEqual(['x1', 'y1', 'x2', 'y2', 'x3', 'y3']);
    expect(rerunSchedule(['x'], 0)).toEqual([]);
  });

  it('allows a re-run to start only while the budget lasts', () => {
    expect(withinBudget(1000, 1000, 300_000)).toBe(true);
    expect(withinBudget(1000, 300_999, 300_000)).toBe(true);
    expect(withinBudget(1000, 301_000, 300_000)).toBe(false);
  });
});

describe('command lines and the --rerun template', () => {
  it('splits words as a shell quotes them, without expanding anything', () => {
    expect(splitCommandLine(`node run.js 'a b' "c \\"d\\" $x" e\\ f ''`)).toEqual(['node', 'run.js', 'a b', 'c "d" $x', 'e f', '']);
    expect(() => splitCommandLine(`node 'open`)).toThrow(/unbalanced '/);
  });

  it('substitutes inside words: a name with quotes, spaces or $(…) stays one argument', () => {
    const nasty = `it's "quoted" $(touch /tmp/pwned) \`x\``;
    const argv = fillRerunTemplate(`node run-one.js --file={file} "{name}" {title} {suite} {other}`, { file: 'test/a b.js', suitePath: ['cart', 'coupons'], title: nasty });
    expect(argv).toEqual(['node', 'run-one.js', '--file=test/a b.js', `cart coupons ${nasty}`, nasty, 'cart > coupons', '{other}']);
    // Quoted for a shell, it reads back as the same word (checked by a real shell).
    const echoed = execFileSync('/bin/sh', ['-c', `printf '%s' ${shellQuote(nasty)}`], { encoding: 'utf8' });
    expect(echoed).toBe(nasty);
    expect(() => fillRerunTemplate('   ', { file: 'f', suitePath: [], title: 't' })).toThrow(/empty/);
  });

  it('detects the runner from the command', () => {
    expect(detectRunner(['npx', 'vitest', 'run'])).toBe('vitest');
    expect(detectRunner(['node', 'node_modules/vitest/vitest.mjs', 'run'])).toBe('vitest');
    expect(detectRunner(['node', '/x/node_modules/jest/bin/jest.js', '--ci'])).toBe('jest');
    expect(detectRunner(['npx jest --ci'])).toBe('jest');
    expect(detectRunner(['npx', 'playwright', 'test'])).toBe('playwright');
    expect(detectRunner(['python3', '-m', 'pytest', 'tests'])).toBe('pytest');
    expect(detectRunner(['pytest'])).toBe('pytest');
    expect(detectRunner(['npm', 'test'])).toBeNull();
    expect(detectRunner(['make', 'check'])).toBeNull();
  });

  it('builds each adapter on the original command with the runner filter', () => {
    const t = { file: 'src/cart.test.ts', suitePath: ['cart', 'coupons'], title: 'applies (10%) off' };
    expect(adapterCommand('vitest', ['npx', 'vitest', 'run', '--config', 'v.ts'], t)).toEqual(['npx', 'vitest', 'run', '--config', 'v.ts', 'src/cart.test.ts', '-t', '^cart coupons applies \\(10%\\) off$']);
    expect(adapterCommand('vitest', ['npx', 'vitest'], t).slice(2, 3)).toEqual(['--run']);
    expect(adapterCommand('jest', ['npx', 'jest', '--ci'], t)).toEqual(['npx', 'jest', '--ci', 'src/cart.test.ts', '-t', '^cart coupons applies \\(10%\\) off$']);
    expect(adapterCommand('playwright', ['npx', 'playwright', 'test'], t)).toEqual(['npx', 'playwright', 'test', 'src/cart.test.ts', '-g', 'cart coupons applies \\(10%\\) off']);
    // pytest: the command's test paths and -k selection go, its options stay; the node id selects.
    // The suite is the JUnit classname pytest writes: the module's dotted path, then the classes.
    expect(adapterCommand('pytest', ['pytest'], { file: 'tests/test_a.py', suitePath: ['tests.test_a'], title: 'test_b[x-1]' })).toEqual(['pytest', 'tests/test_a.py::test_b[x-1]']);
    expect(adapterCommand('pytest', ['python', '-m', 'pytest', 'tests', '-q', '-k', 'slow', '--junitxml', 'r.xml'], { file: 'tests/test_a.py', suitePath: ['tests.test_a.TestCart'], title: 'test_add' })).toEqual([
      'python',
      '-m',
      'pytest',
      '-q',
      '--junitxml',
      'r.xml',
      'tests/test_a.py::TestCart::test_add',
    ]);
    // A command given as one shell line stays one, with the filter quoted for the shell.
    expect(adapterCommand('jest', ['npx jest --ci'], t)).toEqual([`npx jest --ci src/cart.test.ts -t '^cart coupons applies \\(10%\\) off$'`]);
  });
});

describe('Fixes-flaky trailers', () => {
  it('reads every trailer, any case, without repeats', () => {
    const msg = 'Fix the coupon race\n\nThe timer raced the fetch.\n\nFixes-flaky: cart > coupons > applies a coupon\nfixes-flaky:  3f6c1a52-0000-4000-8000-000000000001  \nFixes-flaky: cart > coupons > applies a coupon\nFixes-flaky:\nSigned-off-by: A <a@b>\n';
    expect(parseFixTrailers(msg)).toEqual(['cart > coupons > applies a coupon', '3f6c1a52-0000-4000-8000-000000000001']);
    expect(parseFixTrailers('no trailers here')).toEqual([]);
  });

  it('matches a test by id, title, suite > title, file > suite > title or full name', () => {
    const tests = testsOfRun([e('applies a coupon', 'pass'), e('adds an item', 'pass', { suite: 'cart' })]);
    const ids = new Map([[tests[1]!.fingerprint, 'id-2']]);
    for (const ref of ['applies a coupon', 'cart > coupons > applies a coupon', 'src/cart.test.ts > cart > coupons > applies a coupon', 'cart coupons applies a coupon']) {
      expect(matchFixRef(ref, tests, ids).map((t) => t.title), ref).toEqual(['applies a coupon']);
    }
    expect(matchFixRef('id-2', tests, ids).map((t) => t.title)).toEqual(['adds an item']);
    expect(matchFixRef('applies', tests, ids)).toEqual([]);
  });
});

describe('re-run attempts join the run', () => {
  it('numbers them after the last attempt, chains the retries, marks them; the failure stays visible', () => {
    const run = [e('b', 'pass'), e('other', 'pass')];
    const fp = executionFingerprint(run[0]!);
    const out = appendAttempts(run, fp, [e('b', 'pass'), e('b', 'fail', { error: { message: 'boom' } }), e('b', 'pass')], 'new');
    expect(out.slice(2).map((x) => [x.attempt, x.retryOfIndex, x.status, x.attributes?.[VERIFY_ATTRIBUTE]])).toEqual([
      [2, 0, 'pass', 'new'],
      [3, 2, 'fail', 'new'],
      [4, 3, 'pass', 'new'],
    ]);
    expect(run).toHaveLength(2); // the input is left alone
    // The last attempt passed: not a failing test for the mute verdict; the tally still counts the failure.
    expect(failingTests(out)).toEqual([]);
    expect(tally(out.filter((x) => executionFingerprint(x) === fp))).toEqual({ runs: 4, failed: 1 });
    // A `flaky` attempt is a pass after a failed one (the reporters' mark): not a failure itself.
    expect(tally([{ status: 'fail' }, { status: 'flaky' }, { status: 'skip' }])).toEqual({ runs: 2, failed: 1 });
    const marked = markVerified(out, new Set([fp]), 'new');
    expect(marked.filter((x) => x.attributes?.[VERIFY_ATTRIBUTE] === 'new')).toHaveLength(4);
    expect(marked[1]!.attributes).toBeUndefined();
  });

  it('says what a proof came to', () => {
    const t = testsOfRun([e('b', 'pass')])[0]!;
    expect(verifyLine('new', t, { runs: 10, failed: 1, missing: 0, skipped: 0 })).toEqual({ ok: false, line: 'new test failed 1 of 10: src/cart.test.ts > cart > coupons > b' });
    expect(verifyLine('new', t, { runs: 10, failed: 0, missing: 0, skipped: 0 }).ok).toBe(true);
    expect(verifyLine('fix', t, { runs: 20, failed: 0, missing: 0, skipped: 0 })).toEqual({ ok: true, line: 'fix verified: passed 20 of 20: src/cart.test.ts > cart > coupons > b' });
    expect(verifyLine('fix', t, { runs: 20, failed: 2, missing: 0, skipped: 0 }).line).toMatch(/^fix not verified: failed 2 of 20/);
    // A budget that cut the proof short proves nothing.
    expect(verifyLine('fix', t, { runs: 12, failed: 0, missing: 0, skipped: 8 })).toMatchObject({ ok: false, line: expect.stringContaining('8 re-run(s) not done: the budget ran out') });
  });
});

describe('the gate on a new test that failed its proof', () => {
  const flakyNew: FailingTest = { status: 'flaky', quarantined: false, state: 'flaky', flakeRate: 0.1, knownFlake: true, newTest: { runs: 10, failed: 1 } };

  it('is a new failure and blocks, even where a known flake would pass', () => {
    expect(classify(flakyNew)).toBe('new_failure');
    expect(classifyByState(flakyNew)).toBe('new_failure');
    expect(classify({ ...flakyNew, newTest: null })).toBe('known_flake');
    expect(verdictOf('new', [{ ...flakyNew, classification: classify(flakyNew) }])).toBe('block');
    // `any` blocks on a failed proof too, though the last attempt passed.
    expect(verdictOf('any', [{ ...flakyNew, classification: 'new_failure' }])).toBe('block');
    // A new test whose proof all passed is not a failure at all (it is not among the failing tests).
    expect(classify({ ...flakyNew, newTest: { runs: 10, failed: 0 } })).toBe('known_flake');
  });

  it('says "new test failed k of n" in the gate and the summary', () => {
    const test = { testIdentityId: 'id-b', filePath: 'src/b.test.ts', suite: '', title: 'b', status: 'flaky' as const, errorMessage: 'boom', score: 0.5, quarantined: false, topReason: null, topReasonCode: null, state: 'flaky' as const, stateSince: null, flakeRate: 0.1, knownFlake: false, newTest: { runs: 10, failed: 1 } };
    const gate = {
      commitSha: 'abcdef1234567',
      branch: 'pr',
      baseBranch: 'main',
      prNumber: null,
      runStatus: 'passed',
      complete: true,
      newFailures: 1,
      knownFlakes: 0,
      brokenOnBase: 0,
      strictness: 'new' as const,
      verdict: 'block' as const,
      tests: [{ ...test, classification: 'new_failure' as const, baseFailRate: 0, baseSampleSize: 0, brokenSince: null }],
    };
    expect(gateMarkdown(gate, 1)).toContain('| 🆕 new failure | b | `src/b.test.ts` | flaky — new test failed 1 of 10 |');
    const md = summaryMarkdown(
      { commitSha: 'abcdef1234567', branch: 'pr', prNumber: null, runStatus: 'passed', totalTests: 2, tests: [{ ...test, owners: [] }], fixes: [{ testIdentityId: 'id-c', filePath: 'src/c.test.ts', suite: '', title: 'c', runs: 20, failed: 0, verified: true }] },
      1,
    );
    expect(md).toContain('❌ Flakehouse: 1 failed of 2 tests');
    expect(md).toContain('🆕 new test failed 1 of 10');
    expect(md).toContain('✅ fix verified: passed 20 of 20 re-runs — c');
  });
});
