// Admin API (bearer SERVICE_ADMIN_TOKEN): projects and tokens (docs/contract.md §5).
import { z } from 'zod';
import { UUID_RE } from '../../../client/src/contract/ids.js';
import { SCOPES, SLUG_RE, type ProjectRepo } from '../../store/projects.js';
import { errors } from '../../errors/catalogue.js';
import { createProjectToken, revokeProjectToken, type ProjectTokensDeps } from '../../usecases/project-tokens.js';
import { listProjects } from '../../usecases/projects.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

const scopesSchema = z.array(z.enum(SCOPES)).max(SCOPES.length).default([]);

/** `tokens`: a project's tokens as the settings page's procedures have them (one revocation for both). */
export function adminRoutes(projects: ProjectRepo, tokens: ProjectTokensDeps): AnyRouteDef[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/admin/projects',
      summary: 'Create a project',
      tags: ['admin'],
      auth: { kind: 'admin' },
      body: z.object({ slug: z.string().regex(SLUG_RE, 'lowercase letters, digits and dashes'), name: z.string().min(1).max(200).optional() }),
      response: z.object({ id: z.string(), slug: z.string() }),
      successStatus: 201,
      async handler({ body }) {
        if (await projects.bySlug(body.slug)) throw errors.conflict(`project "${body.slug}" already exists`);
        const p = await projects.create(body.slug, body.name);
        return { id: p.id, slug: p.slug };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/admin/projects',
      summary: 'List projects',
      tags: ['admin'],
      auth: { kind: 'admin' },
      response: z.object({ items: z.array(z.object({ id: z.string(), slug: z.string(), name: z.string(), createdAt: z.string() })) }),
      handler: () => listProjects({ projects }),
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/admin/projects/:slug/tokens',
      summary: 'Create a project token (shown once)',
      tags: ['admin'],
      auth: { kind: 'admin' },
      params: z.object({ slug: z.string() }),
      body: z.object({ scopes: scopesSchema }),
      response: z.object({ id: z.string(), token: z.string(), scopes: z.array(z.enum(SCOPES)) }),
      successStatus: 201,
      async handler({ params, body }) {
        const project = await projects.bySlug(params.slug);
        if (!project) throw errors.notFound(`project "${params.slug}" not found`);
        return createProjectToken(tokens, project.id, body.scopes);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/admin/tokens/:id',
      summary: 'Revoke a token',
      tags: ['admin'],
      auth: { kind: 'admin' },
      params: z.object({ id: z.string().regex(UUID_RE) }),
      paramsNotFound: true,
      response: z.object({ revoked: z.literal(true) }),
      handler: ({ params }) => revokeProjectToken(tokens, params.id),
    }),
  ];
}
