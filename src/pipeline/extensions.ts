// The service's extensions at run time (the core's side: the types are ./extension.ts and
// ./storage.ts, the implementations plugins under src/extensions/, registered in
// src/builtin/components.ts): built from the pipeline file's `extensions` and
// `service.extensions` (src/pipeline/graph.ts, which adds a default `file_storage` when the file
// enables no storage extension, and a default `clickhouse_storage` when it enables no repositories
// extension), started before components, shut down after them, and offered to
// components as `Host.extensions`. Built where processors and exporters run: the pipeline thread
// (src/pipeline/thread/worker.ts), or the main thread with SERVICE_PIPELINE_THREAD=false
// (src/main/daemon.ts). A reload keeps them: a file whose extensions differ is refused (restart).
import type { Logger } from 'pino';
import type { Repositories } from '../store/repositories.js';
import type { Store } from '../store/client.js';
import type { ComponentKind, HostExtensions } from './component.js';
import type { Extension, ExtensionSpec } from './extension.js';
import type { Registry } from './registry.js';
import type { StorageClient, StorageKey } from './storage.js';

export type { Extension, ExtensionFactory, ExtensionSpec, RepositoryProvider } from './extension.js';
export type { StorageClient, StorageEntry, StorageKey, StorageOp } from './storage.js';

/**
 * The storage extension a file that enables none gets (so pipelines/default.yaml runs unchanged):
 * the registry's `file_storage` with its defaults; none when the registry has no such type.
 */
export function defaultStorageSpec(registry: Registry): ExtensionSpec | undefined {
  const factory = registry.extension(DEFAULT_STORAGE);
  if (!factory?.storage) return undefined;
  return { id: factory.type, type: factory.type, config: factory.configSchema.parse({}), factory, implicit: true };
}

/** The type of the default storage extension (src/extensions/file-storage.ts registers it). */
export const DEFAULT_STORAGE = 'file_storage';

/**
 * The repositories extension a file that enables none gets: the registry's `clickhouse_storage`
 * (the store's repositories for processors and exporters); none when the registry has no such type.
 */
export function defaultRepositoriesSpec(registry: Registry): ExtensionSpec | undefined {
  const factory = registry.extension(DEFAULT_REPOSITORIES);
  if (!factory?.repositories) return undefined;
  return { id: factory.type, type: factory.type, config: factory.configSchema.parse({}), factory, implicit: true };
}

/** The type of the default repositories extension (src/extensions/clickhouse-storage.ts registers it). */
export const DEFAULT_REPOSITORIES = 'clickhouse_storage';

/** Where no extension runs (the HTTP thread while processors run on the pipeline thread; tests). */
export const NO_EXTENSIONS: HostExtensions = {
  ids: [],
  storage(kind, id) {
    throw new Error(`${kind} ${id}: no storage extension runs on this thread (extensions run where processors and exporters do)`);
  },
  repositories(kind, id) {
    throw new Error(`${kind} ${id}: no repositories extension runs on this thread (extensions run where processors and exporters do)`);
  },
};

export class ServiceExtensions implements HostExtensions {
  readonly ids: readonly string[];
  private readonly running: { id: string; extension: Extension }[] = [];
  private readonly instances: { id: string; extension: Extension }[];
  private started = false;

  constructor(
    private readonly specs: readonly ExtensionSpec[],
    /** `store`: this thread's, for the repositories extension (absent where the process has none). */
    settings: { dataDir: string; logger: Logger; store?: Store },
  ) {
    this.ids = specs.map((s) => s.id);
    this.instances = specs.map((s) => ({
      id: s.id,
      extension: s.factory.create(s.config, {
        id: s.id,
        dataDir: settings.dataDir,
        logger: settings.logger.child({ extension: s.id }),
        ...(settings.store ? { store: settings.store } : {}),
      }),
    }));
  }

  /** In service.extensions order; a failure shuts down the ones already started. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    for (const e of this.instances) {
      try {
        await e.extension.start();
      } catch (err) {
        await this.shutdown();
        throw new Error(`extensions.${e.id}: cannot start: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      this.running.push(e);
    }
  }

  /** In reverse order, after every component stopped. */
  async shutdown(): Promise<void> {
    this.started = false;
    for (const e of this.running.splice(0).reverse()) await e.extension.shutdown();
  }

  /** The first storage extension service.extensions lists. */
  storage<V, K extends StorageKey = string>(kind: ComponentKind, id: string, name?: string): StorageClient<V, K> {
    const provider = this.running.find((e) => e.extension.storage)?.extension.storage;
    if (!provider) throw new Error(`${kind} ${id}: no storage extension is running (${this.started ? 'none enabled' : 'extensions not started'})`);
    return provider.client<V, K>({ kind, id, ...(name !== undefined ? { name } : {}) });
  }

  /** The repositories of the first repositories extension service.extensions lists. */
  repositories(kind: ComponentKind, id: string): Repositories {
    const provider = this.running.find((e) => e.extension.repositories)?.extension.repositories;
    if (!provider) throw new Error(`${kind} ${id}: no repositories extension is running (${this.started ? 'none enabled' : 'extensions not started'})`);
    return provider.forComponent({ kind, id });
  }

  /** Why a reload to `next` cannot keep these extensions (they differ), or null. */
  refusal(next: { extensions: readonly ExtensionSpec[] }): string | null {
    const key = (specs: readonly ExtensionSpec[]): string => JSON.stringify(specs.map((s) => [s.id, s.type, sortedJson(s.config)]));
    if (key(this.specs) === key(next.extensions)) return null;
    return 'extensions cannot change on reload (components hold their storage); restart to change extensions or service.extensions';
  }

  /** A runtime builder for ReloadablePipeline that refuses a graph whose extensions differ from these. */
  guard<G extends { extensions: readonly ExtensionSpec[] }, R>(build: (graph: G) => R): (graph: G) => R {
    return (graph) => {
      const refusal = this.refusal(graph);
      if (refusal) throw new Error(refusal);
      return build(graph);
    };
  }
}

function sortedJson(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedJson);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, sortedJson(x)]));
  return v;
}
