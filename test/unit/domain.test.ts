import { describe, expect, it } from 'vitest';
import type { ExecutionInput, IngestBatch, TestStatus } from '../../client/src/contract/batch.js';
import { createHash } from 'node:crypto';
import { canonicalJson, fingerprint, normalizeTestPath, paramsHash, testIdentityId, testKey } from '../../client/src/contract/identity.js';
import { stableUuid, UUID_RE, uuidv7 } from '../../client/src/contract/ids.js';
import { normalizeExecution } from '../../src/domain/normalize.js';
import { buildExecutions, buildRun, countFinalStatuses, executionIdFor, IdentityCache, runIdFor } from '../../src/domain/records.js';
import { mergeRunPart, traceRunIdFor, type RunRecord } from '../../src/domain/records.js';

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0);

function exec(overrides: Partial<ExecutionInput> = {}): ExecutionInput {
  return {
    filePath: 'src/a.test.ts',
    suite: 'A',
    title: 'works',
    status: 'pass',
    attempt: 1,
    startedAt: T0,
    durationMs: 10,
    ...overrides,
  };
}

function batch(executions: ExecutionInput[], run: Partial<IngestBatch['run']> = {}): IngestBatch {
  return {
    contractVersion: '0.1.0',
    idempotencyKey: 'idem-key-0001',
    resource: { ciProvider: 'local', commitSha: 'abc1234', branch: 'main', trigger: 'push' },
    run: { status: 'passed', startedAt: T0, ...run },
    executions,
  };
}

const counts = (total: number, passed: number, failed: number, skipped: number, flaky: number) => ({
  total,
  passed,
  failed,
  skipped,
  flaky,
});

describe('normalizeTestPath', () => {
  it('turns backslashes into slashes', () => {
    expect(normalizeTestPath('src\\deep\\a.test.ts')).toBe('src/deep/a.test.ts');
  });

  it('drops leading ./ (repeated) and leading slashes', () => {
    expect(normalizeTestPath('./src/a.ts')).toBe('src/a.ts');
    expect(normalizeTestPath('././src/a.ts')).toBe('src/a.ts');
    expect(normalizeTestPath('/src/a.ts')).toBe('src/a.ts');
    expect(normalizeTestPath('//src/a.ts')).toBe('src/a.ts');
    expect(normalizeTestPath('.\\src\\a.ts')).toBe('src/a.ts');
  });

  it('lowercases and trims', () => {
    expect(normalizeTestPath('  Src/Login.Test.TS  ')).toBe('src/login.test.ts');
  });

  it('keeps inner ./ and ../ segments and dotfiles', () => {
    expect(normalizeTestPath('../other/a.ts')).toBe('../other/a.ts');
    expect(normalizeTestPath('.config/a.ts')).toBe('.config/a.ts');
  });
});

describe('paramsHash and canonicalJson', () => {
  it("is '' for no params and for empty params", () => {
    expect(paramsHash(undefined)).toBe('');
    expect(paramsHash({})).toBe('');
  });

  it('is 16 hex chars and independent of key order (also nested)', () => {
    const a = paramsHash({ browser: 'chromium', viewport: { w: 1280, h: 720 } });
    const b = paramsHash({ viewport: { h: 720, w: 1280 }, browser: 'chromium' });
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(a).toBe(b);
  });

  it('differs for different values', () => {
    expect(paramsHash({ browser: 'chromium' })).not.toBe(paramsHash({ browser: 'firefox' }));
    expect(paramsHash({ n: 1 })).not.toBe(paramsHash({ n: '1' }));
  });

  it('canonicalJson sorts keys, keeps array order and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: [3, { d: undefined, c: null }] })).toBe('{"a":[3,{"c":null}],"b":1}');
  });
});

describe('fingerprint and test identity', () => {
  const key = { filePath: 'src/a.test.ts', suite: 'Login', title: 'logs in' };

  it('is a sha256 hex and ignores cosmetic path differences', () => {
    const fp = fingerprint(key);
    expect(fp).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprint({ ...key, filePath: '.\\src\\A.test.ts' })).toBe(fp);
    expect(fingerprint({ ...key, filePath: '/SRC/a.test.ts' })).toBe(fp);
    expect(fingerprint({ ...key, suite: ' Login ', title: 'logs in  ' })).toBe(fp);
  });

  it('differs by path, suite, title and params', () => {
    const fp = fingerprint(key);
    const others = [
      fingerprint({ ...key, filePath: 'src/b.test.ts' }),
      fingerprint({ ...key, suite: 'Logout' }),
      fingerprint({ ...key, title: 'logs out' }),
      fingerprint({ ...key, params: { browser: 'firefox' } }),
    ];
    expect(new Set([fp, ...others]).size).toBe(5);
    expect(fingerprint({ ...key, params: {} })).toBe(fp);
    expect(fingerprint({ ...key, params: { a: 1, b: 2 } })).toBe(fingerprint({ ...key, params: { b: 2, a: 1 } }));
  });

  it('hashes path, suite, title and params hash joined by NUL, so the ids already stored stay the same', () => {
    const sha = (text: string): string => createHash('sha256').update(text).digest('hex');
    expect(testKey({ ...key, filePath: './SRC/a.test.ts', title: ' logs in ' })).toBe('src/a.test.ts\u0000Login\u0000logs in\u0000');
    expect(fingerprint(key)).toBe(sha('src/a.test.ts\u0000Login\u0000logs in\u0000'));
    const params = { browser: 'firefox' };
    expect(fingerprint({ ...key, params })).toBe(sha(`src/a.test.ts\u0000Login\u0000logs in\u0000${paramsHash(params)}`));
  });

  it('does not confuse field boundaries', () => {
    expect(fingerprint({ filePath: 'a', suite: 'b c', title: 'd' })).not.toBe(fingerprint({ filePath: 'a', suite: 'b', title: 'c d' }));
  });

  it('testIdentityId is a stable UUID per project and fingerprint', () => {
    const fp = fingerprint(key);
    expect(testIdentityId('p1', fp)).toMatch(UUID_RE);
    expect(testIdentityId('p1', fp)).toBe(testIdentityId('p1', fp));
    expect(testIdentityId('p2', fp)).not.toBe(testIdentityId('p1', fp));
  });
});

describe('ids', () => {
  it('stableUuid is deterministic, UUID-shaped and distinguishes inputs', () => {
    const id = stableUuid('run', 'p1', 'r1');
    expect(id).toMatch(UUID_RE);
    expect(id).toBe(stableUuid('run', 'p1', 'r1'));
    expect(id[14]).toBe('8');
    expect('89ab').toContain(id[19]);
    expect(stableUuid('run', 'p1', 'r2')).not.toBe(id);
    expect(stableUuid('execution', 'p1', 'r1')).not.toBe(id);
    // Parts are delimited: moving a character between parts changes the id.
    expect(stableUuid('ab', 'c')).not.toBe(stableUuid('a', 'bc'));
  });

  it('uuidv7 has version nibble 7, the RFC variant and the timestamp up front', () => {
    const now = T0;
    const id = uuidv7(now);
    expect(id).toMatch(UUID_RE);
    expect(id[14]).toBe('7');
    expect('89ab').toContain(id[19]);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(now);
  });

  it('uuidv7 sorts lexicographically in creation order across milliseconds', () => {
    const ids = Array.from({ length: 50 }, (_, i) => uuidv7(T0 + i * 7 + (i % 3)));
    expect([...ids].reverse().sort()).toEqual(ids);
    // Including across a hex-digit carry and a large gap.
    expect(uuidv7(0xfff) < uuidv7(0x1000)).toBe(true);
    expect(uuidv7(T0) < uuidv7(T0 + 86_400_000)).toBe(true);
  });

  it('uuidv7 is unique within one millisecond', () => {
    const ids = new Set(Array.from({ length: 100 }, () => uuidv7(T0)));
    expect(ids.size).toBe(100);
  });
});

describe('countFinalStatuses', () => {
  it('counts a single pass, fail, skip and explicit flaky', () => {
    expect(countFinalStatuses([exec({ status: 'pass' })])).toEqual(counts(1, 1, 0, 0, 0));
    expect(countFinalStatuses([exec({ status: 'fail' })])).toEqual(counts(1, 0, 1, 0, 0));
    expect(countFinalStatuses([exec({ status: 'skip' })])).toEqual(counts(1, 0, 0, 1, 0));
    expect(countFinalStatuses([exec({ status: 'flaky' })])).toEqual(counts(1, 0, 0, 0, 1));
    expect(countFinalStatuses([])).toEqual(counts(0, 0, 0, 0, 0));
  });

  it('counts distinct tests separately', () => {
    const statuses: TestStatus[] = ['pass', 'pass', 'fail', 'skip', 'flaky'];
    const list = statuses.map((status, i) => exec({ title: `t${i}`, status }));
    expect(countFinalStatuses(list)).toEqual(counts(5, 2, 1, 1, 1));
  });

  it('fail then pass via retryOfIndex is one flaky test', () => {
    const list = [exec({ status: 'fail' }), exec({ status: 'pass', attempt: 2, retryOfIndex: 0 })];
    expect(countFinalStatuses(list)).toEqual(counts(1, 0, 0, 0, 1));
  });

  it('retryOfIndex groups attempts even when the retry is reported under another name', () => {
    const list = [exec({ status: 'fail' }), exec({ title: 'works (retry 1)', status: 'pass', attempt: 2, retryOfIndex: 0 })];
    expect(countFinalStatuses(list)).toEqual(counts(1, 0, 0, 0, 1));
  });

  it('fail then pass of the same test without retryOfIndex is flaky', () => {
    expect(countFinalStatuses([exec({ status: 'fail' }), exec({ status: 'pass', attempt: 2 })])).toEqual(counts(1, 0, 0, 0, 1));
    // Same attempt number reported twice (reporters that do not number retries): the later one decides.
    expect(countFinalStatuses([exec({ status: 'fail' }), exec({ status: 'pass' })])).toEqual(counts(1, 0, 0, 0, 1));
    // Cosmetic differences are the same test, as for the test id (even after normalizeExecution, which keeps case).
    for (const filePath of ['./src/a.test.ts', '.\\src\\a.test.ts', 'SRC/A.test.ts']) {
      const list = [exec({ status: 'fail' }), exec({ filePath, title: ' works ', status: 'pass', attempt: 2 })];
      expect(countFinalStatuses(list), filePath).toEqual(counts(1, 0, 0, 0, 1));
      expect(countFinalStatuses(list.map(normalizeExecution)), filePath).toEqual(counts(1, 0, 0, 0, 1));
    }
  });

  it('the same title with different params are different tests', () => {
    const list = [exec({ status: 'fail', params: { b: 'chromium' } }), exec({ status: 'pass', params: { b: 'firefox' } })];
    expect(countFinalStatuses(list)).toEqual(counts(2, 1, 1, 0, 0));
  });

  it('fail, fail is failed; pass, pass is passed', () => {
    expect(countFinalStatuses([exec({ status: 'fail' }), exec({ status: 'fail', attempt: 2, retryOfIndex: 0 })])).toEqual(counts(1, 0, 1, 0, 0));
    expect(countFinalStatuses([exec({ status: 'pass' }), exec({ status: 'pass', attempt: 2 })])).toEqual(counts(1, 1, 0, 0, 0));
  });

  it('pass then fail is a failure (the last attempt decides)', () => {
    expect(countFinalStatuses([exec({ status: 'pass' }), exec({ status: 'fail', attempt: 2 })])).toEqual(counts(1, 0, 1, 0, 0));
  });

  it('attempts given out of order: the highest attempt decides', () => {
    // Passing retry listed before the failing first attempt: still flaky.
    expect(countFinalStatuses([exec({ status: 'pass', attempt: 2 }), exec({ status: 'fail', attempt: 1 })])).toEqual(counts(1, 0, 0, 0, 1));
    // Failing retry listed before the passing first attempt: failed.
    expect(countFinalStatuses([exec({ status: 'fail', attempt: 2 }), exec({ status: 'pass', attempt: 1 })])).toEqual(counts(1, 0, 1, 0, 0));
    // With retryOfIndex pointing forward to the first attempt.
    const list = [exec({ status: 'pass', attempt: 3, retryOfIndex: 2 }), exec({ status: 'fail', attempt: 1 }), exec({ status: 'fail', attempt: 2, retryOfIndex: 1 })];
    expect(countFinalStatuses(list)).toEqual(counts(1, 0, 0, 0, 1));
  });

  it('follows retry chains a -> b -> c', () => {
    const flaky = [
      exec({ status: 'fail', attempt: 1 }),
      exec({ status: 'fail', attempt: 2, retryOfIndex: 0 }),
      exec({ status: 'pass', attempt: 3, retryOfIndex: 1 }),
    ];
    expect(countFinalStatuses(flaky)).toEqual(counts(1, 0, 0, 0, 1));
    const failed = [
      exec({ status: 'fail', attempt: 1 }),
      exec({ status: 'fail', attempt: 2, retryOfIndex: 0 }),
      exec({ status: 'fail', attempt: 3, retryOfIndex: 1 }),
      exec({ title: 'other', status: 'pass' }),
    ];
    expect(countFinalStatuses(failed)).toEqual(counts(2, 1, 1, 0, 0));
  });

  it('survives retryOfIndex cycles, self references and out-of-range indexes', () => {
    const list = [
      exec({ status: 'fail', retryOfIndex: 1 }),
      exec({ status: 'pass', attempt: 2, retryOfIndex: 0 }),
      exec({ title: 'self', status: 'pass', retryOfIndex: 2 }),
      exec({ title: 'bad', status: 'skip', retryOfIndex: 99 }),
      exec({ title: 'neg', status: 'fail', retryOfIndex: -1 }),
    ];
    expect(countFinalStatuses(list)).toEqual(counts(4, 1, 1, 1, 1));
  });
});

describe('buildRun', () => {
  const args = (b: IngestBatch) => ({ projectId: 'proj-1', receiptId: 'rcpt-1', source: 'native' as const, batch: b, receivedAt: T0 + 60_000 });

  it('counts tests and takes the run fields from the batch', () => {
    const b = batch(
      [
        exec({ title: 'a', status: 'pass' }),
        exec({ title: 'b', status: 'fail' }),
        exec({ title: 'b', status: 'pass', attempt: 2, retryOfIndex: 1 }),
        exec({ title: 'c', status: 'skip' }),
        exec({ title: 'd', status: 'fail' }),
      ],
      { status: 'failed', finishedAt: T0 + 5_000, traceId: 'trace-1' },
    );
    const run = buildRun(args(b));
    expect(run.counts).toEqual(counts(4, 1, 1, 1, 1));
    expect(run).toMatchObject({
      projectId: 'proj-1',
      receiptId: 'rcpt-1',
      idempotencyKey: 'idem-key-0001',
      source: 'native',
      status: 'failed',
      startedAt: T0,
      finishedAt: T0 + 5_000,
      durationMs: 5_000,
      traceId: 'trace-1',
      receivedAt: T0 + 60_000,
    });
  });

  it('derives finishedAt/durationMs from the executions when finishedAt is missing', () => {
    const b = batch([
      exec({ title: 'a', startedAt: T0 + 100, durationMs: 400 }),
      exec({ title: 'b', startedAt: T0 + 1_000, durationMs: 2_500 }),
      exec({ title: 'c', startedAt: T0 + 2_000, durationMs: 10 }),
    ]);
    const run = buildRun(args(b));
    expect(run.finishedAt).toBe(T0 + 3_500);
    expect(run.durationMs).toBe(3_500);
    expect(run.traceId).toBe('');
  });

  it('has no finish and zero duration for an unfinished run without executions', () => {
    const run = buildRun(args(batch([], { status: 'running' })));
    expect(run.finishedAt).toBeNull();
    expect(run.durationMs).toBe(0);
    expect(run.counts).toEqual(counts(0, 0, 0, 0, 0));
  });

  it('never reports a negative duration', () => {
    const run = buildRun(args(batch([exec()], { finishedAt: T0 - 1_000 })));
    expect(run.durationMs).toBe(0);
  });

  it('has a deterministic id derived from project and receipt', () => {
    const b = batch([exec()]);
    const run = buildRun(args(b));
    expect(run.id).toMatch(UUID_RE);
    expect(run.id).toBe(runIdFor('proj-1', 'rcpt-1'));
    expect(buildRun(args(b))).toEqual(run);
    expect(buildRun({ ...args(b), receiptId: 'rcpt-2' }).id).not.toBe(run.id);
    expect(buildRun({ ...args(b), projectId: 'proj-2' }).id).not.toBe(run.id);
  });
});

describe('buildExecutions', () => {
  const make = (projectId: string, receiptId: string, b: IngestBatch) => {
    const run = buildRun({ projectId, receiptId, source: 'native', batch: b, receivedAt: T0 });
    return { run, executions: buildExecutions(run, b) };
  };

  it('gives each execution a deterministic id and links it to the run', () => {
    const b = batch([exec({ title: 'a' }), exec({ title: 'b' })]);
    const { run, executions } = make('proj-1', 'rcpt-1', b);
    expect(executions.map((e) => e.id)).toEqual([executionIdFor('rcpt-1', 0), executionIdFor('rcpt-1', 1)]);
    expect(new Set(executions.map((e) => e.id)).size).toBe(2);
    for (const e of executions) {
      expect(e.id).toMatch(UUID_RE);
      expect(e.runId).toBe(run.id);
      expect(e.projectId).toBe('proj-1');
    }
    expect(executions[0]!.input).toBe(b.executions[0]);
    expect(make('proj-1', 'rcpt-1', b).executions).toEqual(executions);
    expect(make('proj-1', 'rcpt-2', b).executions[0]!.id).not.toBe(executions[0]!.id);
  });

  it("maps retryOfIndex to the earlier execution's id", () => {
    const b = batch([
      exec({ status: 'fail' }),
      exec({ status: 'fail', attempt: 2, retryOfIndex: 0 }),
      exec({ status: 'pass', attempt: 3, retryOfIndex: 1 }),
      exec({ title: 'self', retryOfIndex: 3 }),
      exec({ title: 'bad', retryOfIndex: 42 }),
    ]);
    const { executions } = make('proj-1', 'rcpt-1', b);
    expect(executions.map((e) => e.retryOf)).toEqual([null, executions[0]!.id, executions[1]!.id, null, null]);
  });

  it('resolves through a shared cache as without one: per project, past the bound it keeps', () => {
    const cache = new IdentityCache(3);
    const inputs = ['a', 'b', 'c', 'd', 'e'].map((title) => exec({ title }));
    for (const round of [1, 2]) {
      for (const projectId of ['proj-1', 'proj-2']) {
        for (const input of inputs) {
          const fp = fingerprint(input);
          expect(cache.resolve(projectId, input), `round ${round}`).toEqual({ fingerprint: fp, testId: testIdentityId(projectId, fp) });
        }
      }
    }
    expect(cache.resolve('proj-1', exec({ title: 'a', filePath: '.\\SRC\\a.test.ts' })).testId).toBe(cache.resolve('proj-1', exec({ title: 'a', filePath: 'src/a.test.ts' })).testId);
  });

  it('gives the same test the same test id and fingerprint across runs', () => {
    const first = make('proj-1', 'rcpt-1', batch([exec({ filePath: 'src/a.test.ts' }), exec({ title: 'other' })]));
    const second = make('proj-1', 'rcpt-2', batch([exec({ title: 'other' }), exec({ filePath: '.\\src\\A.test.ts' })]));
    expect(second.executions[1]!.testId).toBe(first.executions[0]!.testId);
    expect(second.executions[1]!.fingerprint).toBe(first.executions[0]!.fingerprint);
    expect(second.executions[0]!.testId).toBe(first.executions[1]!.testId);
    expect(first.executions[0]!.testId).not.toBe(first.executions[1]!.testId);
    expect(first.executions[0]!.testId).toBe(testIdentityId('proj-1', fingerprint(exec())));
    // Another project: another identity for the same test.
    const other = make('proj-2', 'rcpt-1', batch([exec()]));
    expect(other.executions[0]!.testId).not.toBe(first.executions[0]!.testId);
  });
});

describe('normalizeExecution', () => {
  it('trims names and normalizes the path, in place (the worker owns the decoded batch)', () => {
    const input = exec({ filePath: '  .\\src\\A.test.ts ', suite: '  Suite ', title: '\tTitle  ' });
    const out = normalizeExecution(input);
    expect(out).toBe(input);
    expect(out.filePath).toBe('src/A.test.ts');
    expect(out.suite).toBe('Suite');
    expect(out.title).toBe('Title');
  });

  it('rounds durations, clamps negatives and attempts below 1', () => {
    const out = normalizeExecution(exec({ durationMs: -5, attempt: 0 }));
    expect(out.durationMs).toBe(0);
    expect(out.attempt).toBe(1);
    const out2 = normalizeExecution(exec({ durationMs: 12.6, attempt: 2.9 }));
    expect(out2.durationMs).toBe(13);
    expect(out2.attempt).toBe(2);
  });

  it('caps title, error message and stack length', () => {
    const out = normalizeExecution(
      exec({ title: 't'.repeat(5_000), status: 'fail', error: { type: 'AssertionError', message: 'm'.repeat(10_000), stack: 's'.repeat(50_000) } }),
    );
    expect(out.title).toHaveLength(2_000);
    expect(out.error?.message).toHaveLength(4_000);
    expect(out.error?.stack).toHaveLength(32_000);
    expect(out.error?.type).toBe('AssertionError');
  });

  it('keeps short messages and does not invent a stack', () => {
    const out = normalizeExecution(exec({ status: 'fail', error: { message: 'expected 1 to be 2' } }));
    expect(out.error).toEqual({ message: 'expected 1 to be 2' });
    expect(normalizeExecution(exec()).error).toBeUndefined();
  });
});

describe('mergeRunPart (OTLP runs assembled from the parts of a trace)', () => {
  const TRACE_ID = '5b8efff798038103d269b633813fc60c';
  /** One part as the worker builds it (buildRun over an OTLP batch). */
  const part = (executions: ExecutionInput[], run: Partial<IngestBatch['run']>, receivedAt: number, receiptId = `rcpt-${receivedAt}`): RunRecord =>
    buildRun({
      projectId: 'proj-1',
      receiptId,
      source: 'otlp',
      batch: { ...batch(executions, { traceId: TRACE_ID, hasRunSpan: false, statusExplicit: false, ...run }), idempotencyKey: `${TRACE_ID}:${receiptId}` },
      receivedAt,
    });
  const caseOnly = (title: string, status: TestStatus, startedAt: number, durationMs: number, receivedAt: number) =>
    part([exec({ title, status, startedAt, durationMs })], { status: status === 'fail' ? 'failed' : 'passed', startedAt }, receivedAt);
  const runSpanPart = (startedAt: number, finishedAt: number, receivedAt: number, status?: IngestBatch['run']['status']) =>
    part([], { status: status ?? 'passed', startedAt, finishedAt, hasRunSpan: true, statusExplicit: status !== undefined }, receivedAt);
  const R = T0 + 3_600_000;

  it('puts every part of a trace in the same run', () => {
    const a = caseOnly('a', 'pass', T0, 10, R);
    const b = runSpanPart(T0, T0 + 100, R + 1);
    expect(a.id).toBe(traceRunIdFor('proj-1', TRACE_ID));
    expect(b.id).toBe(a.id);
    expect(a.receiptId).not.toBe(b.receiptId);
  });

  it('takes the first part as it is, with the given counts and a status derived from them', () => {
    const p = caseOnly('a', 'pass', T0 + 100, 50, R);
    const merged = mergeRunPart(null, p, counts(2, 1, 1, 0, 0));
    expect(merged).toEqual({ ...p, counts: counts(2, 1, 1, 0, 0), status: 'failed' });
    expect(merged).toMatchObject({ startedAt: T0 + 100, finishedAt: T0 + 150, durationMs: 50, hasRunSpan: false, statusExplicit: false, version: R });
    expect(mergeRunPart(null, p, counts(1, 1, 0, 0, 0)).status).toBe('passed');
    // A flaky test is no failure.
    expect(mergeRunPart(null, p, counts(2, 1, 0, 0, 1)).status).toBe('passed');
    // An explicit status is kept.
    const explicit = runSpanPart(T0, T0 + 500, R, 'canceled');
    expect(mergeRunPart(null, explicit, counts(1, 0, 1, 0, 0))).toMatchObject({ status: 'canceled', statusExplicit: true, hasRunSpan: true, counts: counts(1, 0, 1, 0, 0) });
  });

  it('spans the cases of case-only parts (min start, max end) and derives the status from the counts', () => {
    const first = mergeRunPart(null, caseOnly('a', 'pass', T0 + 1_000, 200, R), counts(1, 1, 0, 0, 0));
    const second = mergeRunPart(first, caseOnly('b', 'fail', T0 + 500, 100, R + 1), counts(2, 1, 1, 0, 0));
    expect(second).toMatchObject({
      startedAt: T0 + 500,
      finishedAt: T0 + 1_200,
      durationMs: 700,
      status: 'failed',
      counts: counts(2, 1, 1, 0, 0),
      hasRunSpan: false,
      statusExplicit: false,
    });
    const third = mergeRunPart(second, caseOnly('c', 'pass', T0 + 2_000, 300, R + 2), counts(3, 2, 1, 0, 0));
    expect(third).toMatchObject({ startedAt: T0 + 500, finishedAt: T0 + 2_300, durationMs: 1_800, status: 'failed' });
    // The failure turned flaky once its retry arrived: the counts decide, not the part's own status.
    const fourth = mergeRunPart(third, caseOnly('b', 'fail', T0 + 2_500, 100, R + 3), counts(3, 2, 0, 0, 1));
    expect(fourth.status).toBe('passed');
    expect(fourth.finishedAt).toBe(T0 + 2_600);
  });

  it('lets the run span decide start and end, whenever it arrives', () => {
    // Run span last (SimpleSpanProcessor): it overrides what the cases implied.
    const cases = mergeRunPart(null, caseOnly('a', 'fail', T0 + 10, 20, R), counts(1, 0, 1, 0, 0));
    const withRun = mergeRunPart(cases, runSpanPart(T0, T0 + 1_000, R + 1), counts(1, 0, 1, 0, 0));
    expect(withRun).toMatchObject({ startedAt: T0, finishedAt: T0 + 1_000, durationMs: 1_000, hasRunSpan: true, status: 'failed', statusExplicit: false });
    // Run span first: later case-only parts (even outside its span) move neither start nor end.
    const runFirst = mergeRunPart(null, runSpanPart(T0 + 100, T0 + 900, R), counts(0, 0, 0, 0, 0));
    expect(runFirst).toMatchObject({ startedAt: T0 + 100, finishedAt: T0 + 900, status: 'passed', hasRunSpan: true });
    const early = mergeRunPart(runFirst, caseOnly('a', 'pass', T0, 50, R + 1), counts(1, 1, 0, 0, 0));
    const late = mergeRunPart(early, caseOnly('b', 'fail', T0 + 950, 100, R + 2), counts(2, 1, 1, 0, 0));
    expect(late).toMatchObject({ startedAt: T0 + 100, finishedAt: T0 + 900, durationMs: 800, status: 'failed', hasRunSpan: true, counts: counts(2, 1, 1, 0, 0) });
    // A run span that has not ended yet (no finish) keeps the end known so far.
    const unfinished = part([], { status: 'passed', startedAt: T0 + 5, hasRunSpan: true }, R + 3);
    expect(unfinished.finishedAt).toBeNull();
    expect(mergeRunPart(cases, unfinished, counts(1, 0, 1, 0, 0))).toMatchObject({ startedAt: T0 + 5, finishedAt: T0 + 30 });
  });

  it('prefers an explicit status over the derived one, and keeps it when later parts have none', () => {
    const cases = mergeRunPart(null, caseOnly('a', 'fail', T0 + 10, 20, R), counts(1, 0, 1, 0, 0));
    expect(cases.status).toBe('failed');
    const canceled = mergeRunPart(cases, runSpanPart(T0, T0 + 100, R + 1, 'canceled'), counts(1, 0, 1, 0, 0));
    expect(canceled).toMatchObject({ status: 'canceled', statusExplicit: true });
    const later = mergeRunPart(canceled, caseOnly('b', 'pass', T0 + 50, 10, R + 2), counts(2, 1, 1, 0, 0));
    expect(later).toMatchObject({ status: 'canceled', statusExplicit: true, hasRunSpan: true, counts: counts(2, 1, 1, 0, 0) });
    // An explicit 'passed' beats failed tests too.
    const passed = mergeRunPart(cases, runSpanPart(T0, T0 + 100, R + 1, 'passed'), counts(1, 0, 1, 0, 0));
    expect(passed.status).toBe('passed');
  });

  it('gives every merged row a strictly higher version', () => {
    const first = mergeRunPart(null, caseOnly('a', 'pass', T0, 10, R), counts(1, 1, 0, 0, 0));
    const second = mergeRunPart(first, caseOnly('b', 'pass', T0, 10, R + 5_000), counts(2, 2, 0, 0, 0));
    expect(second.version).toBeGreaterThan(first.version);
    // Even when the next part was received earlier (or two parts share a millisecond).
    const third = mergeRunPart(second, caseOnly('c', 'pass', T0, 10, R), counts(3, 3, 0, 0, 0));
    expect(third.version).toBeGreaterThan(second.version);
    const fourth = mergeRunPart(third, caseOnly('d', 'pass', T0, 10, third.version), counts(4, 4, 0, 0, 0));
    expect(fourth.version).toBeGreaterThan(third.version);
  });

  it('gives the same times and status when a part is merged twice (redelivery)', () => {
    const cases = mergeRunPart(null, caseOnly('a', 'fail', T0 + 10, 20, R), counts(1, 0, 1, 0, 0));
    for (const p of [caseOnly('b', 'pass', T0 + 40, 30, R + 1), runSpanPart(T0, T0 + 500, R + 1), runSpanPart(T0, T0 + 500, R + 1, 'canceled')]) {
      const c = counts(2, 1, 1, 0, 0);
      const once = mergeRunPart(cases, p, c);
      // The redelivered part finds the row it wrote itself; counts come from the same stored executions.
      const twice = mergeRunPart(once, p, c);
      const view = (r: RunRecord) => [r.startedAt, r.finishedAt, r.durationMs, r.status, r.counts, r.hasRunSpan, r.statusExplicit, r.id, r.receiptId];
      expect(view(twice)).toEqual(view(once));
      expect(twice.version).toBeGreaterThan(once.version);
    }
  });

  it('keeps the run span part\'s commit and branch when a later part only has placeholders', () => {
    const withContext = { ...runSpanPart(T0, T0 + 100, R), resource: { ...runSpanPart(T0, T0 + 100, R).resource, commitSha: 'abc1234', branch: 'feature/x', prNumber: 7 } };
    const first = mergeRunPart(null, withContext, counts(0, 0, 0, 0, 0));
    const later = { ...caseOnly('a', 'pass', T0 + 10, 5, R + 1) };
    later.resource = { ...later.resource, commitSha: '0000000', branch: 'local', prNumber: undefined };
    const merged = mergeRunPart(first, later, counts(1, 1, 0, 0, 0));
    expect(merged.resource).toMatchObject({ commitSha: 'abc1234', branch: 'feature/x', prNumber: 7 });
    // And the other way round: a placeholder part first, the run span's context later, wins.
    const placeholderFirst = mergeRunPart(null, later, counts(1, 1, 0, 0, 0));
    expect(mergeRunPart(placeholderFirst, withContext, counts(1, 1, 0, 0, 0)).resource).toMatchObject({ commitSha: 'abc1234', branch: 'feature/x' });
  });

  it('keeps a merge base that only some parts carry, whichever part brings it', () => {
    const MERGE_BASE = '9f3c1ab2d4e5f60718293a4b5c6d7e8f90a1b2c3';
    const withBase = caseOnly('a', 'pass', T0 + 10, 5, R);
    withBase.resource = { ...withBase.resource, baseBranch: 'main', mergeBase: MERGE_BASE };
    const bare = runSpanPart(T0, T0 + 100, R + 1);
    // As a stored run reads back (RunRepo.runState): an unknown merge base is an explicit undefined.
    bare.resource = { ...bare.resource, mergeBase: undefined };
    // The run span's part wins per key, but one it lacks is not erased ...
    expect(mergeRunPart(mergeRunPart(null, withBase, counts(1, 1, 0, 0, 0)), bare, counts(1, 1, 0, 0, 0)).resource.mergeBase).toBe(MERGE_BASE);
    // ... and a later part without it leaves it too.
    expect(mergeRunPart(mergeRunPart(null, bare, counts(0, 0, 0, 0, 0)), withBase, counts(1, 1, 0, 0, 0)).resource.mergeBase).toBe(MERGE_BASE);
  });
});
