// `flakehouse config --project SLUG`: a project's settings layer for the config printout, read from
// the running server through the admin API. When no server answers, the server's CLI reads them
// from storage instead (the reader src/main/cli.ts passes in); the client package has no storage
// to read. Either way the settings are resolved against this shell's service.yml and environment,
// like the rest of `flakehouse config`.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ProjectSettingsError } from '../contract/config/errors.js';
import { parseSettings, type ProjectSettings } from '../contract/config/project-settings.js';
import { readServerAddress } from '../contract/config/server-address.js';
import type { LoadedServiceConfig } from '../contract/config/service-yml.js';
import { needsServer } from './usage-error.js';

export interface FetchedSettings {
  settings: ProjectSettings;
  /** Where they were read: the server's admin API, or storage directly (server not reachable). */
  via: 'api' | 'storage';
}

/** A project's settings read straight from storage (the embedded chDB under the data dir, or SERVICE_CLICKHOUSE_URL). */
export type StoredSettingsReader = (env: NodeJS.ProcessEnv, cwd: string, slug: string, service: LoadedServiceConfig) => Promise<ProjectSettings>;

export { ProjectSettingsError } from '../contract/config/errors.js';

export async function fetchProjectSettings(
  env: NodeJS.ProcessEnv,
  cwd: string,
  slug: string,
  service: LoadedServiceConfig,
  fromStorage?: StoredSettingsReader,
): Promise<FetchedSettings> {
  const server = readServerAddress(env, cwd);
  const base = (env.SERVICE_ENDPOINT || service.config.endpoint || `http://127.0.0.1:${server.port || 8080}`).replace(/\/+$/, '');
  let admin = server.adminToken;
  const tokenFile = path.join(server.dataDir, 'admin-token');
  if (!admin && existsSync(tokenFile)) admin = readFileSync(tokenFile, 'utf8').trim();

  if (admin) {
    let res: Response | null = null;
    try {
      res = await fetch(`${base}/v1/admin/projects/${encodeURIComponent(slug)}/settings`, { headers: { authorization: `Bearer ${admin}` } });
    } catch {
      res = null; // not reachable: read storage below
    }
    if (res) {
      const body = (await res.json().catch(() => ({}))) as { settings?: unknown; error?: string; message?: string };
      if (res.status === 404) throw new ProjectSettingsError(`project "${slug}" not found (${base})`);
      if (!res.ok) throw new ProjectSettingsError(`GET ${base}/v1/admin/projects/${slug}/settings: ${res.status} ${body.error ?? ''} ${body.message ?? ''}`.trim());
      return { settings: parseSettings(body.settings ?? {}), via: 'api' };
    }
  }

  if (!fromStorage) {
    const why = admin ? `the server at ${base} did not answer` : 'no admin token (SERVICE_ADMIN_TOKEN, or <data dir>/admin-token)';
    throw new ProjectSettingsError(`${why}; reading the settings from storage instead: ${needsServer('storage')}`);
  }
  return { settings: await fromStorage(env, cwd, slug, service), via: 'storage' };
}
