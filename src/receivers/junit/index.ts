// `junit` receiver: POST /v1/ingest/junit `{ idempotencyKey, resource, xml }` (docs/contract.md §3).
import { z } from 'zod';
import { CURRENT_CONTRACT_VERSION, LIMITS, type IngestBatch } from '../../../client/src/contract/batch.js';
import { reportPartKey, splitExecutions } from '../../../client/src/contract/report-parts.js';
import type { ReceiverFactory } from '../../pipeline/component.js';
import { errors, zodIssues } from '../../errors/catalogue.js';
import { idempotencyKeySchema, resourceSchema } from '../native/schema.js';
import { ingestReceiptSchema, ingestRoute } from '../shared.js';
import { parseJUnit } from '../../../client/src/contract/junit/parse.js';

export const junitRequestSchema = z.object({
  idempotencyKey: idempotencyKeySchema,
  resource: resourceSchema,
  xml: z.string().min(1),
});

export const junitReceiverFactory: ReceiverFactory<Record<string, never>> = {
  kind: 'receiver',
  type: 'junit',
  needsStore: false,
  description: 'POST /v1/ingest/junit: a JUnit XML report with its run context',
  signals: ['executions'],
  configSchema: z.object({}).strict(),
  create: () =>
    ingestRoute({
      url: '/v1/ingest/junit',
      summary: 'Ingest a JUnit XML report',
      source: 'junit',
      body: junitRequestSchema,
      response: ingestReceiptSchema,
      async decode(body) {
        const parsed = junitRequestSchema.safeParse(body);
        if (!parsed.success) throw errors.invalidPayload(zodIssues(parsed.error));
        const { idempotencyKey, resource, xml } = parsed.data;
        const result = parseJUnit(xml, { now: Date.now(), maxExecutions: LIMITS.maxJUnitExecutions });
        if (!result.ok && result.error === 'too_many_testcases') {
          throw errors.payloadTooLarge(
            `${result.message}; a report may have at most ${LIMITS.maxJUnitExecutions}: split it, e.g. one report per CI shard (\`flakehouse report\` with SERVICE_SHARD_INDEX/SERVICE_SHARD_TOTAL, or one request per XML file)`,
          );
        }
        // Well-formed XML holding a value that cannot be true (an impossible date): the payload's fault, at `xml`.
        if (!result.ok) {
          if (result.error === 'invalid_value') throw errors.invalidPayload([{ path: 'xml', message: result.message }], `xml: ${result.message}`);
          throw errors.unreadableJUnit(result.error, result.message);
        }
        const run = { status: result.runStatus, startedAt: result.startedAt, finishedAt: result.finishedAt };
        // A large report becomes parts of a bounded size, one job each, that make one run: the
        // worker's memory is bounded by the part (client/src/contract/report-parts.ts).
        const parts = splitExecutions(result.executions, LIMITS.maxExecutionsPerBatch);
        if (parts.length === 1) return [{ contractVersion: CURRENT_CONTRACT_VERSION, idempotencyKey, resource, run, executions: result.executions }];
        return parts.map(
          (executions, index): IngestBatch => ({
            contractVersion: CURRENT_CONTRACT_VERSION,
            idempotencyKey: reportPartKey(idempotencyKey, index, parts.length),
            resource,
            // Every part carries the report's times and status; the last one says the run is whole.
            run: { ...run, reportPart: { key: idempotencyKey, index, count: parts.length }, ...(index === parts.length - 1 ? { hasRunSpan: true } : {}) },
            executions,
          }),
        );
      },
      // The client sees one receipt for the report, whatever the number of parts.
      listReceipts: false,
      unstorableIssue(err, batch) {
        // Executions come from the XML: name the testcase rather than an index the sender never wrote.
        const exec = /^executions\.(\d+)\.(.*)$/.exec(err.path);
        if (!exec) return { path: err.path, message: err.reason };
        const e = batch.executions[Number(exec[1])];
        return { path: 'xml', message: `testcase "${e?.title ?? ''}" (attempt ${e?.attempt ?? 1}): ${exec[2]} ${err.reason}` };
      },
    }),
};
