// The clickhouse exporter's run rows for a run that arrives in parts (a JUnit report in parts, an
// OTLP trace in several requests), against real chDB. Issue 40: data flows one way. The exporter
// reads what earlier leases stored (the run so far, its executions) before it writes anything, and
// counts this lease's executions from the batch, not by reading them back after inserting them. It
// leaves each item's run as the part's own, so the exporters listed after it see what was planned.
// The counts stay per test over all parts: a retry in a later part makes one flaky test, and a part
// redelivered after a later part was stored counts once.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecutionInput } from '../../client/src/contract/batch.js';
import { buildRun } from '../../src/domain/records.js';
import { clickhouseExporterFactory } from '../../src/exporters/clickhouse.js';
import type { ExecutionsExporter, ExecutionsProcessor, Host } from '../../src/pipeline/component.js';
import { leaseSink } from '../../src/pipeline/lease-sink.js';
import { WorkBatch } from '../../src/pipeline/work-batch.js';
import { identityProcessorFactory } from '../../src/processors/identity.js';
import type { Job } from '../../src/queue/types.js';
import type { Store } from '../../src/store/client.js';
import { openRepositories } from '../../src/store/repositories.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { openTestStore, dropTestStore } from '../helpers/daemon.js';
import { reportJobs } from '../helpers/report-jobs.js';

const T0 = Date.parse('2026-11-20T10:00:00Z');
const logger = createLogger('silent');
let store: Store;

beforeAll(async () => {
  store = await openTestStore();
});

afterAll(() => dropTestStore(store));

/** What the exporter asked of the store, in order: `read` or `write:<table>`. */
type Op = string;

/**
 * The real store, with each call recorded (and, when `failOn` names a table, that table's insert
 * refused, as a full disk would): the exporter's repositories and its sink both go through it.
 */
function recording(failOn?: string): { store: Store; ops: Op[] } {
  const ops: Op[] = [];
  const wrapped: Store = {
    ...store,
    query: (sql, params) => (ops.push('read'), store.query(sql, params)),
    queryText: (sql, params) => (ops.push('read'), store.queryText(sql, params)),
    insert: (table, rows, token) => {
      ops.push(`write:${table}`);
      return table === failOn ? Promise.reject(new Error(`insert into ${table} refused`)) : store.insert(table, rows, token);
    },
    insertTsv: (table, columns, rows, token) => {
      ops.push(`write:${table}`);
      return table === failOn ? Promise.reject(new Error(`insert into ${table} refused`)) : store.insertTsv(table, columns, rows, token);
    },
  };
  return { store: wrapped, ops };
}

/** One delivery of a lease through the real identity processor and clickhouse exporter. */
async function deliver(leaseId: string, jobs: Job[], via = recording()): Promise<{ batch: WorkBatch; ops: Op[] }> {
  const repos = openRepositories(via.store);
  const host = { logger, extensions: { ids: [], repositories: () => repos } } as unknown as Host;
  const identity: ExecutionsProcessor = identityProcessorFactory.createExecutions!({}, { id: 'identity', logger });
  const exporter: ExecutionsExporter = clickhouseExporterFactory.createExecutions!({}, { id: 'clickhouse', logger });
  await identity.start(host);
  await exporter.start(host);
  const batch = new WorkBatch({
    leaseId,
    now: T0 + 3_600_000,
    items: jobs.map((job) => ({
      job,
      run: buildRun({ projectId: job.projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt }),
      executions: [],
    })),
  });
  try {
    await identity.processBatch(batch);
    via.ops.length = 0; // the exporter's calls only
    await exporter.exportBatch(batch, leaseSink(via.store, leaseId));
    return { batch, ops: via.ops };
  } finally {
    await identity.shutdown();
    await exporter.shutdown();
  }
}

const execution = (title: string, status: ExecutionInput['status'], attempt = 1, at = T0): ExecutionInput => ({
  filePath: 'src/parts.test.ts',
  suite: 'Parts',
  title,
  status,
  attempt,
  startedAt: at,
  durationMs: 5,
});

/** A JUnit report's parts, each received a millisecond after the one before. */
const report = (projectId: string, parts: ExecutionInput[][]): Job[] => reportJobs(projectId, parts, { startedAt: T0, receivedAt: (i) => T0 + i });

async function storedRun(projectId: string): Promise<{ total: number; passed: number; failed: number; skipped: number; flaky: number; status: string }[]> {
  const rows = await store.query<Record<string, string | number>>(
    `SELECT total, passed, failed, skipped, flaky, status FROM ${store.table('runs')} FINAL WHERE project_id = {projectId:UUID}`,
    { projectId },
  );
  return rows.map((r) => ({ total: Number(r.total), passed: Number(r.passed), failed: Number(r.failed), skipped: Number(r.skipped), flaky: Number(r.flaky), status: String(r.status) }));
}

describe('clickhouse exporter: a run in parts (issue 40)', () => {
  it('reads before it writes, counts the lease from the batch, and leaves each item its own run', async () => {
    const projectId = randomUUID();
    const [p1, p2] = report(projectId, [
      [execution('a', 'pass'), execution('b', 'fail')],
      [execution('c', 'pass'), execution('d', 'skip'), execution('e', 'pass')],
    ]);
    await deliver(`lease-${randomUUID()}`, [p1!]);
    const { batch, ops } = await deliver(`lease-${randomUUID()}`, [p2!]);

    const firstWrite = ops.findIndex((op) => op.startsWith('write:'));
    // The run so far, the counts of what is stored, where the lease's tests stand in what is stored.
    expect(ops.slice(0, firstWrite)).toEqual(['read', 'read', 'read']);
    expect(ops.slice(firstWrite).filter((op) => op === 'read')).toEqual([]);
    expect(ops.slice(firstWrite)).toEqual(expect.arrayContaining(['write:executions', 'write:runs']));
    expect(ops.indexOf('write:executions')).toBeLessThan(ops.indexOf('write:runs'));
    // The batch still holds the part as planned: its own three tests.
    expect(batch.items[0]!.run.counts).toEqual({ total: 3, passed: 2, failed: 0, skipped: 1, flaky: 0 });
    // The stored run is the whole report.
    expect(await storedRun(projectId)).toEqual([{ total: 5, passed: 3, failed: 1, skipped: 1, flaky: 0, status: 'failed' }]);
  });

  it("a test's retry in a later part makes one flaky test; two parts in one lease make one row", async () => {
    const projectId = randomUUID();
    const [p1, p2, p3] = report(projectId, [
      [execution('retried', 'fail', 1, T0), execution('steady', 'pass')],
      [execution('retried', 'pass', 2, T0 + 10)],
      [execution('late', 'pass', 1, T0 + 20)],
    ]);
    await deliver(`lease-${randomUUID()}`, [p1!]);
    expect(await storedRun(projectId)).toEqual([{ total: 2, passed: 1, failed: 1, skipped: 0, flaky: 0, status: 'failed' }]);
    // The retry and another part together: counted over the stored part and both of these.
    await deliver(`lease-${randomUUID()}`, [p2!, p3!]);
    expect(await storedRun(projectId)).toEqual([{ total: 3, passed: 2, failed: 0, skipped: 0, flaky: 1, status: 'passed' }]);
  });

  it('a part whose delivery failed after its executions were stored counts once when redelivered after a later part', async () => {
    const projectId = randomUUID();
    const [p1, p2, p3] = report(projectId, [[execution('one', 'pass')], [execution('two', 'fail'), execution('three', 'pass')], [execution('four', 'pass')]]);
    await deliver(`lease-${randomUUID()}`, [p1!]);
    // Part 2's first delivery: its executions are stored, its run row is refused.
    const lease2 = `lease-${randomUUID()}`;
    const failing = recording('runs');
    await expect(deliver(lease2, [p2!], failing)).rejects.toThrow('insert into runs refused');
    expect(failing.ops).toContain('write:executions');
    expect(await storedRun(projectId)).toEqual([{ total: 1, passed: 1, failed: 0, skipped: 0, flaky: 0, status: 'passed' }]);
    // Part 3 is stored meanwhile: it counts part 2's stored executions too.
    await deliver(`lease-${randomUUID()}`, [p3!]);
    expect(await storedRun(projectId)).toEqual([{ total: 4, passed: 3, failed: 1, skipped: 0, flaky: 0, status: 'failed' }]);
    // Part 2 again, under its lease id: its stored rows and its batch are one part, counted once.
    await deliver(lease2, [p2!]);
    expect(await storedRun(projectId)).toEqual([{ total: 4, passed: 3, failed: 1, skipped: 0, flaky: 0, status: 'failed' }]);
  });

  it('reads where tests stand in slices, as one read would', async () => {
    const projectId = randomUUID();
    const [p1] = report(projectId, [[execution('x', 'fail', 1, T0), execution('x', 'pass', 2, T0 + 5), execution('y', 'skip'), execution('z', 'pass')]]);
    const { batch } = await deliver(`lease-${randomUUID()}`, [p1!]);
    const runId = batch.items[0]!.run.id;
    const ids = new Map(batch.items[0]!.executions.map((e) => [e.input.title, e.testId]));
    const repo = openRepositories(store).runs;
    const asked = [ids.get('x')!, ids.get('y')!, ids.get('z')!, randomUUID()];
    const whole = await repo.testFinals(projectId, runId, asked);
    expect(await repo.testFinals(projectId, runId, asked, 1)).toEqual(whole);
    expect(Object.fromEntries([...whole].map(([id, f]) => [id, f]))).toEqual({
      [ids.get('x')!]: { status: 'pass', attempt: 2, startedAt: T0 + 5, failed: true },
      [ids.get('y')!]: { status: 'skip', attempt: 1, startedAt: T0, failed: false },
      [ids.get('z')!]: { status: 'pass', attempt: 1, startedAt: T0, failed: false },
    });
  });
});
