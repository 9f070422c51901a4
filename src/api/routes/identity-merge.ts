// POST /v1/admin/identities/merge-junit-twins: merges a project's legacy JUnit twins already stored
// (src/usecases/junit-twin-merge.ts; docs/api.md "Admin"). The daemon runs the same pass at start-up.
import { z } from 'zod';
import { mergeJUnitTwins, type TwinMergeDeps } from '../../usecases/junit-twin-merge.js';
import type { ProjectRepo } from '../../store/projects.js';
import { errors } from '../../errors/catalogue.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

const bool = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1');
const testRef = z.object({ testIdentityId: z.string(), filePath: z.string(), suite: z.string(), title: z.string() });

export function identityMergeRoutes(d: TwinMergeDeps & { projects: Pick<ProjectRepo, 'bySlug'> }): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/admin/identities/merge-junit-twins',
      summary: "Merge a project's tests stored twice, under the pre-fix JUnit reading and the reporters' names (dryRun: list the pairs only)",
      tags: ['admin'],
      auth: { kind: 'admin' },
      query: z.object({ project: z.string().min(1).max(100), dryRun: bool.default(false) }),
      response: z.object({
        project: z.string(),
        dryRun: z.boolean(),
        /** Pairs not merged yet: after a merge, a second pass finds none. */
        found: z.number(),
        merged: z.number(),
        pairs: z.array(z.object({ from: testRef, into: testRef, quarantineCarried: z.boolean() })),
      }),
      async handler({ query }) {
        const project = await d.projects.bySlug(query.project);
        if (!project) throw errors.notFound(`project "${query.project}" not found`);
        return { project: project.slug, ...(await mergeJUnitTwins(d, project.id, { dryRun: query.dryRun })) };
      },
    }),
  ];
}
