import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes as OtelAttributes, Span, Tracer } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { OtlpDecodeError, decodeOtlpJson, decodeOtlpProtobuf } from '../../src/receivers/otlp/decode.js';
import { mapOtlpToBatches } from '../../src/receivers/otlp/map.js';
import type { IngestBatch } from '../../client/src/contract/batch.js';

const T = 1_700_000_000_000;
const NOW = 1_800_000_000_000;

// --- helpers ------------------------------------------------------------------------------------

function sdk(resource: OtelAttributes): { tracer: Tracer; exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(resource),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  return { tracer: provider.getTracer('otlp-test'), exporter };
}

function child(tracer: Tracer, parent: Span, name: string, start: number, attributes: OtelAttributes = {}): Span {
  return tracer.startSpan(name, { startTime: start, attributes }, trace.setSpan(ROOT_CONTEXT, parent));
}

function serialize(exporter: InMemorySpanExporter): { proto: Uint8Array; json: unknown } {
  const spans = exporter.getFinishedSpans();
  const proto = ProtobufTraceSerializer.serializeRequest(spans);
  const json = JsonTraceSerializer.serializeRequest(spans);
  if (!proto || !json) throw new Error('serializer returned nothing');
  return { proto, json: JSON.parse(new TextDecoder().decode(json)) };
}

type Json = string | number | boolean | Json[] | { [k: string]: Json };
function anyValue(v: Json): Record<string, unknown> {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(anyValue) } };
  return { kvlistValue: { values: attrs(v) } };
}
function attrs(o: Record<string, Json>): unknown[] {
  return Object.entries(o).map(([key, value]) => ({ key, value: anyValue(value) }));
}

const TRACE = '5b8efff798038103d269b633813fc60c';
function jsonSpan(spanId: string, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    traceId: TRACE,
    spanId,
    name,
    kind: 1,
    startTimeUnixNano: `${T}000000`,
    endTimeUnixNano: `${T + 100}000000`,
    ...extra,
  };
}
/** The part digest the mapper appends to a run key: 16 hex of sha256 over the sorted span ids. */
function partDigest(spanIds: string[]): string {
  return createHash('sha256').update([...spanIds].sort().join(',')).digest('hex').slice(0, 16);
}
function jsonRequest(resource: Record<string, Json>, spans: unknown[]): unknown {
  return { resourceSpans: [{ resource: { attributes: attrs(resource) }, scopeSpans: [{ spans }] }] };
}

// --- 1. real SDK → both exporter encodings --------------------------------------------------------

describe('OTLP from the OpenTelemetry JS SDK', () => {
  function buildTrace() {
    const { tracer, exporter } = sdk({
      'service.name': 'unit',
      'cicd.system.component': 'github',
      'cicd.pipeline.run.id': 987654,
      'service.trigger': 'pull_request',
      'test.shard.index': 1,
      'test.shard.total': 2,
    });
    const run = tracer.startSpan('test.run', {
      startTime: T,
      attributes: {
        'vcs.ref.head.revision': 'ABCDEF1234567890',
        'vcs.ref.head.name': 'refs/heads/feature/x',
        'vcs.ref.base.name': 'main',
        'vcs.change.id': '42',
        'vcs.repository.url.full': 'https://github.com/acme/widgets.git',
        'cicd.pipeline.run.url.full': 'https://github.com/acme/widgets/actions/runs/987654',
      },
    });
    // Not a test case: ignored by the mapper.
    child(tracer, run, 'setup', T + 1).end(T + 5);

    const a = child(tracer, run, 'test.case', T + 10, {
      'test.case.name': 'src/math.test.ts > math > adds',
      'test.suite': 'math',
      'code.file.path': 'src/math.test.ts',
      'test.params': '{"n":1}',
      'test.framework': 'vitest',
    });
    child(tracer, a, 'test.step', T + 20).end(T + 30);
    a.end(T + 110);

    const b = child(tracer, run, 'test.case', T + 200, {
      'test.case.name': 'math > divides',
      'test.suite': 'math',
      'code.file.path': 'src/math.test.ts',
    });
    const http = child(tracer, b, 'GET /api/divide', T + 210, { 'http.request.method': 'GET' });
    child(tracer, http, 'pw:api click', T + 220).end(T + 230);
    http.end(T + 250);
    b.recordException(
      {
        name: 'AssertionError',
        message: 'expected 1 to be 2',
        stack: 'AssertionError: expected 1 to be 2\n    at divides (src/math.test.ts:9:5)',
      },
      T + 290,
    );
    b.setStatus({ code: SpanStatusCode.ERROR, message: 'expected 1 to be 2' });
    b.end(T + 300);

    const c = child(tracer, run, 'test.case', T + 400, {
      'test.case.name': 'math > divides',
      'test.suite': 'math',
      'code.file.path': 'src/math.test.ts',
      'test.attempt': 2,
      'test.retry_of': b.spanContext().spanId,
    });
    c.end(T + 480);
    run.end(T + 1000);
    return { exporter, run, a, b, c, http };
  }

  it('decodes protobuf and JSON to the same expected batch', () => {
    const { exporter, run, a, b, c, http } = buildTrace();
    const traceId = run.spanContext().traceId;
    const id = (s: Span) => s.spanContext().spanId;
    const stepSpan = exporter.getFinishedSpans().find((s) => s.name === 'test.step')!;
    const pwSpan = exporter.getFinishedSpans().find((s) => s.name === 'pw:api click')!;

    const expected: IngestBatch = {
      contractVersion: '0.1.0',
      // One request (part) of the trace: the trace id plus a digest of the part's span ids.
      idempotencyKey: expect.stringMatching(new RegExp(`^${traceId}:[0-9a-f]{16}$`)) as string,
      resource: {
        ciProvider: 'github_actions',
        ciRunId: '987654',
        commitSha: 'abcdef1234567890',
        branch: 'feature/x',
        baseBranch: 'main',
        prNumber: 42,
        trigger: 'pull_request',
        shardIndex: 1,
        shardTotal: 2,
        repository: 'acme/widgets',
        ciJobUrl: 'https://github.com/acme/widgets/actions/runs/987654',
      },
      // The failed attempt was retried and passed, so the run passed.
      run: { status: 'passed', startedAt: T, finishedAt: T + 1000, traceId, hasRunSpan: true, statusExplicit: false },
      executions: [
        {
          filePath: 'src/math.test.ts',
          suite: 'math',
          title: 'adds',
          params: { n: 1 },
          status: 'pass',
          attempt: 1,
          startedAt: T + 10,
          durationMs: 100,
          attributes: { 'test.case.name': 'src/math.test.ts > math > adds', 'test.framework': 'vitest' },
          traceId,
          spanId: id(a),
          spans: [
            {
              spanId: stepSpan.spanContext().spanId,
              parentSpanId: id(a),
              name: 'test.step',
              kind: 'step',
              status: 'unset',
              startedAt: T + 20,
              durationMs: 10,
            },
          ],
        },
        {
          filePath: 'src/math.test.ts',
          suite: 'math',
          title: 'divides',
          status: 'fail',
          attempt: 1,
          startedAt: T + 200,
          durationMs: 100,
          error: {
            type: 'AssertionError',
            message: 'expected 1 to be 2',
            stack: 'AssertionError: expected 1 to be 2\n    at divides (src/math.test.ts:9:5)',
          },
          attributes: { 'test.case.name': 'math > divides' },
          traceId,
          spanId: id(b),
          spans: [
            {
              spanId: id(http),
              parentSpanId: id(b),
              name: 'GET /api/divide',
              kind: 'http',
              status: 'unset',
              startedAt: T + 210,
              durationMs: 40,
              attributes: { 'http.request.method': 'GET' },
            },
            {
              spanId: pwSpan.spanContext().spanId,
              parentSpanId: id(http),
              name: 'pw:api click',
              kind: 'browser',
              status: 'unset',
              startedAt: T + 220,
              durationMs: 10,
            },
          ],
        },
        {
          filePath: 'src/math.test.ts',
          suite: 'math',
          title: 'divides',
          status: 'pass',
          attempt: 2,
          retryOfIndex: 1,
          startedAt: T + 400,
          durationMs: 80,
          attributes: { 'test.case.name': 'math > divides' },
          traceId,
          spanId: id(c),
        },
      ],
    };

    const { proto, json } = serialize(exporter);
    const fromProto = mapOtlpToBatches(decodeOtlpProtobuf(proto), { now: NOW });
    const fromJson = mapOtlpToBatches(decodeOtlpJson(json), { now: NOW });
    expect(fromProto.batches).toStrictEqual([expected]);
    expect(fromJson.batches).toStrictEqual(fromProto.batches);
    // Both encodings of the same spans are the same part: the same key.
    expect(fromJson.batches[0]!.idempotencyKey).toBe(fromProto.batches[0]!.idempotencyKey);
    expect(fromProto.batches[0]!.idempotencyKey).toBe(`${traceId}:${partDigest(exporter.getFinishedSpans().map((s) => s.spanContext().spanId))}`);
  });

  it('normalizes both encodings to the same internal representation', () => {
    const { exporter, b } = buildTrace();
    const { proto, json } = serialize(exporter);
    const p = decodeOtlpProtobuf(proto);
    expect(decodeOtlpJson(json)).toStrictEqual(p);
    const span = p.resourceSpans[0]!.spans.find((s) => s.spanId === b.spanContext().spanId)!;
    expect(span).toMatchObject({
      traceId: b.spanContext().traceId,
      name: 'test.case',
      kind: 1,
      startTimeMs: T + 200,
      endTimeMs: T + 300,
      durationMs: 100,
      statusCode: 'error',
      statusMessage: 'expected 1 to be 2',
    });
    expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(span.parentSpanId).toMatch(/^[0-9a-f]{16}$/);
    expect(span.events[0]).toMatchObject({ name: 'exception', timeMs: T + 290 });
    expect(p.resourceSpans[0]!.resource).toMatchObject({ 'cicd.pipeline.run.id': 987654, 'test.shard.total': 2 });
  });

  it('flattens SDK array attributes identically in both encodings', () => {
    const { tracer, exporter } = sdk({});
    const run = tracer.startSpan('test.run', { startTime: T });
    child(tracer, run, 'test.case', T + 1, { 'test.title': 'x', tags: ['a', 'b'], ratio: 0.5, ok: true }).end(T + 2);
    run.end(T + 3);
    const { proto, json } = serialize(exporter);
    const p = decodeOtlpProtobuf(proto);
    expect(decodeOtlpJson(json)).toStrictEqual(p);
    const caseSpan = p.resourceSpans[0]!.spans.find((s) => s.name === 'test.case')!;
    expect(caseSpan.attributes).toStrictEqual({ 'test.title': 'x', tags: '["a","b"]', ratio: 0.5, ok: true });
  });
});

// --- 2. hand-written OTLP/JSON ---------------------------------------------------------------------

describe('hand-written OTLP/JSON', () => {
  const body = {
    resourceSpans: [
      {
        resource: {
          attributes: attrs({
            'vcs.commit_sha': '0123456789ABCDEF0123456789abcdef01234567',
            'vcs.branch': 'main',
            'ci.provider': 'gitlab_ci',
            'flakemetry.idempotency_key': 'run-12345678',
          }),
        },
        scopeSpans: [
          {
            scope: { name: 'reporter', version: '1.0.0' },
            spans: [
              {
                traceId: TRACE.toUpperCase(),
                spanId: 'EEE19B7EC3C1B174',
                parentSpanId: '',
                name: 'suite',
                kind: 'SPAN_KIND_INTERNAL',
                startTimeUnixNano: '1700000000000000000',
                endTimeUnixNano: '1700000005000000000',
                attributes: [{ key: 'vcs.pr_number', value: { intValue: '17' } }],
                status: { code: 'STATUS_CODE_OK' },
                unknownField: { ignored: true },
              },
              {
                traceId: TRACE,
                spanId: 'eee19b7ec3c1b173',
                parentSpanId: 'eee19b7ec3c1b174',
                name: 'checkout renders',
                kind: 1,
                startTimeUnixNano: 1_700_000_001_000_000_000,
                endTimeUnixNano: '1700000001250500000',
                attributes: [
                  { key: 'test.case.name', value: { stringValue: 'checkout::cart::renders' } },
                  { key: 'test.attempt', value: { intValue: '1' } },
                  { key: 'test.case.result.status', value: { stringValue: 'fail' } },
                  { key: 'big', value: { intValue: '9007199254740993' } },
                  { key: 'tags', value: { arrayValue: { values: [{ stringValue: 'a' }, { intValue: '2' }] } } },
                  {
                    key: 'meta',
                    value: {
                      kvlistValue: {
                        values: [
                          { key: 'retries', value: { intValue: '3' } },
                          { key: 'flag', value: { boolValue: true } },
                          { key: 'nested', value: { arrayValue: { values: [{ doubleValue: 1.5 }] } } },
                        ],
                      },
                    },
                  },
                ],
                events: [{ timeUnixNano: '1700000001200000000', name: 'log', attributes: [] }],
                status: { code: 'STATUS_CODE_ERROR', message: 'Timed out' },
              },
            ],
          },
        ],
      },
    ],
  };

  it('decodes string int64, enum names, kvlists and arrays', () => {
    const req = decodeOtlpJson(body);
    const [root, tc] = req.resourceSpans[0]!.spans;
    expect(root).toMatchObject({
      traceId: TRACE,
      spanId: 'eee19b7ec3c1b174',
      parentSpanId: undefined,
      kind: 1,
      statusCode: 'ok',
      attributes: { 'vcs.pr_number': 17 },
    });
    expect(tc!.attributes).toStrictEqual({
      'test.case.name': 'checkout::cart::renders',
      'test.attempt': 1,
      'test.case.result.status': 'fail',
      big: '9007199254740993',
      tags: '["a",2]',
      meta: '{"retries":3,"flag":true,"nested":[1.5]}',
    });
    expect(tc).toMatchObject({ startTimeMs: 1_700_000_001_000, endTimeMs: 1_700_000_001_250, durationMs: 250.5 });
    expect(tc!.events).toStrictEqual([{ name: 'log', timeMs: 1_700_000_001_200, attributes: {} }]);
  });

  it('maps it with Flakemetry-style keys and the root span as the run', () => {
    const { batches } = mapOtlpToBatches(decodeOtlpJson(body), { now: NOW });
    expect(batches).toHaveLength(1);
    const b = batches[0]!;
    // The explicit key names the run; the digest names this part of it.
    expect(b.idempotencyKey).toMatch(/^run-12345678:[0-9a-f]{16}$/);
    expect(b.idempotencyKey).toBe(`run-12345678:${partDigest(['eee19b7ec3c1b174', 'eee19b7ec3c1b173'])}`);
    expect(b.resource).toStrictEqual({
      ciProvider: 'gitlab_ci',
      commitSha: '0123456789abcdef0123456789abcdef01234567',
      branch: 'main',
      prNumber: 17,
      trigger: 'other',
    });
    // The root span times the run, but a span named `suite` is no explicit run span.
    expect(b.run).toStrictEqual({
      status: 'failed',
      startedAt: T,
      finishedAt: T + 5000,
      traceId: TRACE,
      hasRunSpan: false,
      statusExplicit: false,
    });
    expect(b.executions).toHaveLength(1);
    expect(b.executions[0]).toMatchObject({
      title: 'renders',
      suite: '',
      filePath: '',
      status: 'fail',
      attempt: 1,
      durationMs: 251,
      startedAt: 1_700_000_001_000,
      error: { message: 'Timed out' },
      spanId: 'eee19b7ec3c1b173',
    });
  });
});

// --- 3. malformed input ------------------------------------------------------------------------------

describe('malformed input', () => {
  it('rejects invalid protobuf bytes', () => {
    expect(() => decodeOtlpProtobuf(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]))).toThrow(OtlpDecodeError);
    expect(() => decodeOtlpProtobuf(new Uint8Array([0xff, 0xff]))).toThrow(OtlpDecodeError);
  });

  // Issue 28: a span with an invalid id is rejected alone (OTLP partial success), not the request.
  it('rejects a span whose protobuf trace id has the wrong length, with its path', () => {
    // request{resource_spans{scope_spans{spans{trace_id: 3 bytes}}}}
    const bytes = new Uint8Array([0x0a, 0x09, 0x12, 0x07, 0x12, 0x05, 0x0a, 0x03, 1, 2, 3]);
    const req = decodeOtlpProtobuf(bytes);
    expect(req.resourceSpans[0]!.spans).toEqual([]);
    expect(req.rejected).toEqual([{ path: 'resourceSpans.0.scopeSpans.0.spans.0.traceId', message: 'expected 16 bytes, got 3' }]);
  });

  it('rejects a span whose JSON trace id is not hex, naming the path, and keeps the others', () => {
    const spans = [0, 1, 2].map((i) => jsonSpan(`00000000000000a${i}`, 'x'));
    spans.push(jsonSpan('00000000000000a3', 'x', { traceId: 'W4jv95gDgQPSabYzgT/GDA==' })); // base64, not hex
    const req = decodeOtlpJson({
      resourceSpans: [{ scopeSpans: [{ spans: [] }, { spans }] }],
    });
    expect(req.resourceSpans[0]!.spans.map((s) => s.spanId)).toEqual(['00000000000000a0', '00000000000000a1', '00000000000000a2']);
    expect(req.rejected).toEqual([{ path: 'resourceSpans.0.scopeSpans.1.spans.3.traceId', message: 'expected 32 hex characters' }]);
  });

  it('names the path of shape errors and unknown enum names', () => {
    const bad = (extra: Record<string, unknown>) =>
      catchError(() => decodeOtlpJson(jsonRequest({}, [jsonSpan('00000000000000a1', 'x', extra)]))) as OtlpDecodeError;
    expect(bad({ startTimeUnixNano: 'soon' }).path).toBe('resourceSpans.0.scopeSpans.0.spans.0.startTimeUnixNano');
    expect(bad({ kind: 'SPAN_KIND_BOGUS' }).path).toBe('resourceSpans.0.scopeSpans.0.spans.0.kind');
    expect(bad({ attributes: [{ key: 'a', value: { intValue: 1.5 } }] }).path).toBe(
      'resourceSpans.0.scopeSpans.0.spans.0.attributes.0.value.intValue',
    );
    expect(decodeOtlpJson(jsonRequest({}, [jsonSpan('00000000000000a1', 'x', { spanId: '' })])).rejected).toEqual([
      { path: 'resourceSpans.0.scopeSpans.0.spans.0.spanId', message: 'required' },
    ]);
    expect(catchError(() => decodeOtlpJson('nope'))).toBeInstanceOf(OtlpDecodeError);
    expect((catchError(() => decodeOtlpJson({ resourceSpans: {} })) as OtlpDecodeError).path).toBe('resourceSpans');
  });

  it('turns stack exhaustion from nested attribute values into OtlpDecodeError', () => {
    let v: unknown = { stringValue: 'x' };
    for (let i = 0; i < 200_000; i++) v = { arrayValue: { values: [v] } };
    const body = { resourceSpans: [{ resource: { attributes: [{ key: 'k', value: v }] } }] };
    expect(() => decodeOtlpJson(body)).toThrow(OtlpDecodeError);
  });

  it('accepts an empty request', () => {
    expect(decodeOtlpJson({})).toStrictEqual({ resourceSpans: [], rejected: [] });
    expect(decodeOtlpProtobuf(new Uint8Array())).toStrictEqual({ resourceSpans: [], rejected: [] });
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

// --- 4. mapping edge cases ------------------------------------------------------------------------------

describe('mapping edge cases', () => {
  it('produces no batch for a trace without test cases', () => {
    const req = decodeOtlpJson(
      jsonRequest({ 'vcs.branch': 'main' }, [
        jsonSpan('00000000000000a1', 'GET /'),
        jsonSpan('00000000000000a2', 'db.query', { parentSpanId: '00000000000000a1' }),
      ]),
    );
    expect(mapOtlpToBatches(req, { now: NOW })).toStrictEqual({ batches: [], rejected: [] });
  });

  it('uses placeholders when vcs attributes are missing', () => {
    const req = decodeOtlpJson(
      jsonRequest({}, [jsonSpan('00000000000000a1', 'test.case', { attributes: attrs({ 'test.title': 't' }) })]),
    );
    const [b] = mapOtlpToBatches(req, { now: NOW }).batches;
    expect(b!.resource).toStrictEqual({ ciProvider: 'other', commitSha: '0000000', branch: 'local', trigger: 'other' });
    // No run span: start from the earliest case, no finish time.
    expect(b!.run).toStrictEqual({ status: 'passed', startedAt: T, traceId: TRACE, hasRunSpan: false, statusExplicit: false });
    expect(b!.executions[0]).toMatchObject({ title: 't', suite: '', filePath: '', status: 'pass', attempt: 1 });
  });

  it('maps vcs.ref.base.revision to mergeBase (lowercased); one that is not 7 to 40 hex is left out', () => {
    const mergeBaseOf = (value: Json): string | undefined => {
      const req = decodeOtlpJson(
        jsonRequest({ 'vcs.ref.base.name': 'main', 'vcs.ref.base.revision': value }, [jsonSpan('00000000000000a1', 'test.case', { attributes: attrs({ 'test.title': 't' }) })]),
      );
      return mapOtlpToBatches(req, { now: NOW }).batches[0]!.resource.mergeBase;
    };
    expect(mergeBaseOf(' 9F3C1AB2D4E5F60718293A4B5C6D7E8F90A1B2C3 ')).toBe('9f3c1ab2d4e5f60718293a4b5c6d7e8f90a1b2c3');
    expect(mergeBaseOf('abc1234')).toBe('abc1234');
    for (const bad of ['main', 'abc123', 'g'.repeat(40), 'a'.repeat(41), '']) expect(mergeBaseOf(bad), bad).toBeUndefined();
  });

  it('falls back to now when no start time is known, and maps run status attributes', () => {
    const req = decodeOtlpJson(
      jsonRequest({ 'cicd.pipeline.result': 'cancellation' }, [
        jsonSpan('00000000000000a1', 'test.case', {
          startTimeUnixNano: '0',
          endTimeUnixNano: '0',
          attributes: attrs({ 'test.status': 'skip', 'test.case.name': 'a.b.c' }),
        }),
      ]),
    );
    const [b] = mapOtlpToBatches(req, { now: NOW }).batches;
    expect(b!.run).toStrictEqual({ status: 'canceled', startedAt: NOW, traceId: TRACE, hasRunSpan: false, statusExplicit: true });
    expect(b!.executions[0]).toMatchObject({ title: 'c', status: 'skip', startedAt: NOW, durationMs: 0 });
  });

  it('merges resourceSpans that share a trace id into one run', () => {
    const req = decodeOtlpJson({
      resourceSpans: [
        {
          resource: { attributes: attrs({ 'vcs.ref.head.name': 'dev' }) },
          scopeSpans: [{ spans: [jsonSpan('00000000000000a1', 'test.run')] }],
        },
        {
          resource: { attributes: attrs({ 'vcs.ref.head.name': 'other', 'vcs.ref.head.revision': 'deadbeef' }) },
          scopeSpans: [
            {
              spans: [
                jsonSpan('00000000000000a2', 'test.case', {
                  parentSpanId: '00000000000000a1',
                  attributes: attrs({ 'test.title': 'one', 'test.retry_of': 0 }),
                }),
              ],
            },
          ],
        },
      ],
    });
    const { batches } = mapOtlpToBatches(req, { now: NOW });
    expect(batches).toHaveLength(1);
    expect(batches[0]!.resource).toMatchObject({ branch: 'dev', commitSha: 'deadbeef' });
    // retry_of must name an earlier execution; index 0 is the case itself.
    expect(batches[0]!.executions[0]!.retryOfIndex).toBeUndefined();
  });

  it('resolves integer retry_of, cicd.pipeline.* run spans and provider aliases', () => {
    const req = decodeOtlpJson(
      jsonRequest({ 'ci.provider': 'Azure' }, [
        jsonSpan('00000000000000a1', 'pipeline', { attributes: attrs({ 'cicd.pipeline.name': 'ci', 'test.shard.index': 0 }) }),
        jsonSpan('00000000000000a2', 'test.case', {
          parentSpanId: '00000000000000a1',
          attributes: attrs({ 'test.title': 'a', 'test.status': 'fail', 'test.params': '[1]' }),
        }),
        jsonSpan('00000000000000a3', 'test.case', {
          parentSpanId: '00000000000000a1',
          startTimeUnixNano: `${T + 50}000000`,
          attributes: attrs({ 'test.title': 'a', 'test.attempt': '2', 'test.retry_of': '0', 'test.status': 'flaky' }),
        }),
      ]),
    );
    const [b] = mapOtlpToBatches(req, { now: NOW }).batches;
    expect(b!.resource.ciProvider).toBe('azure_pipelines');
    expect(b!.resource.shardIndex).toBeUndefined();
    expect(b!.run).toMatchObject({ status: 'passed', startedAt: T, finishedAt: T + 100 });
    expect(b!.executions.map((e) => [e.status, e.attempt, e.retryOfIndex, e.params])).toStrictEqual([
      ['fail', 1, undefined, undefined],
      ['flaky', 2, 0, undefined],
    ]);
  });

  it('keeps traces apart that share an explicit idempotency key', () => {
    const other = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
    const req = decodeOtlpJson(
      jsonRequest({ 'service.idempotency_key': 'shared-key' }, [
        jsonSpan('00000000000000a1', 'test.case'),
        jsonSpan('00000000000000a2', 'test.case', { traceId: other }),
      ]),
    );
    const batches = mapOtlpToBatches(req, { now: NOW }).batches;
    expect(batches.map((b) => b.run.traceId)).toStrictEqual([TRACE, other]);
    // The digest of each trace's own span ids tells the two apart.
    expect(batches.map((b) => b.idempotencyKey)).toStrictEqual([
      `shared-key:${partDigest(['00000000000000a1'])}`,
      `shared-key:${partDigest(['00000000000000a2'])}`,
    ]);
    for (const b of batches) expect(b.idempotencyKey).toMatch(/^shared-key:[0-9a-f]{16}$/);
  });

  it('caps child spans at 500 and does not descend into nested cases', () => {
    const spans: unknown[] = [jsonSpan('1000000000000000', 'test.case')];
    for (let i = 0; i < 600; i++) {
      spans.push(jsonSpan(`2${i.toString(16).padStart(15, '0')}`, 'step', { parentSpanId: '1000000000000000' }));
    }
    spans.push(jsonSpan('3000000000000000', 'test.case', { parentSpanId: '1000000000000000' }));
    spans.push(jsonSpan('3000000000000001', 'inner', { parentSpanId: '3000000000000000' }));
    const [b] = mapOtlpToBatches(decodeOtlpJson(jsonRequest({}, spans)), { now: NOW }).batches;
    expect(b!.executions).toHaveLength(2);
    expect(b!.executions[0]!.spans).toHaveLength(500);
    expect(b!.executions[1]!.spans!.map((s) => s.name)).toStrictEqual(['inner']);
  });
});

// --- 5. parts: one trace over several requests ------------------------------------------------------------

describe('parts of a trace (one export request each)', () => {
  const map = (req: unknown) => mapOtlpToBatches(decodeOtlpJson(req), { now: NOW }).batches;
  const caseSpan = (spanId: string, title: string, extra: Record<string, unknown> = {}) =>
    jsonSpan(spanId, 'test.case', { parentSpanId: '00000000000000f0', attributes: attrs({ 'test.title': title }), ...extra });
  const KEY_OF_TRACE = new RegExp(`^${TRACE}:[0-9a-f]{16}$`);

  it('gives each request of a trace its own key, and a repeated request the same key', () => {
    const part1 = jsonRequest({ 'vcs.branch': 'main' }, [caseSpan('00000000000000a1', 'one'), caseSpan('00000000000000a2', 'two')]);
    const part2 = jsonRequest({ 'vcs.branch': 'main' }, [caseSpan('00000000000000a3', 'three')]);
    const [b1] = map(part1);
    const [b2] = map(part2);
    expect(b1!.idempotencyKey).toMatch(KEY_OF_TRACE);
    expect(b2!.idempotencyKey).toMatch(KEY_OF_TRACE);
    expect(b1!.idempotencyKey).not.toBe(b2!.idempotencyKey);
    expect(b1!.idempotencyKey).toBe(`${TRACE}:${partDigest(['00000000000000a1', '00000000000000a2'])}`);
    // Both parts belong to the same trace (→ the same run downstream).
    expect(b1!.run.traceId).toBe(TRACE);
    expect(b2!.run.traceId).toBe(TRACE);
    // A retried export of the same spans: the same key, whatever the span order.
    expect(map(structuredClone(part1))[0]!.idempotencyKey).toBe(b1!.idempotencyKey);
    const reordered = jsonRequest({ 'vcs.branch': 'main' }, [caseSpan('00000000000000a2', 'two'), caseSpan('00000000000000a1', 'one')]);
    expect(map(reordered)[0]!.idempotencyKey).toBe(b1!.idempotencyKey);
  });

  it('maps every span of a SimpleSpanProcessor export (one span per request) to its own part', () => {
    const { tracer, exporter } = sdk({ 'vcs.ref.head.name': 'parts' });
    const run = tracer.startSpan('test.run', { startTime: T });
    const a = child(tracer, run, 'test.case', T + 10, { 'test.title': 'a' });
    child(tracer, a, 'test.step', T + 11).end(T + 12);
    a.end(T + 20);
    const b = child(tracer, run, 'test.case', T + 30, { 'test.title': 'b' });
    b.setStatus({ code: SpanStatusCode.ERROR });
    b.end(T + 40);
    run.end(T + 50);
    const traceId = run.spanContext().traceId;

    const parts = exporter.getFinishedSpans().map((span) => {
      const proto = ProtobufTraceSerializer.serializeRequest([span]);
      if (!proto) throw new Error('serializer returned nothing');
      return { name: span.name, batches: mapOtlpToBatches(decodeOtlpProtobuf(proto), { now: NOW }).batches };
    });
    // Export order is end order: the step, the cases, then the run.
    expect(parts.map((p) => [p.name, p.batches.length])).toStrictEqual([
      ['test.step', 0],
      ['test.case', 1],
      ['test.case', 1],
      ['test.run', 1],
    ]);
    const [caseA, caseB, runPart] = parts.slice(1).map((p) => p.batches[0]!);
    expect(caseA!.executions.map((e) => [e.title, e.status])).toStrictEqual([['a', 'pass']]);
    expect(caseA!.run).toStrictEqual({ status: 'passed', startedAt: T + 10, traceId, hasRunSpan: false, statusExplicit: false });
    expect(caseB!.run).toStrictEqual({ status: 'failed', startedAt: T + 30, traceId, hasRunSpan: false, statusExplicit: false });
    expect(runPart!.executions).toStrictEqual([]);
    expect(runPart!.run).toStrictEqual({
      status: 'passed',
      startedAt: T,
      finishedAt: T + 50,
      traceId,
      hasRunSpan: true,
      statusExplicit: false,
    });
    const keys = [caseA, caseB, runPart].map((x) => x!.idempotencyKey);
    for (const k of keys) expect(k).toMatch(new RegExp(`^${traceId}:[0-9a-f]{16}$`));
    expect(new Set(keys).size).toBe(3);
    for (const x of [caseA, caseB, runPart]) expect(x!.resource.branch).toBe('parts');
  });

  it('keys parts by an explicit idempotency key plus the part digest', () => {
    const resource = { 'flakemetry.idempotency_key': 'ci-run-4242' };
    const [b1] = map(jsonRequest(resource, [caseSpan('00000000000000a1', 'one')]));
    const [b2] = map(jsonRequest(resource, [caseSpan('00000000000000a2', 'two')]));
    const [again] = map(jsonRequest(resource, [caseSpan('00000000000000a1', 'one')]));
    expect(b1!.idempotencyKey).toBe(`ci-run-4242:${partDigest(['00000000000000a1'])}`);
    expect(b2!.idempotencyKey).toBe(`ci-run-4242:${partDigest(['00000000000000a2'])}`);
    expect(again!.idempotencyKey).toBe(b1!.idempotencyKey);
    // service.idempotency_key is read first.
    const [svc] = map(jsonRequest({ ...resource, 'service.idempotency_key': 'svc-key-1' }, [caseSpan('00000000000000a1', 'one')]));
    expect(svc!.idempotencyKey).toMatch(/^svc-key-1:[0-9a-f]{16}$/);
    // A key over 100 characters is replaced by 32 hex of its sha256 (the whole key stays ≤ 128).
    const long = 'k'.repeat(101);
    const [hashed] = map(jsonRequest({ 'service.idempotency_key': long }, [caseSpan('00000000000000a1', 'one')]));
    const longHash = createHash('sha256').update(long).digest('hex').slice(0, 32);
    expect(hashed!.idempotencyKey).toBe(`${longHash}:${partDigest(['00000000000000a1'])}`);
    const [exactly100] = map(jsonRequest({ 'service.idempotency_key': 'k'.repeat(100) }, [caseSpan('00000000000000a1', 'one')]));
    expect(exactly100!.idempotencyKey).toBe(`${'k'.repeat(100)}:${partDigest(['00000000000000a1'])}`);
  });

  it('turns a part with only the run span into a batch without executions', () => {
    const [b] = map(
      jsonRequest({ 'vcs.branch': 'main' }, [
        jsonSpan('00000000000000f0', 'test.run', { endTimeUnixNano: `${T + 900}000000` }),
        // A non-test child of the run in the same request changes nothing.
        jsonSpan('00000000000000f1', 'setup', { parentSpanId: '00000000000000f0' }),
      ]),
    );
    expect(b).toBeDefined();
    expect(b!.executions).toStrictEqual([]);
    expect(b!.idempotencyKey).toBe(`${TRACE}:${partDigest(['00000000000000f0', '00000000000000f1'])}`);
    expect(b!.resource.branch).toBe('main');
    expect(b!.run).toStrictEqual({ status: 'passed', startedAt: T, finishedAt: T + 900, traceId: TRACE, hasRunSpan: true, statusExplicit: false });
  });

  it('takes a cicd.pipeline.* span as the run span, and its explicit status', () => {
    const [b] = map(
      jsonRequest({}, [
        jsonSpan('00000000000000f0', 'pipeline', { attributes: attrs({ 'cicd.pipeline.name': 'ci', 'test.run.status': 'cancelled' }) }),
      ]),
    );
    expect(b!.executions).toStrictEqual([]);
    expect(b!.run).toStrictEqual({ status: 'canceled', startedAt: T, finishedAt: T + 100, traceId: TRACE, hasRunSpan: true, statusExplicit: true });
  });

  it('produces no batch for a part with only non-test spans', () => {
    // A step of a case exported before its case, and a root span that is no explicit run span.
    const req = jsonRequest({ 'vcs.branch': 'main', 'test.run.status': 'failed' }, [
      jsonSpan('00000000000000b1', 'test.step', { parentSpanId: '00000000000000a1' }),
      jsonSpan('00000000000000b2', 'suite'),
      jsonSpan('00000000000000b3', 'GET /api', { parentSpanId: '00000000000000b2', attributes: attrs({ 'http.request.method': 'GET' }) }),
    ]);
    expect(map(req)).toStrictEqual([]);
  });
});
