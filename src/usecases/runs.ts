// The runs list and a run's page (GET /v1/runs, GET /v1/runs/:runId, the `runs.list` and `run.get`
// procedures; docs/contract.md §6).
import { z } from 'zod';
import { RUN_STATUSES } from '../../client/src/contract/batch.js';
import { UUID_RE } from '../../client/src/contract/ids.js';
import { parseTimestamp } from '../../client/src/contract/time.js';
import { VERIFY_KINDS, type VerifyKind } from '../../client/src/contract/verify.js';
import type { RunDetail, RunRepo } from '../store/runs.js';
import { artifactViewSchema, withArtifactLinks } from '../artifacts/links.js';
import type { ArtifactSigner } from '../artifacts/s3.js';
import { errors } from '../errors/catalogue.js';

// Query strings give strings; procedure inputs may also give epoch milliseconds as numbers.
const timestampParam = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const ms = parseTimestamp(v);
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: 'expected an ISO-8601 timestamp or epoch milliseconds' });
    return z.NEVER;
  }
  return ms;
});

export const runsQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().optional(),
  branch: z.string().min(1).optional(),
  /** A commit sha or its first characters (at least 4). */
  commitSha: z
    .string()
    .regex(/^[0-9a-fA-F]{4,40}$/, 'expected 4 to 40 hexadecimal characters')
    .transform((v) => v.toLowerCase())
    .optional(),
  prNumber: z.coerce.number().int().min(1).optional(),
  status: z.enum(RUN_STATUSES).optional(),
  since: timestampParam.optional(),
  until: timestampParam.optional(),
});

const countsSchema = z.object({ total: z.number(), passed: z.number(), failed: z.number(), skipped: z.number(), flaky: z.number() });
export const runItemSchema = z.object({
  id: z.string(),
  branch: z.string(),
  commitSha: z.string(),
  prNumber: z.number().nullable(),
  ciProvider: z.string(),
  status: z.enum(RUN_STATUSES),
  startedAt: z.string(),
  durationMs: z.number(),
  counts: countsSchema,
  /** The CI job the run was (GITHUB_JOB, CI_JOB_NAME, …; OTLP's cicd.pipeline.task.name), null when the sender did not say. */
  ciJobName: z.string().nullable(),
  /** The job's matrix values (text by key), null when none were given. */
  ciJobMatrix: z.record(z.string(), z.string()).nullable(),
}).meta({ id: 'Run' });
export const runDetailSchema = runItemSchema.extend({
  trigger: z.string(),
  finishedAt: z.string().nullable(),
  /** The PR's merge base (lowercase hex), null when unknown. */
  mergeBase: z.string().nullable(),
  /** The CI job's page (http or https), null when unknown. */
  ciJobUrl: z.string().nullable(),
  /** The repository as `owner/name`, null when unknown. */
  repository: z.string().nullable(),
  /** The commit's page on GitHub when the repository is known to be there (GitHub Actions, or a github.com job URL), else null. */
  commitUrl: z.string().nullable(),
  executions: z.array(
    z.object({
      id: z.string(),
      testIdentityId: z.string(),
      filePath: z.string(),
      suite: z.string(),
      title: z.string(),
      status: z.string(),
      attempt: z.number(),
      durationMs: z.number(),
      errorMessage: z.string().nullable(),
      hasRca: z.boolean(),
      artifacts: z.array(artifactViewSchema),
      /** The verification `flakehouse run` made this attempt for (`new`, `fix`, `retry`: attribute flakehouse.verify), null for the job's own attempts. */
      verify: z.enum(VERIFY_KINDS).nullable(),
      /** A failure `flakehouse run` muted because the test was quarantined (attribute flakehouse.quarantined). */
      quarantined: z.boolean(),
    }),
  ),
}).meta({ id: 'RunDetail' });

export const runListSchema = z.object({ items: z.array(runItemSchema), nextCursor: z.string().nullable() });

/** Opaque keyset cursor: base64url of `<startedAtMs>:<runId>`. */
export function encodeCursor(c: { startedAt: number; id: string }): string {
  return Buffer.from(`${c.startedAt}:${c.id}`).toString('base64url');
}

export function decodeCursor(s: string): { startedAt: number; id: string } | null {
  const raw = Buffer.from(s, 'base64url').toString('utf8');
  const m = /^(\d+):([0-9a-f-]{36})$/i.exec(raw);
  if (!m || !UUID_RE.test(m[2]!)) return null;
  return { startedAt: Number(m[1]), id: m[2]! };
}

// Shared by the REST routes and the procedures (src/api/trpc.ts), so both answer alike.
export async function listRuns(runs: RunRepo, projectId: string, query: z.output<typeof runsQuerySchema>): Promise<z.output<typeof runListSchema>> {
  let before: { startedAt: number; id: string } | undefined;
  if (query.cursor !== undefined) {
    const c = decodeCursor(query.cursor);
    if (!c) throw errors.invalidQuery([{ path: 'cursor', message: 'malformed cursor' }]);
    before = c;
  }
  const page = await runs.list(projectId, { ...query, before, limit: query.limit });
  return { items: page.items, nextCursor: page.more && page.last ? encodeCursor(page.last) : null };
}

/** An execution of a run: `verify` names the verification `flakehouse run` made the attempt for, null for the job's own. */
export type RunPageExecution = RunDetail['executions'][number] & { verify: VerifyKind | null };
export type RunPageDetail = Omit<RunDetail, 'executions'> & { executions: RunPageExecution[] };

/**
 * One run as GET /v1/runs/:runId and the dashboard's run page (procedure run.get) both show it, each
 * attempt marked with its verification (src/store/run-verify.ts). Its duration is the stored one, as
 * the runs list shows it (`flakehouse run` reports the job's wall time, its re-runs included). A
 * malformed id is as unknown as another project's: 404. Artifacts get download URLs when `signer`
 * is given.
 */
export async function getRun(runs: RunRepo, projectId: string, runId: string, signer: ArtifactSigner | null = null): Promise<RunPageDetail> {
  const run = UUID_RE.test(runId) ? await runs.get(projectId, runId.toLowerCase()) : null;
  if (!run) throw errors.notFound('run not found');
  const verify = await runs.verifyMarks(projectId, run.id);
  const executions = await withArtifactLinks(projectId, run.executions, signer);
  return { ...run, executions: executions.map((e) => ({ ...e, verify: verify.get(e.id) ?? null })) };
}
