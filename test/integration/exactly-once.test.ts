// A lease that wrote to ClickHouse but crashed before its ack is redelivered whole (same lease id,
// same plan) and its writes are deduplicated: every execution is stored exactly once.
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/telemetry/logger.js';
import { loadServiceConfig } from '../../src/config/service-yml.js';
import { ProjectConfigs } from '../../src/config/resolved-project-config.js';
import { clickhouseExporterFactory } from '../../src/exporters/clickhouse.js';
import { identityProcessorFactory } from '../../src/processors/identity.js';
import { normalizeProcessorFactory } from '../../src/processors/normalize.js';
import { buildRun } from '../../src/domain/records.js';
import { WorkBatch } from '../../src/pipeline/work-batch.js';
import { leaseSink, type LeaseWrites } from '../../src/pipeline/lease-sink.js';
import { buildHost, pipelineSettings } from '../../src/pipeline/host.js';
import { defaultRepositoriesSpec, ServiceExtensions } from '../../src/pipeline/extensions.js';
import { processingRegistry } from '../../src/builtin/processing.js';
import { loadServerSettings } from '../../src/config/daemon-env.js';
import { nativeBatch, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const logger = createLogger('silent');
const settings = (id: string) => ({ id, logger });

describe('exactly-once under redelivery', () => {
  let td: TestDaemon | undefined;
  afterAll(async () => td?.close());

  it('a frozen lease written but not acked is redelivered and deduplicated after a restart', async () => {
    td = await startTestDaemon({ work: false });
    const accepted: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await td.request('POST', '/v1/ingest', { body: nativeBatch({ n: 25, resource: { branch: 'exactly-once' } }) });
      expect(res.status).toBe(202);
      accepted.push(res.json.receiptId);
    }
    const queue = td.daemon.queue;
    const lease = await queue.dequeue({ maxJobs: 4, maxExecutions: 10_000 });
    expect(lease?.jobs).toHaveLength(4);

    // Run the executions pipeline by hand, as the worker does, up to the writes: then "crash".
    const loaded = loadServiceConfig({ env: {}, cwd: td.dataDir });
    const configs = new ProjectConfigs(td.daemon.store, loaded);
    // Repositories through the default repositories extension (clickhouse_storage), over the daemon's store.
    const extensions = new ServiceExtensions([defaultRepositoriesSpec(processingRegistry())!], { dataDir: td.dataDir, logger, store: td.daemon.store });
    await extensions.start();
    const host = buildHost({ logger, projectConfigs: configs, settings: pipelineSettings(loadServerSettings(td.env, td.dataDir)), outbox: td.daemon.queue.outbox, extensions });
    const normalize = normalizeProcessorFactory.createExecutions!({}, settings('normalize'));
    const identity = identityProcessorFactory.createExecutions!({}, settings('identity'));
    const exporter = clickhouseExporterFactory.createExecutions!({}, settings('clickhouse'));
    for (const c of [normalize, identity, exporter]) await c.start(host);
    const batch = new WorkBatch({
      leaseId: lease!.id,
      now: Date.now(),
      items: lease!.jobs.map((job) => ({
        job,
        run: buildRun({ projectId: job.projectId, receiptId: job.receiptId, source: job.source, batch: job.batch, receivedAt: job.receivedAt }),
        executions: [],
      })),
    });
    await normalize.processBatch(batch);
    await identity.processBatch(batch);
    await queue.savePlan(lease!.id, { events: [] });
    const writes: LeaseWrites = { wrote: false };
    await exporter.exportBatch(batch, leaseSink(td.daemon.store, lease!.id, writes));
    // The sink recorded the write: had the lease failed now, it would have been kept whole.
    expect(writes.wrote).toBe(true);

    // Restart with the worker on: the frozen lease comes back and is written again, deduplicated.
    td = await td.restart();
    const td2 = td;
    const runs = await td2.waitFor(async () => {
      const r = await td2.request('GET', '/v1/runs?branch=exactly-once&limit=100');
      return r.json.items.length === 6 && td2.daemon.queue.depth() === 0 ? r.json.items : null;
    });
    expect(runs).toHaveLength(6);
    for (const run of runs) {
      expect(run.counts.total).toBe(25);
      const detail = await td2.request('GET', `/v1/runs/${run.id}`);
      expect(detail.json.executions).toHaveLength(25);
      expect(new Set(detail.json.executions.map((e: { id: string }) => e.id)).size).toBe(25);
    }
    const [{ n }] = (await td2.daemon.store.query<{ n: number }>(`SELECT count() AS n FROM ${td2.daemon.store.table('executions')}`)) as [{ n: number }];
    expect(Number(n)).toBe(150);
    const [{ r }] = (await td2.daemon.store.query<{ r: number }>(`SELECT count() AS r FROM ${td2.daemon.store.table('receipts')}`)) as [{ r: number }];
    expect(Number(r)).toBe(6);

    // The rollups, fed by materialized views at insert time, counted the redelivered lease once.
    const rollup = async (sql: string): Promise<number> => Number(((await td2.daemon.store.query<{ n: number }>(sql)) as [{ n: number }])[0].n);
    expect(await rollup(`SELECT sum(executions) AS n FROM ${td2.daemon.store.table('daily_test_stats')}`)).toBe(150);
    expect(await rollup(`SELECT sum(executions) AS n FROM ${td2.daemon.store.table('suite_daily')}`)).toBe(150);
    expect(await rollup(`SELECT sum(executions) AS n FROM ${td2.daemon.store.table('flaky_trends')}`)).toBe(150);
    expect(await rollup(`SELECT count() AS n FROM ${td2.daemon.store.table('test_recent')}`)).toBe(150);
  });

  it('an insert with a fresh token after a deduplicated one is not swallowed (chDB keeps SET per session)', async () => {
    const t = td!;
    const store = t.daemon.store;
    await store.command(`CREATE TABLE ${store.table('dedup_probe')} (id String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100`);
    await store.insert('dedup_probe', [{ id: 'a' }], 'probe:1');
    await store.insert('dedup_probe', [{ id: 'a' }], 'probe:1');
    await store.insert('dedup_probe', [{ id: 'b' }], 'probe:2');
    const rows = await store.query<{ id: string }>(`SELECT id FROM ${store.table('dedup_probe')} ORDER BY id`);
    expect(rows.map((x) => x.id)).toEqual(['a', 'b']);
  });
});
