// The settings page's policy (the `settings.get` procedure, and `settings.update`'s answer): each
// key's value as the instance applies it, where it comes from, and whether the page may change it.
import { effectiveAiRca, type AiSettings } from '../config/ai.js';
import type { ProjectConfigs } from '../config/resolved-project-config.js';
import { toIso } from '../../client/src/contract/time.js';
import type { ProjectRepo } from '../store/projects.js';
import { errors } from '../errors/catalogue.js';
import { patchProjectSettings, type ProjectSettingsDeps } from './project-settings.js';

type Source = 'default' | 'file' | 'settings' | 'env';

export interface ProjectPolicyDeps {
  projects: Pick<ProjectRepo, 'byId'>;
  configs: ProjectConfigs;
  /** The instance's AI provider; undefined: RCA is off whatever `ai.rca` says. */
  ai: AiSettings | undefined;
}

function valueAt(config: unknown, key: string): unknown {
  let v: unknown = config;
  for (const part of key.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
  return v;
}

/**
 * A key's value as the instance applies it, as `flakehouse config` shows it: `ai.rca` is off without
 * an AI provider whatever is configured, so the page says false, with the configured value and why.
 */
function applied(d: ProjectPolicyDeps, key: string, value: unknown): { value: unknown; configured?: unknown; note?: string } {
  if (key !== 'ai.rca' || typeof value !== 'boolean') return { value };
  const rca = effectiveAiRca(value, d.ai);
  return rca.reason ? { value: rca.value, configured: value, note: rca.reason } : { value };
}

/** The effective policy as the settings page lists it: each key, its value and where it comes from. */
export async function projectPolicy(d: ProjectPolicyDeps, projectId: string) {
  const [resolved, state, project] = await Promise.all([d.configs.get(projectId), d.configs.settings(projectId), d.projects.byId(projectId)]);
  if (!project) throw errors.notFound('project not found');
  const keys = Object.entries(resolved.sources as Record<string, Source>)
    .sort(([a], [b]) => a.localeCompare(b))
    // Environment values win over everything and cannot be changed here: shown read-only.
    .map(([key, source]) => ({ key, ...applied(d, key, valueAt(resolved.config, key)), source, readOnly: source === 'env' }));
  return {
    project: project.slug,
    keys,
    /** What was set for this project (absent keys inherit). */
    settings: state.settings,
    retention: resolved.retention,
    version: state.version,
    updatedAt: state.updatedAt === null ? null : toIso(state.updatedAt),
  };
}

/**
 * The settings page's change (`settings.update`): validated and written as
 * PATCH /v1/admin/projects/:slug/settings does (400 naming the path), answered with the policy as
 * it now applies.
 */
export async function updateProjectPolicy(d: { settings: ProjectSettingsDeps; policy: ProjectPolicyDeps }, project: { slug: string; id: string }, patch: unknown) {
  await patchProjectSettings(d.settings, project.slug, patch);
  return projectPolicy(d.policy, project.id);
}
