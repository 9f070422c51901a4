// The otlp_http exporter's encoding (src/exporters/shared/encode.ts) against the OTLP receiver's
// decoding and mapping: a forwarded run comes out as the same executions, and a re-send of the same
// job carries the same idempotency key (the gateway deduplicates it).
import { describe, expect, it } from 'vitest';
import type { IngestBatch, IngestSource } from '../../client/src/contract/batch.js';
import type { Job } from '../../src/queue/types.js';
import { encodeJob, forwardTraceId, packLease } from '../../src/exporters/shared/encode.js';
import { otlpHttpConfigSchema, tracesUrl } from '../../src/exporters/otlp-http/config.js';
import { nextWait, retryAfterMs } from '../../src/exporters/otlp-http/send.js';
import { decodeOtlpProtobuf } from '../../src/receivers/otlp/decode.js';
import { mapOtlpToBatches } from '../../src/receivers/otlp/map.js';

const T0 = Date.parse('2026-11-20T10:00:00Z');

function batch(n: number, key = 'ci-key-0001'): IngestBatch {
  return {
    contractVersion: '0.1.0',
    idempotencyKey: key,
    resource: { ciProvider: 'github_actions', commitSha: 'abcdef1234', branch: 'main', trigger: 'push', prNumber: 7, repository: 'acme/app' },
    run: { status: 'failed', startedAt: T0, finishedAt: T0 + 5_000 },
    executions: Array.from({ length: n }, (_, i) => ({
      filePath: `src/m${i % 3}.test.ts`,
      suite: `S${i % 3}`,
      title: `case ${i}`,
      status: i === 1 ? ('fail' as const) : ('pass' as const),
      attempt: 1,
      startedAt: T0 + i * 10,
      durationMs: 5 + i,
      ...(i === 1 ? { error: { message: 'expected 1 to be 2', type: 'AssertionError' } } : {}),
      ...(i === 2 ? { params: { browser: 'firefox' } } : {}),
    })),
  };
}

function job(b: IngestBatch, receiptId = 'r-1', source: IngestSource = 'native'): { job: Job } {
  return { job: { id: `j-${receiptId}`, receiptId, projectId: 'p1', source, batch: b, receivedAt: T0 + 10_000, attempts: 0 } };
}

function roundTrip(body: Uint8Array): IngestBatch[] {
  return mapOtlpToBatches(decodeOtlpProtobuf(body), { now: T0 }).batches;
}

describe('otlp_http encoding', () => {
  it('a forwarded run maps back to the same executions and resource', () => {
    const b = batch(4);
    const [out] = encodeJob(job(b)).flatMap(roundTrip);
    expect(out).toBeDefined();
    expect(out!.run.status).toBe('failed');
    expect(out!.run.startedAt).toBe(T0);
    expect(out!.resource).toMatchObject({ commitSha: 'abcdef1234', branch: 'main', prNumber: 7, repository: 'acme/app', ciProvider: 'github_actions', trigger: 'push' });
    const strip = (e: IngestBatch['executions'][number]) => ({ filePath: e.filePath, suite: e.suite, title: e.title, status: e.status, attempt: e.attempt, startedAt: e.startedAt, durationMs: e.durationMs, error: e.error?.message, params: e.params });
    expect(out!.executions.map(strip)).toEqual(b.executions.map(strip));
    expect(out!.run.traceId).toBe(forwardTraceId(job(b)));
  });

  it('a re-send is the same bytes, so the gateway derives the same idempotency key', () => {
    const b = batch(3);
    const first = encodeJob(job(b));
    const again = encodeJob(job(structuredClone(b)));
    expect(Buffer.concat(again).equals(Buffer.concat(first))).toBe(true);
    const keyA = roundTrip(first[0]!)[0]!.idempotencyKey;
    expect(keyA.startsWith('ci-key-0001:')).toBe(true);
    // Another receipt with the same CI key (another agent project) is another run at the gateway.
    const other = roundTrip(encodeJob(job(b, 'r-2'))[0]!)[0]!;
    expect(other.idempotencyKey).not.toBe(keyA);
    expect(other.run.traceId).not.toBe(forwardTraceId(job(b)));
  });

  it('an OTLP part keeps its trace, so the parts of one trace stay one run', () => {
    const b = batch(2);
    b.run.traceId = '0af7651916cd43dd8448eb211c80319c';
    expect(forwardTraceId(job(b, 'r-9', 'otlp'))).toBe('0af7651916cd43dd8448eb211c80319c');
    // A native run that named a trace is still its own run (as it was here).
    expect(forwardTraceId(job(b, 'r-9', 'native'))).not.toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('packs a lease into requests, never two parts of one trace in one request, whatever the packing', () => {
    const items = [job(batch(3, 'key-a-0001'), 'ra'), job(batch(2, 'key-b-0001'), 'rb'), job(batch(1, 'key-c-0001'), 'rc')];
    const one = packLease(items, 4 * 1024 * 1024);
    expect(one).toHaveLength(1);
    expect(one[0]).toMatchObject({ jobs: 3, executions: 6 });
    const mapped = roundTrip(one[0]!.body);
    expect(mapped.map((m) => m.executions.length).sort()).toEqual([1, 2, 3]);
    // Packed one per request (tiny limit): the same keys, so a split lease re-sent dedupes.
    const many = packLease(items, 1024);
    expect(many).toHaveLength(3);
    const keys = (reqs: typeof one) => reqs.flatMap((r) => roundTrip(r.body).map((m) => m.idempotencyKey)).sort();
    expect(keys(many)).toEqual(keys(one));
  });

  it('a large run goes as several parts of one trace, one per request, mapping back to every execution', () => {
    const big = batch(4500);
    const reqs = packLease([job(big)], 64 * 1024 * 1024);
    expect(reqs.length).toBeGreaterThan(1);
    const parts = reqs.flatMap((r) => roundTrip(r.body));
    expect(new Set(parts.map((p) => p.run.traceId)).size).toBe(1);
    expect(parts.reduce((n, p) => n + p.executions.length, 0)).toBe(4500);
  });
});

describe('otlp_http config', () => {
  it('takes the Collector shape with its defaults and durations', () => {
    const cfg = otlpHttpConfigSchema.parse({ endpoint: 'http://gw:4318/', timeout: '2s', retry_on_failure: { initial_interval: '250ms', max_elapsed_time: '1m' }, sending_queue: { enabled: true } });
    expect(tracesUrl(cfg)).toBe('http://gw:4318/v1/traces');
    expect(cfg).toMatchObject({ compression: 'gzip', timeout: 2000, headers: {} });
    expect(cfg.retry_on_failure).toMatchObject({ enabled: true, initial_interval: 250, max_interval: 30_000, max_elapsed_time: 60_000 });
    expect(otlpHttpConfigSchema.safeParse({ endpoint: 'http://gw', timeout: 'soon' }).success).toBe(false);
    expect(otlpHttpConfigSchema.safeParse({ endpoint: 'http://gw', compression: 'zstd' }).success).toBe(false);
  });

  it('backs off exponentially up to max_interval and honours a longer Retry-After', () => {
    const retry = otlpHttpConfigSchema.parse({ endpoint: 'http://gw', retry_on_failure: { randomization_factor: 0 } }).retry_on_failure;
    expect(nextWait(retry, 1)).toBe(5000);
    expect(nextWait(retry, 2)).toBe(7500);
    expect(nextWait(retry, 20)).toBe(30_000);
    expect(nextWait(retry, 1, 12_000)).toBe(12_000);
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(T0 + 4000).toUTCString(), T0)).toBe(4000);
    expect(retryAfterMs('later')).toBeUndefined();
  });
});

describe('otlp_http sender', () => {
  it('retries 503 (honouring Retry-After), gives up on 400 at once', async () => {
    const { createServer } = await import('node:http');
    const { createSender, PermanentExportError } = await import('../../src/exporters/otlp-http/send.js');
    const { createLogger } = await import('../../src/telemetry/logger.js');
    const answers = [503, 200, 400];
    const seen: (string | undefined)[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers['content-encoding']);
      req.resume();
      const status = answers.shift() ?? 500;
      res.writeHead(status, status === 503 ? { 'retry-after': '0' } : {}).end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      const cfg = otlpHttpConfigSchema.parse({ endpoint: `http://127.0.0.1:${port}`, retry_on_failure: { initial_interval: 1, max_interval: 1 } });
      const waits: number[] = [];
      const sender = createSender(cfg, tracesUrl(cfg), createLogger('silent'), async (ms) => void waits.push(ms));
      await expect(sender.send(new Uint8Array([1, 2, 3]))).resolves.toBe('{}');
      expect(waits).toHaveLength(1);
      await expect(sender.send(new Uint8Array([1]))).rejects.toBeInstanceOf(PermanentExportError);
      expect(seen).toEqual(['gzip', 'gzip', 'gzip']);
    } finally {
      server.close();
    }
  });
});
