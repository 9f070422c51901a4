// One project's effective config, for the pipeline and the API alike: service.yml and environment
// as loaded at start, with the project's stored settings in between. Resolved configs are cached;
// a write through this object replaces its entry at once, and the TTL bounds how long another
// process (a separate API role) may serve an older document.
import { BroadcastChannel } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { Store } from '../store/client.js';
import { listChannels, type NotificationChannel } from '../store/channels.js';
import { ProjectSettingsRepo, replaceSettingsChannels, settingsChannels } from '../store/settings.js';
import { ConfigError } from '../../client/src/contract/config/errors.js';
import { parseSettings, resolveProjectConfig, type ProjectSettings, type ResolvedServiceConfig } from '../../client/src/contract/config/project-settings.js';
import type { LoadedServiceConfig } from './service-yml.js';

export interface ProjectSettingsState {
  /** What was set for the project, dashboard channels included (`notifications.channels`). */
  settings: ProjectSettings;
  /** The dashboard channels as stored (ids, webhook signing secrets). */
  channels: NotificationChannel[];
  /** 0 when nothing was ever stored. */
  version: number;
  updatedAt: number | null;
}

const TTL_MS = 30_000;
const MAX_ENTRIES = 10_000;

export class ProjectConfigs {
  private readonly repo: ProjectSettingsRepo;
  private readonly cache = new Map<string, { value: Promise<ResolvedServiceConfig>; at: number }>();
  /** Writes of one project in order, so two PATCHes never lose each other's keys. */
  private readonly writes = new Map<string, Promise<unknown>>();

  /**
   * The API thread writes settings and the pipeline thread reads them through its own instance:
   * a write tells every instance on the same database to drop its entry.
   */
  private readonly peers: BroadcastChannel;

  constructor(
    private readonly store: Store,
    readonly base: LoadedServiceConfig,
    private readonly logger?: Logger,
    private readonly ttlMs = TTL_MS,
  ) {
    this.repo = new ProjectSettingsRepo(store);
    this.peers = new BroadcastChannel(`flakehouse:project-config:${store.database}`);
    this.peers.unref();
    this.peers.onmessage = (msg: unknown) => {
      const projectId = (msg as { data?: unknown }).data;
      if (typeof projectId === 'string') this.cache.delete(projectId);
    };
  }

  /** The project's resolved config (cached). */
  get(projectId: string): Promise<ResolvedServiceConfig> {
    const now = Date.now();
    const hit = this.cache.get(projectId);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = this.settings(projectId).then((s) => resolveProjectConfig(this.base, s.settings));
    // A failed read is not remembered: the next caller tries again.
    value.catch(() => {
      if (this.cache.get(projectId)?.value === value) this.cache.delete(projectId);
    });
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    this.cache.set(projectId, { value, at: now });
    return value;
  }

  /** The stored document. One that no longer validates (written by another version) counts as empty, with a warning. */
  async settings(projectId: string): Promise<ProjectSettingsState> {
    const [stored, channels] = await Promise.all([this.repo.get(projectId), settingsChannels(this.store, projectId)]);
    let settings: ProjectSettings = {};
    if (stored) {
      try {
        settings = parseSettings(stored.settings);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        this.logger?.warn({ projectId, err: err.message }, 'stored project settings are invalid; using service.yml and environment only');
      }
    }
    if (channels.length > 0) {
      const list = channels.map((c) => ({ kind: c.kind, target: c.target, ...(c.events.length > 0 ? { events: c.events } : {}) }));
      settings = { ...settings, notifications: { channels: list } };
    }
    return { settings, channels, version: stored?.version ?? 0, updatedAt: stored?.updatedAt ?? null };
  }

  /**
   * Replaces the project's document with `update(current)` (which validates and may throw), then
   * serves the new config at once in this process.
   */
  async write(projectId: string, update: (current: ProjectSettings) => ProjectSettings): Promise<ProjectSettingsState> {
    const previous = this.writes.get(projectId) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const current = await this.settings(projectId);
        const settings = update(current.settings);
        const { notifications, ...document } = settings;
        const channels = await replaceSettingsChannels(this.store, projectId, notifications?.channels ?? []);
        const stored = await this.repo.put(projectId, document, current.version);
        this.cache.set(projectId, { value: Promise.resolve(resolveProjectConfig(this.base, settings)), at: Date.now() });
        this.peers.postMessage(projectId);
        return { settings, channels, version: stored.version, updatedAt: stored.updatedAt };
      });
    this.writes.set(projectId, next);
    try {
      return await next;
    } finally {
      if (this.writes.get(projectId) === next) this.writes.delete(projectId);
    }
  }

  /** The channels synced from service.yml, as stored (for the admin view; policy never needs them). */
  configChannels(projectId: string): Promise<NotificationChannel[]> {
    return listChannels(this.store, projectId, { source: 'config' });
  }

  invalidate(projectId: string): void {
    this.cache.delete(projectId);
  }

  close(): void {
    this.peers.close();
  }
}

/**
 * One project's resolved config without a cache: for code that has a store and the loaded
 * service config but no Host (the pipeline and API use `host.projectConfig`).
 */
export async function readProjectConfig(store: Store, base: LoadedServiceConfig, projectId: string): Promise<ResolvedServiceConfig> {
  const configs = new ProjectConfigs(store, base, undefined, 0);
  try {
    return await configs.get(projectId);
  } finally {
    configs.close();
  }
}
