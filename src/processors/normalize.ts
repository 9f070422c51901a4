// `normalize` processor: cleans execution inputs and recomputes the run's counts from them.
import { z } from 'zod';
import { normalizeExecution } from '../domain/normalize.js';
import { buildRun } from '../domain/records.js';
import type { ProcessorFactory } from '../pipeline/component.js';
import { Yielder } from '../pipeline/yield.js';

export const normalizeProcessorFactory: ProcessorFactory<Record<string, never>> = {
  kind: 'processor',
  type: 'normalize',
  description: 'trims names, unifies path separators, caps message sizes, recounts the run',
  signals: ['executions'],
  configSchema: z.object({}).strict(),
  createExecutions: () => ({
    async start() {},
    async shutdown() {},
    async processBatch(batch) {
      const y = new Yielder();
      for (const item of batch.items) {
        const b = item.job.batch;
        for (const e of b.executions) normalizeExecution(e);
        await y.tick(b.executions.length);
        item.run = buildRun({ projectId: item.job.projectId, receiptId: item.job.receiptId, source: item.job.source, batch: b, receivedAt: item.job.receivedAt });
      }
    },
  }),
};
