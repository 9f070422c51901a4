// The memory_limiter processor at the door (issue 29, docs/pipeline.md "Memory limiter"): with a
// limit far below this process's RSS every ingest route answers 503 memory_limited with
// Retry-After and OTLP/gRPC RESOURCE_EXHAUSTED with RetryInfo, and nothing is queued; the same
// batch under a high limit is 202 and stored. Real daemon, real HTTP and gRPC, real queue.
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { readRetryDelaySec } from '../../src/otlp/grpc-service.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { grpcPipelineFile, rawExport } from '../helpers/otlp-grpc.js';

const REFUSED = '{"error":"memory_limited","message":"the server is above its memory limit and stored nothing; retry shortly"}';
// Far below any node process's RSS, and far above any machine's memory.
const LOW = { limit_mib: 1, spike_limit_mib: 0, check_interval: '2s' };
const HIGH = { limit_mib: 64 * 1024 * 1024, check_interval: '2s' };
const ENV = { SERVICE_RATE_LIMIT_MAX: '100000' };

const daemons: TestDaemon[] = [];
afterAll(async () => {
  for (const d of daemons) await d.close();
});

describe('memory_limiter refuses at the door', () => {
  const batch = nativeBatch({ key: `memory-limited-${process.pid}` });
  let dataDir: string;
  let database: string;

  it('above the limit: 503 memory_limited with Retry-After on every ingest route, RESOURCE_EXHAUSTED with RetryInfo over gRPC, nothing queued', async () => {
    const td = await startTestDaemon({ pipelineFile: grpcPipelineFile('127.0.0.1:0', LOW), env: ENV });
    ({ dataDir, database } = td);
    try {
      const res = await td.request('POST', '/v1/ingest', { body: batch });
      expect(res.status).toBe(503);
      expect(res.text).toBe(REFUSED);
      // The check interval (2s), not backpressure's 1.
      expect(res.headers.get('retry-after')).toBe('2');

      const junit = await td.request('POST', '/v1/ingest/junit', {
        body: { idempotencyKey: 'memory-junit', resource: { ciProvider: 'jenkins', commitSha: 'abcdef1234', branch: 'main', trigger: 'push' }, xml: '<testsuite name="S"><testcase name="a"/></testsuite>' },
      });
      expect([junit.status, junit.text]).toEqual([503, REFUSED]);
      const traces = await td.request('POST', '/v1/traces', { body: { resourceSpans: [] } });
      expect([traces.status, traces.text]).toEqual([503, REFUSED]);

      const grpc = await rawExport(td.daemon.listeners.get('otlp:grpc')!, new Uint8Array(), { authorization: `Bearer ${td.token}` });
      expect(grpc.error?.code).toBe(GrpcStatus.RESOURCE_EXHAUSTED);
      expect(grpc.error?.details).toMatch(/^memory_limited: the server is above its memory limit/);
      const details = grpc.error?.metadata.get('grpc-status-details-bin')[0];
      expect(Buffer.isBuffer(details)).toBe(true);
      expect(readRetryDelaySec(details as Buffer)).toBe(2);

      // Auth still comes first: a stranger is told 401, not about memory.
      expect((await td.request('POST', '/v1/ingest', { token: null, body: batch })).status).toBe(401);
      // Nothing was queued; read routes are not refused.
      expect(td.daemon.queue.depth()).toBe(0);
      const runs = await td.request('GET', '/v1/runs?limit=10');
      expect(runs.status).toBe(200);
      expect(runs.json.items).toEqual([]);
    } finally {
      await td.stop();
    }
  });

  it('under a high limit the same batch is accepted as new and stored', async () => {
    const td = await startTestDaemon({ pipelineFile: grpcPipelineFile('127.0.0.1:0', HIGH), env: ENV, dataDir, database });
    daemons.push(td);
    const res = await td.request('POST', '/v1/ingest', { body: batch });
    expect(res.status).toBe(202);
    // Not a replay: the refused request left no trace of its key.
    expect(res.json).toMatchObject({ acceptedExecutions: 3, deduplicated: false });
    await td.settled();
    const run = await td.waitFor(async () => (await td.request('GET', '/v1/runs?limit=10')).json.items[0]);
    expect(run.counts.total).toBe(3);
  });
});

describe('memory_limiter with the pipeline on its own thread', () => {
  it('the receivers thread builds the door check: 503 memory_limited', async () => {
    const td = await startTestDaemon({ pipelineFile: grpcPipelineFile('127.0.0.1:0', LOW), env: { ...ENV, SERVICE_PIPELINE_THREAD: 'true' }, threadFromSources: true });
    daemons.push(td);
    const res = await td.request('POST', '/v1/ingest', { body: nativeBatch() });
    expect([res.status, res.text]).toEqual([503, REFUSED]);
    expect(td.daemon.queue.depth()).toBe(0);
  });
});
