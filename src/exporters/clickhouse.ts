// `clickhouse` exporter: one deduplicated insert per table per lease. The lease id is the
// insert_deduplication_token, so a redelivered lease (crash, visibility timeout) writes nothing
// twice, in the tables and in every materialized view fed by them.
import { z } from 'zod';
import type { ExporterFactory, Host } from '../pipeline/component.js';
import type { Store } from '../store/client.js';
import { EXECUTION_COLUMNS_IN, RUN_COLUMNS_IN, executionRow, identityRow, receiptRow, runRow } from '../store/runs.js';

export const clickhouseExporterFactory: ExporterFactory<Record<string, never>> = {
  kind: 'exporter',
  type: 'clickhouse',
  description: 'writes runs, executions, identities and receipts to ClickHouse, idempotently per lease',
  signals: ['executions'],
  configSchema: z.object({}).strict(),
  createExecutions: () => {
    let store: Store | undefined;
    return {
      async start(host: Host) {
        store = host.store;
      },
      async shutdown() {},
      async exportBatch(batch) {
        if (!store) throw new Error('clickhouse exporter used before start');
        const token = `lease:${batch.leaseId}`;
        const executions = batch.items.flatMap((i) => i.executions.map((e) => executionRow(e, i.run)));
        const identities = batch.items.flatMap((i) => i.newIdentities.map(identityRow));
        const now = Date.now();
        // Executions before runs: a run that is listed always has its executions.
        await store.insertTsv('executions', EXECUTION_COLUMNS_IN, executions, `${token}:executions`);
        await store.insert('test_identities', identities, `${token}:identities`);
        await store.insertTsv('runs', RUN_COLUMNS_IN, batch.items.map((i) => runRow(i.run)), `${token}:runs`);
        await store.insert(
          'receipts',
          batch.items.map((i) => receiptRow(i.run, now, i.job.batch.executions.length)),
          `${token}:receipts`,
        );
      },
    };
  },
};
