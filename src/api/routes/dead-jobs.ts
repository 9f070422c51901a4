// /v1/admin/dead-jobs: the routes of the use cases in src/usecases/dead-jobs.ts (admin token).
import { z } from 'zod';
import {
  deadJobActionSchema,
  deadJobDetail,
  deadJobIdParamsSchema,
  deadJobListQuerySchema,
  deadJobSchema,
  dropDeadJob,
  listDeadJobs,
  requeueDeadJob,
  type DeadJobDeps,
} from '../../usecases/dead-jobs.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

/** Requeue and drop differ only in what they do to the job (and its frozen lease-mates). */
function actionRoute(method: 'POST' | 'DELETE', url: string, summary: string, act: (id: string) => Promise<z.output<typeof deadJobActionSchema>>): AnyRouteDef {
  return defineRoute({
    method,
    url,
    summary,
    tags: ['admin'],
    auth: { kind: 'admin' },
    params: deadJobIdParamsSchema,
    paramsNotFound: true,
    response: deadJobActionSchema,
    handler: ({ params }) => act(params.id),
  });
}

export function deadJobRoutes(d: DeadJobDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/admin/dead-jobs',
      summary: 'List dead jobs (batches parked after their last attempt), oldest receipt first',
      tags: ['admin'],
      auth: { kind: 'admin' },
      query: deadJobListQuerySchema,
      response: z.object({ items: z.array(deadJobSchema), nextCursor: z.string().nullable() }),
      handler: ({ query }) => listDeadJobs(d, query),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/admin/dead-jobs/:id',
      summary: 'One dead job, with its batch',
      tags: ['admin'],
      auth: { kind: 'admin' },
      params: deadJobIdParamsSchema,
      paramsNotFound: true,
      response: deadJobSchema.extend({ batch: z.record(z.string(), z.unknown()) }),
      handler: ({ params }) => deadJobDetail(d, params.id),
    }),
    actionRoute(
      'POST',
      '/v1/admin/dead-jobs/:id/requeue',
      'Requeue a dead job (with its frozen lease-mates, as that same lease); processed like any job',
      (id) => requeueDeadJob(d, id),
    ),
    actionRoute(
      'DELETE',
      '/v1/admin/dead-jobs/:id',
      'Drop a dead job for good (with its frozen lease-mates); releases its idempotency key so the batch can be sent again',
      (id) => dropDeadJob(d, id),
    ),
  ];
}
