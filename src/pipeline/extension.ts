// Extensions, after the OpenTelemetry Collector's: capabilities the service offers its components
// rather than a stage data passes through. Defined under `extensions:` in the pipeline file,
// enabled by `service.extensions`, started before every component and shut down after them, on
// the thread that runs processors and exporters (docs/pipeline.md "Extensions"). Components reach
// them through `Host.extensions` (./component.ts). Implementations live under src/extensions/.
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { Store } from '../store/client.js';
import type { Repositories } from '../store/repositories.js';
import type { StorageOwner, StorageProvider } from './storage.js';

/** What a repositories extension offers the host: the typed repositories of src/store, for one component. */
export interface RepositoryProvider {
  forComponent(owner: StorageOwner): Repositories;
}

export interface Extension {
  start(): Promise<void>;
  shutdown(): Promise<void>;
  /** Present on a storage extension: where components get their durable state. */
  readonly storage?: StorageProvider;
  /** Present on a repositories extension (`clickhouse_storage`): where components get the store's repositories. */
  readonly repositories?: RepositoryProvider;
}

export interface ExtensionSettings {
  id: string;
  logger: Logger;
  /** The daemon's data directory (SERVICE_DATA_DIR): where an extension keeps files by default. */
  dataDir: string;
  /**
   * The store of the thread the extensions run on (the pipeline thread's reaches the main thread
   * by message, thread/remote.ts); absent where the process has none. Only a repositories
   * extension uses it: components never see the store itself.
   */
  store?: Store;
}

export interface ExtensionFactory<C = unknown> {
  kind: 'extension';
  type: string;
  description: string;
  configSchema: z.ZodType<C>;
  /** Whether its instances are storage extensions (offer `storage`). */
  storage: boolean;
  /** Whether its instances are repositories extensions (offer `repositories`). */
  repositories?: boolean;
  create(config: C, settings: ExtensionSettings): Extension;
}

/** An extension as the pipeline file defines it (src/pipeline/graph.ts). */
export interface ExtensionSpec {
  id: string;
  type: string;
  config: unknown;
  factory: ExtensionFactory;
  /** Not in the file: a default storage or repositories extension, added when the file enables none. */
  implicit?: boolean;
}
