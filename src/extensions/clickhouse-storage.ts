// `clickhouse_storage`: the store's typed repositories for processors and exporters (the tests'
// states, signatures, identities, rollups, runs, analyses, projects, channels: src/store/
// repositories.ts), in the manner of the Collector's storage extensions. The store is the one of
// the thread the extension runs on: on the pipeline thread a proxy to the main thread's
// (src/pipeline/thread/remote.ts), in single-thread mode the daemon's own. Components reach
// repositories only through `Host.extensions.repositories(kind, id)`, never the Store itself, so
// the Host has no store and no component writes SQL (docs/pipeline.md "Extensions"). Nothing to
// configure: there is one store per process, opened by the daemon (SERVICE_CLICKHOUSE_URL or the
// embedded chDB). Added by default when a pipeline file enables no repositories extension.
import { z } from 'zod';
import type { Extension, ExtensionFactory, ExtensionSettings, RepositoryProvider } from '../pipeline/extension.js';
import type { StorageOwner } from '../pipeline/storage.js';
import type { Store } from '../store/client.js';
import { openRepositories, type Repositories } from '../store/repositories.js';

const config = z.object({}).strict();
export type ClickHouseStorageConfig = z.output<typeof config>;

export const clickhouseStorageFactory: ExtensionFactory<ClickHouseStorageConfig> = {
  kind: 'extension',
  type: 'clickhouse_storage',
  description: "the store's repositories (tests, signatures, identities, rollups, runs, analyses, projects, channels) for processors and exporters",
  configSchema: config,
  storage: false,
  repositories: true,
  create: (_cfg: ClickHouseStorageConfig, settings: ExtensionSettings) => new ClickHouseStorage(settings.id, settings.store),
};

export class ClickHouseStorage implements Extension, RepositoryProvider {
  constructor(
    private readonly id: string,
    private readonly store: Store | undefined,
  ) {}

  get repositories(): RepositoryProvider {
    return this;
  }

  async start(): Promise<void> {}

  async shutdown(): Promise<void> {}

  /** A fresh set for the component: a repository's cache (TestRepo's overrides) is that component's own. */
  forComponent(owner: StorageOwner): Repositories {
    if (!this.store) throw new Error(`${this.id}: ${owner.kind} ${owner.id} asked for repositories where this process has no store`);
    return openRepositories(this.store);
  }
}
