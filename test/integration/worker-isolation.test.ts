// Failure isolation in the worker (issue 11): a job that fails never takes another with it. Poison
// jobs are put straight into the queue, bypassing the door's validation, as if queued before an
// upgrade, in the same lease as 50 valid ones. A value the door would refuse is set aside alone by
// the worker's own check; a job that fails further on (here ClickHouse refuses its rows through a
// CHECK constraint: no value the door lets through is known to fail) makes the worker split the
// failed group until it fails alone. Out-of-space failures are the machine's: never charged, never
// dead. Both modes of the pipeline (its own thread, the default, and one thread).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IngestBatch } from '../../client/src/contract/batch.js';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { captureLogs } from '../helpers/observe.js';
import { makeBatch } from './queue-contract.js';

const N_EXEC = 3;

describe.each([
  ['on a pipeline thread', 'true'],
  ['on one thread', 'false'],
])('worker isolation %s', (_name, thread) => {
  let td: TestDaemon;
  let projectId: string;
  const logs = captureLogs();
  const logLines = logs.lines;

  beforeAll(async () => {
    td = await startTestDaemon({
      logger: logs.logger,
      env: { SERVICE_PIPELINE_THREAD: thread, SERVICE_QUEUE_MAX_ATTEMPTS: '2', SERVICE_QUEUE_RETRY_BACKOFF_MS: '20' },
    });
    const projects = await td.request('GET', '/v1/admin/projects', { token: td.adminToken });
    projectId = projects.json.items[0].id;
  });
  afterAll(async () => td?.close());

  const count = async (sql: string): Promise<number> => Number((await td.daemon.store.query<{ n: string }>(sql))[0]!.n);
  const executions = (branch: string): Promise<number> => count(`SELECT count() AS n FROM ${td.daemon.store.table('executions')} WHERE branch = '${branch}'`);
  const distinctExecutions = (branch: string): Promise<number> => count(`SELECT uniqExact(id) AS n FROM ${td.daemon.store.table('executions')} WHERE branch = '${branch}'`);
  const receipts = (ids: string[]): Promise<number> =>
    count(`SELECT uniqExact(receipt_id) AS n FROM ${td.daemon.store.table('receipts')} WHERE receipt_id IN (${ids.map((id) => `'${id}'`).join(',')})`);

  function batch(key: string, branch: string): IngestBatch {
    const b = makeBatch(key, N_EXEC);
    b.resource.branch = branch;
    return b;
  }

  /** Queues the batches while the lease loop is held, so the worker takes them in one lease. */
  async function enqueueTogether(batches: IngestBatch[]): Promise<string[]> {
    const ids: string[] = [];
    await td.daemon.runtime.exclusive(async () => {
      for (const b of batches) ids.push((await td.daemon.queue.enqueue({ projectId, source: 'native', batch: b })).receiptId);
    });
    return ids;
  }

  async function poisonAmong50(branch: string, poison: IngestBatch, how: 'alone' | 'split'): Promise<void> {
    const deadBefore = td.daemon.queue.stats().dead;
    const logFrom = logLines.length;
    const valid = Array.from({ length: 50 }, (_, i) => batch(`${branch}-valid-${i}`, branch));
    // The poison in the middle of the lease.
    const ids = await enqueueTogether([...valid.slice(0, 25), poison, ...valid.slice(25)]);
    const poisonId = ids[25]!;
    const validIds = ids.filter((id) => id !== poisonId);
    await td.waitFor(async () => td.daemon.queue.depth() === 0 && td.daemon.queue.stats().dead > deadBefore, 60_000);

    // All 50 stored exactly once; only the poison is dead.
    expect(await executions(branch)).toBe(50 * N_EXEC);
    expect(await distinctExecutions(branch)).toBe(50 * N_EXEC);
    expect(await receipts(validIds)).toBe(50);
    expect(await receipts([poisonId])).toBe(0);
    expect(td.daemon.queue.stats().dead).toBe(deadBefore + 1);
    const dead = (await td.daemon.queue.deadJob(poisonId))!;
    expect(dead.job.attempts).toBe(2);
    expect(dead.frozenLeaseId).toBeUndefined();
    for (const id of validIds) expect(await td.daemon.queue.deadJob(id)).toBeUndefined();
    // The poison shared a lease with most of them (queued under `exclusive`, which holds the
    // worker's dequeue too, they are leased together).
    const splits = logLines.slice(logFrom).filter((l) => l.includes('split in halves')).map((l) => (JSON.parse(l) as { jobs: number }).jobs);
    if (how === 'split') expect(Math.max(...splits)).toBeGreaterThanOrEqual(40);
    else expect(splits).toEqual([]);
    // One log line for the dead job, none for the others.
    expect(logLines.filter((l) => l.includes('job parked as dead') && l.includes(poisonId))).toHaveLength(1);
  }

  it('a poison the door would refuse is set aside alone before the freeze; the 50 around it are stored once', async () => {
    const poison = batch('check-poison', 'check-stage');
    // Unchecked, the rollups processor fails the whole lease on it (RangeError: Invalid time value).
    poison.executions[0]!.startedAt = 1e300;
    await poisonAmong50('check-stage', poison, 'alone');
    const dead = (await td.daemon.queue.deadJobs(100)).find((d) => d.job.batch.idempotencyKey === 'check-poison')!;
    expect(dead.error).toMatch(/^executions\.0\.startedAt: /);
  });

  it('a lone surrogate queued before the door replaced it is stored as U+FFFD, and nobody dies', async () => {
    const deadBefore = td.daemon.queue.stats().dead;
    const odd = batch('surrogate', 'surrogate');
    // Unchecked, ClickHouse refuses the JSON insert of test identities, after executions were written.
    odd.executions[0]!.title = 'bad \ud800 title';
    const ids = await enqueueTogether([batch('surrogate-ok', 'surrogate'), odd]);
    await td.settled(30_000);
    expect(td.daemon.queue.stats().dead).toBe(deadBefore);
    expect(await receipts(ids)).toBe(2);
    expect(await executions('surrogate')).toBe(2 * N_EXEC);
    expect(await count(`SELECT count() AS n FROM ${td.daemon.store.table('executions')} WHERE title = 'bad \u{FFFD} title'`)).toBe(1);
  });

  it('a poison refused by the first insert (after the freeze, nothing written) unfreezes, splits and dies alone', async () => {
    const poison = batch('export-poison', 'export-stage');
    poison.executions[1]!.title = 'refused-by-clickhouse';
    await td.daemon.store.command(
      `ALTER TABLE ${td.daemon.store.table('executions')} ADD CONSTRAINT poison_probe CHECK throwIf(title = 'refused-by-clickhouse', 'poison row refused') = 0`,
    );
    try {
      await poisonAmong50('export-stage', poison, 'split');
    } finally {
      await td.daemon.store.command(`ALTER TABLE ${td.daemon.store.table('executions')} DROP CONSTRAINT poison_probe`);
    }
    const dead = (await td.daemon.queue.deadJobs(100)).find((d) => d.job.batch.idempotencyKey === 'export-poison')!;
    expect(dead.error).toMatch(/poison row refused/);
  });

  it('an out-of-space failure is retried with backoff, never charged or dead; the frozen lease then writes once', async () => {
    const store = td.daemon.store;
    const deadBefore = td.daemon.queue.stats().dead;
    const retried = (): number => logLines.filter((l) => l.includes('storage out of space: lease retried later')).length;
    const retriedBefore = retried();
    // ClickHouse refuses the receipts insert (the last one of a lease, after others wrote) with the
    // message of a full disk. A CHECK constraint refuses the whole block before anything is written.
    await store.command(
      `ALTER TABLE ${store.table('receipts')} ADD CONSTRAINT oos_probe CHECK throwIf(accepted_executions >= 0, 'Cannot reserve 1.00 MiB, not enough space') = 0`,
    );
    let ids: string[] = [];
    try {
      ids = await enqueueTogether([batch('oos-1', 'oos'), batch('oos-2', 'oos'), batch('oos-3', 'oos')]);
      // More failures than SERVICE_QUEUE_MAX_ATTEMPTS, and still nobody dead.
      await td.waitFor(async () => retried() >= retriedBefore + 4, 30_000);
      expect(td.daemon.queue.stats().dead).toBe(deadBefore);
      expect(td.daemon.queue.depth()).toBe(3);
      expect(await receipts(ids)).toBe(0);
    } finally {
      await store.command(`ALTER TABLE ${store.table('receipts')} DROP CONSTRAINT oos_probe`);
    }
    await td.settled(30_000);
    expect(td.daemon.queue.stats().dead).toBe(deadBefore);
    expect(await receipts(ids)).toBe(3);
    // Every retry wrote the executions again under the same lease id: deduplicated.
    expect(await executions('oos')).toBe(3 * N_EXEC);
  });
});
