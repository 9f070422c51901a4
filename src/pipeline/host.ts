// The one place a Host is built, on whichever thread runs components: the daemon's (receivers, and
// everything in single-thread mode) and the pipeline thread's (processors, exporters, connectors).
// Each thread passes its own outbox, logger and extensions (the pipeline thread's reach the main
// thread by message; the repositories extension is built over that thread's store); the settings
// are the same object on both. No store: components get repositories from the extensions.
import type { Logger } from 'pino';
import type { ServerSettings } from '../config/daemon-env.js';
import type { ProjectConfigs } from '../config/resolved-project-config.js';
import type { Outbox } from '../queue/types.js';
import type { Host, HostExtensions, PipelineSettings, ReceiverDoor } from './component.js';
import { NO_EXTENSIONS } from './extensions.js';

export interface HostParts {
  logger: Logger;
  /** This thread's cache of per-project policy; it also holds service.yml + environment (`base`). */
  projectConfigs: Pick<ProjectConfigs, 'get' | 'base'>;
  settings: PipelineSettings;
  outbox: Pick<Outbox, 'append'>;
  /** The started extensions (src/extensions/index.ts ServiceExtensions) where processors and exporters run; none elsewhere. */
  extensions?: HostExtensions;
  /** Where ingest is served: what receivers get. */
  door?: ReceiverDoor;
}

export function buildHost(parts: HostParts): Host {
  const { projectConfigs, settings, door } = parts;
  return {
    logger: parts.logger,
    service: projectConfigs.base.config,
    projectConfig: (projectId) => projectConfigs.get(projectId),
    settings,
    outbox: parts.outbox,
    extensions: parts.extensions ?? NO_EXTENSIONS,
    ...(door ? { door } : {}),
  };
}

/** The daemon's settings components read, as one object that crosses to the pipeline thread. */
export function pipelineSettings(settings: ServerSettings): PipelineSettings {
  const { dataDir, clusterThreshold, notifications, tracker, ai } = settings;
  return { dataDir, clusterThreshold, notifications, tracker, ...(ai ? { ai } : {}) };
}
