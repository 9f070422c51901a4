// Project settings (migration 008): one JSON document per project, latest version wins; the
// dashboard's notification channels are kept apart, in notification_channels (below).
import { randomBytes, randomInt } from 'node:crypto';
import type { NotificationChannelKind, NotificationEventType } from '../config/service-yml.js';
import { stableUuid } from '../../client/src/contract/ids.js';
import { ChannelRepo, type NotificationChannel } from './channels.js';
import { toNumber, type Store } from './client.js';

export interface StoredSettings {
  /** The document as stored (validated on write; the caller validates again on read). */
  settings: unknown;
  version: number;
  updatedAt: number;
}

export class ProjectSettingsRepo {
  constructor(private readonly store: Store) {}

  async get(projectId: string): Promise<StoredSettings | null> {
    const rows = await this.store.query<{ settings: string; version: number | string; updated_at: number | string }>(
      `SELECT settings, version, toUnixTimestamp64Milli(updated_at) AS updated_at
       FROM ${this.store.table('project_settings')} FINAL WHERE project_id = {projectId:UUID} LIMIT 1`,
      { projectId },
    );
    const r = rows[0];
    if (!r) return null;
    return { settings: JSON.parse(r.settings) as unknown, version: toNumber(r.version), updatedAt: toNumber(r.updated_at) };
  }

  /** Writes a new version; `after` is the version it replaces (0 for none), so two writes in one ms still order. */
  async put(projectId: string, settings: object, after: number): Promise<StoredSettings> {
    const now = Date.now();
    const version = Math.max(now, after + 1);
    await this.store.insert(
      'project_settings',
      [{ project_id: projectId, settings: JSON.stringify(settings), updated_at: now, version }],
      `project-settings:${projectId}:${version}`,
    );
    return { settings, version, updatedAt: now };
  }
}

// Dashboard notification channels live with the service.yml-synced ones in notification_channels
// (migration 005, store/channels.ts) under source 'settings', where delivery reads both; a config
// sync never touches them, and they are replaced here as a set.

export interface SettingsChannelInput {
  kind: NotificationChannelKind;
  target: string;
  events?: readonly NotificationEventType[];
}

/** The id of a settings channel: the same kind and target keep their id (and webhook secret). */
export function settingsChannelId(projectId: string, kind: string, target: string): string {
  return stableUuid('notification-channel', projectId, 'settings', kind, target);
}

/** The project's dashboard channels, oldest first. */
export function settingsChannels(store: Store, projectId: string): Promise<NotificationChannel[]> {
  return new ChannelRepo(store).list(projectId, { source: 'settings' });
}

/**
 * Makes the project's settings channels exactly `channels`. A new webhook gets a signing secret
 * (docs/contract.md §9 HMAC); a kept one keeps its secret. Writes only what changed.
 */
export async function replaceSettingsChannels(store: Store, projectId: string, channels: readonly SettingsChannelInput[]): Promise<NotificationChannel[]> {
  const current = new Map((await settingsChannels(store, projectId)).map((c) => [c.id, c]));
  const now = Date.now();
  const version = now * 1000 + randomInt(1000);
  const rows: Record<string, unknown>[] = [];
  const wanted = new Set<string>();
  for (const ch of channels) {
    const id = settingsChannelId(projectId, ch.kind, ch.target);
    wanted.add(id);
    const events = [...new Set(ch.events ?? [])].sort();
    const prev = current.get(id);
    if (prev && prev.events.join(',') === events.join(',')) continue;
    const secret = prev?.signingSecret ?? (ch.kind === 'webhook' ? `whsec_${randomBytes(24).toString('hex')}` : null);
    rows.push({ project_id: projectId, id, source: 'settings', kind: ch.kind, target: ch.target, events, signing_secret: secret, created_at: prev?.createdAt ?? now, updated_at: now, version, deleted: 0 });
  }
  for (const prev of current.values()) {
    if (wanted.has(prev.id)) continue;
    rows.push({ project_id: projectId, id: prev.id, source: 'settings', kind: prev.kind, target: prev.target, events: prev.events, signing_secret: prev.signingSecret, created_at: prev.createdAt, updated_at: now, version, deleted: 1 });
  }
  if (rows.length > 0) await store.insert('notification_channels', rows, `notification-channels:${projectId}:settings:${version}`);
  return settingsChannels(store, projectId);
}
