// Project settings through the admin API (bearer SERVICE_ADMIN_TOKEN): GET shows what is set, the
// effective policy and each key's source; PUT replaces the document; PATCH deep-merges into it. What
// they do is src/usecases/project-settings.ts, which the settings page's procedure calls too.
import { z } from 'zod';
import { projectSettingsPatchSchema, projectSettingsSchema } from '../../../client/src/contract/config/project-settings.js';
import { patchProjectSettings, readProjectSettings, replaceProjectSettings, settingsResponseSchema, type ProjectSettingsDeps } from '../../usecases/project-settings.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

export function settingsRoutes(d: ProjectSettingsDeps): AnyRouteDef[] {
  const params = z.object({ slug: z.string() });
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/admin/projects/:slug/settings',
      summary: "A project's settings, effective policy and each key's source",
      tags: ['admin'],
      auth: { kind: 'admin' },
      params,
      response: settingsResponseSchema,
      handler: ({ params: { slug } }) => readProjectSettings(d, slug),
    }),
    defineRoute({
      method: 'PUT',
      url: '/v1/admin/projects/:slug/settings',
      summary: "Replace a project's settings",
      tags: ['admin'],
      auth: { kind: 'admin' },
      params,
      body: projectSettingsSchema,
      response: settingsResponseSchema,
      handler: ({ params: { slug }, body }) => replaceProjectSettings(d, slug, body),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/admin/projects/:slug/settings',
      summary: "Change some of a project's settings (deep merge; arrays replace; null inherits again)",
      tags: ['admin'],
      auth: { kind: 'admin' },
      params,
      body: projectSettingsPatchSchema,
      response: settingsResponseSchema,
      handler: ({ params: { slug }, body }) => patchProjectSettings(d, slug, body),
    }),
  ];
}
