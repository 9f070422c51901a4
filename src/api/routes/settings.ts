// Project settings through the admin API (bearer SERVICE_ADMIN_TOKEN): the dashboard layer of
// docs/architecture.md "Configuration". GET shows what is set, the effective policy and each key's source; PUT
// replaces the document; PATCH deep-merges into it (arrays replace, null clears a key so it
// inherits again). Unknown keys and bad values are 400 invalid_payload naming the path.
import { z } from 'zod';
import { ConfigError, AggregateConfigError } from '../../config/errors.js';
import type { ProjectConfigs, ProjectSettingsState } from '../../config/resolved-project-config.js';
import { NOTIFICATION_CHANNEL_KINDS, NOTIFICATION_EVENT_TYPES, serviceConfigSchema } from '../../config/service-yml.js';
import { patchSettings, projectSettingsPatchSchema, projectSettingsSchema, parseSettings, type ResolvedServiceConfig } from '../../config/project-settings.js';
import type { NotificationChannel } from '../../store/channels.js';
import type { ProjectRepo } from '../../store/projects.js';
import { errors } from '../../errors.js';
import { defineRoute, type AnyRouteDef } from '../route.js';

const SOURCES = ['default', 'file', 'settings', 'env'] as const;

const channelView = z.object({
  id: z.string(),
  kind: z.enum(NOTIFICATION_CHANNEL_KINDS),
  target: z.string(),
  events: z.array(z.enum(NOTIFICATION_EVENT_TYPES)),
  signingSecret: z.string().nullable(),
});

export const settingsResponseSchema = z.object({
  project: z.string(),
  /** What was set for this project; absent keys inherit. */
  settings: projectSettingsSchema,
  /** The dashboard's notification channels as stored; webhooks carry their signing secret. */
  channels: z.array(channelView),
  /** Channels synced from service.yml (read-only here); webhooks carry the secret the server made for them. */
  configChannels: z.array(channelView),
  /** The effective policy: service.yml < these settings < environment. */
  resolved: z.object({ config: serviceConfigSchema, sources: z.record(z.string(), z.enum(SOURCES)) }),
  retention: z.object({ executionDays: z.number().nullable(), artifactDays: z.number().nullable() }),
  version: z.number(),
  updatedAt: z.string().nullable(),
});
type SettingsResponse = z.infer<typeof settingsResponseSchema>;

function view(slug: string, state: ProjectSettingsState, resolved: ResolvedServiceConfig, configChannels: NotificationChannel[]): SettingsResponse {
  return {
    project: slug,
    settings: state.settings,
    channels: state.channels.map((c) => ({ id: c.id, kind: c.kind, target: c.target, events: c.events, signingSecret: c.signingSecret })),
    configChannels: configChannels.map((c) => ({ id: c.id, kind: c.kind, target: c.target, events: c.events, signingSecret: c.signingSecret })),
    resolved: { config: resolved.config, sources: resolved.sources },
    retention: resolved.retention,
    version: state.version,
    updatedAt: state.updatedAt === null ? null : new Date(state.updatedAt).toISOString(),
  };
}

/** A document that validated piece by piece but not as a whole (e.g. a PATCH adding a duplicate channel). */
function asPayloadError(err: unknown): unknown {
  if (!(err instanceof ConfigError)) return err;
  const list = err instanceof AggregateConfigError ? err.errors : [err];
  return errors.invalidPayload(list.map((e) => ({ path: e.path, message: e.detail })));
}

export function settingsRoutes(projects: ProjectRepo, configs: ProjectConfigs): AnyRouteDef[] {
  const project = async (slug: string): Promise<{ id: string; slug: string }> => {
    const p = await projects.bySlug(slug);
    if (!p) throw errors.notFound(`project "${slug}" not found`);
    return p;
  };
  const write = async (slug: string, update: Parameters<ProjectConfigs['write']>[1]): Promise<SettingsResponse> => {
    const p = await project(slug);
    let state: ProjectSettingsState;
    try {
      state = await configs.write(p.id, update);
    } catch (err) {
      throw asPayloadError(err);
    }
    const [resolved, configChannels] = await Promise.all([configs.get(p.id), configs.configChannels(p.id)]);
    return view(p.slug, state, resolved, configChannels);
  };
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
      async handler({ params: { slug } }) {
        const p = await project(slug);
        const [state, resolved, configChannels] = await Promise.all([configs.settings(p.id), configs.get(p.id), configs.configChannels(p.id)]);
        return view(p.slug, state, resolved, configChannels);
      },
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
      async handler({ params: { slug }, body }) {
        return write(slug, () => parseSettings(body));
      },
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
      async handler({ params: { slug }, body }) {
        return write(slug, (current) => patchSettings(current, body));
      },
    }),
  ];
}
