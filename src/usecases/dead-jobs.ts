// Dead letters (the admin's): jobs the worker parked after their last attempt, listed, shown,
// requeued or dropped (`/v1/admin/dead-jobs`, on the daemon and on the agent). A job that died in a
// frozen lease is requeued and dropped together with its lease-mates, as that same lease: its rows
// may already be written under the lease's id.
import { z } from 'zod';
import { UUID_RE } from '../../client/src/contract/ids.js';
import type { DeadJob, DeadJobAction, Queue } from '../queue/types.js';
import type { ProjectRepo } from '../store/projects.js';
import { errors } from '../errors/catalogue.js';

export type DeadLetterQueue = Pick<Queue, 'deadJobs' | 'deadJob' | 'requeueDead' | 'dropDead'>;

export const deadJobSchema = z
  .object({
    id: z.string(),
    receiptId: z.string(),
    projectId: z.string(),
    /** Null when the project is gone. */
    projectSlug: z.string().nullable(),
    source: z.string(),
    idempotencyKey: z.string(),
    firstError: z.string(),
    lastError: z.string(),
    attempts: z.number(),
    sizeBytes: z.number(),
    executions: z.number(),
    receivedAt: z.string(),
    diedAt: z.string(),
    /** The frozen lease it died in: requeue and drop act on every dead job of that lease. */
    frozenLeaseId: z.string().nullable(),
  })
  .meta({ id: 'DeadJob' });

export const deadJobActionSchema = z.object({ jobIds: z.array(z.string()), frozenLeaseId: z.string().nullable() });

export const deadJobListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().optional(),
});

export const deadJobIdParamsSchema = z.object({ id: z.string().regex(UUID_RE) });

/** Opaque cursor: base64url of the last job id of the page (dead jobs are listed in receipt order). */
function encodeCursor(id: string): string {
  return Buffer.from(id).toString('base64url');
}

function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!UUID_RE.test(id)) throw errors.invalidQuery([{ path: 'cursor', message: 'malformed cursor' }]);
  return id;
}

function item(d: DeadJob, slugs: Map<string, string>): z.output<typeof deadJobSchema> {
  return {
    id: d.job.id,
    receiptId: d.job.receiptId,
    projectId: d.job.projectId,
    projectSlug: slugs.get(d.job.projectId) ?? null,
    source: d.job.source,
    idempotencyKey: d.job.batch.idempotencyKey,
    // Records written before first errors were kept have only `error`.
    firstError: d.firstError ?? d.error,
    lastError: d.error,
    attempts: d.job.attempts,
    sizeBytes: d.sizeBytes ?? Buffer.byteLength(JSON.stringify(d.job)),
    executions: d.job.batch.executions.length,
    receivedAt: new Date(d.job.receivedAt).toISOString(),
    diedAt: new Date(d.diedAt).toISOString(),
    frozenLeaseId: d.frozenLeaseId ?? null,
  };
}

export interface DeadJobDeps {
  queue: DeadLetterQueue;
  /** Names each job's project (null when it is gone). */
  projects: Pick<ProjectRepo, 'list'>;
}

async function projectSlugs(d: DeadJobDeps): Promise<Map<string, string>> {
  return new Map((await d.projects.list()).map((p) => [p.id, p.slug]));
}

/** A page of dead jobs, oldest receipt first. */
export async function listDeadJobs(d: DeadJobDeps, query: z.output<typeof deadJobListQuerySchema>) {
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const page = await d.queue.deadJobs(query.limit + 1, after);
  const more = page.length > query.limit;
  const items = page.slice(0, query.limit);
  const names = await projectSlugs(d);
  return { items: items.map((j) => item(j, names)), nextCursor: more ? encodeCursor(items[items.length - 1]!.job.id) : null };
}

/** One dead job with its batch; 404 when there is none. */
export async function deadJobDetail(d: DeadJobDeps, id: string) {
  const job = await d.queue.deadJob(id.toLowerCase());
  if (!job) throw errors.notFound('dead job not found');
  return { ...item(job, await projectSlugs(d)), batch: job.job.batch as unknown as Record<string, unknown> };
}

/** Requeues the job (with its frozen lease-mates, as that same lease); 404 when there is none. */
export function requeueDeadJob(d: DeadJobDeps, id: string): Promise<z.output<typeof deadJobActionSchema>> {
  return act((jobId) => d.queue.requeueDead(jobId), id);
}

/** Drops the job for good (with its frozen lease-mates), releasing its idempotency key; 404 when there is none. */
export function dropDeadJob(d: DeadJobDeps, id: string): Promise<z.output<typeof deadJobActionSchema>> {
  return act((jobId) => d.queue.dropDead(jobId), id);
}

async function act(action: (id: string) => Promise<DeadJobAction | null>, id: string): Promise<z.output<typeof deadJobActionSchema>> {
  const a = await action(id.toLowerCase());
  if (!a) throw errors.notFound('dead job not found');
  return { jobIds: a.jobIds, frozenLeaseId: a.frozenLeaseId ?? null };
}
