// `flakehouse config --project SLUG` when the server does not answer: the project's settings read
// straight from storage (the embedded chDB under the data dir, or SERVICE_CLICKHOUSE_URL). The
// server's CLI (src/main/cli.ts) loads it by a dynamic import when that happens; the client package
// has no storage to read.
import path from 'node:path';
import { ProjectSettingsError } from '../../client/src/contract/config/errors.js';
import type { ServerSettings } from '../config/daemon-env.js';
import type { ProjectSettings } from '../../client/src/contract/config/project-settings.js';
import { ProjectConfigs } from '../config/resolved-project-config.js';
import type { LoadedServiceConfig } from '../config/service-yml.js';
import { openStore } from '../store/client.js';
import { ProjectRepo } from '../store/projects.js';

export async function readStoredProjectSettings(server: ServerSettings, slug: string, service: LoadedServiceConfig): Promise<ProjectSettings> {
  const store = await openStore({
    chdbPath: path.join(server.dataDir, 'chdb'),
    url: server.clickhouse.url,
    user: server.clickhouse.user,
    password: server.clickhouse.password,
    database: server.clickhouse.database,
  });
  try {
    const project = await new ProjectRepo(store).bySlug(slug).catch((err: unknown) => {
      throw new ProjectSettingsError(`cannot read projects from storage (${server.clickhouse.url ?? server.dataDir}): ${err instanceof Error ? err.message : String(err)}`);
    });
    if (!project) throw new ProjectSettingsError(`project "${slug}" not found in ${server.clickhouse.url ?? server.dataDir}`);
    const state = await new ProjectConfigs(store, service).settings(project.id).catch((err: unknown) => {
      throw new ProjectSettingsError(`cannot read project settings from storage (start \`flakehouse serve\` once to migrate it): ${err instanceof Error ? err.message : String(err)}`);
    });
    return state.settings;
  } finally {
    await store.close();
  }
}
