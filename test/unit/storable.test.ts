// sanitizeBatch: what the store can take, checked on the canonical batch (client/src/contract/storable.ts).
import { describe, expect, it } from 'vitest';
import type { ExecutionInput, IngestBatch } from '../../client/src/contract/batch.js';
import { STORABLE, UnstorableError, isStorableTime, sanitizeBatch, wellFormed } from '../../client/src/contract/storable.js';

const T = Date.UTC(2026, 10, 20, 10);

function exec(over: Partial<ExecutionInput> = {}): ExecutionInput {
  return { filePath: 'src/a.test.ts', suite: 'S', title: 't', status: 'pass', attempt: 1, startedAt: T, durationMs: 5, ...over };
}

function batch(over: { resource?: Partial<IngestBatch['resource']>; run?: Partial<IngestBatch['run']>; executions?: ExecutionInput[] } = {}): IngestBatch {
  return {
    contractVersion: '0.1.0',
    idempotencyKey: 'key-12345678',
    resource: { ciProvider: 'github_actions', commitSha: 'abcdef1', branch: 'main', trigger: 'push', ...over.resource },
    run: { status: 'passed', startedAt: T, ...over.run },
    executions: over.executions ?? [exec()],
  };
}

function refusal(b: IngestBatch): UnstorableError {
  try {
    sanitizeBatch(b);
  } catch (err) {
    if (err instanceof UnstorableError) return err;
    throw err;
  }
  throw new Error('expected an UnstorableError');
}

function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

describe('sanitizeBatch', () => {
  it('leaves a valid batch as it was', () => {
    const b = batch({
      resource: { prNumber: 7, shardIndex: 1, shardTotal: 2, repository: 'o/r' },
      executions: [exec({ params: { a: [1, { b: 'x' }] }, attributes: { k: 'v', n: 1 }, spans: [{ spanId: 's', name: 'n', kind: 'step', status: 'ok', startedAt: T, durationMs: 1 }] })],
    });
    const before = structuredClone(b);
    sanitizeBatch(b);
    expect(b).toEqual(before);
  });

  it('replaces lone surrogates with U+FFFD in every string, free-form keys included, and keeps pairs', () => {
    const b = batch({
      resource: { branch: 'feat/\ud800', ciJobUrl: 'http://x/\udc00' },
      run: { traceId: 'x\ud800' },
      executions: [
        exec({
          title: 'a \ud800 b 😀',
          suite: '\udfff',
          filePath: 'f\ud83d.ts',
          error: { message: 'm\ud800', type: 't\udc00', stack: 's\ud800' },
          params: { 'k\ud800': ['v\udc00', { 'n\udfff': 'w\ud800' }] },
          attributes: { 'a\ud800': 'b\udc00' },
          artifacts: [{ name: 'n\ud800', contentType: 'text/plain', path: 'p\ud800' }],
          spans: [{ spanId: 's\ud800', name: 'n\udc00', kind: 'step', status: 'ok', startedAt: T, durationMs: 1, attributes: { 'x\ud800': 'y' }, error: { message: 'e\ud800' } }],
        }),
      ],
    });
    sanitizeBatch(b);
    const e = b.executions[0]!;
    expect(b.resource.branch).toBe('feat/\ufffd');
    expect(b.resource.ciJobUrl).toBe('http://x/\ufffd');
    expect(b.run.traceId).toBe('x\ufffd');
    expect(e.title).toBe('a \ufffd b 😀');
    expect([e.suite, e.filePath]).toEqual(['\ufffd', 'f\ufffd.ts']);
    expect(e.error).toEqual({ message: 'm\ufffd', type: 't\ufffd', stack: 's\ufffd' });
    expect(e.params).toEqual({ 'k\ufffd': ['v\ufffd', { 'n\ufffd': 'w\ufffd' }] });
    expect(e.attributes).toEqual({ 'a\ufffd': 'b\ufffd' });
    expect(e.artifacts![0]).toMatchObject({ name: 'n\ufffd', path: 'p\ufffd' });
    expect(e.spans![0]).toMatchObject({ spanId: 's\ufffd', name: 'n\ufffd', attributes: { 'x\ufffd': 'y' }, error: { message: 'e\ufffd' } });
    // Every string is now well-formed: JSON of the batch has no lone-surrogate escape left.
    expect(JSON.stringify(b)).not.toMatch(/\\ud[89a-f][0-9a-f]{2}/i);
  });

  it('keeps a "__proto__" key a plain key when it rebuilds an object', () => {
    const params = JSON.parse('{"__proto__": {"polluted": 1}, "k\\ud800": 2}') as Record<string, unknown>;
    const b = batch({ executions: [exec({ params })] });
    sanitizeBatch(b);
    const out = b.executions[0]!.params!;
    expect(Object.keys(out)).toEqual(['__proto__', 'k\ufffd']);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a lone surrogate in the idempotency key (replacing it could merge two keys)', () => {
    const b = batch();
    b.idempotencyKey = 'key-\ud800-1234';
    const err = refusal(b);
    expect(err.path).toBe('idempotencyKey');
    expect(err.reason).toMatch(/surrogate/);
  });

  it.each([
    ['run.startedAt', batch({ run: { startedAt: 1e300 } })],
    ['run.startedAt', batch({ run: { startedAt: 1e23 } })],
    ['run.startedAt', batch({ run: { startedAt: -1 } })],
    ['run.startedAt', batch({ run: { startedAt: Number.NaN } })],
    ['run.finishedAt', batch({ run: { finishedAt: Date.UTC(2100, 0, 1) } })],
    ['executions.1.startedAt', batch({ executions: [exec(), exec({ startedAt: 8.64e15 })] })],
    ['executions.0.spans.0.startedAt', batch({ executions: [exec({ spans: [{ spanId: 's', name: 'n', kind: 'step', status: 'ok', startedAt: 1e20, durationMs: 1 }] })] })],
  ])('refuses a time outside 1970..2099: %s', (path, b) => {
    const err = refusal(b);
    expect(err.path).toBe(path);
    expect(err.reason).toMatch(/1970-01-01.*2099-12-31/);
  });

  it.each([
    ['resource.prNumber', batch({ resource: { prNumber: 1e15 } })],
    ['resource.prNumber', batch({ resource: { prNumber: 2 ** 32 } })],
    ['resource.prNumber', batch({ resource: { prNumber: 1.5 } })],
    ['resource.shardIndex', batch({ resource: { shardIndex: 5e15 } })],
    ['resource.shardTotal', batch({ resource: { shardTotal: 65_536 } })],
    ['executions.0.attempt', batch({ executions: [exec({ attempt: 65_536 })] })],
    ['executions.0.attempt', batch({ executions: [exec({ attempt: -1 })] })],
    ['executions.0.durationMs', batch({ executions: [exec({ durationMs: 2 ** 32 })] })],
    ['executions.0.durationMs', batch({ executions: [exec({ durationMs: 1e300 })] })],
    ['executions.0.durationMs', batch({ executions: [exec({ durationMs: 2.5 })] })],
    ['executions.0.spans.0.durationMs', batch({ executions: [exec({ spans: [{ spanId: 's', name: 'n', kind: 'step', status: 'ok', startedAt: T, durationMs: 1e300 }] })] })],
    ['executions.0.artifacts.0.sizeBytes', batch({ executions: [exec({ artifacts: [{ name: 'n', contentType: 'c', path: 'p', sizeBytes: 1e300 }] })] })],
  ])('refuses an integer its column cannot hold: %s', (path, b) => {
    const err = refusal(b);
    expect(err.path).toBe(path);
    expect(err.reason).toMatch(/integer from 0 to/);
  });

  it('accepts the edges of every range', () => {
    const b = batch({
      resource: { prNumber: STORABLE.maxUInt32, shardIndex: STORABLE.maxUInt16, shardTotal: STORABLE.maxUInt16 },
      run: { startedAt: 0, finishedAt: STORABLE.maxTimeMs },
      executions: [exec({ attempt: STORABLE.maxUInt16, durationMs: STORABLE.maxUInt32, startedAt: STORABLE.maxTimeMs })],
    });
    expect(() => sanitizeBatch(b)).not.toThrow();
    expect(isStorableTime(Date.parse('2099-12-31T23:59:59.999Z'))).toBe(true);
    expect(isStorableTime(Date.parse('2100-01-01T00:00:00.000Z'))).toBe(false);
  });

  it('refuses free-form JSON nested deeper than the limit, without overflowing the stack', () => {
    expect(() => sanitizeBatch(batch({ executions: [exec({ params: nested(STORABLE.maxJsonDepth) })] }))).not.toThrow();
    const deep = refusal(batch({ executions: [exec({ params: nested(STORABLE.maxJsonDepth + 1) })] }));
    expect(deep.path).toBe('executions.0.params');
    expect(deep.reason).toMatch(/nested too deeply/);
    // Far deeper than the stack would allow a naive recursive walk.
    expect(refusal(batch({ executions: [exec(), exec({ params: nested(100_000) })] })).path).toBe('executions.1.params');
    const arrays = JSON.parse(`${'['.repeat(40)}1${']'.repeat(40)}`) as unknown;
    expect(refusal(batch({ executions: [exec({ attributes: { k: arrays } as never })] })).path).toBe('executions.0.attributes');
    const spanAttrs = { spanId: 's', name: 'n', kind: 'step', status: 'ok', startedAt: T, durationMs: 1, attributes: { k: nested(40) as never } } as const;
    expect(refusal(batch({ executions: [exec({ spans: [spanAttrs] })] })).path).toBe('executions.0.spans.0.attributes');
  });

  it('refuses values of the wrong type (a job decoded from an older queue format)', () => {
    expect(refusal(batch({ executions: [exec({ title: 5 as never })] })).path).toBe('executions.0.title');
    expect(refusal(batch({ resource: { branch: undefined as never } })).path).toBe('resource.branch');
    expect(refusal(batch({ run: { startedAt: '2026-01-01' as never } })).path).toBe('run.startedAt');
  });

  it('wellFormed returns the same string when there is nothing to replace', () => {
    const s = 'plain ascii and é and 😀';
    expect(wellFormed(s)).toBe(s);
    expect(wellFormed('\ud800\ud800')).toBe('\ufffd\ufffd');
  });
});
