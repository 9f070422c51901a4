// Dead letters (admin token): jobs the worker parked after their last attempt, listed, shown,
// requeued or dropped. A job that died in a frozen lease is requeued and dropped together with its
// lease-mates, as that same lease: its rows may already be written under the lease's id.
import { z } from 'zod';
import { UUID_RE } from '../../../client/src/contract/ids.js';
import type { DeadJob, DeadJobAction, Queue } from '../../queue/types.js';
import type { ProjectRepo } from '../../store/projects.js';
import { errors } from '../../errors/catalogue.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export type DeadLetterQueue = Pick<Queue, 'deadJobs' | 'deadJob' | 'requeueDead' | 'dropDead'>;

const deadJobSchema = z
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

const actionSchema = z.object({ jobIds: z.array(z.string()), frozenLeaseId: z.string().nullable() });

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().optional(),
});

const idParams = z.object({ id: z.string().regex(UUID_RE) });

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

/** Requeue and drop differ only in what they do to the job (and its frozen lease-mates). */
function actionRoute(method: 'POST' | 'DELETE', url: string, summary: string, act: (id: string) => Promise<DeadJobAction | null>): AnyRouteDef {
  return defineRoute({
    method,
    url,
    summary,
    tags: ['admin'],
    auth: { kind: 'admin' },
    params: idParams,
    paramsNotFound: true,
    response: actionSchema,
    async handler({ params }) {
      const a = await act(params.id.toLowerCase());
      if (!a) throw errors.notFound('dead job not found');
      return { jobIds: a.jobIds, frozenLeaseId: a.frozenLeaseId ?? null };
    },
  });
}

export function deadJobRoutes(queue: DeadLetterQueue, projects: ProjectRepo): AnyRouteDef[] {
  const slugs = async (): Promise<Map<string, string>> => new Map((await projects.list()).map((p) => [p.id, p.slug]));
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/admin/dead-jobs',
      summary: 'List dead jobs (batches parked after their last attempt), oldest receipt first',
      tags: ['admin'],
      auth: { kind: 'admin' },
      query: listQuery,
      response: z.object({ items: z.array(deadJobSchema), nextCursor: z.string().nullable() }),
      async handler({ query }) {
        const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
        const page = await queue.deadJobs(query.limit + 1, after);
        const more = page.length > query.limit;
        const items = page.slice(0, query.limit);
        const names = await slugs();
        return { items: items.map((d) => item(d, names)), nextCursor: more ? encodeCursor(items[items.length - 1]!.job.id) : null };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/admin/dead-jobs/:id',
      summary: 'One dead job, with its batch',
      tags: ['admin'],
      auth: { kind: 'admin' },
      params: idParams,
      paramsNotFound: true,
      response: deadJobSchema.extend({ batch: z.record(z.string(), z.unknown()) }),
      async handler({ params }) {
        const d = await queue.deadJob(params.id.toLowerCase());
        if (!d) throw errors.notFound('dead job not found');
        return { ...item(d, await slugs()), batch: d.job.batch as unknown as Record<string, unknown> };
      },
    }),
    actionRoute(
      'POST',
      '/v1/admin/dead-jobs/:id/requeue',
      'Requeue a dead job (with its frozen lease-mates, as that same lease); processed like any job',
      (id) => queue.requeueDead(id),
    ),
    actionRoute(
      'DELETE',
      '/v1/admin/dead-jobs/:id',
      'Drop a dead job for good (with its frozen lease-mates); releases its idempotency key so the batch can be sent again',
      (id) => queue.dropDead(id),
    ),
  ];
}
