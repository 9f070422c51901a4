// The otlp_grpc exporter's sender (src/exporters/otlp-grpc/send.ts) against a real local grpc-js
// server speaking TraceService/Export: the OTLP spec's gRPC retry mapping (UNAVAILABLE retried,
// INVALID_ARGUMENT permanent, RESOURCE_EXHAUSTED retried only with RetryInfo, whose delay is
// honoured), the metadata it sends, and its Collector-shaped config.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metadata, Server, ServerCredentials, status as GrpcStatus, type sendUnaryData, type ServerUnaryCall, type ServerErrorResponse } from '@grpc/grpc-js';
import { otlpGrpcConfigSchema } from '../../src/exporters/otlp-grpc/config.js';
import { createGrpcSender } from '../../src/exporters/otlp-grpc/send.js';
import { PermanentExportError, RetryableExportError } from '../../src/exporters/shared/retry.js';
import { retryStatusDetails, traceServiceDefinition, type ExportTraceResponse } from '../../src/otlp/grpc-service.js';
import { createLogger } from '../../src/telemetry/logger.js';

interface Seen {
  bytes: Buffer;
  authorization: unknown;
}

/** What the server answers next: OK (optionally with partial success) or an error status. */
type Answer = { ok: ExportTraceResponse } | { code: GrpcStatus; retryDelaySec?: number };

let server: Server;
let endpoint: string;
const answers: Answer[] = [];
const seen: Seen[] = [];

function statusError(code: GrpcStatus, retryDelaySec?: number): ServerErrorResponse {
  const metadata = new Metadata();
  if (retryDelaySec !== undefined) metadata.set('grpc-status-details-bin', retryStatusDetails(code, 'try later', retryDelaySec));
  return Object.assign(new Error('refused'), { code, details: `refused with ${GrpcStatus[code]}`, metadata });
}

beforeAll(async () => {
  server = new Server();
  server.addService(traceServiceDefinition, {
    Export(call: ServerUnaryCall<Buffer, ExportTraceResponse>, callback: sendUnaryData<ExportTraceResponse>) {
      seen.push({ bytes: call.request, authorization: call.metadata.get('authorization')[0] });
      const a = answers.shift() ?? { ok: {} };
      if ('ok' in a) callback(null, a.ok);
      else callback(statusError(a.code, a.retryDelaySec));
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  endpoint = `127.0.0.1:${port}`;
});

afterAll(() => {
  server.forceShutdown();
});

function sender(over: Record<string, unknown> = {}) {
  const cfg = otlpGrpcConfigSchema.parse({
    endpoint,
    headers: { authorization: 'Bearer fh_test' },
    retry_on_failure: { initial_interval: 1, max_interval: 1, randomization_factor: 0 },
    ...over,
  });
  const waits: number[] = [];
  const s = createGrpcSender(cfg, createLogger('silent'), async (ms) => void waits.push(ms));
  return { s, waits };
}

function reset(...next: Answer[]): void {
  answers.splice(0, answers.length, ...next);
  seen.splice(0, seen.length);
}

describe('otlp_grpc sender', () => {
  it('retries UNAVAILABLE, then resolves on OK; sends the same bytes (gzip on the wire, inflated by grpc-js) and the headers as metadata', async () => {
    reset({ code: GrpcStatus.UNAVAILABLE }, { ok: {} });
    const { s, waits } = sender();
    try {
      await expect(s.send(new Uint8Array([0x0a, 0x00]))).resolves.toEqual({});
      expect(seen).toHaveLength(2);
      expect(waits).toEqual([1]);
      expect(seen.map((x) => [...x.bytes])).toEqual([
        [0x0a, 0x00],
        [0x0a, 0x00],
      ]);
      expect(seen[0]!.authorization).toBe('Bearer fh_test');
    } finally {
      s.close();
    }
  });

  it('throws INVALID_ARGUMENT (and UNAUTHENTICATED, PERMISSION_DENIED) as permanent at once', async () => {
    for (const code of [GrpcStatus.INVALID_ARGUMENT, GrpcStatus.UNAUTHENTICATED, GrpcStatus.PERMISSION_DENIED]) {
      reset({ code }, { ok: {} });
      const { s, waits } = sender({ compression: 'none' });
      try {
        const err = await s.send(new Uint8Array([1])).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PermanentExportError);
        expect((err as PermanentExportError).status).toBe(code);
        expect((err as Error).message).toContain(GrpcStatus[code]);
        expect(seen).toHaveLength(1);
        expect(waits).toEqual([]);
      } finally {
        s.close();
      }
    }
  });

  it('retries RESOURCE_EXHAUSTED carrying RetryInfo, waiting at least its delay; without RetryInfo it is permanent', async () => {
    reset({ code: GrpcStatus.RESOURCE_EXHAUSTED, retryDelaySec: 2 }, { ok: { partialSuccess: { rejectedSpans: 1, errorMessage: 'one bad span' } } });
    const a = sender();
    try {
      await expect(a.s.send(new Uint8Array([1]))).resolves.toMatchObject({ partialSuccess: { rejectedSpans: 1, errorMessage: 'one bad span' } });
      expect(a.waits).toEqual([2000]);
    } finally {
      a.s.close();
    }

    reset({ code: GrpcStatus.RESOURCE_EXHAUSTED });
    const b = sender();
    try {
      await expect(b.s.send(new Uint8Array([1]))).rejects.toBeInstanceOf(PermanentExportError);
      expect(b.waits).toEqual([]);
    } finally {
      b.s.close();
    }
  });

  it('gives up with RetryableExportError when retry_on_failure runs out (the lease goes back to the queue)', async () => {
    reset({ code: GrpcStatus.UNAVAILABLE }, { code: GrpcStatus.DEADLINE_EXCEEDED }, { code: GrpcStatus.ABORTED });
    const { s } = sender({ retry_on_failure: { enabled: false } });
    try {
      await expect(s.send(new Uint8Array([1]))).rejects.toBeInstanceOf(RetryableExportError);
      expect(seen).toHaveLength(1);
    } finally {
      s.close();
    }
  });

  it('retries a gateway that is not listening (UNAVAILABLE) until max_elapsed_time', async () => {
    const cfg = otlpGrpcConfigSchema.parse({ endpoint: '127.0.0.1:1', retry_on_failure: { initial_interval: 20, max_interval: 20, max_elapsed_time: 200, randomization_factor: 0 } });
    const s = createGrpcSender(cfg, createLogger('silent'));
    try {
      const err = await s.send(new Uint8Array([1])).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RetryableExportError);
      expect((err as Error).message).toMatch(/UNAVAILABLE/);
    } finally {
      s.close();
    }
  });
});

describe('otlp_grpc config', () => {
  it('takes the Collector otlp exporter shape with otlp_http defaults', () => {
    const cfg = otlpGrpcConfigSchema.parse({ endpoint: 'gw.internal:4317', tls: { insecure: true }, timeout: '2s', sending_queue: { enabled: true } });
    expect(cfg).toMatchObject({ endpoint: 'gw.internal:4317', compression: 'gzip', timeout: 2000, headers: {}, max_request_bytes: 4 * 1024 * 1024 });
    expect(cfg.retry_on_failure).toMatchObject({ enabled: true, initial_interval: 5000, max_interval: 30_000, max_elapsed_time: 300_000 });
    expect(otlpGrpcConfigSchema.parse({ endpoint: 'http://gw:4317' }).endpoint).toBe('gw:4317');
    expect(otlpGrpcConfigSchema.parse({ endpoint: '[::1]:4317' }).endpoint).toBe('[::1]:4317');
  });

  it('refuses TLS, a URL path, a missing port and unknown keys', () => {
    const bad = [
      { endpoint: 'gw:4317', tls: { insecure: false } },
      { endpoint: 'gw:4317', tls: { insecure: true, ca_file: '/ca.pem' } },
      { endpoint: 'https://gw:4317' },
      { endpoint: 'gw' },
      { endpoint: 'http://gw:4317/v1/traces' },
      { endpoint: 'gw:4317', compression: 'zstd' },
      { endpoint: 'gw:4317', traces_endpoint: 'http://gw/v1/traces' },
    ];
    for (const b of bad) expect(otlpGrpcConfigSchema.safeParse(b).success, JSON.stringify(b)).toBe(false);
    const tls = otlpGrpcConfigSchema.safeParse({ endpoint: 'gw:4317', tls: { insecure: false } });
    expect(tls.error?.issues[0]?.message).toMatch(/plaintext/);
  });
});
