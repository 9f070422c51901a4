// Issue 28 "Hardening the door", through the real daemon: one test whatever the Unicode form of
// its name (every receiver), impossible values refused with 400 naming the path instead of being
// rewritten, OTLP spans that cannot be read refused one by one (partial success), and one depth
// limit for attribute values in every encoding. Pure parts: test/unit/canonical-inputs.test.ts.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import protobuf from 'protobufjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

let td: TestDaemon;

beforeAll(async () => {
  td = await startTestDaemon({ env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
});

afterAll(async () => {
  await td?.close();
});

const NFC = 'caf\u00e9';
const NFD = 'cafe\u0301';
const hex = (n: number): string => randomBytes(n).toString('hex');
const branchName = (label: string): string => `${label}-${hex(4)}`;
const T0 = Date.UTC(2026, 1, 1, 9);
const NS0 = BigInt(T0) * 1_000_000n;

type Res = Awaited<ReturnType<TestDaemon['request']>>;

function expectRefused(res: Res, path: string): void {
  expect(res.status, res.text).toBe(400);
  expect(res.json.error).toBe('invalid_payload');
  expect(res.json.issues.map((i: { path: string }) => i.path), res.text).toContain(path);
}

/** The run stored on `branch`, with its executions, once the worker has written `count` executions. */
async function storedRun(branch: string, count: number): Promise<any> {
  await td.settled();
  return td.waitFor(async () => {
    const list = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
    const run = list.json.items?.[0];
    if (!run) return undefined;
    const detail = await td.request('GET', `/v1/runs/${run.id}`);
    return detail.json.executions?.length >= count ? detail.json : undefined;
  }, 20_000);
}

function kv(key: string, value: string | number): Record<string, unknown> {
  return { key, value: typeof value === 'string' ? { stringValue: value } : { intValue: String(value) } };
}

function otlpRequest(branch: string, cases: { title: string; attrs?: Record<string, string | number>; traceId?: string; spanId?: string }[], traceId = hex(16)): Record<string, unknown> {
  const runSpan = hex(8);
  return {
    resourceSpans: [
      {
        resource: { attributes: [kv('vcs.ref.head.name', branch), kv('vcs.ref.head.revision', 'abcdef1234')] },
        scopeSpans: [
          {
            spans: [
              { traceId, spanId: runSpan, name: 'test.run', startTimeUnixNano: String(NS0), endTimeUnixNano: String(NS0 + 1_000_000_000n) },
              ...cases.map((c, i) => ({
                traceId: c.traceId ?? traceId,
                spanId: c.spanId ?? hex(8),
                parentSpanId: runSpan,
                name: 'test.case',
                startTimeUnixNano: String(NS0 + BigInt(i + 1) * 1_000_000n),
                endTimeUnixNano: String(NS0 + BigInt(i + 2) * 1_000_000n),
                attributes: Object.entries({ 'test.title': c.title, 'test.suite': 'Menu', 'code.file.path': 'src/menu.test.ts', ...c.attrs }).map(([k, v]) => kv(k, v)),
              })),
            ],
          },
        ],
      },
    ],
  };
}

const RequestType = (() => {
  const root = new protobuf.Root();
  const dir = path.resolve(import.meta.dirname, '../../src/otlp/proto');
  root.resolvePath = (_origin, target) => path.join(dir, target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
  root.resolveAll();
  return root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
})();

/** The OTLP/JSON request as protobuf bytes (hex ids become bytes). */
function toProtobuf(json: Record<string, unknown>): Uint8Array {
  const copy = JSON.parse(JSON.stringify(json)) as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] };
  for (const rs of copy.resourceSpans) {
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) for (const k of ['traceId', 'spanId', 'parentSpanId']) if (typeof s[k] === 'string') s[k] = Buffer.from(s[k], 'hex');
    }
  }
  return RequestType.encode(RequestType.fromObject(copy)).finish();
}

describe('canonical text: NFC and NFD names are one test', () => {
  it('native: one batch naming the test in both forms has one testIdentityId, shown in NFC', async () => {
    const branch = branchName('nfc-native');
    const exec = (title: string, suite: string, filePath: string, status: string, attempt: number) => ({
      filePath,
      suite,
      title,
      status,
      attempt,
      startedAt: T0 + attempt,
      durationMs: 3,
      params: { [title]: title },
    });
    await td.ingest(
      nativeBatch({
        resource: { branch },
        executions: [exec(`orders a ${NFC}`, `${NFC} menu`, `src/${NFC}.test.ts`, 'fail', 1), exec(`orders a ${NFD}`, `${NFD} menu`, `src/${NFD}.test.ts`, 'pass', 2)],
      }),
    );
    const run = await storedRun(branch, 2);
    const ids = new Set(run.executions.map((e: any) => e.testIdentityId));
    expect(ids.size).toBe(1);
    expect(run.executions.map((e: any) => [e.title, e.suite, e.filePath])).toEqual([
      [`orders a ${NFC}`, `${NFC} menu`, `src/${NFC}.test.ts`],
      [`orders a ${NFC}`, `${NFC} menu`, `src/${NFC}.test.ts`],
    ]);
    // One test that failed and then passed: counted once, as flaky.
    expect(run.counts).toMatchObject({ total: 1, flaky: 1 });
  });

  it('JUnit and OTLP land on the test the native route named in the other form (a leading BOM too)', async () => {
    const branch = branchName('nfc-receivers');
    await td.ingest(
      nativeBatch({ resource: { branch }, executions: [{ filePath: 'src/menu.test.ts', suite: 'Menu', title: `orders a ${NFC}`, status: 'pass', startedAt: T0, durationMs: 1 }] }),
    );
    const nativeRun = await storedRun(branch, 1);
    const id = nativeRun.executions[0].testIdentityId;

    const junitBranch = branchName('nfc-junit');
    const junit = await td.request('POST', '/v1/ingest/junit', {
      body: {
        idempotencyKey: `junit-${hex(8)}`,
        resource: { ciProvider: 'jenkins', commitSha: 'abcdef1234', branch: junitBranch, trigger: 'push' },
        xml: `<testsuite name="Menu"><testcase classname="Menu" file="src/menu.test.ts" name="\ufefforders a ${NFD}" time="0,25"/></testsuite>`,
      },
    });
    expect(junit.status, junit.text).toBe(202);
    const junitRun = await storedRun(junitBranch, 1);
    expect(junitRun.executions[0].testIdentityId).toBe(id);
    expect(junitRun.executions[0].title).toBe(`orders a ${NFC}`);
    // Decimal comma: 0,25 s is 250 ms, not 0.
    expect(junitRun.executions[0].durationMs).toBe(250);

    const otlpBranch = branchName('nfc-otlp');
    const otlp = await td.request('POST', '/v1/traces', { body: otlpRequest(otlpBranch, [{ title: `orders a ${NFD}` }]) });
    expect(otlp.status, otlp.text).toBe(202);
    const otlpRun = await storedRun(otlpBranch, 1);
    expect(otlpRun.executions[0].testIdentityId).toBe(id);
  });
});

describe('impossible values are refused, not rewritten', () => {
  it('native: an impossible calendar date at the run and at an execution', async () => {
    const run = await td.request('POST', '/v1/ingest', { body: nativeBatch({ run: { startedAt: '2026-02-30T10:00:00Z' } }) });
    expectRefused(run, 'run.startedAt');
    expect(run.json.issues).toContainEqual({ path: 'run.startedAt', message: 'not a calendar date: February 2026 has 28 days, not day 30' });
    const exec = await td.request('POST', '/v1/ingest', {
      body: nativeBatch({ executions: [{ filePath: 'a.ts', suite: '', title: 't', status: 'pass', startedAt: '2025-04-31T00:00:00Z', durationMs: 1 }] }),
    });
    expectRefused(exec, 'executions.0.startedAt');
  });

  it('native: a run that ends before it starts', async () => {
    const res = await td.request('POST', '/v1/ingest', { body: nativeBatch({ run: { startedAt: '2026-02-01T10:00:00Z', finishedAt: '2026-02-01T09:59:59Z' } }) });
    expectRefused(res, 'run.finishedAt');
  });

  it('JUnit: a suite timestamp that is no calendar date refuses the report at `xml`', async () => {
    const res = await td.request('POST', '/v1/ingest/junit', {
      body: {
        idempotencyKey: `junit-${hex(8)}`,
        resource: { ciProvider: 'jenkins', commitSha: 'abcdef1234', branch: 'main', trigger: 'push' },
        xml: '<testsuite name="S" timestamp="2026-02-30T10:00:00"><testcase name="a"/></testsuite>',
      },
    });
    expectRefused(res, 'xml');
    expect(res.json.issues[0].message).toMatch(/is not a calendar date: February 2026 has 28 days/);
  });
});

describe('OTLP: spans that cannot be read are refused one by one (partial success)', () => {
  it('an unknown test.case.result.status is refused, never stored as pass; the trace’s other cases are stored', async () => {
    const branch = branchName('otlp-unknown-status');
    const res = await td.request('POST', '/v1/traces', {
      body: otlpRequest(branch, [
        { title: 'times out', attrs: { 'test.case.result.status': 'timedout' } },
        { title: 'numbered', attrs: { 'test.case.result.status': 3 } },
        { title: 'fine', attrs: { 'test.case.result.status': 'pass' } },
      ]),
    });
    expect(res.status, res.text).toBe(202);
    expect(res.json.acceptedExecutions).toBe(1);
    expect(res.json.partialSuccess.rejectedSpans).toBe(2);
    expect(res.json.partialSuccess.errorMessage).toMatch(/^2 spans rejected: trace [0-9a-f]{32} span [0-9a-f]{16}: test\.case\.result\.status "timedout" is not a status this server knows/);
    const run = await storedRun(branch, 1);
    expect(run.executions.map((e: any) => [e.title, e.status])).toEqual([['fine', 'pass']]);
  });

  for (const encoding of ['json', 'protobuf'] as const) {
    it(`${encoding}: all-zero and wrong-length ids reject their spans only`, async () => {
      const branch = branchName(`otlp-ids-${encoding}`);
      const body = otlpRequest(branch, [
        { title: 'zero trace', traceId: '0'.repeat(32) },
        { title: 'zero span', spanId: '0'.repeat(16) },
        { title: 'short span', spanId: 'abcd' },
        { title: 'good' },
      ]);
      const res =
        encoding === 'json'
          ? await td.request('POST', '/v1/traces', { body })
          : await td.request('POST', '/v1/traces', { body: toProtobuf(body), headers: { 'content-type': 'application/x-protobuf' } });
      expect(res.status, res.text).toBe(202);
      expect(res.json.acceptedExecutions).toBe(1);
      expect(res.json.partialSuccess).toEqual({
        rejectedSpans: 3,
        errorMessage:
          '3 spans rejected: resourceSpans.0.scopeSpans.0.spans.1.traceId: all zero: not a valid id (OTLP); ' +
          'resourceSpans.0.scopeSpans.0.spans.2.spanId: all zero: not a valid id (OTLP); ' +
          `resourceSpans.0.scopeSpans.0.spans.3.spanId: ${encoding === 'json' ? 'expected 16 hex characters' : 'expected 8 bytes, got 2'}`,
      });
      const run = await storedRun(branch, 1);
      expect(run.executions.map((e: any) => e.title)).toEqual(['good']);
    });

    it(`${encoding}: attribute values nested past the documented 32 levels are a 400 naming the attribute; 31 are stored`, async () => {
      const deep = (levels: number): Record<string, unknown> => {
        let v: Record<string, unknown> = { stringValue: 'x' };
        for (let i = 0; i < levels; i++) v = { arrayValue: { values: [v] } };
        return v;
      };
      const withDeep = (branch: string, levels: number) => {
        const body = otlpRequest(branch, [{ title: 'deep' }]) as any;
        body.resourceSpans[0].scopeSpans[0].spans[1].attributes.push({ key: 'deep', value: deep(levels) });
        return body as Record<string, unknown>;
      };
      const send = (body: Record<string, unknown>) =>
        encoding === 'json'
          ? td.request('POST', '/v1/traces', { body })
          : td.request('POST', '/v1/traces', { body: toProtobuf(body), headers: { 'content-type': 'application/x-protobuf' } });
      const refused = await send(withDeep(branchName('otlp-deep'), 32));
      expectRefused(refused, 'resourceSpans.0.scopeSpans.0.spans.1.attributes.deep');
      expect(refused.json.issues[0].message).toBe('nested too deeply: at most 32 levels of objects and arrays');
      const branch = branchName('otlp-deep-ok');
      const ok = await send(withDeep(branch, 31));
      expect(ok.status, ok.text).toBe(202);
      await storedRun(branch, 1);
    });
  }
});
