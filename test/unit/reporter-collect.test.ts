// The reporters' shared mapping: attempts and retry links, errors, paths; and each runner
// adapter's translation of its result objects (shaped as the runners hand them over; the
// real-runner tests in test/integration/reporters.test.ts prove the shapes).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TestCase as PwTestCase, TestResult as PwTestResult } from '@playwright/test/reporter';
import type { TestCase as VitestTestCase } from 'vitest/node';
import { RunCollector, errorFromText, fileArtifact, relativePath, repositoryRoot, splitAttempts, stripAnsi, toExecutionError, type AttemptInput } from '../../client/src/reporter/collect.js';
import { jestAttempt, jestFinalAttempts } from '../../client/src/reporter/jest.js';
import { playwrightAttempt } from '../../client/src/reporter/playwright.js';
import { vitestAttempts } from '../../client/src/reporter/vitest.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'fh-collect-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const ROOT = '/repo';
const attempt = (over: Partial<AttemptInput> = {}): AttemptInput => ({
  file: '/repo/src/cart.test.ts',
  suitePath: ['cart', 'coupons'],
  title: 'applies a coupon',
  status: 'pass',
  startedAt: 1_000,
  durationMs: 10,
  ...over,
});

describe('RunCollector', () => {
  it('links each attempt of a test to the one before; a pass after a failure is flaky', () => {
    const c = new RunCollector({ rootDir: ROOT, baseDir: ROOT, startedAt: 500 });
    c.add(attempt({ title: 'adds an item' }));
    c.add(attempt({ status: 'fail', error: { message: 'expected 90 to be 80' } }));
    c.add(attempt({ status: 'fail', startedAt: 1_020 }));
    c.add(attempt({ status: 'pass', startedAt: 1_040 }));
    expect(c.executions.map((e) => [e.title, e.attempt, e.status, e.retryOfIndex])).toEqual([
      ['adds an item', 1, 'pass', undefined],
      ['applies a coupon', 1, 'fail', undefined],
      ['applies a coupon', 2, 'fail', 1],
      ['applies a coupon', 3, 'flaky', 2],
    ]);
    expect(c.executions[1]).toMatchObject({ filePath: 'src/cart.test.ts', suite: 'cart > coupons', error: { message: 'expected 90 to be 80' } });
    const run = c.toRun(2_000);
    expect(run).toMatchObject({ startedAt: 500, finishedAt: 2_000, rootDir: ROOT });
    expect(run.executions).toBe(c.executions);
  });

  it('a pass that follows a pass, or a failure that follows a failure, is not flaky', () => {
    const c = new RunCollector({ rootDir: ROOT, baseDir: ROOT });
    c.add(attempt());
    c.add(attempt());
    c.add(attempt({ title: 'x', status: 'fail' }));
    c.add(attempt({ title: 'x', status: 'fail' }));
    expect(c.executions.map((e) => e.status)).toEqual(['pass', 'pass', 'fail', 'fail']);
  });

  it('takes the runner’s attempt numbers; attempt 1 again is another test of the same name, not a retry', () => {
    const c = new RunCollector({ rootDir: ROOT, baseDir: ROOT });
    c.add(attempt({ attempt: 1, status: 'fail' }));
    c.add(attempt({ attempt: 1, status: 'pass' }));
    c.add(attempt({ attempt: 2, status: 'pass' }));
    expect(c.executions.map((e) => [e.attempt, e.status, e.retryOfIndex])).toEqual([
      [1, 'fail', undefined],
      [1, 'pass', undefined],
      [2, 'pass', 1],
    ]);
  });

  it('tells tests apart by file, suite, title and params', () => {
    const c = new RunCollector({ rootDir: ROOT, baseDir: ROOT });
    c.add(attempt({ status: 'fail', params: { project: 'chromium' } }));
    c.add(attempt({ status: 'pass', params: { project: 'firefox' } }));
    c.add(attempt({ status: 'pass', suitePath: ['cart'] }));
    c.add(attempt({ status: 'pass', file: '/repo/src/other.test.ts' }));
    c.add(attempt({ status: 'pass', params: { project: 'chromium' } }));
    expect(c.executions.map((e) => [e.attempt, e.status])).toEqual([
      [1, 'fail'],
      [1, 'pass'],
      [1, 'pass'],
      [1, 'pass'],
      [2, 'flaky'],
    ]);
    expect(c.executions[0]!.params).toEqual({ project: 'chromium' });
    expect(c.has('/repo/src/cart.test.ts', ['cart'], 'applies a coupon')).toBe(true);
    expect(c.has('/repo/src/cart.test.ts', ['cart'], 'another')).toBe(false);
  });

  it('stores paths relative to the repository root found above the root dir', () => {
    const repo = tempDir();
    mkdirSync(path.join(repo, '.git'));
    mkdirSync(path.join(repo, 'packages/web'), { recursive: true });
    expect(repositoryRoot(path.join(repo, 'packages/web'))).toBe(repo);
    const c = new RunCollector({ rootDir: path.join(repo, 'packages/web') });
    c.add(attempt({ file: path.join(repo, 'packages/web/src/a.test.ts') }));
    expect(c.executions[0]!.filePath).toBe('packages/web/src/a.test.ts');
    expect(relativePath('/elsewhere/b.test.ts', repo)).toBe('/elsewhere/b.test.ts');
    expect(relativePath('src\\c.test.ts', repo)).toBe('src/c.test.ts');
  });
});

describe('splitAttempts (one result for all attempts)', () => {
  const boom = (n: number) => ({ type: 'Error', message: `boom ${n}` });

  it('a pass on the third attempt: two failures with their own errors, then the pass', () => {
    const a = splitAttempts({ retries: 2, status: 'pass', startedAt: 1_000, durationMs: 31, errors: [boom(1), boom(2)] });
    expect(a.map((x) => [x.status, x.error?.message])).toEqual([
      ['fail', 'boom 1'],
      ['fail', 'boom 2'],
      ['pass', undefined],
    ]);
    // The time is spread over the attempts without losing any.
    expect(a.reduce((s, x) => s + x.durationMs, 0)).toBe(31);
    expect(a.map((x) => x.startedAt)).toEqual([1_000, 1_010, 1_021]);
  });

  it('a failure every time; fewer errors than failed attempts repeat the last', () => {
    const a = splitAttempts({ retries: 2, status: 'fail', startedAt: 0, durationMs: 3, errors: [boom(1)] });
    expect(a.map((x) => [x.status, x.error?.message])).toEqual([
      ['fail', 'boom 1'],
      ['fail', 'boom 1'],
      ['fail', 'boom 1'],
    ]);
  });

  it('no retries: the result as it is', () => {
    expect(splitAttempts({ retries: 0, status: 'skip', startedAt: 5, durationMs: 0, errors: [] })).toEqual([{ status: 'skip', startedAt: 5, durationMs: 0 }]);
  });
});

describe('errors', () => {
  it('keeps type, message and stack of an Error and of a serialized one', () => {
    const err = new TypeError('tax table missing');
    expect(toExecutionError(err)).toEqual({ type: 'TypeError', message: 'tax table missing', stack: err.stack });
    expect(toExecutionError({ name: 'AssertionError', message: 'expected 1 to be 2', stack: 'AssertionError: expected 1 to be 2\n    at x.ts:1:1' })).toEqual({
      type: 'AssertionError',
      message: 'expected 1 to be 2',
      stack: 'AssertionError: expected 1 to be 2\n    at x.ts:1:1',
    });
  });

  it('takes the type from the front of the message (Playwright, Jest) and drops terminal colours', () => {
    const e = toExecutionError({
      message: '\u001b[31mError: \u001b[39mexpect(\u001b[31mreceived\u001b[39m).toBe(expected)\n\nExpected: 1',
      stack: 'Error: expect(received).toBe(expected)\n    at a.spec.ts:3:5',
    });
    expect(e).toEqual({ type: 'Error', message: 'expect(received).toBe(expected)\n\nExpected: 1', stack: 'Error: expect(received).toBe(expected)\n    at a.spec.ts:3:5' });
    expect(toExecutionError({ message: 'AssertionError [ERR_ASSERTION]: 1 == 2' })).toEqual({ type: 'AssertionError', message: '1 == 2' });
    expect(stripAnsi('\u001b[1m\u001b[31mred\u001b[39m\u001b[22m')).toBe('red');
  });

  it('parses a printed error: message lines before the first frame', () => {
    expect(errorFromText('TypeError: tax table missing\n    second line\n    at Object.<anonymous> (cart.spec.cjs:20:11)\n    at next (x.js:1:1)')).toEqual({
      type: 'TypeError',
      message: 'tax table missing\n    second line',
      stack: 'TypeError: tax table missing\n    second line\n    at Object.<anonymous> (cart.spec.cjs:20:11)\n    at next (x.js:1:1)',
    });
    expect(errorFromText('just words')).toEqual({ message: 'just words' });
    expect(errorFromText('  ')).toBeUndefined();
  });

  it('falls back to the stack, then to a thrown value; nothing for nothing', () => {
    expect(toExecutionError({ stack: 'RangeError: too far\n    at y.ts:2:2' })).toMatchObject({ type: 'RangeError', message: 'too far' });
    expect(toExecutionError({ value: '42' })).toEqual({ message: '42' });
    expect(toExecutionError('Error: plain')).toEqual({ type: 'Error', message: 'plain' });
    expect(toExecutionError(undefined)).toBeUndefined();
    expect(toExecutionError({})).toBeUndefined();
  });
});

describe('fileArtifact', () => {
  it('names a file that exists with its size; nothing for a missing one', () => {
    const d = tempDir();
    const f = path.join(d, 'shot.png');
    writeFileSync(f, Buffer.alloc(123));
    expect(fileArtifact('screenshot', 'image/png', f)).toEqual({ name: 'screenshot', contentType: 'image/png', path: f, sizeBytes: 123 });
    // No type from the runner: guessed from the extension.
    expect(fileArtifact('video', undefined, f.replace('.png', '.webm'))).toBeUndefined();
    writeFileSync(path.join(d, 'video.WEBM'), 'v');
    expect(fileArtifact('video', undefined, path.join(d, 'video.WEBM'))).toMatchObject({ contentType: 'video/webm', sizeBytes: 1 });
    writeFileSync(path.join(d, 'blob.bin'), 'b');
    expect(fileArtifact('blob', '', path.join(d, 'blob.bin'))).toMatchObject({ contentType: 'application/octet-stream' });
    expect(fileArtifact('x', undefined, path.join(d, 'nope'))).toBeUndefined();
    expect(fileArtifact('dir', undefined, d)).toBeUndefined();
  });
});

describe('runner adapters', () => {
  it('jest: one attempt per test case result, numbered by invocations, error from the details', () => {
    const err = new TypeError('tax table missing');
    const a = jestAttempt('/repo/cart.spec.cjs', {
      ancestorTitles: ['cart'],
      title: 'computes tax',
      fullName: 'cart computes tax',
      status: 'failed',
      invocations: 2,
      startedAt: 1_000,
      duration: 4,
      failureDetails: [err],
      failureMessages: [err.stack!],
      numPassingAsserts: 0,
    });
    expect(a).toEqual({
      file: '/repo/cart.spec.cjs',
      suitePath: ['cart'],
      title: 'computes tax',
      status: 'fail',
      attempt: 2,
      startedAt: 1_000,
      durationMs: 4,
      error: { type: 'TypeError', message: 'tax table missing', stack: err.stack },
    });
  });

  it('jest: an error that crossed the worker boundary as a plain object gets its type and stack from the printed one', () => {
    const printed = 'TypeError: tax table missing\n    at Object.<anonymous> (/repo/cart.spec.cjs:21:11)';
    const a = jestAttempt('/repo/cart.spec.cjs', {
      ancestorTitles: [],
      title: 'computes tax',
      fullName: 'computes tax',
      status: 'failed',
      invocations: 1,
      failureDetails: [{ message: 'tax table missing' }],
      failureMessages: [printed],
      numPassingAsserts: 0,
    });
    expect(a?.error).toEqual({ type: 'TypeError', message: 'tax table missing', stack: printed });
  });

  it('jest: a file-level result without per-attempt events becomes its attempts (retry reasons first)', () => {
    const attempts = jestFinalAttempts(
      '/repo/cart.spec.cjs',
      {
        ancestorTitles: [],
        title: 'applies a coupon',
        fullName: 'applies a coupon',
        status: 'passed',
        invocations: 2,
        duration: 8,
        startAt: 100,
        failureDetails: [],
        failureMessages: [],
        retryReasons: ['Error: coupon service warming up\n    at c.js:1:1'],
        numPassingAsserts: 1,
      },
      50,
    );
    expect(attempts.map((a) => [a.attempt, a.status, a.error?.message])).toEqual([
      [1, 'fail', 'coupon service warming up'],
      [2, 'pass', undefined],
    ]);
    const skipped = jestFinalAttempts('/repo/cart.spec.cjs', { ancestorTitles: [], title: 't', fullName: 't', status: 'pending', failureDetails: [], failureMessages: [], numPassingAsserts: 0 }, 50);
    expect(skipped).toEqual([{ file: '/repo/cart.spec.cjs', suitePath: [], title: 't', status: 'skip', attempt: 1, startedAt: 50, durationMs: 0 }]);
  });

  const pwTest = (over: { expectedStatus?: string; project?: string } = {}) => {
    const file = { type: 'file', title: 'checkout.spec.ts', project: () => ({ name: over.project ?? '' }) } as Record<string, unknown>;
    const describe1 = { type: 'describe', title: 'checkout', parent: file, project: file.project };
    const describe2 = { type: 'describe', title: 'payment', parent: describe1, project: file.project };
    return { title: 'authorizes the card', parent: describe2, location: { file: '/repo/e2e/checkout.spec.ts', line: 1, column: 1 }, expectedStatus: over.expectedStatus ?? 'passed' } as unknown as PwTestCase;
  };
  const pwResult = (over: Partial<PwTestResult>): PwTestResult =>
    ({ retry: 0, status: 'passed', startTime: new Date(1_000), duration: 7, errors: [], attachments: [], ...over }) as PwTestResult;

  it('playwright: retry index, describe path, project as a param, attachments with a path', () => {
    const d = tempDir();
    const trace = path.join(d, 'trace.zip');
    writeFileSync(trace, 'zip');
    const a = playwrightAttempt(
      pwTest({ project: 'chromium' }),
      pwResult({
        retry: 1,
        status: 'failed',
        errors: [{ message: 'Error: expect(received).toBe(expected)', stack: 'Error: expect(received).toBe(expected)\n    at checkout.spec.ts:3:5' }],
        attachments: [
          { name: 'trace', contentType: 'application/zip', path: trace },
          { name: 'stdout-note', contentType: 'text/plain', body: Buffer.from('inline') },
        ],
      }),
    );
    expect(a).toEqual({
      file: '/repo/e2e/checkout.spec.ts',
      suitePath: ['checkout', 'payment'],
      title: 'authorizes the card',
      status: 'fail',
      attempt: 2,
      startedAt: 1_000,
      durationMs: 7,
      params: { project: 'chromium' },
      error: { type: 'Error', message: 'expect(received).toBe(expected)', stack: 'Error: expect(received).toBe(expected)\n    at checkout.spec.ts:3:5' },
      artifacts: [{ name: 'trace', contentType: 'application/zip', path: trace, sizeBytes: 3 }],
    });
  });

  it('playwright: expected failures pass, timeouts are TimeoutError, interrupted and skipped are skips', () => {
    expect(playwrightAttempt(pwTest({ expectedStatus: 'failed' }), pwResult({ status: 'failed' })).status).toBe('pass');
    expect(playwrightAttempt(pwTest({ expectedStatus: 'failed' }), pwResult({ status: 'passed' }))).toMatchObject({ status: 'fail', error: { message: 'Expected to fail, but passed' } });
    expect(playwrightAttempt(pwTest(), pwResult({ status: 'timedOut', errors: [{ message: 'Test timeout of 30000ms exceeded.' }] }))).toMatchObject({
      status: 'fail',
      error: { type: 'TimeoutError', message: 'Test timeout of 30000ms exceeded.' },
    });
    expect(playwrightAttempt(pwTest(), pwResult({ status: 'interrupted' })).status).toBe('skip');
    expect(playwrightAttempt(pwTest(), pwResult({ status: 'skipped' })).status).toBe('skip');
  });

  it('vitest: a test that passed on its second attempt becomes a failed attempt and a pass; annotations go with the last', () => {
    const d = tempDir();
    const shot = path.join(d, 'shot.png');
    writeFileSync(shot, Buffer.alloc(10));
    const module = { type: 'module', moduleId: '/repo/src/cart.test.ts' };
    const suite = { type: 'suite', name: 'cart', parent: module };
    const testCase = {
      type: 'test',
      name: 'applies a coupon',
      parent: suite,
      module,
      project: { name: '' },
      result: () => ({ state: 'passed', errors: [{ name: 'AssertionError', message: 'expected 1 to be greater than 1', stack: 'AssertionError: expected 1 to be greater than 1\n    at cart.test.ts:9:5' }] }),
      diagnostic: () => ({ startTime: 1_000, duration: 20, retryCount: 1 }),
      annotations: () => [{ type: 'notice', message: 'screenshot', attachment: { path: shot, contentType: 'image/png' } }],
      artifacts: () => [],
    } as unknown as VitestTestCase;
    const attempts = vitestAttempts(testCase);
    expect(attempts).toEqual([
      {
        file: '/repo/src/cart.test.ts',
        suitePath: ['cart'],
        title: 'applies a coupon',
        status: 'fail',
        attempt: 1,
        startedAt: 1_000,
        durationMs: 10,
        error: { type: 'AssertionError', message: 'expected 1 to be greater than 1', stack: 'AssertionError: expected 1 to be greater than 1\n    at cart.test.ts:9:5' },
      },
      {
        file: '/repo/src/cart.test.ts',
        suitePath: ['cart'],
        title: 'applies a coupon',
        status: 'pass',
        attempt: 2,
        startedAt: 1_010,
        durationMs: 10,
        artifacts: [{ name: 'screenshot', contentType: 'image/png', path: shot, sizeBytes: 10 }],
      },
    ]);
    const c = new RunCollector({ rootDir: '/repo', baseDir: '/repo' });
    for (const a of attempts) c.add(a);
    expect(c.executions.map((e) => [e.attempt, e.status, e.retryOfIndex])).toEqual([
      [1, 'fail', undefined],
      [2, 'flaky', 0],
    ]);
  });
});
