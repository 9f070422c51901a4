// Per-project notification channels (migration 005). Two sources share the table: 'config'
// channels are replaced as a set by PUT /v1/notifications/routing, 'settings' channels belong to
// the dashboard and are never touched by a config sync. Notification delivery reads them with
// `listChannels`.
import { randomBytes, randomInt } from 'node:crypto';
import type { NotificationChannelKind, NotificationEventType } from '../config/service-yml.js';
import { stableUuid } from '../../client/src/contract/ids.js';
import { toNumber, type Store } from './client.js';

export const CHANNEL_SOURCES = ['config', 'settings'] as const;
export type ChannelSource = (typeof CHANNEL_SOURCES)[number];

export interface NotificationChannel {
  id: string;
  projectId: string;
  source: ChannelSource;
  kind: NotificationChannelKind;
  /** Webhook URL, or the address of an email channel. */
  target: string;
  /** Event types this channel wants, sorted; empty means every type. */
  events: NotificationEventType[];
  /** Webhook HMAC secret (every webhook has one); null for other kinds. */
  signingSecret: string | null;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
}

export interface ChannelInput {
  kind: NotificationChannelKind;
  target: string;
  events?: readonly NotificationEventType[];
}

interface ChannelRow {
  id: string;
  project_id: string;
  source: string;
  kind: string;
  target: string;
  events: string[];
  signing_secret: string | null;
  created_at: number | string;
  updated_at: number | string;
}

/** The id of a config channel: the same kind and target keep their id across syncs. */
export function configChannelId(projectId: string, kind: string, target: string): string {
  return stableUuid('notification-channel', projectId, 'config', kind, target);
}

function normalizeEvents(events: readonly string[] | undefined): NotificationEventType[] {
  return [...new Set(events ?? [])].sort() as NotificationEventType[];
}

export class ChannelRepo {
  constructor(private readonly store: Store) {}

  /** Live channels of a project (both sources unless one is asked for), oldest first. */
  async list(projectId: string, opts: { source?: ChannelSource } = {}): Promise<NotificationChannel[]> {
    const rows = await this.store.query<ChannelRow>(
      `SELECT id, project_id, source, kind, target, events, signing_secret,
              toUnixTimestamp64Milli(created_at) AS created_at, toUnixTimestamp64Milli(updated_at) AS updated_at
       FROM ${this.store.table('notification_channels')} FINAL
       WHERE project_id = {projectId:UUID} AND deleted = 0 ${opts.source ? 'AND source = {source:String}' : ''}
       ORDER BY created_at, id`,
      { projectId, source: opts.source ?? '' },
    );
    return rows.map((r) => ({
      id: r.id,
      projectId: r.project_id,
      source: r.source as ChannelSource,
      kind: r.kind as NotificationChannelKind,
      target: r.target,
      events: r.events as NotificationEventType[],
      signingSecret: r.signing_secret,
      createdAt: toNumber(r.created_at),
      updatedAt: toNumber(r.updated_at),
    }));
  }

  /**
   * Makes the project's config channels exactly `channels` (kind + target unique, checked by the
   * caller). Settings channels are untouched. Only what changed is written, in one insert, so a
   * sync repeated on every CI run costs a read and nothing else.
   */
  async replaceConfigChannels(projectId: string, channels: readonly ChannelInput[], now: number = Date.now()): Promise<{ channels: number; changed: number }> {
    const current = new Map((await this.list(projectId, { source: 'config' })).map((c) => [c.id, c]));
    // Millisecond versions can tie between two syncs; the low digits keep ties rare and harmless.
    const version = now * 1000 + randomInt(1000);
    const rows: Record<string, unknown>[] = [];
    const wanted = new Set<string>();
    for (const ch of channels) {
      const id = configChannelId(projectId, ch.kind, ch.target);
      wanted.add(id);
      const events = normalizeEvents(ch.events);
      const prev = current.get(id);
      if (prev && prev.events.join(',') === events.join(',') && (ch.kind !== 'webhook' || prev.signingSecret !== null)) continue;
      rows.push({
        project_id: projectId,
        id,
        source: 'config',
        kind: ch.kind,
        target: ch.target,
        events,
        // A webhook is always signed (docs/contract.md §9): the secret is made on the first sync and kept
        // by later ones; the admin settings API shows it so the receiver can verify.
        signing_secret: prev?.signingSecret ?? (ch.kind === 'webhook' ? `whsec_${randomBytes(24).toString('hex')}` : null),
        created_at: prev?.createdAt ?? now,
        updated_at: now,
        version,
        deleted: 0,
      });
    }
    for (const prev of current.values()) {
      if (wanted.has(prev.id)) continue;
      rows.push({
        project_id: projectId,
        id: prev.id,
        source: 'config',
        kind: prev.kind,
        target: prev.target,
        events: prev.events,
        signing_secret: null,
        created_at: prev.createdAt,
        updated_at: now,
        version,
        deleted: 1,
      });
    }
    if (rows.length > 0) await this.store.insert('notification_channels', rows, `notification-channels:${projectId}:${version}`);
    return { channels: wanted.size, changed: rows.length };
  }
}

/** Every live channel of a project, both sources: what notification delivery reads. */
export function listChannels(store: Store, projectId: string, opts: { source?: ChannelSource } = {}): Promise<NotificationChannel[]> {
  return new ChannelRepo(store).list(projectId, opts);
}
