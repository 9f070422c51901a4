// Domain events leave through the outbox after the lease commits: run.processed once per accepted
// batch, identity.created once per new test, and none lost across a restart.
import { afterAll, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../src/domain/events.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

describe('domain events', () => {
  let td: TestDaemon | undefined;
  afterAll(async () => td?.close());

  it('emits run.processed per batch and identity.created per new test, after the commit', async () => {
    td = await startTestDaemon();
    const seen: DomainEvent[] = [];
    td.daemon.runtime.onEvent((e) => seen.push(e));
    const body = nativeBatch({ n: 4, resource: { branch: 'events' } });
    const res = await td.request('POST', '/v1/ingest', { body });
    expect(res.status).toBe(202);
    const t = td;
    await t.waitFor(async () => seen.some((e) => e.type === 'run.processed'));
    const processed = seen.filter((e) => e.type === 'run.processed');
    expect(processed).toHaveLength(1);
    const runId = processed[0]!.data.runId as string;
    // Delivered after the commit: the run is already readable when the event arrives.
    const run = await t.request('GET', `/v1/runs/${runId}`);
    expect(run.status).toBe(200);
    expect(processed[0]!.data).toMatchObject({ receiptId: res.json.receiptId, status: 'passed', counts: { total: 4, passed: 4 } });
    const created = seen.filter((e) => e.type === 'identity.created');
    expect(created).toHaveLength(4);
    expect(new Set(created.map((e) => e.data.testIdentityId)).size).toBe(4);

    // The same tests in a new run: a new run.processed, no new identities.
    seen.length = 0;
    await t.request('POST', '/v1/ingest', { body: { ...body, idempotencyKey: `${String(body.idempotencyKey)}-again` } });
    await t.waitFor(async () => seen.some((e) => e.type === 'run.processed'));
    expect(seen.filter((e) => e.type === 'identity.created')).toHaveLength(0);
  });

  it('delivers events left in the outbox by a stop before dispatch, after the restart', async () => {
    const t = td!;
    // Worker off: jobs stay queued; then a restart with the worker on commits them and the
    // dispatcher delivers their events from the outbox.
    const stopped = await t.restart({ work: false });
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) {
      const b = nativeBatch({ n: 2, resource: { branch: 'events-restart' } });
      keys.push(String(b.idempotencyKey));
      expect((await stopped.request('POST', '/v1/ingest', { body: b })).status).toBe(202);
    }
    td = await stopped.restart({ work: true });
    const seen: DomainEvent[] = [];
    td.daemon.runtime.onEvent((e) => seen.push(e));
    const t2 = td;
    await t2.waitFor(async () => seen.filter((e) => e.type === 'run.processed').length >= 3);
    const ids = seen.filter((e) => e.type === 'run.processed').map((e) => e.id);
    expect(new Set(ids).size).toBe(3);
    expect(t2.daemon.runtime.stats.eventFailures).toBe(0);
  });
});
