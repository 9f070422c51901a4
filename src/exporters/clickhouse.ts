// `clickhouse` exporter: one deduplicated insert per table per lease, every one through the lease's
// sink (src/pipeline/lease-sink.ts): its insert_deduplication_token is `lease:<lease>:<part>`, so a
// redelivered lease (crash, visibility timeout) writes nothing twice, in the tables and in every
// materialized view fed by them, and the runtime knows the lease wrote. The one stage that maps the
// processors' typed outputs (src/pipeline/work-batch.ts) to table rows. It reads the store itself,
// before writing anything (the run stored so far of a trace part), and never writes to it directly.
import { z } from 'zod';
import { defineExporter } from '../pipeline/helpers/exporter.js';
import type { WorkBatch } from '../pipeline/work-batch.js';
import { Yielder } from '../pipeline/yield.js';
import { TEST_STATE_COLUMNS, testStateRow } from '../store/tests.js';
import type { TsvColumns } from '../store/tsv.js';
import { errorSignatureRow, healthEventRow, identityAliasRow, identityStitchRow, signatureBandRows } from '../store/processor-rows.js';
import { isTracePart, mergeRunPart, type RunCounts, type RunRecord } from '../domain/records.js';
import { EXECUTION_COLUMNS_IN, RUN_COLUMNS_IN, executionRow, identityRow, receiptRow, runRow, type RunRepo } from '../store/runs.js';
import { countsWithPending, type PendingExecution } from '../domain/run-parts.js';

/** Tables written as TabSeparated (the big ones); others go as JSON rows. */
const TSV_TABLES: Record<string, TsvColumns> = { test_state: TEST_STATE_COLUMNS };

/**
 * The rows of the processors' outputs other than identities, per table, in the order they are
 * inserted (by table name, as always: a lease's insert order is part of what a redelivery repeats).
 * Tables without rows are left out.
 */
export function processorRows(batch: WorkBatch): Map<string, Record<string, unknown>[]> {
  const tables: [string, Record<string, unknown>[]][] = [
    ['error_signatures', batch.signatures.map(errorSignatureRow)],
    ['identity_aliases', batch.aliases.map(identityAliasRow)],
    ['identity_stitches', batch.stitches.map(identityStitchRow)],
    ['signature_bands', batch.signatures.flatMap(signatureBandRows)],
    ['test_health_events', batch.healthEvents.map(healthEventRow)],
    ['test_state', [...batch.testStates.values()].filter((u) => u.persist && !u.alreadyApplied).map((u) => testStateRow(u.record))],
  ];
  return new Map(tables.filter(([, rows]) => rows.length > 0));
}

/**
 * The run rows a lease stores, one per run id. A part of an OTLP trace (or of a JUnit report sent in
 * parts) is merged into the run stored so far; its counts are those of the stored executions with
 * the tests of this lease counted again with the lease's executions (src/domain/run-parts.ts). Two
 * parts of one run in a lease merge into one row. The batch is left as it is: every exporter sees
 * each item's own run, whichever order they are listed in.
 */
async function storedRuns(repo: Pick<RunRepo, 'runState' | 'countsForRun' | 'testFinals'>, batch: WorkBatch): Promise<RunRecord[]> {
  const runs = new Map<string, RunRecord>();
  const counts = new Map<string, RunCounts>();
  for (const item of batch.items) {
    let run = item.run;
    if (isTracePart(item.job.source, item.job.batch)) {
      const prev = runs.get(run.id) ?? (await repo.runState(run.projectId, run.id));
      let total = counts.get(run.id);
      if (!total) {
        const pending = pendingOf(batch, run.id);
        const stored = await repo.countsForRun(run.projectId, run.id);
        const finals = await repo.testFinals(run.projectId, run.id, [...new Set(pending.map((e) => e.testId))]);
        total = countsWithPending(stored, finals, pending);
        counts.set(run.id, total);
      }
      run = mergeRunPart(prev, run, total);
    }
    runs.set(run.id, run);
  }
  return [...runs.values()];
}

/** The lease's executions of one run, as its counts read them. */
function pendingOf(batch: WorkBatch, runId: string): PendingExecution[] {
  const out: PendingExecution[] = [];
  for (const item of batch.items) {
    if (item.run.id !== runId) continue;
    for (const e of item.executions) out.push({ testId: e.testId, status: e.input.status, attempt: e.input.attempt, startedAt: e.input.startedAt });
  }
  return out;
}

export const clickhouseExporterFactory = defineExporter({
  type: 'clickhouse',
  description: 'writes runs, executions, identities and receipts to ClickHouse, idempotently per lease',
  configSchema: z.object({}).strict(),
  // What it always writes: runs and receipts, executions with their test ids, new identities.
  // Signatures, test states and health events are written when a stage filled them in.
  requires: ['runs', 'executions', 'identities'],
  startExecutions: (host, _cfg, { id }) => {
    const repo = host.extensions.repositories('exporter', id).runs;
    return {
      async exportBatch(batch, sink) {
        // Reads first, writes after: the runs this lease stores, trace parts merged with what
        // earlier leases stored. Nothing read depends on this lease's own writes.
        const runs = await storedRuns(repo, batch);
        const executions: Record<string, unknown>[] = [];
        const y = new Yielder();
        for (const i of batch.items) {
          for (const e of i.executions) executions.push(executionRow(e, i.run));
          await y.tick(i.executions.length);
        }
        const identities = batch.identities.map(identityRow);
        const now = Date.now();
        // Executions before runs: a run that is listed always has its executions.
        await sink.insertTsv('executions', EXECUTION_COLUMNS_IN, executions, 'executions');
        await sink.insert('test_identities', identities, 'identities');
        // The processors' outputs (test state, stitches, signatures, …): one insert per table, in a fixed order.
        for (const [table, rows] of processorRows(batch)) {
          const spec = TSV_TABLES[table];
          if (spec) await sink.insertTsv(table, spec, rows, table);
          else await sink.insert(table, rows, table);
        }
        await sink.insertTsv('runs', RUN_COLUMNS_IN, runs.map(runRow), 'runs');
        await sink.insert(
          'receipts',
          batch.items.map((i) => receiptRow(i.run, now, i.job.batch.executions.length)),
          'receipts',
        );
      },
    };
  },
});
