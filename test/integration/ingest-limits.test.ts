// Exact ingest limits over real HTTP: the queue-depth limit holds under concurrent posts.
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
});
