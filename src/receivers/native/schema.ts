// The native batch (docs/contract.md §2) as zod schemas. Unknown keys are ignored for forward
// compatibility; timestamps come in as ISO-8601 or epoch ms and leave as epoch ms.
import { z } from 'zod';
import {
  CI_PROVIDERS,
  CURRENT_CONTRACT_VERSION,
  LIMITS,
  RUN_STATUSES,
  SPAN_KINDS,
  SPAN_STATUSES,
  TEST_STATUSES,
  TRIGGERS,
  type IngestBatch,
} from '../../../client/src/contract/batch.js';
import { readTimestamp, toIso } from '../../../client/src/contract/time.js';
import { jobMatrixFrom } from '../../../client/src/contract/ci-job.js';
import { attributesOf, withinJsonDepth } from '../../domain/attributes.js';
import { isStorableTime, STORABLE } from '../../../client/src/contract/storable.js';

export const SEMVER_RE = /^\d+\.\d+\.\d+$/;
export const COMMIT_SHA_RE = /^[0-9a-f]{7,40}$/i;

const timestamp = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const r = readTimestamp(v);
  if (!r.ok) {
    // An impossible date (`2026-02-30`) says why, rather than being rolled over into March.
    ctx.addIssue({ code: 'custom', message: r.reason });
    return z.NEVER;
  }
  return r.ms;
});

/** A time for a message; one outside the storable window (refused later anyway) as its number. */
function shownTime(ms: number): string {
  return isStorableTime(ms) ? toIso(ms) : `${ms} ms`;
}

/**
 * An optional field that also takes null, read as absent: Flakemetry's schemas are `.nullish()` and
 * its clients send null for "not set". The null never gets past the door.
 */
function nullish<T extends z.ZodType>(schema: T) {
  return schema
    .nullish()
    .transform((v): z.output<T> | undefined => v ?? undefined)
    .optional();
}

// Any JSON value, as Flakemetry allows; stored as a scalar (nested values as JSON text, null left out).
const attributeValue = z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.unknown()), z.record(z.string(), z.unknown())]);
const attributes = z.record(z.string(), attributeValue).transform((record, ctx) => {
  // Checked here, before the JSON text is made: the door's depth check (client/src/contract/storable.ts) only sees
  // that text. Same bound as there, where the attributes object itself is the first level.
  for (const [key, value] of Object.entries(record)) {
    if (!withinJsonDepth(value, STORABLE.maxJsonDepth - 1)) {
      ctx.addIssue({ code: 'custom', path: [key], message: `nested too deeply: at most ${STORABLE.maxJsonDepth} levels of objects and arrays` });
      return z.NEVER;
    }
  }
  return attributesOf(record);
});

const errorSchema = z.object({
  type: nullish(z.string()),
  message: z.string().min(1),
  stack: nullish(z.string()),
});

export const artifactRefSchema = z.object({
  name: z.string().min(1),
  contentType: z.string().min(1),
  path: z.string().min(1),
  key: nullish(z.string()),
  sizeBytes: nullish(z.number().int().nonnegative()),
});

const spanSchema = z.object({
  spanId: z.string().min(1),
  parentSpanId: nullish(z.string()),
  name: z.string(),
  // Flakemetry fills these in when a client leaves them out.
  kind: z.enum(SPAN_KINDS).nullish().transform((v) => v ?? 'other'),
  status: z.enum(SPAN_STATUSES).nullish().transform((v) => v ?? 'unset'),
  startedAt: timestamp,
  durationMs: z.number().nonnegative().transform(Math.round),
  attributes: nullish(attributes),
  error: nullish(errorSchema),
});

/** A commit: 7 to 40 hex characters, any case in, lowercase out (docs/contract.md §1). */
const commitShaSchema = z.string().regex(COMMIT_SHA_RE, 'expected 7 to 40 hex characters').transform((s) => s.toLowerCase());

export const resourceSchema = z.object({
  ciProvider: z.enum(CI_PROVIDERS),
  ciRunId: nullish(z.string()),
  commitSha: commitShaSchema,
  branch: z.string().min(1),
  prNumber: nullish(z.number().int().positive()),
  trigger: z.enum(TRIGGERS),
  shardIndex: nullish(z.number().int().min(1)),
  shardTotal: nullish(z.number().int().min(1)),
  repository: nullish(z.string().regex(/^[^/\s]+\/[^/\s]+$/, 'expected owner/name')),
  baseBranch: nullish(z.string()),
  mergeBase: nullish(commitShaSchema),
  ciJobUrl: nullish(z.string()),
  // The CI job and its matrix values (client/src/contract/ci-job.ts): which job of the commit this run is.
  ciJobName: nullish(z.string()),
  ciJobMatrix: nullish(z.record(z.string(), z.unknown()).transform(jobMatrixFrom)),
});

const executionSchema = z.object({
  filePath: z.string(),
  suite: z.string(),
  title: z.string().min(1),
  params: nullish(z.record(z.string(), z.unknown())),
  status: z.enum(TEST_STATUSES),
  // null means "not given", as for every optional field: the first attempt.
  attempt: z.number().int().min(1).nullish().transform((v) => v ?? 1),
  retryOfIndex: nullish(z.number().int().min(0)),
  startedAt: timestamp,
  durationMs: z.number().int().nonnegative(),
  error: nullish(errorSchema),
  artifacts: nullish(z.array(artifactRefSchema)),
  attributes: nullish(attributes),
  traceId: nullish(z.string()),
  spanId: nullish(z.string()),
  spans: nullish(z.array(spanSchema).max(LIMITS.maxSpansPerExecution)),
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
      finishedAt: nullish(timestamp),
      traceId: nullish(z.string()),
    }),
    executions: z.array(executionSchema).max(LIMITS.maxExecutionsPerBatch),
  })
  .superRefine((b, ctx) => {
    // A run cannot end before it starts: storing it would show a negative (clamped to 0) duration
    // the sender never measured. Checked here, not in storable.ts, so a job queued before this
    // check is not set aside by the worker.
    if (b.run.finishedAt !== undefined && b.run.finishedAt < b.run.startedAt) {
      ctx.addIssue({
        code: 'custom',
        path: ['run', 'finishedAt'],
        message: `must not be before run.startedAt (${shownTime(b.run.finishedAt)} < ${shownTime(b.run.startedAt)})`,
      });
    }
  })
  .transform((b) => {
    // A retry points back at an earlier attempt; one that does not is ignored, as Flakemetry does,
    // rather than refusing the whole run over a link.
    b.executions.forEach((e, i) => {
      if (e.retryOfIndex !== undefined && e.retryOfIndex >= i) delete e.retryOfIndex;
    });
    return b;
  });

export const SUPPORTED_CONTRACT_MAJORS = [0, 1] as const;

/** Only majors 0 and 1 are understood; anything else is refused rather than misread. */
export function isSupportedContractVersion(version: string): boolean {
  const major = Number(version.split('.')[0]);
  return (SUPPORTED_CONTRACT_MAJORS as readonly number[]).includes(major);
}

/**
 * Flakemetry takes any x.y.z; we refuse a major we do not know (its fields may mean something else),
 * so the message says what we take and what to do about it.
 */
export function unsupportedContractMessage(version: string): string {
  return (
    `contractVersion ${version} is not supported: this server understands contract majors ${SUPPORTED_CONTRACT_MAJORS.join(' and ')} (${SUPPORTED_CONTRACT_MAJORS.map((m) => `${m}.x.y`).join(', ')}; current ${CURRENT_CONTRACT_VERSION}). ` +
    `Send contractVersion ${CURRENT_CONTRACT_VERSION} (what Flakemetry's clients send), or upgrade the server to one that knows major ${version.split('.')[0]}`
  );
}

export type NativeBatch = z.output<typeof nativeBatchSchema>;

// Compile-time check that the schema's output is the canonical batch.
export const _batchTypeCheck: (b: NativeBatch) => IngestBatch = (b) => b;
