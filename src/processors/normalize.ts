// `normalize` processor: cleans execution inputs and recomputes the run's counts from them.
import { z } from 'zod';
import { dropIgnored, normalizeExecution } from '../domain/normalize.js';
import { compileIgnore } from '../domain/ignore-globs.js';
import { buildRun } from '../domain/records.js';
import type { Host, ProcessorFactory } from '../pipeline/component.js';
import { Yielder } from '../pipeline/yield.js';

export const normalizeProcessorFactory: ProcessorFactory<Record<string, never>> = {
  kind: 'processor',
  type: 'normalize',
  description: 'trims names, unifies path separators, caps message sizes, drops ignored files, recounts the run',
  signals: ['executions'],
  configSchema: z.object({}).strict(),
  createExecutions: () => {
    let isIgnored: (filePath: string) => boolean = () => false;
    return {
      async start(host: Host) {
        // service.yml `ignore`: matching test files are left out before identity and scoring.
        if (host.service.ignore.length > 0) isIgnored = compileIgnore(host.service.ignore);
      },
      async shutdown() {},
      async processBatch(batch) {
        const y = new Yielder();
        for (const item of batch.items) {
          const b = item.job.batch;
          for (const e of b.executions) normalizeExecution(e);
          b.executions = dropIgnored(b.executions, isIgnored);
          await y.tick(b.executions.length);
          item.run = buildRun({ projectId: item.job.projectId, receiptId: item.job.receiptId, source: item.job.source, batch: b, receivedAt: item.job.receivedAt });
        }
      },
    };
  },
};
