// OTLP/gRPC test plumbing: a pipeline file enabling the otlp receiver's gRPC listener on a free
// port, and a raw client for what the SDK exporter does not show (status details, bare metadata).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { parseDocument } from 'yaml';
import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { DEFAULT_PIPELINE } from '../../src/main/daemon.js';
import { EXPORT_PATH, type ExportTraceResponse, traceServiceDefinition } from '../../src/otlp/grpc-service.js';
import { otlpProtoRoot } from '../../src/otlp/proto.js';
import { SCRATCH_DIR } from './scratch.js';

/**
 * pipelines/default.yaml with `otlp: { protocols: { grpc: { endpoint }, http: {} } }` and, given
 * `memoryLimiter`, a `memory_limiter` with that config first in the executions pipeline; returns its path.
 */
export function grpcPipelineFile(endpoint = '127.0.0.1:0', memoryLimiter?: Record<string, unknown>): string {
  const doc = parseDocument(readFileSync(DEFAULT_PIPELINE, 'utf8'));
  doc.setIn(['receivers', 'otlp'], doc.createNode({ protocols: { grpc: { endpoint }, http: {} } }));
  if (memoryLimiter) {
    doc.setIn(['processors', 'memory_limiter'], doc.createNode(memoryLimiter));
    const processors = (doc.getIn(['service', 'pipelines', 'executions', 'processors']) as { toJSON(): string[] }).toJSON();
    doc.setIn(['service', 'pipelines', 'executions', 'processors'], doc.createNode(['memory_limiter', ...processors]));
  }
  const file = path.join(mkdtempSync(path.join(SCRATCH_DIR, 'fh-grpc-pipeline-')), 'pipeline.yaml');
  writeFileSync(file, String(doc));
  return file;
}

/**
 * An ExportTraceServiceRequest by hand, for what an SDK will not send: a `test.run` span with one
 * passing `test.case` on `branch`; `padding` bytes in a resource attribute (a message of about that
 * size); `extraSpans` after the two (a span with a bad trace id, say).
 */
export function handMadeRequest(branch: string, opts: { padding?: number; extraSpans?: Record<string, unknown>[] } = {}): Buffer {
  const Request = otlpProtoRoot.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  const traceId = randomBytes(16);
  const runId = randomBytes(8);
  const t0 = Date.UTC(2026, 1, 4, 9, 0, 0);
  const ns = (ms: number) => `${ms}000000`;
  const attributes = [{ key: 'vcs.ref.head.name', value: { stringValue: `refs/heads/${branch}` } }];
  if (opts.padding !== undefined) attributes.push({ key: 'padding', value: { stringValue: 'x'.repeat(opts.padding) } });
  const spans = [
    { traceId, spanId: runId, name: 'test.run', startTimeUnixNano: ns(t0), endTimeUnixNano: ns(t0 + 50) },
    {
      traceId,
      spanId: randomBytes(8),
      parentSpanId: runId,
      name: 'test.case',
      startTimeUnixNano: ns(t0 + 10),
      endTimeUnixNano: ns(t0 + 20),
      attributes: [
        { key: 'test.title', value: { stringValue: 'a' } },
        { key: 'test.status', value: { stringValue: 'pass' } },
      ],
    },
    ...(opts.extraSpans ?? []),
  ];
  return Buffer.from(Request.encode(Request.fromObject({ resourceSpans: [{ resource: { attributes }, scopeSpans: [{ spans }] }] })).finish());
}

export interface RawExport {
  error: ServiceError | null;
  response: ExportTraceResponse | undefined;
}

/** One Export call with the given bytes and metadata, answering with the error (status, details, trailers) or the response. */
export function rawExport(address: string, bytes: Uint8Array, meta: Record<string, string> = {}, compress = false): Promise<RawExport> {
  const client = new Client(address, credentials.createInsecure(), compress ? { 'grpc.default_compression_algorithm': 2 } : {});
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(meta)) metadata.set(k, v);
  const def = traceServiceDefinition.Export;
  return new Promise((resolve) => {
    client.makeUnaryRequest(EXPORT_PATH, def.requestSerialize, def.responseDeserialize, Buffer.from(bytes), metadata, (error, response) => {
      client.close();
      resolve({ error: error ?? null, response: response as ExportTraceResponse | undefined });
    });
  });
}

/**
 * One test run as a reporter emits it, as finished spans ready to export: a `test.run` span with a
 * passing and a failing `test.case` (with a recorded exception), resource attributes as in
 * otlp-ingest.test.ts. Each call is a new trace, so a new run.
 */
export function testRunSpans(label: string, start = Date.UTC(2026, 1, 2, 9, 0, 0)): { spans: ReadableSpan[]; branch: string; traceId: string } {
  const memory = new InMemorySpanExporter();
  const branch = `grpc-${label}`;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'checkout-tests',
      'vcs.ref.head.revision': randomBytes(20).toString('hex'),
      'vcs.ref.head.name': `refs/heads/${branch}`,
      'ci.provider': 'github_actions',
    }),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('flakehouse-grpc');
  // Dates, not numbers: the SDK reads a number below its time origin as a performance.now() offset.
  const runSpan = tracer.startSpan('test.run', { startTime: new Date(start) });
  const ctx = trace.setSpan(ROOT_CONTEXT, runSpan);
  const pass = tracer.startSpan('test.case', { startTime: new Date(start + 10), attributes: { 'test.title': 'adds items', 'test.suite': 'Cart', 'test.file_path': 'src/cart.test.ts', 'test.case.result.status': 'pass' } }, ctx);
  pass.end(new Date(start + 30));
  const fail = tracer.startSpan('test.case', { startTime: new Date(start + 40), attributes: { 'test.title': 'applies coupon', 'test.suite': 'Cart', 'test.file_path': 'src/cart.test.ts' } }, ctx);
  const err = new Error('expected 90 to be 81');
  err.name = 'AssertionError';
  fail.recordException(err, new Date(start + 45));
  fail.setStatus({ code: SpanStatusCode.ERROR, message: 'assertion failed' });
  fail.end(new Date(start + 60));
  runSpan.end(new Date(start + 100));
  return { spans: memory.getFinishedSpans(), branch, traceId: runSpan.spanContext().traceId };
}

export type ExportResult = Parameters<Parameters<SpanExporter['export']>[1]>[0];

/** One export through a real SDK exporter (no batching, no retry loop of ours). */
export function exportSpans(exporter: SpanExporter, spans: ReadableSpan[]): Promise<ExportResult> {
  return new Promise((resolve) => exporter.export(spans, resolve));
}
