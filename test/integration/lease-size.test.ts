// How much one lease takes (DEFAULT_LEASE_LIMITS, src/pipeline/runtime.ts): a backlog is worked
// through in leases of at most its execution cap, so what a lease holds in memory (its records in
// the pipeline, the engine's insert of its rows) stays bounded however long the queue is.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LEASE_LIMITS } from '../../src/pipeline/runtime.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { makeBatch } from './queue-contract.js';

describe('lease size', () => {
  let td: TestDaemon;
  let projectId: string;

  beforeAll(async () => {
    td = await startTestDaemon();
    const projects = await td.request('GET', '/v1/admin/projects', { token: td.adminToken });
    projectId = projects.json.items[0].id;
  });
  afterAll(async () => td?.close());

  it('a backlog larger than the execution cap is leased in several leases, each within the cap', async () => {
    // Two jobs fit under the cap (0.8 of it); the third would not (1.2).
    const perJob = Math.floor(DEFAULT_LEASE_LIMITS.maxExecutions * 0.4);
    const jobs = 3;
    const before = { ...td.daemon.runtime.stats };
    // Queued while the lease loop is held: one lease could take all three (well under maxJobs).
    await td.daemon.runtime.exclusive(async () => {
      for (let i = 0; i < jobs; i++) await td.daemon.queue.enqueue({ projectId, source: 'native', batch: makeBatch(`lease-size-${i}`, perJob) });
    });
    await td.waitFor(async () => td.daemon.runtime.stats.executions - before.executions >= perJob * jobs, 120_000);
    const leases = td.daemon.runtime.stats.leases - before.leases;
    // Two leases, none over the cap.
    expect(leases).toBe(2);
    expect(td.daemon.runtime.stats.failures - before.failures).toBe(0);
    // 12,000 executions through the real pipeline and chDB: minutes on a busy machine, not the default 30 s.
  }, 180_000);
});
