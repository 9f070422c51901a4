// A project's settings (the dashboard layer of docs/architecture.md "Configuration"): what is set,
// the effective policy and each key's source; replaced whole or deep-merged (arrays replace, null
// clears a key so it inherits again). Unknown keys and bad values are 400 invalid_payload naming the
// path. The admin routes (src/api/routes/settings.ts) and the settings page's procedure call these.
import { z } from 'zod';
import { ConfigError, AggregateConfigError } from '../../client/src/contract/config/errors.js';
import type { ProjectConfigs, ProjectSettingsState } from '../config/resolved-project-config.js';
import { NOTIFICATION_CHANNEL_KINDS, NOTIFICATION_EVENT_TYPES, serviceConfigSchema } from '../config/service-yml.js';
import { patchSettings, projectSettingsPatchSchema, projectSettingsSchema, parseSettings, type ResolvedServiceConfig } from '../../client/src/contract/config/project-settings.js';
import type { NotificationChannel } from '../store/channels.js';
import type { ProjectRepo } from '../store/projects.js';
import { errors, zodIssues } from '../errors/catalogue.js';

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
export type SettingsResponse = z.infer<typeof settingsResponseSchema>;

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

export interface ProjectSettingsDeps {
  projects: Pick<ProjectRepo, 'bySlug'>;
  configs: ProjectConfigs;
}

async function projectOf(d: ProjectSettingsDeps, slug: string): Promise<{ id: string; slug: string }> {
  const p = await d.projects.bySlug(slug);
  if (!p) throw errors.notFound(`project "${slug}" not found`);
  return p;
}

async function write(d: ProjectSettingsDeps, slug: string, update: Parameters<ProjectConfigs['write']>[1]): Promise<SettingsResponse> {
  const p = await projectOf(d, slug);
  let state: ProjectSettingsState;
  try {
    state = await d.configs.write(p.id, update);
  } catch (err) {
    throw asPayloadError(err);
  }
  const [resolved, configChannels] = await Promise.all([d.configs.get(p.id), d.configs.configChannels(p.id)]);
  return view(p.slug, state, resolved, configChannels);
}

/** What is set for the project, the effective policy and each key's source. */
export async function readProjectSettings(d: ProjectSettingsDeps, slug: string): Promise<SettingsResponse> {
  const p = await projectOf(d, slug);
  const [state, resolved, configChannels] = await Promise.all([d.configs.settings(p.id), d.configs.get(p.id), d.configs.configChannels(p.id)]);
  return view(p.slug, state, resolved, configChannels);
}

/** Replaces the project's settings document. */
export function replaceProjectSettings(d: ProjectSettingsDeps, slug: string, body: z.input<typeof projectSettingsSchema>): Promise<SettingsResponse> {
  return write(d, slug, () => parseSettings(body));
}

/** Deep-merges `patch` (validated here: a procedure's input is not) into the project's settings. */
export function patchProjectSettings(d: ProjectSettingsDeps, slug: string, patch: unknown): Promise<SettingsResponse> {
  const parsed = projectSettingsPatchSchema.safeParse(patch ?? {});
  if (!parsed.success) throw errors.invalidPayload(zodIssues(parsed.error));
  return write(d, slug, (current) => patchSettings(current, parsed.data));
}
