// The native batch (CONTRACT.md §2) as zod schemas. Unknown keys are ignored for forward
// compatibility; timestamps come in as ISO-8601 or epoch ms and leave as epoch ms.
import { z } from 'zod';
import {
  CI_PROVIDERS,
  LIMITS,
  RUN_STATUSES,
  SPAN_KINDS,
  SPAN_STATUSES,
  TEST_STATUSES,
  TRIGGERS,
  type IngestBatch,
} from '../../domain/batch.js';
import { parseTimestamp } from '../../domain/time.js';

export const SEMVER_RE = /^\d+\.\d+\.\d+$/;
export const COMMIT_SHA_RE = /^[0-9a-f]{7,40}$/i;

const timestamp = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseTimestamp(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'expected an ISO-8601 timestamp or epoch milliseconds' });
    return z.NEVER;
  }
  return ms;
});

const attributeValue = z.union([z.string(), z.number(), z.boolean()]);
const attributes = z.record(z.string(), attributeValue);

const errorSchema = z.object({
  type: z.string().optional(),
  message: z.string().min(1),
  stack: z.string().optional(),
});

export const artifactRefSchema = z.object({
  name: z.string().min(1),
  contentType: z.string().min(1),
  path: z.string().min(1),
  key: z.string().optional(),
  sizeBytes: z.number().int().nonnegative().optional(),
});

const spanSchema = z.object({
  spanId: z.string().min(1),
  parentSpanId: z.string().optional(),
  name: z.string(),
  kind: z.enum(SPAN_KINDS),
  status: z.enum(SPAN_STATUSES),
  startedAt: timestamp,
  durationMs: z.number().nonnegative().transform(Math.round),
  attributes: attributes.optional(),
  error: errorSchema.optional(),
});

export const resourceSchema = z.object({
  ciProvider: z.enum(CI_PROVIDERS),
  ciRunId: z.string().optional(),
  commitSha: z.string().regex(COMMIT_SHA_RE, 'expected 7 to 40 hex characters').transform((s) => s.toLowerCase()),
  branch: z.string().min(1),
  prNumber: z.number().int().positive().optional(),
  trigger: z.enum(TRIGGERS),
  shardIndex: z.number().int().min(1).optional(),
  shardTotal: z.number().int().min(1).optional(),
  repository: z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'expected owner/name').optional(),
  baseBranch: z.string().optional(),
  ciJobUrl: z.string().optional(),
});

const executionSchema = z.object({
  filePath: z.string(),
  suite: z.string(),
  title: z.string().min(1),
  params: z.record(z.string(), z.unknown()).optional(),
  status: z.enum(TEST_STATUSES),
  attempt: z.number().int().min(1).default(1),
  retryOfIndex: z.number().int().min(0).optional(),
  startedAt: timestamp,
  durationMs: z.number().int().nonnegative(),
  error: errorSchema.optional(),
  artifacts: z.array(artifactRefSchema).optional(),
  attributes: attributes.optional(),
  traceId: z.string().optional(),
  spanId: z.string().optional(),
  spans: z.array(spanSchema).max(LIMITS.maxSpansPerExecution).optional(),
});

export const idempotencyKeySchema = z.string().min(LIMITS.idempotencyKeyMin).max(LIMITS.idempotencyKeyMax);

export const nativeBatchSchema = z
  .object({
    contractVersion: z.string().regex(SEMVER_RE, 'expected a semantic version such as 0.1.0'),
    idempotencyKey: idempotencyKeySchema,
    resource: resourceSchema,
    run: z.object({
      status: z.enum(RUN_STATUSES),
      startedAt: timestamp,
      finishedAt: timestamp.optional(),
      traceId: z.string().optional(),
    }),
    executions: z.array(executionSchema).max(LIMITS.maxExecutionsPerBatch),
  })
  .superRefine((b, ctx) => {
    b.executions.forEach((e, i) => {
      if (e.retryOfIndex !== undefined && e.retryOfIndex >= i) {
        ctx.addIssue({
          code: 'custom',
          path: ['executions', i, 'retryOfIndex'],
          message: 'must be the index of an earlier execution in this batch',
        });
      }
    });
  });

/** Only majors 0 and 1 are understood; anything else is refused rather than misread. */
export function isSupportedContractVersion(version: string): boolean {
  const major = Number(version.split('.')[0]);
  return major === 0 || major === 1;
}

export type NativeBatch = z.output<typeof nativeBatchSchema>;

// Compile-time check that the schema's output is the canonical batch.
export const _batchTypeCheck: (b: NativeBatch) => IngestBatch = (b) => b;
