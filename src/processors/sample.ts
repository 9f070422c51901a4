// `sample` processor: keeps every failing, flaky or skipped test and a deterministic `percentage` of
// the clean (all-pass) ones (src/domain/sample.ts). Before identity, after normalize (and filter):
// the run's counts were computed over every test, and the sample does not recount them, so a
// sampled-out test still counts as passed (a skip would be counted as skipped). Runs assembled
// from parts (OTLP traces, split JUnit reports) are not sampled: the clickhouse exporter recounts
// them over their stored executions, where left-out passes would go missing from the counts.
import { z } from 'zod';
import { keepExecutions } from '../domain/keep-executions.js';
import { isTracePart } from '../domain/records.js';
import { sampleKeep } from '../domain/sample.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import { Yielder } from '../pipeline/yield.js';

export const sampleConfigSchema = z
  .object({
    percentage: z.number().min(0).max(100),
    seed: z.string().default(''),
  })
  .strict();

export const sampleProcessorFactory = defineProcessor({
  type: 'sample',
  needsStore: false,
  description: 'keeps every failing/flaky/skipped test and a deterministic percentage of passing ones, per run; counts unchanged',
  configSchema: sampleConfigSchema,
  // Rewrites the decoded jobs and their runs: the order check puts it before identity, which reads them.
  requires: ['runs'],
  provides: ['runs'],
  start: (_host, config) => ({
    async processBatch(batch) {
      const y = new Yielder();
      for (const item of batch.items) {
        const b = item.job.batch;
        if (isTracePart(item.job.source, b)) continue;
        // Keyed by the run id: the same run keeps the same tests on every delivery.
        b.executions = keepExecutions(b.executions, sampleKeep(b.executions, item.run.id, config));
        await y.tick(b.executions.length);
      }
    },
  }),
});
