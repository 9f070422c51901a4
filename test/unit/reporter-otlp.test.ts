// The reporter's OTLP encoding round-trips through the server's own OTLP decoder and mapper:
// what the reporter means is what the server stores.
import { describe, expect, it } from 'vitest';
import type { ExecutionInput, IngestBatch } from '../../client/src/contract/batch.js';
import { decodeOtlpProtobuf } from '../../src/receivers/otlp/decode.js';
import { mapOtlpToBatches } from '../../src/receivers/otlp/map.js';
import { encodeOtlpRun } from '../../client/src/contract/otlp-encode.js';

const T0 = Date.parse('2026-11-21T10:00:00Z');
const TRACE = '5b8efff798038103d269b633813fc60c';

function batchOf(executions: ExecutionInput[], extra: Partial<IngestBatch> = {}): IngestBatch {
  return {
    contractVersion: '0.1.0',
    idempotencyKey: 'ci-run-4711-shard2',
    resource: {
      ciProvider: 'github_actions',
      commitSha: '3f2c1ab9d8',
      branch: 'feature/cart',
      baseBranch: 'main',
      mergeBase: '9f3c1ab2d4e5f60718293a4b5c6d7e8f90a1b2c3',
      prNumber: 42,
      trigger: 'pull_request',
      ciRunId: '9876',
      ciJobUrl: 'https://github.com/acme/shop/actions/runs/9876',
      repository: 'acme/shop',
      shardIndex: 2,
      shardTotal: 4,
    },
    run: { status: 'failed', startedAt: T0, finishedAt: T0 + 5000, traceId: TRACE },
    executions,
    ...extra,
  };
}

function roundTrip(batch: IngestBatch): IngestBatch[] {
  return encodeOtlpRun(batch).flatMap((bytes) => mapOtlpToBatches(decodeOtlpProtobuf(bytes), { now: 0 }).batches);
}

describe('encodeOtlpRun', () => {
  it('one trace with the run span and a case span per execution; every field the server reads survives', () => {
    const executions: ExecutionInput[] = [
      { filePath: 'src/cart.test.ts', suite: 'cart', title: 'adds an item', status: 'pass', attempt: 1, startedAt: T0 + 10, durationMs: 12 },
      {
        filePath: 'src/cart.test.ts',
        suite: 'cart',
        title: 'applies a coupon',
        status: 'fail',
        attempt: 1,
        startedAt: T0 + 30,
        durationMs: 40,
        error: { type: 'AssertionError', message: 'expected 90 to be 80', stack: 'AssertionError: expected 90 to be 80\n    at cart.test.ts:12' },
        params: { currency: 'EUR' },
        attributes: { 'test.browser': 'chromium', retries: 1 },
      },
      { filePath: 'src/cart.test.ts', suite: 'cart', title: 'applies a coupon', status: 'pass', attempt: 2, retryOfIndex: 1, startedAt: T0 + 80, durationMs: 38, params: { currency: 'EUR' } },
      { filePath: 'src/pay.test.ts', suite: '', title: 'skips', status: 'skip', attempt: 1, startedAt: T0 + 200, durationMs: 0 },
      {
        filePath: 'src/pay.test.ts',
        suite: 'pay',
        title: 'with steps',
        status: 'fail',
        attempt: 1,
        startedAt: T0 + 300,
        durationMs: 100,
        error: { message: 'boom' },
        spans: [
          { spanId: 'step-1', name: 'test.step', kind: 'step', status: 'ok', startedAt: T0 + 301, durationMs: 20 },
          { spanId: 'http-1', parentSpanId: 'step-1', name: 'GET /api', kind: 'http', status: 'error', startedAt: T0 + 305, durationMs: 5, attributes: { 'http.request.method': 'GET' }, error: { message: '500' } },
        ],
      },
    ];
    const [out, ...more] = roundTrip(batchOf(executions));
    expect(more).toEqual([]);
    expect(out!.idempotencyKey.startsWith('ci-run-4711-shard2:')).toBe(true);
    expect(out!.resource).toEqual(batchOf([]).resource);
    expect(out!.run).toMatchObject({ status: 'failed', startedAt: T0, finishedAt: T0 + 5000, traceId: TRACE, hasRunSpan: true });
    const got = out!.executions.map(({ traceId: _t, spanId: _s, spans, ...rest }) => ({ ...rest, spans: spans?.map(({ spanId: _i, parentSpanId, ...s }) => ({ ...s, nested: parentSpanId !== undefined })) }));
    expect(got).toEqual([
      { ...executions[0], spans: undefined },
      { ...executions[1], spans: undefined },
      { ...executions[2], spans: undefined },
      { ...executions[3], spans: undefined },
      {
        ...executions[4],
        spans: [
          { name: 'test.step', kind: 'step', status: 'ok', startedAt: T0 + 301, durationMs: 20, nested: true },
          { name: 'GET /api', kind: 'http', status: 'error', startedAt: T0 + 305, durationMs: 5, attributes: { 'http.request.method': 'GET' }, error: { message: '500' }, nested: true },
        ],
      },
    ]);
    // The HTTP span hangs under the step, not under the case.
    const spans = out!.executions[4]!.spans!;
    expect(spans[1]!.parentSpanId).toBe(spans[0]!.spanId);
  });

  it('splits a large run into parts of one trace, never between an attempt and its retry', () => {
    const executions: ExecutionInput[] = [];
    for (let i = 0; i < 4500; i++) {
      executions.push({ filePath: `src/m${i % 50}.test.ts`, suite: 's', title: `t${i}`, status: i % 3 === 1 ? 'fail' : 'pass', attempt: 1, startedAt: T0 + i, durationMs: 1 });
      if (i % 3 === 1) executions.push({ filePath: `src/m${i % 50}.test.ts`, suite: 's', title: `t${i}`, status: 'pass', attempt: 2, retryOfIndex: executions.length - 1, startedAt: T0 + i, durationMs: 1 });
    }
    const parts = roundTrip(batchOf(executions, { run: { status: 'passed', startedAt: T0, traceId: TRACE } }));
    expect(parts.length).toBe(Math.ceil(executions.length / 2000));
    expect(new Set(parts.map((p) => p.run.traceId))).toEqual(new Set([TRACE]));
    expect(new Set(parts.map((p) => p.idempotencyKey)).size).toBe(parts.length);
    expect(parts.filter((p) => p.run.hasRunSpan).length).toBe(1);
    const all = parts.flatMap((p) => p.executions);
    expect(all.length).toBe(executions.length);
    const retries = parts.flatMap((p) => p.executions.filter((e) => e.attempt === 2).map((e) => p.executions[e.retryOfIndex!]!.title === e.title));
    expect(retries.length).toBe(1500);
    expect(retries.every(Boolean)).toBe(true);
  });

  it('gives every span of the trace (run, cases, child spans, across parts) a distinct valid id, new for each encoding', () => {
    const executions: ExecutionInput[] = [];
    for (let i = 0; i < 2500; i++) {
      executions.push({
        filePath: 'src/a.test.ts',
        suite: 's',
        title: `t${i}`,
        status: 'pass',
        attempt: 1,
        startedAt: T0 + i,
        durationMs: 1,
        spans: i % 100 === 0 ? [{ spanId: 'step', name: 'test.step', kind: 'step', status: 'ok', startedAt: T0 + i, durationMs: 1 }] : undefined,
      });
    }
    const batch = batchOf(executions, { run: { status: 'passed', startedAt: T0, traceId: TRACE } });
    const idsOf = (parts: Uint8Array[]): string[] => parts.flatMap((bytes) => decodeOtlpProtobuf(bytes).resourceSpans.flatMap((r) => r.spans.map((s) => s.spanId)));
    const first = idsOf(encodeOtlpRun(batch));
    expect(first.length).toBe(1 + 2500 + 25);
    expect(new Set(first).size).toBe(first.length);
    for (const id of first) {
      expect(id).toMatch(/^[0-9a-f]{16}$/);
      expect(id).not.toBe('0000000000000000');
    }
    const second = new Set(idsOf(encodeOtlpRun(batch)));
    expect(first.filter((id) => second.has(id))).toEqual([]);
  });
});
