// `filter` processor: drops executions, or whole runs, by the rules of its config
// (src/domain/filter.ts). It works on the decoded batch, like normalize's `ignore`, so it must come
// before identity: what it drops never gets a test id, a score or a row. The run is recounted over
// what is left, as with `ignore` (a filtered test is not part of the run).
import { z } from 'zod';
import { CI_PROVIDERS, TEST_STATUSES, TRIGGERS } from '../../client/src/contract/batch.js';
import { compileFilter } from '../domain/filter.js';
import { keepExecutions } from '../domain/keep-executions.js';
import { compileFilePattern, compileTextPattern, patternProblem, type TextMatcher } from '../domain/patterns.js';
import { buildRun } from '../domain/records.js';
import { defineProcessor } from '../pipeline/helpers/processor.js';
import type { WorkItem } from '../pipeline/work-batch.js';
import { Yielder } from '../pipeline/yield.js';

/** A pattern, compiled at validation so a bad regex or glob is refused with its path. */
const pattern = (compile: (p: string) => TextMatcher) =>
  z
    .string()
    .min(1)
    .superRefine((p, ctx) => {
      const problem = patternProblem(p, compile);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });
const textPattern = pattern(compileTextPattern);

// A rule without fields would match everything: a typo'd field name is caught by `strict`, an
// empty rule by this.
const nonEmpty = <T extends object>(r: T): boolean => Object.keys(r).length > 0;
const EMPTY_RULE_CHECK = {
  message: 'a rule needs at least one field (an empty rule matches everything)',
  // Only for an otherwise valid rule: `{ titel: x }` is one unknown key, not also an empty rule.
  when: (payload: { issues: readonly unknown[] }) => payload.issues.length === 0,
};

const executionRule = z
  .object({
    file: pattern(compileFilePattern).optional(),
    suite: textPattern.optional(),
    title: textPattern.optional(),
    status: z.array(z.enum(TEST_STATUSES)).min(1).optional(),
    branch: textPattern.optional(),
    attributes: z.record(z.string().min(1), textPattern).optional(),
  })
  .strict()
  .refine(nonEmpty, EMPTY_RULE_CHECK);

const runRule = z
  .object({
    branch: textPattern.optional(),
    repository: textPattern.optional(),
    ciProvider: z.array(z.enum(CI_PROVIDERS)).min(1).optional(),
    trigger: z.array(z.enum(TRIGGERS)).min(1).optional(),
  })
  .strict()
  .refine(nonEmpty, EMPTY_RULE_CHECK);

const ruleSet = <R extends z.ZodType>(rule: R) => z.object({ include: z.array(rule).optional(), exclude: z.array(rule).optional() }).strict();

export const filterConfigSchema = z.object({ executions: ruleSet(executionRule).optional(), runs: ruleSet(runRule).optional() }).strict();

export const filterProcessorFactory = defineProcessor({
  type: 'filter',
  needsStore: false,
  description: 'drops executions or whole runs by file, suite, title, status, branch, attributes (globs or /regex/); before identity',
  configSchema: filterConfigSchema,
  // Rewrites the decoded jobs and their runs: the order check puts it before identity, which reads them.
  requires: ['runs'],
  provides: ['runs'],
  start: (_host, config, settings) => {
    const filter = compileFilter(config);
    return {
      async processBatch(batch) {
        const y = new Yielder();
        // A dropped run leaves the lease's items: nothing is stored for it and no `run.processed`
        // goes out. Its job is still acknowledged with the lease (the queue acks leases, not items).
        const kept: WorkItem[] = batch.items.filter((item) => !filter.dropsRun(item.job.batch.resource));
        const droppedRuns = batch.items.length - kept.length;
        if (droppedRuns > 0) batch.items.splice(0, batch.items.length, ...kept);
        let droppedExecutions = 0;
        if (filter.filtersExecutions) {
          for (const item of batch.items) {
            const b = item.job.batch;
            const before = b.executions.length;
            b.executions = keepExecutions(
              b.executions,
              b.executions.map((e) => filter.keepsExecution(e, b.resource)),
            );
            await y.tick(before);
            if (b.executions.length === before) continue;
            droppedExecutions += before - b.executions.length;
            // Recounted, as normalize does after `ignore`: a filtered test is not part of the run.
            item.run = buildRun({ projectId: item.job.projectId, receiptId: item.job.receiptId, source: item.job.source, batch: b, receivedAt: item.job.receivedAt });
          }
        }
        if (droppedRuns > 0 || droppedExecutions > 0) settings.logger.debug({ lease: batch.leaseId, droppedRuns, droppedExecutions }, 'filtered');
      },
    };
  },
});
