// Exact ingest limits over real HTTP: the queue-depth limit holds under concurrent posts.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

describe('queue depth limit under concurrency (max depth 3, worker off)', () => {
  let td: TestDaemon;
  beforeAll(async () => {
    td = await startTestDaemon({ work: false, env: { SERVICE_MAX_QUEUE_DEPTH: '3', SERVICE_RATE_LIMIT_MAX: '100000' } });
  });
  afterAll(async () => {
    await td?.close();
  });

  it('40 concurrent posts: at most 3 accepted, the rest 503 backpressure with Retry-After, depth never above 3', async () => {
    let maxDepth = 0;
    const sample = setInterval(() => (maxDepth = Math.max(maxDepth, td.daemon.queue.depth())), 1);
    const results = await Promise.all(Array.from({ length: 40 }, () => td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 50 }) })));
    clearInterval(sample);
    maxDepth = Math.max(maxDepth, td.daemon.queue.depth());
    const accepted = results.filter((r) => r.status === 202);
    const refused = results.filter((r) => r.status !== 202);
    expect(accepted.length).toBeGreaterThan(0);
    expect(accepted.length).toBeLessThanOrEqual(3);
    for (const r of refused) {
      expect(r.status, r.text).toBe(503);
      expect(r.json.error).toBe('backpressure');
      expect(r.headers.get('retry-after')).toBe('1');
    }
    expect(maxDepth).toBeLessThanOrEqual(3);
    expect(td.daemon.queue.depth()).toBe(accepted.length);
  });

  it('a request that becomes several jobs holds a slot for each: 503 when they do not all fit, 413 when they never can', async () => {
    const junit = (cases: number) => ({
      idempotencyKey: `parts-${randomBytes(6).toString('hex')}`,
      resource: { ciProvider: 'local', commitSha: 'abcdef1234', branch: 'parts', trigger: 'push' },
      xml: `<testsuite name="s">${Array.from({ length: cases }, (_, i) => `<testcase classname="a.B" name="t${i}"/>`).join('')}</testsuite>`,
    });
    const fresh = await startTestDaemon({ work: false, env: { SERVICE_MAX_QUEUE_DEPTH: '3' } });
    try {
      // Five parts of ≤ 5,000 never fit in a queue of 3.
      const never = await fresh.request('POST', '/v1/ingest/junit', { body: junit(21_000) });
      expect(never.status, never.text).toBe(413);
      expect(never.json.message).toContain('SERVICE_MAX_QUEUE_DEPTH');
      expect(fresh.daemon.queue.depth()).toBe(0);
      // Three parts fit an empty queue of 3, not one that holds a job.
      expect((await fresh.request('POST', '/v1/ingest', { body: nativeBatch() })).status).toBe(202);
      const busy = await fresh.request('POST', '/v1/ingest/junit', { body: junit(12_000) });
      expect(busy.status, busy.text).toBe(503);
      expect(busy.json.error).toBe('backpressure');
      expect(fresh.daemon.queue.depth()).toBe(1);
    } finally {
      await fresh.close();
    }
  });
});
