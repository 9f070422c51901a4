// `flakehouse config --project SLUG`: a project's settings layer for the config printout. Read from
// the running server through the admin API when it answers, else straight from storage (the
// embedded chDB under the data dir, or SERVICE_CLICKHOUSE_URL), so it works with the daemon up or
// down. Either way the settings are resolved here against this shell's service.yml and
// environment, like the rest of `flakehouse config`.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadServerSettings } from '../config/daemon-env.js';
import type { LoadedServiceConfig } from '../config/service-yml.js';
import { parseSettings, type ProjectSettings } from '../../client/src/contract/config/project-settings.js';
import { ProjectSettingsError } from '../../client/src/contract/config/errors.js';

export interface FetchedSettings {
  settings: ProjectSettings;
  /** Where they were read: the server's admin API, or storage directly (server not reachable). */
  via: 'api' | 'storage';
}

export { ProjectSettingsError } from '../../client/src/contract/config/errors.js';

export async function fetchProjectSettings(env: NodeJS.ProcessEnv, cwd: string, slug: string, service: LoadedServiceConfig): Promise<FetchedSettings> {
  const server = loadServerSettings(env, cwd);
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

  // Straight from storage: a server module, loaded only here (the client package stubs it).
  const { readStoredProjectSettings } = await import('../main/stored-project-settings.js');
  return { settings: await readStoredProjectSettings(server, slug, service), via: 'storage' };
}
