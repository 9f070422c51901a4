// Extensions, after the OpenTelemetry Collector's: capabilities the service offers its components
// rather than a stage data passes through. Defined under `extensions:` in the pipeline file,
// enabled by `service.extensions`, started before every component and shut down after them, on
// the thread that runs processors and exporters (docs/pipeline.md "Extensions"). Components reach
// them through `Host.extensions` (./component.ts). Implementations live under src/extensions/.
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { StorageProvider } from './storage.js';

export interface Extension {
  start(): Promise<void>;
  shutdown(): Promise<void>;
  /** Present on a storage extension: where components get their durable state. */
  readonly storage?: StorageProvider;
}

export interface ExtensionSettings {
  id: string;
  logger: Logger;
  /** The daemon's data directory (SERVICE_DATA_DIR): where an extension keeps files by default. */
  dataDir: string;
}

export interface ExtensionFactory<C = unknown> {
  kind: 'extension';
  type: string;
  description: string;
  configSchema: z.ZodType<C>;
  /** Whether its instances are storage extensions (offer `storage`). */
  storage: boolean;
  create(config: C, settings: ExtensionSettings): Extension;
}

/** An extension as the pipeline file defines it (src/pipeline/graph.ts). */
export interface ExtensionSpec {
  id: string;
  type: string;
  config: unknown;
  factory: ExtensionFactory;
  /** Not in the file: the default storage extension, added when the file enables none. */
  implicit?: boolean;
}
