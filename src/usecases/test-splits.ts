// The plan of a build's test shards (POST /v1/splits, `flakehouse split`; docs/api.md "Test
// splitting"): the test files of each shard, balanced by the files' recent durations. The first
// call for a (buildId, total, file list) stores the plan; the build's other shards get that same
// plan back, even when the timings changed meanwhile (src/store/splits.ts says how the first
// writer wins).
import { z } from 'zod';
import { MAX_BUILD_ID, MAX_SPLIT_FILES, MAX_SPLIT_PATH, MAX_SPLIT_TOTAL, canonicalFiles, filesHash, planSplit } from '../../client/src/contract/split.js';
import type { SplitTimings } from '../store/split-timings.js';
import type { SplitPlanRepo, StoredPlan } from '../store/splits.js';

export const splitRequestSchema = z
  .object({
    /**
     * The CI's id of the build (all its shards send the same). Absent: the plan is computed from
     * the current timings and not stored, so shards calling at different times may disagree.
     */
    buildId: z.string().trim().min(1).max(MAX_BUILD_ID).nullish(),
    total: z.number().int().min(1).max(MAX_SPLIT_TOTAL),
    /** The calling shard (0-based): its files are also answered as `files`. */
    index: z.number().int().min(0).nullish(),
    /** Test files, relative to the repository root as the reporters store them. Order and repeats do not matter. */
    files: z
      .array(z.string().min(1).max(MAX_SPLIT_PATH).transform((f) => f.normalize('NFC')))
      .min(1, 'name at least one file')
      .max(MAX_SPLIT_FILES, `at most ${MAX_SPLIT_FILES} files per split`),
  })
  .superRefine((b, ctx) => {
    if (b.index !== undefined && b.index !== null && b.index >= b.total) {
      ctx.addIssue({ code: 'custom', path: ['index'], message: `must be below total (${b.total}): shards are numbered 0 … ${b.total - 1}` });
    }
  })
  .meta({ id: 'SplitRequest' });

export const splitResponseSchema = z
  .object({
    /** Null when no buildId was given (nothing stored). */
    planId: z.string().nullable(),
    buildId: z.string().nullable(),
    total: z.number(),
    /** `created`: this call stored the plan; `stored`: an earlier call of the build did; `computed`: no buildId, not stored. */
    source: z.enum(['created', 'stored', 'computed']),
    createdAt: z.string().nullable(),
    /** shards[i]: the files of shard i, sorted. */
    shards: z.array(z.array(z.string())),
    /** The calling shard's files (shards[index]), when `index` was given. */
    files: z.array(z.string()).optional(),
    /** Expected duration of each shard (ms). */
    estimatedMs: z.array(z.number()),
    /** Files with no duration in the recent history, planned at `defaultMs` each. */
    unknownFiles: z.array(z.string()),
    defaultMs: z.number(),
  })
  .meta({ id: 'SplitPlan' });

type SplitResponse = z.output<typeof splitResponseSchema>;

export interface SplitDeps {
  timings: Pick<SplitTimings, 'fileDurations'>;
  /** One per process: it orders the calls of one build (SplitPlanRepo.findOrCreate). */
  plans: Pick<SplitPlanRepo, 'findOrCreate'>;
}

export async function splitPlan(d: SplitDeps, projectId: string, body: z.output<typeof splitRequestSchema>): Promise<SplitResponse> {
  const files = canonicalFiles(body.files);
  if (!body.buildId) return answer(await compute(d, projectId, files, body.total), body, 'computed');
  const key = { buildId: body.buildId, total: body.total, filesHash: filesHash(files) };
  const { plan, created } = await d.plans.findOrCreate(projectId, key, () => compute(d, projectId, files, body.total));
  return answer(plan, body, created ? 'created' : 'stored');
}

async function compute(d: SplitDeps, projectId: string, files: string[], total: number) {
  const found = await d.timings.fileDurations(projectId, files);
  const durations = new Map([...found].map(([f, t]) => [f, t.ms]));
  const timedRuns = [...found.values()].reduce((n, t) => n + t.runs, 0);
  return { ...planSplit(files, total, durations), timedRuns };
}

function answer(plan: Omit<StoredPlan, 'planId' | 'createdAt' | 'fileCount' | 'timedRuns'> & Partial<StoredPlan>, body: { buildId?: string | null; total: number; index?: number | null }, source: SplitResponse['source']): SplitResponse {
  return {
    planId: plan.planId ?? null,
    buildId: body.buildId ?? null,
    total: body.total,
    source,
    createdAt: plan.createdAt ?? null,
    shards: plan.shards,
    ...(body.index !== undefined && body.index !== null ? { files: plan.shards[body.index]! } : {}),
    estimatedMs: plan.estimatedMs,
    unknownFiles: plan.unknownFiles,
    defaultMs: plan.defaultMs,
  };
}
