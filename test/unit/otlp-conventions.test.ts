// Real emitters' span shapes, mapped without configuration (docs/contract.md §4, issue 29): each
// fixture under test/fixtures/otlp/ is an OTLP/JSON request built from the emitter's documented shape.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeOtlpJson } from '../../src/receivers/otlp/decode.js';
import { mapOtlpToBatches } from '../../src/receivers/otlp/map.js';
import { parseNodeId, pytestNodeId } from '../../src/receivers/otlp/conventions.js';
import type { OtlpSpan } from '../../src/receivers/otlp/decode.js';

const NOW = 1_800_000_000_000;
const T0 = Date.UTC(2026, 1, 3, 10, 0, 0);

function fixture(name: string): Record<string, any> {
  return JSON.parse(readFileSync(new URL(`../fixtures/otlp/${name}.json`, import.meta.url), 'utf8'));
}
function mapFixture(body: unknown) {
  return mapOtlpToBatches(decodeOtlpJson(body), { now: NOW });
}

describe('pytest-opentelemetry', () => {
  it('maps the session to the run and each node id to file, suite, title and params', () => {
    const { batches, rejected } = mapFixture(fixture('pytest-opentelemetry'));
    expect(rejected).toEqual([]);
    expect(batches).toHaveLength(1);
    const b = batches[0]!;
    // service.version is `git rev-parse HEAD`; no branch is sent.
    expect(b.resource).toEqual({ ciProvider: 'other', commitSha: '3f786850e387550fdab836ed7e6dc881de23001b', branch: 'local', trigger: 'other' });
    expect(b.run).toMatchObject({ status: 'failed', startedAt: T0, finishedAt: T0 + 900, hasRunSpan: true, statusExplicit: false });
    expect(b.executions.map((e) => [e.filePath, e.suite, e.title, e.params, e.status])).toEqual([
      ['tests/test_cart.py', 'TestCart', 'test_adds', { id: 'small' }, 'pass'],
      ['tests/test_cart.py', 'TestCart', 'test_adds', { id: 'large' }, 'fail'],
      ['tests/test_checkout.py', '', 'test_pays_by_card', undefined, 'pass'],
    ]);
    expect(b.executions[1]!.error).toEqual({
      type: 'AssertionError',
      message: 'assert 3 == 4',
      stack: expect.stringContaining('AssertionError: assert 3 == 4'),
    });
    // setup/call/teardown are the case's spans, not cases; code.* stays as attributes.
    expect(b.executions[0]!.spans!.map((s) => s.name)).toEqual([
      'tests/test_cart.py::TestCart::test_adds[small]::setup',
      'tests/test_cart.py::TestCart::test_adds[small]::call',
      'tests/test_cart.py::TestCart::test_adds[small]::teardown',
    ]);
    expect(b.executions[0]!.attributes).toMatchObject({ 'code.function': 'test_adds[small]', 'code.lineno': 12, 'code.namespace': 'tests.test_cart.TestCart' });
  });

  it('a part holding only the session span (it ends last) is still the run span', () => {
    const body = fixture('pytest-opentelemetry');
    const spans = body.resourceSpans[0].scopeSpans[0].spans as { name: string }[];
    body.resourceSpans[0].scopeSpans[0].spans = spans.filter((s) => s.name === 'test session');
    const { batches } = mapFixture(body);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.run.hasRunSpan).toBe(true);
    expect(batches[0]!.executions).toEqual([]);
  });

  it('later releases name the session span `test run`: still the run span, with code.lineno as text', () => {
    const body = fixture('pytest-opentelemetry');
    const spans = body.resourceSpans[0].scopeSpans[0].spans as { name: string; attributes: { key: string; value: Record<string, unknown> }[] }[];
    for (const s of spans) {
      if (s.name === 'test session') s.name = 'test run';
      for (const a of s.attributes ?? []) if (a.key === 'code.lineno') a.value = { stringValue: String(Object.values(a.value)[0]) };
    }
    const { batches } = mapFixture(body);
    const original = mapFixture(fixture('pytest-opentelemetry')).batches;
    expect(batches).toHaveLength(original.length);
    expect(batches[0]!.run).toEqual(original[0]!.run);
    expect(batches[0]!.executions.map((e) => e.title)).toEqual(original[0]!.executions.map((e) => e.title));
  });

  it('a release version in service.version is no commit', () => {
    const body = fixture('pytest-opentelemetry');
    for (const a of body.resourceSpans[0].resource.attributes) if (a.key === 'service.version') a.value = { stringValue: '20240101' };
    expect(mapFixture(body).batches[0]!.resource.commitSha).toBe('0000000');
  });

  it('parses node ids: nested classes, params holding `::` and `[`, module-level tests', () => {
    expect(parseNodeId('tests/a.py::TestA::TestB::test_x[a::b-[1]]')).toEqual({ filePath: 'tests/a.py', suite: 'TestA::TestB', title: 'test_x', params: { id: 'a::b-[1]' } });
    expect(parseNodeId('tests/a.py::test_y')).toEqual({ filePath: 'tests/a.py', suite: '', title: 'test_y' });
  });

  it('recognises test spans by shape only', () => {
    const span = (name: string, attributes: OtlpSpan['attributes']): OtlpSpan =>
      ({ name, attributes, traceId: '', spanId: '', startTimeMs: 0, endTimeMs: 0, durationMs: 0, kind: 1, statusCode: 'unset', events: [] }) as unknown as OtlpSpan;
    expect(pytestNodeId(span('tests/a.py::test_y[1]', { 'code.function': 'test_y[1]' }))).toBe('tests/a.py::test_y[1]');
    expect(pytestNodeId(span('tests/a.py::test_y::call', {}))).toBeUndefined();
    expect(pytestNodeId(span('tests/a.py::test_y::call', { 'pytest.nodeid': 'tests/a.py::test_y' }))).toBeUndefined();
    expect(pytestNodeId(span('tests/a.py::test_y', { 'pytest.nodeid': 'tests/a.py::test_y' }))).toBe('tests/a.py::test_y');
    // A Rust `tracing` span: a module path, no file.
    expect(pytestNodeId(span('app::db::query', { 'code.function': 'query' }))).toBeUndefined();
  });
});

describe('OpenTelemetry test semantic conventions', () => {
  it('maps test.suite.* and test.case.*: the suite span is the run, cases inherit its name', () => {
    const { batches, rejected } = mapFixture(fixture('semconv-test'));
    expect(rejected).toEqual([]);
    const b = batches[0]!;
    expect(b.resource).toMatchObject({ commitSha: '9c1185a5c5e9fc54612808977ee8f548b2258d31', branch: 'main' });
    expect(b.run).toMatchObject({ status: 'failed', statusExplicit: true, startedAt: T0 + 60_000 });
    expect(b.executions.map((e) => [e.filePath, e.suite, e.title, e.status])).toEqual([
      ['src/test/java/org/example/CartTest.java', 'org.example.CartTest', 'addsItem', 'pass'],
      ['src/test/java/org/example/CartTest.java', 'org.example.CartTest', 'removesItem', 'fail'],
    ]);
    expect(b.executions[1]!.error).toMatchObject({ type: 'org.opentest4j.AssertionFailedError', message: 'expected: <0> but was: <1>' });
  });

  it.each([
    ['success', 'passed'],
    ['aborted', 'canceled'],
    ['timed_out', 'failed'],
    ['in_progress', 'running'],
  ])('test.suite.run.status %s → run %s', (value, status) => {
    const body = fixture('semconv-test');
    const suite = body.resourceSpans[0].scopeSpans[0].spans[0];
    suite.attributes = suite.attributes.map((a: any) => (a.key === 'test.suite.run.status' ? { ...a, value: { stringValue: value } } : a));
    expect(mapFixture(body).batches[0]!.run).toMatchObject({ status, statusExplicit: true });
  });

  it('an unknown test.case.result.status refuses that span only', () => {
    const body = fixture('semconv-test');
    const tc = body.resourceSpans[0].scopeSpans[0].spans[1];
    tc.attributes = tc.attributes.map((a: any) => (a.key === 'test.case.result.status' ? { ...a, value: { stringValue: 'timed_out' } } : a));
    const { batches, rejected } = mapFixture(body);
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.message).toContain('test.case.result.status "timed_out"');
    expect(batches[0]!.executions.map((e) => e.title)).toEqual(['removesItem']);
  });
});

describe('OpenTelemetry CI/CD and VCS conventions', () => {
  it('maps cicd.pipeline.* and vcs.* to the run resource', () => {
    const { batches, rejected } = mapFixture(fixture('cicd-vcs'));
    expect(rejected).toEqual([]);
    const b = batches[0]!;
    expect(b.resource).toEqual({
      ciProvider: 'github_actions',
      ciRunId: '9876543210',
      ciJobUrl: 'https://github.com/acme/shop/actions/runs/9876543210',
      commitSha: '0beec7b5ea3f0fdbc95d0dd47f3c5bc275da8a33',
      branch: 'feature/cart-totals',
      baseBranch: 'main',
      mergeBase: '62cdb7020ff920e5aa642c3d4066950dd1f01f4d',
      prNumber: 123,
      repository: 'acme/shop',
      trigger: 'other',
      // The task span the cases ran under names the job (cicd.pipeline.task.name).
      ciJobName: 'test (1/2)',
    });
    // The pipeline span (first to start) is the run, not the task span under it.
    expect(b.run).toMatchObject({ status: 'passed', statusExplicit: true, startedAt: T0 + 120_000, finishedAt: T0 + 125_000, hasRunSpan: true });
    expect(b.executions.map((e) => [e.filePath, e.suite, e.title, e.status])).toEqual([
      ['src/cart.test.ts', 'cart totals', 'sums line items', 'pass'],
      ['src/cart.test.ts', 'cart totals', 'applies tax', 'pass'],
    ]);
  });

  it('without the pipeline URL the task run URL is the job URL; a non-numeric change id is no PR', () => {
    const body = fixture('cicd-vcs');
    const pipeline = body.resourceSpans[0].scopeSpans[0].spans[0];
    pipeline.attributes = pipeline.attributes
      .filter((a: any) => a.key !== 'cicd.pipeline.run.url.full')
      .map((a: any) => (a.key === 'vcs.change.id' ? { ...a, value: { stringValue: 'I8473b95934b5732ac55d26311a706c9c2bde9940' } } : a));
    // The task span is not the run span, so its URL counts only when it is on the resource.
    body.resourceSpans[0].resource.attributes.push({
      key: 'cicd.pipeline.task.run.url.full',
      value: { stringValue: 'https://gitlab.example.com/acme/shop/-/jobs/31415926' },
    });
    const r = mapFixture(body).batches[0]!.resource;
    expect(r.ciJobUrl).toBe('https://gitlab.example.com/acme/shop/-/jobs/31415926');
    expect(r.ciProvider).toBe('gitlab_ci');
    expect(r.prNumber).toBeUndefined();
  });

  it('our keys win over the conventions: test.run beats the pipeline span, test.title beats test.case.name', () => {
    const body = fixture('cicd-vcs');
    const spans = body.resourceSpans[0].scopeSpans[0].spans;
    spans[1].name = 'test.run';
    spans[2].attributes.push({ key: 'test.title', value: { stringValue: 'own title' } }, { key: 'test.suite', value: { stringValue: 'own suite' } });
    const b = mapFixture(body).batches[0]!;
    expect(b.run).toMatchObject({ startedAt: T0 + 120_100, finishedAt: T0 + 124_900 });
    expect(b.executions[0]).toMatchObject({ title: 'own title', suite: 'own suite' });
  });
});
