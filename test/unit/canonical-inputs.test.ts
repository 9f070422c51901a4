// Issue 28 "Hardening the door": canonical text (NFC) for identity, impossible values refused
// rather than rewritten, one depth limit for free-form values, OTLP spans refused one by one.
// The pure parts; the door behaviour is in test/integration/canonical-inputs.test.ts.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import protobuf from 'protobufjs';
import type { ExecutionInput, IngestBatch } from '../../client/src/contract/batch.js';
import { canonicalText, fingerprint } from '../../client/src/contract/identity.js';
import { STORABLE, UnstorableError, sanitizeBatch } from '../../client/src/contract/storable.js';
import { impossibleTimestamp, parseTimestamp, readTimestamp } from '../../client/src/contract/time.js';
import { impossibleJUnitTimestamp, parseJUnitTimestamp, secondsToMs } from '../../client/src/contract/junit/helpers.js';
import { parseJUnit } from '../../client/src/contract/junit/parse.js';
import { nativeBatchSchema } from '../../src/receivers/native/schema.js';
import { OtlpDecodeError, decodeOtlpJson, decodeOtlpProtobuf } from '../../src/receivers/otlp/decode.js';
import { partialSuccessOf } from '../../src/receivers/otlp/index.js';
import { mapOtlpToBatches } from '../../src/receivers/otlp/map.js';

const NFC = 'caf\u00e9';
const NFD = 'cafe\u0301';
const T = Date.UTC(2026, 1, 1, 9);
const NOW = Date.UTC(2026, 5, 1);

describe('canonical text (NFC)', () => {
  it('NFC and NFD spellings are one canonical text; ASCII is returned as is', () => {
    expect(NFC).not.toBe(NFD);
    expect(canonicalText(NFD)).toBe(NFC);
    expect(canonicalText(NFC)).toBe(NFC);
    const ascii = 'src/a.test.ts';
    expect(canonicalText(ascii)).toBe(ascii);
  });

  function exec(over: Partial<ExecutionInput> = {}): ExecutionInput {
    return { filePath: 'src/a.test.ts', suite: 'S', title: 't', status: 'pass', attempt: 1, startedAt: T, durationMs: 5, ...over };
  }
  function batch(executions: ExecutionInput[]): IngestBatch {
    return {
      contractVersion: '0.1.0',
      idempotencyKey: 'key-12345678',
      resource: { ciProvider: 'local', commitSha: 'abcdef1', branch: 'main', trigger: 'push' },
      run: { status: 'passed', startedAt: T },
      executions,
    };
  }

  it('sanitizeBatch stores identity text (filePath, suite, title, params keys and strings) in NFC, display text as received', () => {
    const b = batch([
      exec({
        filePath: `src/${NFD}.test.ts`,
        suite: `${NFD} suite`,
        title: `orders a ${NFD}`,
        params: { [NFD]: NFD, nested: [{ [NFD]: 1 }] },
        error: { message: `no ${NFD}` },
        attributes: { [NFD]: NFD },
      }),
    ]);
    sanitizeBatch(b);
    const e = b.executions[0]!;
    expect(e.filePath).toBe(`src/${NFC}.test.ts`);
    expect(e.suite).toBe(`${NFC} suite`);
    expect(e.title).toBe(`orders a ${NFC}`);
    expect(e.params).toEqual({ [NFC]: NFC, nested: [{ [NFC]: 1 }] });
    expect(Object.keys(e.params!)).not.toContain(NFD);
    // Not part of the identity: kept byte for byte as the runner wrote it.
    expect(e.error!.message).toBe(`no ${NFD}`);
    expect(e.attributes).toEqual({ [NFD]: NFD });
  });

  it('after the door, NFC and NFD names have one fingerprint', () => {
    const a = batch([exec({ title: NFC, params: { [NFC]: 1 } })]);
    const b = batch([exec({ title: NFD, params: { [NFD]: 1 } })]);
    expect(fingerprint(a.executions[0]!)).not.toBe(fingerprint(b.executions[0]!));
    sanitizeBatch(a);
    sanitizeBatch(b);
    expect(fingerprint(a.executions[0]!)).toBe(fingerprint(b.executions[0]!));
  });

  it('params holding one key in both forms are refused (which value is the test’s would be a guess)', () => {
    const b = batch([exec({ params: { [NFC]: 1, [NFD]: 2 } })]);
    let err: unknown;
    try {
      sanitizeBatch(b);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UnstorableError);
    expect((err as UnstorableError).path).toBe(`executions.0.params.${NFC}`);
  });
});

describe('impossible calendar dates (client/src/contract/time.ts)', () => {
  it('refuses a day the month does not have instead of rolling it over', () => {
    expect(Date.parse('2026-02-30')).toBe(Date.UTC(2026, 2, 2)); // what the JS parser does
    expect(parseTimestamp('2026-02-30')).toBeUndefined();
    expect(readTimestamp('2026-02-30T10:00:00Z')).toEqual({ ok: false, reason: 'not a calendar date: February 2026 has 28 days, not day 30' });
    expect(parseTimestamp('2026-04-31T00:00:00.000Z')).toBeUndefined();
    expect(parseTimestamp('2023-02-29')).toBeUndefined();
    expect(parseTimestamp('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
  });

  it('refuses impossible times of day and zone offsets; keeps 24:00 (the next midnight)', () => {
    expect(impossibleTimestamp('2026-01-01T25:00:00Z')).toBe('hour 25 does not exist');
    expect(impossibleTimestamp('2026-01-01T24:30:00Z')).toBe('hour 24 does not exist');
    expect(impossibleTimestamp('2026-01-01T10:61:00Z')).toBe('minute 61 does not exist');
    expect(impossibleTimestamp('2026-13-01')).toBe('month 13 does not exist');
    expect(impossibleTimestamp('2026-01-01T10:00:00+24:00')).toMatch(/^zone offset/);
    expect(parseTimestamp('2026-01-01T24:00:00Z')).toBe(Date.UTC(2026, 0, 2));
  });

  it('valid timestamps and epoch milliseconds read as before', () => {
    expect(parseTimestamp('2026-02-28T10:00:00.123Z')).toBe(Date.UTC(2026, 1, 28, 10, 0, 0, 123));
    expect(parseTimestamp('2026-02-28T10:00:00+01:00')).toBe(Date.UTC(2026, 1, 28, 9));
    expect(parseTimestamp(T)).toBe(T);
    expect(parseTimestamp(String(T))).toBe(T);
    expect(readTimestamp('soon')).toEqual({ ok: false, reason: 'expected an ISO-8601 timestamp or epoch milliseconds' });
  });

  it('the native schema names the field and the reason', () => {
    const body = {
      contractVersion: '0.1.0',
      idempotencyKey: 'key-12345678',
      resource: { ciProvider: 'local', commitSha: 'abcdef1', branch: 'main', trigger: 'push' },
      run: { status: 'passed', startedAt: '2026-02-30T10:00:00Z' },
      executions: [],
    };
    const parsed = nativeBatchSchema.safeParse(body);
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['run.startedAt', 'not a calendar date: February 2026 has 28 days, not day 30'],
    ]);
  });
});

describe('a run that ends before it starts (native schema)', () => {
  const base = {
    contractVersion: '0.1.0',
    idempotencyKey: 'key-12345678',
    resource: { ciProvider: 'local', commitSha: 'abcdef1', branch: 'main', trigger: 'push' },
    executions: [],
  };

  it('is refused at run.finishedAt', () => {
    const parsed = nativeBatchSchema.safeParse({ ...base, run: { status: 'passed', startedAt: T, finishedAt: T - 1 } });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['run.finishedAt', 'must not be before run.startedAt (2026-02-01T08:59:59.999Z < 2026-02-01T09:00:00.000Z)'],
    ]);
  });

  it('ending when it starts, or later, is taken', () => {
    expect(nativeBatchSchema.safeParse({ ...base, run: { status: 'passed', startedAt: T, finishedAt: T } }).success).toBe(true);
    expect(nativeBatchSchema.safeParse({ ...base, run: { status: 'passed', startedAt: T, finishedAt: T + 1 } }).success).toBe(true);
  });

  it('an unstorable start does not make the message throw', () => {
    const parsed = nativeBatchSchema.safeParse({ ...base, run: { status: 'passed', startedAt: 1e300, finishedAt: T } });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0]!.message).toBe(`must not be before run.startedAt (2026-02-01T09:00:00.000Z < 1e+300 ms)`);
  });
});

describe('JUnit values', () => {
  it('time with a decimal comma is a decimal (1,5 → 1.5 s; 1,500 → 1.5 s: xs:decimal has no grouping)', () => {
    expect(secondsToMs('1,5')).toBe(1500);
    expect(secondsToMs('1,500')).toBe(1500);
    expect(secondsToMs('0,012')).toBe(12);
    expect(secondsToMs('12,25')).toBe(12_250);
    expect(secondsToMs('1.5')).toBe(1500);
    // Not a decimal: still unusable (0), as before.
    expect(secondsToMs('1,234.5')).toBe(0);
    expect(secondsToMs('1,2,3')).toBe(0);
    expect(secondsToMs(',5')).toBe(0);
    expect(secondsToMs('')).toBe(0);
  });

  it('the timestamp helper tells an impossible date from an unusable one', () => {
    expect(impossibleJUnitTimestamp('2026-02-30T10:00:00')).toBe('February 2026 has 28 days, not day 30');
    expect(impossibleJUnitTimestamp('2026-02-30 10:00:00 UTC')).toBe('February 2026 has 28 days, not day 30');
    expect(parseJUnitTimestamp('2026-02-30T10:00:00')).toBeUndefined();
    expect(impossibleJUnitTimestamp('2026-02-28T10:00:00')).toBeUndefined();
    expect(parseJUnitTimestamp('2026-02-28T10:00:00')).toBe(Date.UTC(2026, 1, 28, 10));
    expect(impossibleJUnitTimestamp('yesterday')).toBeUndefined();
    expect(impossibleJUnitTimestamp(undefined)).toBeUndefined();
  });

  it('a suite or testcase timestamp that names no real date refuses the report (invalid_value), with the position', () => {
    const suite = parseJUnit('<testsuite name="S" timestamp="2026-02-30T10:00:00"><testcase name="a"/></testsuite>', { now: NOW });
    expect(suite).toEqual({
      ok: false,
      error: 'invalid_value',
      message: '<testsuite name="S"> timestamp "2026-02-30T10:00:00" is not a calendar date: February 2026 has 28 days, not day 30 at line 1, column 52',
    });
    const tc = parseJUnit('<testsuite name="S">\n<testcase name="a" timestamp="2025-11-31T00:00:00"/></testsuite>', { now: NOW });
    expect(tc.ok).toBe(false);
    expect(!tc.ok && tc.error).toBe('invalid_value');
    expect(!tc.ok && tc.message).toMatch(/^<testcase name="a"> timestamp "2025-11-31T00:00:00" is not a calendar date: November 2025 has 30 days, not day 31 at line 2,/);
  });

  it('a decimal-comma time reaches the execution', () => {
    const r = parseJUnit('<testsuite name="S"><testcase name="a" time="1,5"/></testsuite>', { now: NOW });
    expect(r.ok && r.executions[0]!.durationMs).toBe(1500);
  });

  it('one testcase repeated in NFC and NFD form is one test with two attempts', () => {
    const r = parseJUnit(`<testsuite name="S"><testcase name="${NFC}"><failure/></testcase><testcase name="${NFD}"/></testsuite>`, { now: NOW });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.executions.map((e) => [e.attempt, e.status])).toEqual([
      [1, 'fail'],
      [2, 'flaky'],
    ]);
  });
});

// --- OTLP ---------------------------------------------------------------------------------------

const TRACE = '5b8efff798038103d269b633813fc60c';
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
const S0 = BigInt(T) * 1_000_000n;

function jsonSpan(spanId: string, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { traceId: TRACE, spanId, name, startTimeUnixNano: String(S0), endTimeUnixNano: String(S0 + 100_000_000n), ...extra };
}
function jsonRequest(spans: unknown[], resource: unknown[] = []): Record<string, unknown> {
  return { resourceSpans: [{ resource: { attributes: resource }, scopeSpans: [{ spans }] }] };
}
function kv(key: string, value: Record<string, unknown>): Record<string, unknown> {
  return { key, value };
}
/** An AnyValue that is `levels` arrays deep around a string. */
function deepArray(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = { stringValue: 'x' };
  for (let i = 0; i < levels; i++) v = { arrayValue: { values: [v] } };
  return v;
}

const RequestType = (() => {
  const root = new protobuf.Root();
  const dir = path.resolve(import.meta.dirname, '../../src/otlp/proto');
  root.resolvePath = (_origin, target) => path.join(dir, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  root.resolveAll();
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
})();

/** The JSON request as protobuf (hex ids become bytes). */
function toProtobuf(json: Record<string, unknown>): Uint8Array {
  const bytesOf = (hex: unknown) => (typeof hex === 'string' ? Buffer.from(hex, 'hex') : hex);
  const copy = JSON.parse(JSON.stringify(json)) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
  for (const rs of copy.resourceSpans) {
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) for (const k of ['traceId', 'spanId', 'parentSpanId']) if (s[k] !== undefined) s[k] = bytesOf(s[k]);
    }
  }
  return RequestType.encode(RequestType.fromObject(copy)).finish();
}

/** Length-delimited field `field` holding `body` (protobuf wire type 2). */
function lenField(field: number, body: Uint8Array): Uint8Array {
  const len: number[] = [];
  let n = body.length;
  while (n > 0x7f) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...len]), body]);
}

/**
 * A request whose one span has an attribute `levels` arrays deep, encoded by hand: protobufjs
 * refuses to encode past its own recursion limit, and the receiver must answer such bytes too.
 */
function deepProtobufRequest(levels: number): Uint8Array {
  let value: Uint8Array = lenField(1, Buffer.from('x')); // AnyValue{string_value}
  for (let i = 0; i < levels; i++) value = lenField(5, lenField(1, value)); // AnyValue{array_value: ArrayValue{values}}
  const attribute = Buffer.concat([lenField(1, Buffer.from('deep')), lenField(2, value)]); // KeyValue{key, value}
  const SpanType = RequestType.lookupType('opentelemetry.proto.trace.v1.Span');
  const span = SpanType.encode(
    SpanType.fromObject({ traceId: Buffer.from(TRACE, 'hex'), spanId: Buffer.from('00000000000000a1', 'hex'), name: 'test.case', startTimeUnixNano: String(S0), endTimeUnixNano: String(S0 + 1n) }),
  ).finish();
  const spanWithAttr = Buffer.concat([span, lenField(9, attribute)]); // Span.attributes = 9
  return lenField(1, lenField(2, lenField(2, spanWithAttr))); // request.resource_spans.scope_spans.spans
}

function decodeError(fn: () => unknown): OtlpDecodeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof OtlpDecodeError) return err;
    throw err;
  }
  throw new Error('expected an OtlpDecodeError');
}

describe('OTLP invalid spans are rejected one by one (partial success)', () => {
  for (const encoding of ['json', 'protobuf'] as const) {
    const decode = (json: Record<string, unknown>) => (encoding === 'json' ? decodeOtlpJson(json) : decodeOtlpProtobuf(toProtobuf(json)));

    it(`${encoding}: all-zero trace and span ids are invalid; an all-zero parent is a root`, () => {
      const req = decode(
        jsonRequest([
          jsonSpan('00000000000000a1', 'test.case', { traceId: ZERO_TRACE }),
          jsonSpan(ZERO_SPAN, 'test.case'),
          jsonSpan('00000000000000a3', 'test.case', { parentSpanId: ZERO_SPAN }),
        ]),
      );
      expect(req.rejected).toEqual([
        { path: 'resourceSpans.0.scopeSpans.0.spans.0.traceId', message: 'all zero: not a valid id (OTLP)' },
        { path: 'resourceSpans.0.scopeSpans.0.spans.1.spanId', message: 'all zero: not a valid id (OTLP)' },
      ]);
      expect(req.resourceSpans[0]!.spans.map((s) => [s.spanId, s.parentSpanId])).toEqual([['00000000000000a3', undefined]]);
    });

    it(`${encoding}: a span id of the wrong length and a span ending before it starts are rejected`, () => {
      const req = decode(
        jsonRequest([
          jsonSpan('00000000000000a1', 'test.case', { parentSpanId: 'abcd' }),
          jsonSpan('00000000000000a2', 'test.run', { endTimeUnixNano: String(S0 - 1_000_000n) }),
          jsonSpan('00000000000000a3', 'test.case'),
        ]),
      );
      expect(req.rejected).toEqual([
        { path: 'resourceSpans.0.scopeSpans.0.spans.0.parentSpanId', message: encoding === 'json' ? 'expected 16 hex characters' : 'expected 8 bytes, got 2' },
        { path: 'resourceSpans.0.scopeSpans.0.spans.1.endTimeUnixNano', message: 'the span ends before it starts (endTimeUnixNano < startTimeUnixNano)' },
      ]);
      expect(req.resourceSpans[0]!.spans).toHaveLength(1);
    });
  }

  it('partialSuccessOf counts every rejection and names the first five', () => {
    expect(partialSuccessOf([])).toBeUndefined();
    expect(partialSuccessOf([{ path: 'a', message: 'x' }])).toEqual({ rejectedSpans: 1, errorMessage: '1 span rejected: a: x' });
    const seven = Array.from({ length: 7 }, (_, i) => ({ path: `p${i}`, message: 'm' }));
    expect(partialSuccessOf(seven)).toEqual({ rejectedSpans: 7, errorMessage: '7 spans rejected: p0: m; p1: m; p2: m; p3: m; p4: m; and 2 more' });
  });
});

describe('OTLP attribute values share the documented depth limit (STORABLE.maxJsonDepth), in JSON and protobuf', () => {
  // The attribute set is the first level, as the native route's `attributes` object is.
  const limit = STORABLE.maxJsonDepth - 1;
  const tooDeepMessage = `nested too deeply: at most ${STORABLE.maxJsonDepth} levels of objects and arrays`;

  for (const encoding of ['json', 'protobuf'] as const) {
    const decode = (json: Record<string, unknown>) => (encoding === 'json' ? decodeOtlpJson(json) : decodeOtlpProtobuf(toProtobuf(json)));

    it(`${encoding}: ${limit} levels are taken, ${limit + 1} refused naming the attribute`, () => {
      const ok = decode(jsonRequest([jsonSpan('00000000000000a1', 'test.case', { attributes: [kv('deep', deepArray(limit))] })]));
      const stored = ok.resourceSpans[0]!.spans[0]!.attributes['deep'];
      expect(stored).toBe(`${'['.repeat(limit)}"x"${']'.repeat(limit)}`);

      const err = decodeError(() => decode(jsonRequest([jsonSpan('00000000000000a1', 'test.case', { attributes: [kv('deep', deepArray(limit + 1))] })])));
      expect(err.message).toBe(tooDeepMessage);
      expect(err.path).toBe('resourceSpans.0.scopeSpans.0.spans.0.attributes.deep');
    });

    it(`${encoding}: resource and event attributes too; 99 levels (past protobufjs' own limit for protobuf) get the same answer`, () => {
      const res = decodeError(() => decode(jsonRequest([], [kv('r', deepArray(limit + 1))])));
      expect([res.path, res.message]).toEqual(['resourceSpans.0.resource.attributes.r', tooDeepMessage]);
      const ev = decodeError(() =>
        decode(jsonRequest([jsonSpan('00000000000000a1', 'test.case', { events: [{ name: 'e', attributes: [kv('k', deepArray(limit + 1))] }] })])),
      );
      expect([ev.path, ev.message]).toEqual(['resourceSpans.0.scopeSpans.0.spans.0.events.0.attributes.k', tooDeepMessage]);
      for (const levels of [99, 200]) {
        const deep = decodeError(() =>
          encoding === 'json'
            ? decodeOtlpJson(jsonRequest([jsonSpan('00000000000000a1', 'test.case', { attributes: [kv('deep', deepArray(levels))] })]))
            : decodeOtlpProtobuf(deepProtobufRequest(levels)),
        );
        expect(deep.message).toBe(tooDeepMessage);
      }
      // The hand-made encoding is the one protobufjs would write: at the limit it decodes.
      const ok = decodeOtlpProtobuf(deepProtobufRequest(limit));
      expect(ok.resourceSpans[0]!.spans[0]!.attributes['deep']).toBe(`${'['.repeat(limit)}"x"${']'.repeat(limit)}`);
    });
  }
});

describe('OTLP test status the receiver does not know', () => {
  function caseSpan(spanId: string, attrs: Record<string, string | number>, status?: number): Record<string, unknown> {
    const attributes = Object.entries(attrs).map(([k, v]) => kv(k, typeof v === 'number' ? { intValue: String(v) } : { stringValue: v }));
    return jsonSpan(spanId, 'test.case', { attributes, ...(status === undefined ? {} : { status: { code: status } }) });
  }

  it('refuses the span (never `pass`), keeps the rest of the trace, and says why', () => {
    const req = decodeOtlpJson(
      jsonRequest([
        caseSpan('00000000000000a1', { 'test.title': 'times out', 'test.case.result.status': 'timedout' }),
        caseSpan('00000000000000a2', { 'test.title': 'numbered', 'test.case.result.status': 3 }),
        caseSpan('00000000000000a3', { 'test.title': 'odd test.status', 'test.status': 'weird' }, 2),
        caseSpan('00000000000000a4', { 'test.title': 'ok', 'test.case.result.status': 'pass' }),
      ]),
    );
    const { batches, rejected } = mapOtlpToBatches(req, { now: NOW });
    expect(batches).toHaveLength(1);
    expect(batches[0]!.executions.map((e) => [e.title, e.status])).toEqual([['ok', 'pass']]);
    expect(rejected.map((r) => r.path)).toEqual([
      `trace ${TRACE} span 00000000000000a1`,
      `trace ${TRACE} span 00000000000000a2`,
      `trace ${TRACE} span 00000000000000a3`,
    ]);
    expect(rejected[0]!.message).toBe(
      'test.case.result.status "timedout" is not a status this server knows (test.status: pass, fail, skip, flaky; test.case.result.status: pass, fail, skip); the test case is not stored',
    );
    expect(rejected[1]!.message).toMatch(/^test\.case\.result\.status 3 is not a status/);
    expect(rejected[2]!.message).toMatch(/^test\.status "weird" is not a status/);
  });

  it('known statuses still map; an unknown test.status falls back to a known test.case.result.status', () => {
    const req = decodeOtlpJson(
      jsonRequest([
        caseSpan('00000000000000a1', { 'test.title': 'a', 'test.case.result.status': 'FAILED' }),
        caseSpan('00000000000000a2', { 'test.title': 'b', 'test.status': 'weird', 'test.case.result.status': 'skipped' }),
        caseSpan('00000000000000a3', { 'test.title': 'c' }, 2),
        caseSpan('00000000000000a4', { 'test.title': 'd' }),
      ]),
    );
    const { batches, rejected } = mapOtlpToBatches(req, { now: NOW });
    expect(rejected).toEqual([]);
    expect(batches[0]!.executions.map((e) => [e.title, e.status])).toEqual([
      ['a', 'fail'],
      ['b', 'skip'],
      ['c', 'fail'],
      ['d', 'pass'],
    ]);
  });
});
