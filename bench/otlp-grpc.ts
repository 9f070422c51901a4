// `npm run bench -- otlp-grpc [--n 200] [--warmup 20]`: the ack latency of one OTLP export of the
// same batch (a `test.run` span with two `test.case` children) over OTLP/gRPC and OTLP/HTTP
// (protobuf), each plain and gzip'd, from the real SDK exporters to an in-process daemon. The ack
// is the durable enqueue (the worker is off, so processing does not share the two cores); each
// export is a new trace, so each is a new job, never a deduplicated replay. Exports are sequential
// and the variants take turns, so drift (the queue growing, GC) falls on all of them alike.
import { parseArgs } from 'node:util';
import os from 'node:os';
import { Metadata } from '@grpc/grpc-js';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTestDaemon } from '../test/helpers/daemon.js';
import { exportSpans, grpcPipelineFile, testRunSpans } from '../test/helpers/otlp-grpc.js';
import { writeResult } from './results.js';

interface Variant {
  name: string;
  exporter: SpanExporter;
  samplesMs: number[];
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { n: { type: 'string', default: '200' }, warmup: { type: 'string', default: '20' } } });
  const n = Number(values.n);
  const warmup = Number(values.warmup);
  const td = await startTestDaemon({
    work: false,
    pipelineFile: grpcPipelineFile(),
    env: { SERVICE_MAX_QUEUE_DEPTH: '0', SERVICE_RATE_LIMIT_MAX: '1000000000' },
  });
  try {
    const address = td.daemon.listeners.get('otlp:grpc')!;
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${td.token}`);
    const headers = { authorization: `Bearer ${td.token}` };
    const variants: Variant[] = [
      { name: 'grpc', exporter: new GrpcExporter({ url: `http://${address}`, metadata }), samplesMs: [] },
      { name: 'grpc-gzip', exporter: new GrpcExporter({ url: `http://${address}`, metadata, compression: CompressionAlgorithm.GZIP }), samplesMs: [] },
      { name: 'http-protobuf', exporter: new ProtoExporter({ url: `${td.url}/v1/traces`, headers }), samplesMs: [] },
      { name: 'http-protobuf-gzip', exporter: new ProtoExporter({ url: `${td.url}/v1/traces`, headers, compression: CompressionAlgorithm.GZIP }), samplesMs: [] },
    ];
    for (let i = 0; i < warmup + n; i++) {
      for (const v of variants) {
        // Built outside the timed part: the SDK's span bookkeeping is not the receiver's latency.
        const { spans } = testRunSpans(`${v.name}-${i}`);
        const t0 = process.hrtime.bigint();
        const result = await exportSpans(v.exporter, spans);
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (result.error) throw new Error(`${v.name} export ${i} failed: ${result.error.message}`);
        if (i >= warmup) v.samplesMs.push(ms);
      }
    }
    const results: Record<string, { p50Ms: number; p99Ms: number; meanMs: number; maxMs: number }> = {};
    for (const v of variants) {
      await v.exporter.shutdown();
      const sorted = [...v.samplesMs].sort((a, b) => a - b);
      results[v.name] = {
        p50Ms: round(quantile(sorted, 0.5)),
        p99Ms: round(quantile(sorted, 0.99)),
        meanMs: round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
        maxMs: round(sorted[sorted.length - 1]!),
      };
    }
    console.table(results);
    const result = {
      benchmark: 'otlp-grpc',
      at: new Date().toISOString(),
      exports: n,
      warmup,
      batch: 'one trace: test.run + 2 test.case spans (one with an exception event), 3 spans',
      ack: 'durable enqueue (worker off)',
      results,
      machine: { cpus: os.cpus().length, node: process.version, note: 'exporters and daemon share the process and its cores' },
    };
    console.log(`written ${writeResult('otlp-grpc', result)}`);
    return 0;
  } finally {
    await td.close();
  }
}
