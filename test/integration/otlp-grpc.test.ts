// OTLP/gRPC (TraceService/Export) against the real daemon, fed by the real
// @opentelemetry/exporter-trace-otlp-grpc, with a raw grpc-js client for what the exporter does
// not show (status details, RetryInfo, a call without metadata) — docs/contract.md §4.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { exportSpans, grpcPipelineFile, handMadeRequest, rawExport, testRunSpans } from '../helpers/otlp-grpc.js';
import { readRetryDelaySec } from '../../src/otlp/grpc-service.js';

const EXPORT_SUCCESS = 0; // ExportResultCode.SUCCESS in @opentelemetry/core

let td: TestDaemon;
let address: string;

beforeAll(async () => {
  td = await startTestDaemon({ pipelineFile: grpcPipelineFile(), env: { SERVICE_RATE_LIMIT_MAX: '100000' } });
  address = td.daemon.listeners.get('otlp:grpc')!;
});

afterAll(async () => {
  await td?.close();
});

function exporter(token: string | null, compression = CompressionAlgorithm.NONE): GrpcExporter {
  const metadata = new Metadata();
  if (token !== null) metadata.set('authorization', `Bearer ${token}`);
  return new GrpcExporter({ url: `http://${address}`, metadata, compression });
}

function codeOf(error: Error | undefined): number | undefined {
  return (error as Partial<ServiceError> | undefined)?.code;
}

async function storedRun(branch: string): Promise<any> {
  await td.settled();
  const run = await td.waitFor(async () => {
    const res = await td.request('GET', `/v1/runs?branch=${encodeURIComponent(branch)}`);
    return res.json.items.length === 1 && res.json.items[0].counts.total === 2 ? res.json.items[0] : undefined;
  }, 20_000);
  const detail = await td.request('GET', `/v1/runs/${run.id}`);
  return { run, executions: detail.json.executions };
}

/** A run with one case, and a span whose trace id is 3 bytes. */
function requestWithABadSpan(branch: string): Uint8Array {
  const t0 = `${Date.UTC(2026, 1, 4, 9, 0, 0)}000000`;
  return handMadeRequest(branch, { extraSpans: [{ traceId: randomBytes(3), spanId: randomBytes(8), name: 'test.case', startTimeUnixNano: t0, endTimeUnixNano: t0 }] });
}

describe('OTLP/gRPC receiver', () => {
  it('listens on the configured endpoint with the bound port', () => {
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(address).not.toBe('127.0.0.1:0');
  });

  it('stores the run and its executions from the gRPC exporter', async () => {
    const { spans, branch } = testRunSpans('plain');
    const exp = exporter(td.token);
    const result = await exportSpans(exp, spans);
    await exp.shutdown();
    expect(result.error).toBeUndefined();
    expect(result.code).toBe(EXPORT_SUCCESS);
    const { run, executions } = await storedRun(branch);
    expect(run).toMatchObject({ branch, ciProvider: 'github_actions', status: 'failed', durationMs: 100, counts: { total: 2, passed: 1, failed: 1 } });
    expect(executions.map((e: any) => [e.suite, e.title, e.status, e.durationMs, e.errorMessage])).toEqual([
      ['Cart', 'adds items', 'pass', 20, null],
      ['Cart', 'applies coupon', 'fail', 20, 'expected 90 to be 81'],
    ]);
  });

  it('accepts gzip-compressed messages', async () => {
    const { spans, branch } = testRunSpans('gzip');
    const exp = exporter(td.token, CompressionAlgorithm.GZIP);
    const result = await exportSpans(exp, spans);
    await exp.shutdown();
    expect(result.error).toBeUndefined();
    expect((await storedRun(branch)).run.counts).toMatchObject({ total: 2, failed: 1 });
  });

  it('keeps serving OTLP/HTTP beside gRPC (protocols.http)', async () => {
    const res = await td.request('POST', '/v1/traces', { body: { resourceSpans: [] } });
    expect(res.status).toBe(202);
  });

  it('answers UNAUTHENTICATED for an unknown token and for none, PERMISSION_DENIED without scope ingest', async () => {
    const bad = exporter(`fht_${'0'.repeat(40)}`);
    const r1 = await exportSpans(bad, testRunSpans('bad-token').spans);
    await bad.shutdown();
    expect(codeOf(r1.error)).toBe(GrpcStatus.UNAUTHENTICATED);

    const none = await rawExport(address, new Uint8Array());
    expect(none.error?.code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(none.error?.details).toMatch(/^unauthorized/);

    const readOnly = await td.request('POST', '/v1/admin/projects/default/tokens', { token: td.adminToken, body: { scopes: ['read'] } });
    const denied = await rawExport(address, new Uint8Array(), { authorization: `Bearer ${readOnly.json.token}` });
    expect(denied.error?.code).toBe(GrpcStatus.PERMISSION_DENIED);
    expect(denied.error?.details).toMatch(/^insufficient_scope/);
  });

  it('answers INVALID_ARGUMENT for a message that is not an ExportTraceServiceRequest', async () => {
    const res = await rawExport(address, Buffer.from([0x0a, 0xff, 0xff, 0xff]), { authorization: `Bearer ${td.token}` });
    expect(res.error?.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(res.error?.details).toMatch(/invalid OTLP request: invalid protobuf/);
  });

  it('reports spans refused one by one as partial success and stores the rest', async () => {
    const branch = `grpc-partial-${randomBytes(3).toString('hex')}`;
    const res = await rawExport(address, requestWithABadSpan(branch), { authorization: `Bearer ${td.token}` }, true);
    expect(res.error).toBeNull();
    expect(res.response?.partialSuccess).toEqual({
      rejectedSpans: 1,
      errorMessage: '1 span rejected: resourceSpans.0.scopeSpans.0.spans.2.traceId: expected 16 bytes, got 3',
    });
    await td.settled();
    const runs = await td.waitFor(async () => {
      const r = await td.request('GET', `/v1/runs?branch=${branch}`);
      return r.json.items.length === 1 ? r.json.items : undefined;
    });
    expect(runs[0].counts.total).toBe(1);
  });
});

describe('OTLP/gRPC backpressure and shutdown', () => {
  let bp: TestDaemon;
  let bpAddress: string;

  beforeAll(async () => {
    bp = await startTestDaemon({ work: false, pipelineFile: grpcPipelineFile(), env: { SERVICE_MAX_QUEUE_DEPTH: '1', SERVICE_RATE_LIMIT_MAX: '100000' } });
    bpAddress = bp.daemon.listeners.get('otlp:grpc')!;
  });

  afterAll(async () => {
    await bp?.close();
  });

  it('answers OK once the job is durable, then RESOURCE_EXHAUSTED with RetryInfo while the queue is full', async () => {
    const exp = new GrpcExporter({ url: `http://${bpAddress}`, metadata: authMetadata(bp.token) });
    const first = await exportSpans(exp, testRunSpans('bp-1').spans);
    expect(first.error).toBeUndefined();
    // OK means on disk: the job is in the queue before the answer.
    expect(bp.daemon.queue.depth()).toBe(1);

    const second = await exportSpans(exp, testRunSpans('bp-2').spans);
    await exp.shutdown();
    expect(codeOf(second.error)).toBe(GrpcStatus.RESOURCE_EXHAUSTED);

    const raw = await rawExport(bpAddress, new Uint8Array(), { authorization: `Bearer ${bp.token}` });
    expect(raw.error?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
    expect(raw.error?.details).toMatch(/^backpressure: the ingest queue is full/);
    const details = raw.error?.metadata.get('grpc-status-details-bin')[0];
    expect(Buffer.isBuffer(details)).toBe(true);
    expect(readRetryDelaySec(details as Buffer)).toBe(1);
    expect(bp.daemon.queue.depth()).toBe(1);
  });

  it('stops listening when the daemon closes', async () => {
    await bp.stop();
    const res = await rawExport(bpAddress, new Uint8Array(), { authorization: `Bearer ${bp.token}` });
    expect(res.error?.code).toBe(GrpcStatus.UNAVAILABLE);
  });
});

function authMetadata(token: string): Metadata {
  const m = new Metadata();
  m.set('authorization', `Bearer ${token}`);
  return m;
}
