// `normalize` processor: cleans execution inputs and recomputes the run's counts from them when that
// changed what they count.
import { z } from 'zod';
import { dropIgnored, normalizeExecution } from '../domain/normalize.js';
import { compileIgnore } from '../../client/src/contract/ignore-globs.js';
import { buildRun } from '../domain/records.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import { Yielder } from '../pipeline/yield.js';

const KEEP_ALL = (): boolean => false;

export const normalizeProcessorFactory = defineProcessor({
  type: 'normalize',
  // Reads `ignore` through Host.projectConfig: without a store, service.yml + environment.
  needsStore: false,
  description: 'trims names, unifies path separators, caps message sizes, drops ignored files, recounts the run',
  configSchema: z.object({}).strict(),
  // Rewrites the jobs' executions and rebuilds the run: a stage that read them earlier saw them raw.
  requires: ['runs'],
  provides: ['runs'],
  start: (host) => {
    // Compiled `ignore` lists by their patterns: projects usually share the service.yml list, and
    // a project's list changes only when its settings do.
    const matchers = new Map<string, (filePath: string) => boolean>();
    const matcherFor = (patterns: readonly string[]): ((filePath: string) => boolean) => {
      if (patterns.length === 0) return KEEP_ALL;
      const key = JSON.stringify(patterns);
      let m = matchers.get(key);
      if (!m) {
        if (matchers.size >= 1_000) matchers.clear();
        m = compileIgnore(patterns);
        matchers.set(key, m);
      }
      return m;
    };
    return {
      async processBatch(batch) {
        const y = new Yielder();
        for (const item of batch.items) {
          const b = item.job.batch;
          // The project's `ignore` (service.yml, or its settings): matching test files are left
          // out before identity and scoring.
          const isIgnored = matcherFor((await host.projectConfig(item.job.projectId)).config.ignore);
          // The run was built from these executions at assembly: it is built again only when what
          // it counts changed (a name that identifies the test, an attempt, a duration, a dropped test).
          let changed = false;
          for (const e of b.executions) {
            const { filePath, suite, title, attempt, durationMs } = e;
            normalizeExecution(e);
            if (e.filePath !== filePath || e.suite !== suite || e.title !== title || e.attempt !== attempt || e.durationMs !== durationMs) changed = true;
          }
          const before = b.executions.length;
          b.executions = dropIgnored(b.executions, isIgnored);
          await y.tick(b.executions.length);
          if (changed || b.executions.length !== before) {
            item.run = buildRun({ projectId: item.job.projectId, receiptId: item.job.receiptId, source: item.job.source, batch: b, receivedAt: item.job.receivedAt });
          }
        }
      },
    };
  },
});
