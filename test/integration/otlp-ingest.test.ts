// POST /v1/traces over real HTTP against the real daemon, fed by the real OpenTelemetry JS SDK
// exporters (protobuf, JSON, gzip'd protobuf), plus raw requests for the error paths (docs/contract.md §4).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Span, Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

// Dates, not numbers: the SDK reads a number below its time origin as a performance.now() offset.
const at = (ms: number): Date => new Date(ms);

type ExportResult = Parameters<Parameters<SpanExporter['export']>[1]>[0];
const EXPORT_SUCCESS = 0; // ExportResultCode.SUCCESS in @opentelemetry/core

let td: TestDaemon;

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
});

afterAll(async () => {
  await td?.close();
});

/** Delegates to a real exporter and records what each export reported. */
class RecordingExporter implements SpanExporter {
  readonly results: ExportResult[] = [];
  readonly exported: ReadableSpan[][] = [];
  constructor(private readonly inner: SpanExporter) {}
  export(spans: ReadableSpan[], done: (r: ExportResult) => void): void {
    this.exported.push(spans);
    this.inner.export(spans, (r) => {
      this.results.push(r);
      done(r);
    });
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

interface EmittedRun {
  traceId: string;
  branch: string;
  sha: string;
  ciRunId: string;
}

/**
 * One test run as a reporter would emit it: a `test.run` span with three `test.case` children
 * (a pass, a failure with a recorded exception, and a case failing once then passing on attempt 2).
 * With the BatchSpanProcessor (default) all spans go out in one export request at forceFlush; with
 * the SimpleSpanProcessor each span is its own request as it ends, the run span last.
 */
async function emitRun(
  inner: SpanExporter,
  label: string,
  start: number,
  processor: 'batch' | 'simple' = 'batch',
): Promise<EmittedRun & { exporter: RecordingExporter; flushError: unknown }> {
  const exporter = new RecordingExporter(inner);
  const branch = `otlp-${label}`;
  const sha = randomBytes(20).toString('hex');
  const ciRunId = `run-${label}-${randomBytes(3).toString('hex')}`;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'checkout-tests',
      'vcs.ref.head.revision': sha.toUpperCase(),
      'vcs.ref.head.name': `refs/heads/${branch}`,
      'ci.provider': 'github_actions',
      'cicd.pipeline.run.id': ciRunId,
      'service.trigger': 'pull_request',
      'vcs.change.id': '42',
    }),
    spanProcessors: [
      processor === 'simple'
        ? new SimpleSpanProcessor(exporter)
        : new BatchSpanProcessor(exporter, { scheduledDelayMillis: 60_000, maxExportBatchSize: 512 }),
    ],
  });
  const tracer = provider.getTracer('flakehouse-it');
  const runSpan = tracer.startSpan('test.run', { startTime: at(start), attributes: { 'test.framework': 'vitest' } });
  const child = (t: Tracer, name: string, when: number, attributes: Record<string, string | number>): Span =>
    t.startSpan(name, { startTime: new Date(when), attributes }, trace.setSpan(ROOT_CONTEXT, runSpan));

  const pass = child(tracer, 'test.case', start + 10, {
    'test.title': 'adds items',
    'test.suite': 'Cart',
    'test.file_path': 'src/cart.test.ts',
    'test.case.result.status': 'pass',
  });
  pass.end(at(start + 30));

  const fail = child(tracer, 'test.case', start + 40, { 'test.title': 'applies coupon', 'test.suite': 'Cart', 'test.file_path': 'src/cart.test.ts' });
  const err = new Error('expected 90 to be 81');
  err.name = 'AssertionError';
  fail.recordException(err, at(start + 45));
  fail.setStatus({ code: SpanStatusCode.ERROR, message: 'assertion failed' });
  fail.end(at(start + 60));

  const retryAttrs = { 'test.title': 'pays by card', 'test.suite': 'Checkout', 'test.file_path': 'src/checkout.test.ts' };
  const attempt1 = child(tracer, 'test.case', start + 70, { ...retryAttrs, 'test.attempt': 1 });
  attempt1.recordException(new Error('socket hang up'), at(start + 75));
  attempt1.setStatus({ code: SpanStatusCode.ERROR });
  attempt1.end(at(start + 80));
  const attempt2 = child(tracer, 'test.case', start + 90, {
    ...retryAttrs,
    'test.attempt': 2,
    'test.retry_of': attempt1.spanContext().spanId,
  });
  attempt2.setStatus({ code: SpanStatusCode.OK });
  attempt2.end(at(start + 100));

  runSpan.end(at(start + 120));
  // forceFlush rejects when the export failed; the recorded result says why.
  let flushError: unknown;
  await provider.forceFlush().catch((e: unknown) => (flushError = e));
  await provider.shutdown();
  return { traceId: runSpan.spanContext().traceId, branch, sha, ciRunId, exporter, flushError };
}

async function runsOnBranch(branch: string): Promise<any[]> {
  const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
  expect(res.status).toBe(200);
  return res.json.items;
}

/**
 * Waits until the branch lists exactly one run and `done` holds for it (a run assembled from
 * several parts passes through intermediate states first); on timeout, shows what was listed.
 */
async function waitForRun(branch: string, done: (run: any) => boolean): Promise<any> {
  let last: any[] = [];
  await td.settled();
  try {
    return await td.waitFor(async () => {
      last = await runsOnBranch(branch);
      return last.length === 1 && done(last[0]) ? last[0] : undefined;
    }, 20_000);
  } catch (err) {
    expect(last, 'runs listed when waitFor gave up').toEqual(['one run in its final state']);
    throw err;
  }
}

async function expectStoredRun(emitted: EmittedRun, start: number): Promise<void> {
  // Final: every test counted, and the start time from the run span (the cases start later).
  const run = await waitForRun(
    emitted.branch,
    (r) => r.counts.total === 3 && r.counts.flaky === 1 && r.counts.failed === 1 && r.startedAt === new Date(start).toISOString(),
  );
  expect(await runsOnBranch(emitted.branch)).toHaveLength(1);
  expect(run).toMatchObject({
    branch: emitted.branch,
    commitSha: emitted.sha,
    ciProvider: 'github_actions',
    prNumber: 42,
    status: 'failed',
    startedAt: new Date(start).toISOString(),
    durationMs: 120,
    counts: { total: 3, passed: 1, failed: 1, skipped: 0, flaky: 1 },
  });
  const res = await td.request('GET', `/v1/runs/${run.id}`);
  expect(res.status).toBe(200);
  const d = res.json;
  expect(d.trigger).toBe('pull_request');
  expect(d.finishedAt).toBe(new Date(start + 120).toISOString());
  const rows = d.executions.map((e: any) => [e.suite, e.title, e.filePath, e.status, e.attempt, e.durationMs]);
  // The retried case's second attempt passes; counts make the test flaky (its row may say pass or flaky).
  expect(rows.slice(0, 3)).toEqual([
    ['Cart', 'adds items', 'src/cart.test.ts', 'pass', 1, 20],
    ['Cart', 'applies coupon', 'src/cart.test.ts', 'fail', 1, 20],
    ['Checkout', 'pays by card', 'src/checkout.test.ts', 'fail', 1, 10],
  ]);
  expect(rows[3].slice(0, 3)).toEqual(['Checkout', 'pays by card', 'src/checkout.test.ts']);
  expect(['pass', 'flaky']).toContain(rows[3][3]);
  expect(rows[3].slice(4)).toEqual([2, 10]);
  expect(d.executions).toHaveLength(4);
  expect(d.executions[0].errorMessage).toBeNull();
  expect(d.executions[1].errorMessage).toBe('expected 90 to be 81');
  expect(d.executions[2].errorMessage).toBe('socket hang up');
  expect(d.executions[3].errorMessage).toBeNull();
  expect(d.executions[2].testIdentityId).toBe(d.executions[3].testIdentityId);
  expect(d.executions[0].testIdentityId).not.toBe(d.executions[1].testIdentityId);
}

describe('OTLP from the OpenTelemetry JS SDK', () => {
  const auth = () => ({ authorization: `Bearer ${td.token}` });

  it('protobuf exporter (exporter-trace-otlp-proto)', async () => {
    const start = Date.UTC(2026, 0, 10, 12, 0, 0);
    const emitted = await emitRun(new ProtoExporter({ url: `${td.url}/v1/traces`, headers: auth() }), 'proto', start);
    expect(emitted.exporter.exported).toHaveLength(1);
    expect(emitted.exporter.exported[0]).toHaveLength(5);
    expect(emitted.flushError).toBeUndefined();
    expect(emitted.exporter.results.map((r) => [r.code, r.error?.message])).toEqual([[EXPORT_SUCCESS, undefined]]);
    await expectStoredRun(emitted, start);
  });

  it('JSON exporter (exporter-trace-otlp-http)', async () => {
    const start = Date.UTC(2026, 0, 10, 13, 0, 0);
    const emitted = await emitRun(new JsonExporter({ url: `${td.url}/v1/traces`, headers: auth() }), 'json', start);
    expect(emitted.exporter.results.map((r) => [r.code, r.error?.message])).toEqual([[EXPORT_SUCCESS, undefined]]);
    await expectStoredRun(emitted, start);
  });

  it('protobuf exporter with gzip compression', async () => {
    const start = Date.UTC(2026, 0, 10, 14, 0, 0);
    const emitted = await emitRun(
      new ProtoExporter({ url: `${td.url}/v1/traces`, headers: auth(), compression: CompressionAlgorithm.GZIP }),
      'gzip',
      start,
    );
    expect(emitted.exporter.results.map((r) => [r.code, r.error?.message])).toEqual([[EXPORT_SUCCESS, undefined]]);
    await expectStoredRun(emitted, start);
  });

  it('SimpleSpanProcessor + protobuf exporter: one request per span, one run for the trace', async () => {
    const start = Date.UTC(2026, 0, 10, 16, 0, 0);
    const emitted = await emitRun(new ProtoExporter({ url: `${td.url}/v1/traces`, headers: auth() }), 'simple', start, 'simple');
    expect(emitted.flushError).toBeUndefined();
    // Five spans, five requests, in end order: the run span last.
    expect(emitted.exporter.exported.map((spans) => spans.map((s) => s.name))).toEqual([
      ['test.case'],
      ['test.case'],
      ['test.case'],
      ['test.case'],
      ['test.run'],
    ]);
    for (const spans of emitted.exporter.exported) expect(spans[0]!.spanContext().traceId).toBe(emitted.traceId);
    expect(emitted.exporter.results.map((r) => [r.code, r.error?.message])).toEqual(
      Array.from({ length: 5 }, () => [EXPORT_SUCCESS, undefined]),
    );
    // One run, counted over all parts, timed by the run span, with all four executions.
    await expectStoredRun(emitted, start);
  });

  it('an exporter without a token is refused (401) and nothing is stored', async () => {
    const start = Date.UTC(2026, 0, 10, 15, 0, 0);
    const emitted = await emitRun(new ProtoExporter({ url: `${td.url}/v1/traces` }), 'noauth', start);
    expect(emitted.exporter.results).toHaveLength(1);
    expect(emitted.exporter.results[0]!.code).not.toBe(EXPORT_SUCCESS);
    expect(String(emitted.exporter.results[0]!.error)).toMatch(/Unauthorized/);
    expect(emitted.flushError).toBeDefined();
    expect(await runsOnBranch(emitted.branch)).toHaveLength(0);
  });
});

// --- raw requests ----------------------------------------------------------------------------

const T0 = Date.UTC(2026, 1, 1, 9, 0, 0);

function kv(key: string, value: string | number): Record<string, unknown> {
  return { key, value: typeof value === 'string' ? { stringValue: value } : { intValue: String(value) } };
}

function jsonSpan(traceId: string, spanId: string, name: string, attrs: Record<string, string | number>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    traceId,
    spanId,
    name,
    kind: 1,
    startTimeUnixNano: `${T0}000000`,
    endTimeUnixNano: `${T0 + 50}000000`,
    attributes: Object.entries(attrs).map(([k, v]) => kv(k, v)),
    ...extra,
  };
}

function otlpJson(resource: Record<string, string | number>, spans: Record<string, unknown>[]): Record<string, unknown> {
  return {
    resourceSpans: [
      {
        resource: { attributes: Object.entries(resource).map(([k, v]) => kv(k, v)) },
        scopeSpans: [{ scope: { name: 'raw' }, spans }],
      },
    ],
  };
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('POST /v1/traces error paths and replays', () => {
  it('invalid protobuf bytes → 400 invalid_payload', async () => {
    const res = await td.request('POST', '/v1/traces', {
      body: new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]),
      headers: { 'content-type': 'application/x-protobuf' },
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('invalid_payload');
    expect(res.json.message).toMatch(/protobuf/);
    expect(Array.isArray(res.json.issues)).toBe(true);
  });

  it('text/plain → 415 unsupported_content_type', async () => {
    const res = await td.request('POST', '/v1/traces', { body: 'hello', headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(415);
    expect(res.json.error).toBe('unsupported_content_type');
  });

  // Issue 28: an invalid id rejects its span (OTLP partial success), not the request.
  it('JSON with a non-hex traceId → 202, the span rejected in partialSuccess naming the traceId', async () => {
    const body = otlpJson({}, [jsonSpan('zz'.repeat(16), hex(8), 'test.case', { 'test.title': 't' })]);
    const res = await td.request('POST', '/v1/traces', { body });
    expect(res.status).toBe(202);
    expect(res.json).toEqual({
      receiptId: null,
      acceptedExecutions: 0,
      deduplicated: false,
      partialSuccess: { rejectedSpans: 1, errorMessage: '1 span rejected: resourceSpans.0.scopeSpans.0.spans.0.traceId: expected 32 hex characters' },
    });
  });

  it('JSON with a spanId of the wrong length → 202, that span rejected naming the spanId', async () => {
    // Its own branch: the run span alone is stored, and must not be taken for another test's run on `local`.
    const body = otlpJson({ 'vcs.ref.head.name': `otlp-badspan-${hex(3)}` }, [jsonSpan(hex(16), hex(8), 'test.run', {}), jsonSpan(hex(16), 'abcd', 'test.case', { 'test.title': 't' })]);
    const res = await td.request('POST', '/v1/traces', { body });
    expect(res.status).toBe(202);
    expect(res.json.partialSuccess).toEqual({ rejectedSpans: 1, errorMessage: '1 span rejected: resourceSpans.0.scopeSpans.0.spans.1.spanId: expected 16 hex characters' });
  });

  it('a trace without test spans → 202 with nothing accepted, and no run', async () => {
    const branch = `otlp-notests-${hex(3)}`;
    const traceId = hex(16);
    const body = otlpJson({ 'vcs.ref.head.name': branch }, [
      jsonSpan(traceId, hex(8), 'GET /health', { 'http.request.method': 'GET' }),
      jsonSpan(traceId, hex(8), 'db.query', {}),
    ]);
    const res = await td.request('POST', '/v1/traces', { body });
    expect(res.status).toBe(202);
    expect(res.json).toEqual({ receiptId: null, acceptedExecutions: 0, deduplicated: false });
    expect(await runsOnBranch(branch)).toHaveLength(0);
  });

  it('an empty request → 202 with nothing accepted', async () => {
    const res = await td.request('POST', '/v1/traces', { body: {} });
    expect(res.status).toBe(202);
    expect(res.json).toEqual({ receiptId: null, acceptedExecutions: 0, deduplicated: false });
  });

  it('without commit and branch: placeholders, never a 400', async () => {
    const traceId = hex(16);
    const ciRunId = `ph-${hex(4)}`;
    const body = otlpJson({ 'cicd.pipeline.run.id': ciRunId }, [jsonSpan(traceId, hex(8), 'test.case', { 'test.case.name': 'a > b > works' })]);
    const res = await td.request('POST', '/v1/traces', { body });
    expect(res.status).toBe(202);
    expect(res.json.acceptedExecutions).toBe(1);
    await td.settled();
    const run = await td.waitFor(async () => (await runsOnBranch('local')).find((r) => r.startedAt === new Date(T0).toISOString()), 20_000);
    expect(run).toMatchObject({ commitSha: '0000000', ciProvider: 'other', status: 'passed', counts: { total: 1, passed: 1 } });
    const d = await td.request('GET', `/v1/runs/${run.id}`);
    expect(d.json.trigger).toBe('other');
    expect(d.json.executions.map((e: any) => e.title)).toEqual(['works']);
  });

  it('replaying a request (same spans → same key) is deduplicated, first payload wins', async () => {
    const branch = `otlp-replay-${hex(3)}`;
    const traceId = hex(16);
    const runId = hex(8);
    const caseIds = [hex(8), hex(8)];
    // The same spans each time (a retried export); only the titles differ, to see which payload won.
    const make = (title: string) =>
      otlpJson({ 'vcs.ref.head.name': branch, 'vcs.ref.head.revision': 'abc1234' }, [
        jsonSpan(traceId, runId, 'test.run', {}),
        jsonSpan(traceId, caseIds[0]!, 'test.case', { 'test.title': title, 'test.status': 'fail' }, { parentSpanId: runId }),
        jsonSpan(traceId, caseIds[1]!, 'test.case', { 'test.title': `${title} 2` }, { parentSpanId: runId }),
      ]);
    const first = await td.request('POST', '/v1/traces', { body: make('first') });
    expect(first.status).toBe(202);
    expect(first.json).toMatchObject({ acceptedExecutions: 2, deduplicated: false });
    expect(typeof first.json.receiptId).toBe('string');
    const same = await td.request('POST', '/v1/traces', { body: make('first') });
    expect(same.status).toBe(202);
    expect(same.json).toEqual({ receiptId: first.json.receiptId, acceptedExecutions: 2, deduplicated: true });
    const again = await td.request('POST', '/v1/traces', { body: make('second') });
    expect(again.status).toBe(202);
    expect(again.json).toEqual({ receiptId: first.json.receiptId, acceptedExecutions: 2, deduplicated: true });

    await td.settled();
    const [run] = await td.waitFor(async () => {
      const items = await runsOnBranch(branch);
      return items.length > 0 ? items : undefined;
    }, 20_000);
    const d = await td.request('GET', `/v1/runs/${run.id}`);
    expect(d.json.executions.map((e: any) => e.title).sort()).toEqual(['first', 'first 2']);
    expect(run).toMatchObject({ commitSha: 'abc1234', status: 'failed', counts: { total: 2, failed: 1, passed: 1 } });
    // A third replay after processing still dedupes, and there is still one run.
    const third = await td.request('POST', '/v1/traces', { body: make('third') });
    expect(third.json).toMatchObject({ receiptId: first.json.receiptId, deduplicated: true });
    expect(await runsOnBranch(branch)).toHaveLength(1);
  });

  it('two traces in one request become two runs', async () => {
    const branch = `otlp-two-${hex(3)}`;
    const a = hex(16);
    const b = hex(16);
    const body = otlpJson({ 'vcs.ref.head.name': branch }, [
      jsonSpan(a, hex(8), 'test.case', { 'test.title': 'in a' }),
      jsonSpan(b, hex(8), 'test.case', { 'test.title': 'in b' }, { startTimeUnixNano: `${T0 + 1000}000000`, endTimeUnixNano: `${T0 + 1010}000000` }),
      jsonSpan(b, hex(8), 'test.case', { 'test.title': 'also in b', 'test.status': 'skip' }),
    ]);
    const res = await td.request('POST', '/v1/traces', { body });
    expect(res.status).toBe(202);
    expect(res.json.acceptedExecutions).toBe(3);
    expect(res.json.receipts).toHaveLength(2);
    await td.settled();
    const runs = await td.waitFor(async () => {
      const items = await runsOnBranch(branch);
      return items.length >= 2 ? items : undefined;
    }, 20_000);
    expect(runs.map((r: any) => r.counts.total).sort()).toEqual([1, 2]);
  });
});

// --- one trace over several requests ----------------------------------------------------------

describe('POST /v1/traces: one trace over several requests is one run', () => {
  const T1 = Date.UTC(2026, 2, 1, 8, 0, 0);
  const iso = (ms: number) => new Date(ms).toISOString();
  const ns = (ms: number) => `${ms}000000`;
  /** A span at [start, end) (epoch ms) of `traceId`, a child of `parent` when given. */
  const span = (traceId: string, spanId: string, name: string, start: number, end: number, attrs: Record<string, string | number> = {}, parent?: string) =>
    jsonSpan(traceId, spanId, name, attrs, {
      startTimeUnixNano: ns(start),
      endTimeUnixNano: ns(end),
      ...(parent ? { parentSpanId: parent } : {}),
    });
  const testCase = (traceId: string, parent: string, title: string, status: string, start: number, end: number, extra: Record<string, string | number> = {}) =>
    span(traceId, hex(8), 'test.case', start, end, { 'test.title': title, 'test.suite': 'Parts', 'test.file_path': 'src/parts.test.ts', 'test.status': status, ...extra }, parent);

  async function post(body: unknown): Promise<any> {
    const res = await td.request('POST', '/v1/traces', { body });
    expect(res.status).toBe(202);
    return res.json;
  }

  it('run span first, then two requests of cases: counts over both, times from the run span', async () => {
    const branch = `otlp-parts-${hex(3)}`;
    const traceId = hex(16);
    const runSpanId = hex(8);
    const resource = { 'vcs.ref.head.name': branch, 'vcs.ref.head.revision': 'abc1234' };
    const runPart = await post(otlpJson(resource, [span(traceId, runSpanId, 'test.run', T1, T1 + 1_000)]));
    expect(runPart).toMatchObject({ acceptedExecutions: 0, deduplicated: false });
    expect(typeof runPart.receiptId).toBe('string');
    const part1 = await post(
      otlpJson(resource, [
        // Starts before the run span does: the run span still decides the start.
        testCase(traceId, runSpanId, 'a', 'pass', T1 - 50, T1 + 100),
        testCase(traceId, runSpanId, 'b', 'fail', T1 + 200, T1 + 250),
      ]),
    );
    expect(part1).toMatchObject({ acceptedExecutions: 2, deduplicated: false });
    const part2 = await post(
      otlpJson(resource, [
        testCase(traceId, runSpanId, 'c', 'skip', T1 + 300, T1 + 300),
        // Ends after the run span: the run span still decides the end.
        testCase(traceId, runSpanId, 'd', 'pass', T1 + 900, T1 + 1_500),
      ]),
    );
    expect(part2).toMatchObject({ acceptedExecutions: 2, deduplicated: false });
    expect(new Set([runPart.receiptId, part1.receiptId, part2.receiptId]).size).toBe(3);

    const run = await waitForRun(branch, (r) => r.counts.total === 4 && r.startedAt === iso(T1));
    expect(run).toMatchObject({
      commitSha: 'abc1234',
      status: 'failed',
      startedAt: iso(T1),
      durationMs: 1_000,
      counts: { total: 4, passed: 2, failed: 1, skipped: 1, flaky: 0 },
    });
    const d = (await td.request('GET', `/v1/runs/${run.id}`)).json;
    expect(d.finishedAt).toBe(iso(T1 + 1_000));
    expect(d.executions.map((e: any) => [e.title, e.status])).toEqual([
      ['a', 'pass'],
      ['b', 'fail'],
      ['c', 'skip'],
      ['d', 'pass'],
    ]);
  });

  it('the same part posted twice is deduplicated and counted once', async () => {
    const branch = `otlp-parts-dup-${hex(3)}`;
    const traceId = hex(16);
    const runSpanId = hex(8);
    const resource = { 'vcs.ref.head.name': branch };
    const partA = otlpJson(resource, [
      testCase(traceId, runSpanId, 'a', 'pass', T1 + 10, T1 + 20),
      testCase(traceId, runSpanId, 'b', 'fail', T1 + 30, T1 + 40),
    ]);
    const first = await post(partA);
    expect(first).toMatchObject({ acceptedExecutions: 2, deduplicated: false });
    // Retried before the worker got to it...
    expect(await post(partA)).toEqual({ receiptId: first.receiptId, acceptedExecutions: 2, deduplicated: true });
    const run = await waitForRun(branch, (r) => r.counts.total === 2);
    expect(run).toMatchObject({ status: 'failed', counts: { total: 2, passed: 1, failed: 1, skipped: 0, flaky: 0 } });
    // ...and after.
    expect(await post(structuredClone(partA))).toEqual({ receiptId: first.receiptId, acceptedExecutions: 2, deduplicated: true });

    // A new part of the trace goes through the same queue after the replays: once it is merged,
    // anything the replays could have caused would have been merged too.
    const partB = otlpJson(resource, [testCase(traceId, runSpanId, 'c', 'pass', T1 + 50, T1 + 60)]);
    const next = await post(partB);
    expect(next).toMatchObject({ acceptedExecutions: 1, deduplicated: false });
    expect(next.receiptId).not.toBe(first.receiptId);
    const after = await waitForRun(branch, (r) => r.counts.total === 3);
    expect(after.id).toBe(run.id);
    expect(after).toMatchObject({ status: 'failed', counts: { total: 3, passed: 2, failed: 1, skipped: 0, flaky: 0 } });
    const d = (await td.request('GET', `/v1/runs/${run.id}`)).json;
    expect(d.executions.map((e: any) => e.title)).toEqual(['a', 'b', 'c']);
  });

  it('an explicit run status (test.run.status: canceled) wins over failed tests, in any part order', async () => {
    const branch = `otlp-parts-canceled-${hex(3)}`;
    const traceId = hex(16);
    const runSpanId = hex(8);
    const resource = { 'vcs.ref.head.name': branch };
    await post(otlpJson(resource, [testCase(traceId, runSpanId, 'a', 'fail', T1 + 10, T1 + 20)]));
    const failed = await waitForRun(branch, (r) => r.counts.total === 1);
    expect(failed).toMatchObject({ status: 'failed', counts: { total: 1, failed: 1 } });

    await post(otlpJson(resource, [span(traceId, runSpanId, 'test.run', T1, T1 + 500, { 'test.run.status': 'canceled' })]));
    const canceled = await waitForRun(branch, (r) => r.status !== 'failed');
    expect(canceled).toMatchObject({ id: failed.id, status: 'canceled', startedAt: iso(T1), durationMs: 500, counts: { total: 1, failed: 1 } });

    // A later part without a status (here another failure) keeps the explicit one.
    await post(otlpJson(resource, [testCase(traceId, runSpanId, 'b', 'fail', T1 + 30, T1 + 40)]));
    const later = await waitForRun(branch, (r) => r.counts.total === 2);
    expect(later).toMatchObject({ id: failed.id, status: 'canceled', startedAt: iso(T1), durationMs: 500, counts: { total: 2, failed: 2 } });
    // Superseded versions of the run do not match a filter on the status they used to have.
    const byStatus = async (status: string) =>
      (await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}&status=${status}`)).json.items.map((r: any) => r.id);
    expect(await byStatus('failed')).toEqual([]);
    expect(await byStatus('canceled')).toEqual([failed.id]);
  });
});
