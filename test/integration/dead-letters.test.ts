// Dead letters you can act on (issue 11): a job that failed alone until its last attempt is listed
// and shown through the admin API (and `flakehouse dead`), its key answers 409 `dead_letter`
// instead of a false `deduplicated: true`, a requeue after the cause is fixed stores it exactly
// once (a frozen lease's jobs as that same lease), and a drop releases the key. The failures are
// made by ClickHouse itself: a CHECK constraint that refuses chosen rows, removed to "fix" it.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/main/cli.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { captureLogs } from '../helpers/observe.js';

const N_EXEC = 4;

describe.each([
  ['on a pipeline thread', 'true'],
  ['on one thread', 'false'],
])('dead letters %s', (_name, thread) => {
  let td: TestDaemon;
  const logs = captureLogs();
  const logLines = logs.lines;

  beforeAll(async () => {
    td = await startTestDaemon({
      logger: logs.logger,
      env: { SERVICE_PIPELINE_THREAD: thread, SERVICE_QUEUE_MAX_ATTEMPTS: '2', SERVICE_QUEUE_RETRY_BACKOFF_MS: '20' },
    });
  });
  afterAll(async () => td?.close());

  const admin = (method: string, path: string) => td.request(method, path, { token: td.adminToken });
  const count = async (sql: string): Promise<number> => Number((await td.daemon.store.query<{ n: string }>(sql))[0]!.n);
  const executions = (branch: string): Promise<number> => count(`SELECT count() AS n FROM ${td.daemon.store.table('executions')} WHERE branch = '${branch}'`);
  const receipts = (ids: string[]): Promise<number> =>
    count(`SELECT uniqExact(receipt_id) AS n FROM ${td.daemon.store.table('receipts')} WHERE receipt_id IN (${ids.map((id) => `'${id}'`).join(',')})`);
  const refuse = (table: string, name: string, condition: string): Promise<void> =>
    td.daemon.store.command(`ALTER TABLE ${td.daemon.store.table(table)} ADD CONSTRAINT ${name} CHECK throwIf(${condition}, 'refused for this test') = 0`);
  const allow = (table: string, name: string): Promise<void> => td.daemon.store.command(`ALTER TABLE ${td.daemon.store.table(table)} DROP CONSTRAINT ${name}`);

  async function cli(...args: string[]): Promise<{ code: number; out: string }> {
    const out: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out.push(String(chunk));
      return true;
    });
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const code = await main(args, { SERVICE_ENDPOINT: td.url, SERVICE_ADMIN_TOKEN: td.adminToken, SERVICE_DATA_DIR: td.dataDir }, td.dataDir);
      return { code, out: out.join('') };
    } finally {
      write.mockRestore();
      err.mockRestore();
    }
  }

  it('a lease that fails after writing dies whole; listed, 409 on re-post, requeued after the fix, stored once', async () => {
    const bodies = [1, 2, 3].map((i) => nativeBatch({ key: `dl-frozen-${thread}-${i}`, n: N_EXEC, resource: { branch: `dl-frozen-${thread}` } }));
    // The receipts insert is the last of a lease: everything else is written by then.
    await refuse('receipts', 'dl_frozen', `idempotency_key LIKE 'dl-frozen-%'`);
    const ids: string[] = [];
    try {
      await td.daemon.runtime.exclusive(async () => {
        for (const body of bodies) {
          const res = await td.request('POST', '/v1/ingest', { body });
          expect(res.status).toBe(202);
          ids.push(res.json.receiptId);
        }
      });
      await td.waitFor(async () => td.daemon.queue.stats().dead === 3, 30_000);

      const page1 = await admin('GET', '/v1/admin/dead-jobs?limit=2');
      expect(page1.status).toBe(200);
      expect(page1.json.items.map((d: { id: string }) => d.id)).toEqual(ids.slice(0, 2));
      const page2 = await admin('GET', `/v1/admin/dead-jobs?limit=2&cursor=${page1.json.nextCursor}`);
      expect(page2.json).toMatchObject({ items: [{ id: ids[2] }], nextCursor: null });
      const first = page1.json.items[0];
      expect(first).toMatchObject({
        id: ids[0],
        receiptId: ids[0],
        projectSlug: 'default',
        source: 'native',
        idempotencyKey: `dl-frozen-${thread}-1`,
        attempts: 2,
        executions: N_EXEC,
        frozenLeaseId: expect.any(String),
      });
      expect(first.firstError).toMatch(/refused for this test/);
      expect(first.lastError).toMatch(/refused for this test/);
      expect(first.sizeBytes).toBeGreaterThan(200);
      expect(Date.parse(first.diedAt)).toBeGreaterThan(Date.parse(first.receivedAt) - 1);
      expect((await admin('GET', '/v1/admin/dead-jobs?cursor=nope')).status).toBe(400);

      const one = await admin('GET', `/v1/admin/dead-jobs/${ids[1]}`);
      expect(one.status).toBe(200);
      expect(one.json.batch.idempotencyKey).toBe(`dl-frozen-${thread}-2`);
      expect(one.json.batch.executions).toHaveLength(N_EXEC);

      // Not a false "deduplicated": the sender learns its batch is not stored, and how to act.
      const again = await td.request('POST', '/v1/ingest', { body: bodies[0] });
      expect(again.status).toBe(409);
      expect(again.json).toMatchObject({ error: 'dead_letter', receiptId: ids[0] });
      expect(again.json.message).toMatch(/requeue/);

      // Counted in /metrics, logged once each.
      const metrics = await admin('GET', '/metrics');
      expect(metrics.text).toContain('flakehouse_queue_depth{state="dead"} 3\n');
      for (const id of ids) expect(logLines.filter((l) => l.includes('job parked as dead') && l.includes(id))).toHaveLength(1);

      const list = await cli('dead', 'list');
      expect(list.code).toBe(0);
      expect(list.out.split('\n')[0]).toMatch(/^ID\s+PROJECT\s+SOURCE\s+ATTEMPTS/);
      for (const id of ids) expect(list.out).toContain(id);
      const show = await cli('dead', 'show', ids[2]!);
      expect(show.code).toBe(0);
      expect(JSON.parse(show.out)).toMatchObject({ id: ids[2], batch: { idempotencyKey: `dl-frozen-${thread}-3` } });
      expect((await cli('dead', 'show', '01900000-0000-7000-8000-000000000000')).code).toBe(1);
      expect((await cli('dead', 'bury', ids[0]!)).code).toBe(2);
    } finally {
      await allow('receipts', 'dl_frozen');
    }

    // Fixed: requeue. A job comes back with its frozen lease-mates, as that same lease.
    expect((await admin('POST', '/v1/admin/dead-jobs/01900000-0000-7000-8000-000000000000/requeue')).status).toBe(404);
    expect((await admin('POST', '/v1/admin/dead-jobs/not-an-id/requeue')).status).toBe(404);
    const dead = await td.daemon.queue.deadJobs(10);
    const requeued = new Set<string>();
    for (const d of dead) {
      if (requeued.has(d.job.id)) continue;
      const res = await admin('POST', `/v1/admin/dead-jobs/${d.job.id}/requeue`);
      expect(res.status).toBe(200);
      expect(res.json.frozenLeaseId).toBe(d.frozenLeaseId);
      expect(res.json.jobIds).toEqual(dead.filter((m) => m.frozenLeaseId === d.frozenLeaseId).map((m) => m.job.id));
      for (const id of res.json.jobIds) requeued.add(id);
    }
    expect([...requeued].sort()).toEqual([...ids].sort());
    await td.waitFor(async () => td.daemon.queue.depth() === 0 && td.daemon.queue.stats().dead === 0, 30_000);
    expect(await receipts(ids)).toBe(3);
    // Written before the failure, written again by the requeued lease: deduplicated by its id.
    expect(await executions(`dl-frozen-${thread}`)).toBe(3 * N_EXEC);
    expect((await admin('GET', '/v1/admin/dead-jobs')).json).toEqual({ items: [], nextCursor: null });
    const replay = await td.request('POST', '/v1/ingest', { body: bodies[0] });
    expect(replay.status).toBe(202);
    expect(replay.json).toMatchObject({ receiptId: ids[0], deduplicated: true });
    expect((await admin('GET', '/metrics')).text).toContain('flakehouse_queue_depth{state="dead"} 0\n');
  });

  it('a job refused by the first insert dies alone; dropping it releases the key for a fresh send', async () => {
    const branch = `dl-drop-${thread}`;
    const body = nativeBatch({ key: `dl-drop-${thread}`, n: N_EXEC, resource: { branch } });
    const neighbour = nativeBatch({ key: `dl-neighbour-${thread}`, n: N_EXEC, resource: { branch: `${branch}-ok` } });
    await refuse('executions', 'dl_drop', `branch = '${branch}'`);
    let id = '';
    try {
      await td.daemon.runtime.exclusive(async () => {
        id = (await td.request('POST', '/v1/ingest', { body })).json.receiptId;
        expect((await td.request('POST', '/v1/ingest', { body: neighbour })).status).toBe(202);
      });
      await td.waitFor(async () => td.daemon.queue.stats().dead === 1 && td.daemon.queue.depth() === 0, 30_000);
    } finally {
      await allow('executions', 'dl_drop');
    }
    // Nothing was written under the frozen lease: it was unfrozen and split, the neighbour stored.
    expect(await executions(`${branch}-ok`)).toBe(N_EXEC);
    const dead = await admin('GET', `/v1/admin/dead-jobs/${id}`);
    expect(dead.json).toMatchObject({ id, frozenLeaseId: null, attempts: 2 });
    expect((await td.request('POST', '/v1/ingest', { body })).status).toBe(409);

    const drop = await cli('dead', 'drop', id);
    expect(drop.code).toBe(0);
    expect(drop.out).toContain(`dropped ${id}`);
    expect((await admin('GET', `/v1/admin/dead-jobs/${id}`)).status).toBe(404);
    expect((await admin('DELETE', `/v1/admin/dead-jobs/${id}`)).status).toBe(404);
    expect(td.daemon.queue.stats().dead).toBe(0);

    // The key is free: the same batch is a new job, stored once.
    const fresh = await td.request('POST', '/v1/ingest', { body });
    expect(fresh.status).toBe(202);
    expect(fresh.json.deduplicated).toBe(false);
    expect(fresh.json.receiptId).not.toBe(id);
    await td.waitFor(async () => td.daemon.queue.depth() === 0 && (await receipts([fresh.json.receiptId])) === 1, 30_000);
    expect(await executions(branch)).toBe(N_EXEC);
  });
});
