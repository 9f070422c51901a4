// The notifier's durable state, in the storage extension (src/extensions/file-storage.ts), three
// clients of the exporter's own namespace:
//  - dedupe: (channel, project, docs/contract.md §9 key) → when it was first queued. Checked and written
//    in the same transaction that queues the deliveries, so an event seen twice (the outbox is
//    at-least-once) or a later event with the same key queues nothing, also after a restart.
//  - deliveries: the messages still to send, in arrival order, with their attempt count and when
//    to try next. A delivery leaves only when it was sent or given up on.
//  - meta: the last delivery number.
// A key-value store rather than a ClickHouse table: dedupe is a check-and-set and the deliveries a
// work queue, neither of which ClickHouse does transactionally; this state is local to the node
// that runs the events pipeline, like the outbox it consumes. Before the storage extension it was
// an LMDB environment of its own under <data dir>/notify: moved over once (`open`).
import path from 'node:path';
import type { Logger } from 'pino';
import type { ChannelSpec, Notification } from '../../domain/notifications.js';
import type { HostExtensions } from '../../pipeline/component.js';
import type { StorageClient } from '../../pipeline/storage.js';
import { migrateLegacyLmdb } from '../../extensions/migrate.js';

export interface Delivery {
  seq: number;
  channel: ChannelSpec;
  notification: Notification;
  /** Attempts made so far. */
  attempts: number;
  /** Epoch ms before which it is not tried. */
  nextAt: number;
  /** When it was queued (for the delivery latency). */
  queuedAt: number;
  lastError?: string;
}

export interface NotifyClients {
  dedupe: StorageClient<number>;
  deliveries: StorageClient<Delivery, number>;
  meta: StorageClient<unknown>;
}

/** The directory the notifier's own LMDB environment had, before the storage extension. */
export function legacyNotifyDir(dataDir: string): string {
  return path.join(dataDir, 'notify');
}

export class NotifyStore {
  private readonly dedupe: StorageClient<number>;
  private readonly deliveries: StorageClient<Delivery, number>;
  private readonly meta: StorageClient<unknown>;

  constructor(clients: NotifyClients) {
    this.dedupe = clients.dedupe;
    this.deliveries = clients.deliveries;
    this.meta = clients.meta;
  }

  /** The clients of exporter `id`; first moves over what <data dir>/notify held, if it still exists. */
  static async open(extensions: HostExtensions, id: string, dataDir: string, logger: Logger): Promise<NotifyStore> {
    const clients: NotifyClients = {
      dedupe: extensions.storage<number>('exporter', id, 'dedupe'),
      deliveries: extensions.storage<Delivery, number>('exporter', id, 'deliveries'),
      meta: extensions.storage<unknown>('exporter', id, 'meta'),
    };
    await migrateLegacyNotify(legacyNotifyDir(dataDir), clients, logger);
    return new NotifyStore(clients);
  }

  /**
   * Queues the notification for every channel that has not had its dedupe key within
   * `windowMs`, recording the keys; durable when it resolves. Returns what was queued.
   */
  async enqueue(n: Notification, channels: readonly ChannelSpec[], now: number, windowMs: number): Promise<Delivery[]> {
    if (channels.length === 0) return [];
    return this.dedupe.transaction(() => {
      const out: Delivery[] = [];
      const last = this.meta.get('seq');
      let seq = typeof last === 'number' ? last : 0;
      for (const channel of channels) {
        const key = dedupeRecordKey(channel.id, n.projectId, n.dedupeKey);
        const at = this.dedupe.get(key);
        if (at !== undefined && now - at < windowMs) continue;
        void this.dedupe.set(key, now);
        const d: Delivery = { seq: ++seq, channel, notification: n, attempts: 0, nextAt: now, queuedAt: now };
        void this.deliveries.set(d.seq, d);
        out.push(d);
      }
      if (out.length > 0) void this.meta.set('seq', seq);
      return out;
    });
  }

  /** Every delivery still to send, oldest first. */
  pending(): Delivery[] {
    return [...this.deliveries.range()].map((e) => e.value);
  }

  count(): number {
    return this.deliveries.count();
  }

  done(seq: number): Promise<void> {
    return this.deliveries.delete(seq);
  }

  reschedule(d: Delivery): Promise<void> {
    return this.deliveries.set(d.seq, d);
  }

  /** Forgets dedupe keys older than the window (they would no longer suppress anything). */
  async purge(olderThan: number): Promise<number> {
    const stale = [...this.dedupe.range()].filter((e) => e.value < olderThan).map((e) => e.key);
    if (stale.length === 0) return 0;
    await this.dedupe.batch(stale.map((key) => ({ op: 'delete', key })));
    return stale.length;
  }
}

/**
 * Copies <data dir>/notify (dedupe keys, queued deliveries, the delivery counter) into the
 * clients, once, and renames it: a restart after the upgrade neither re-sends what was sent nor
 * loses what was still queued.
 */
export function migrateLegacyNotify(dir: string, clients: NotifyClients, logger: Logger): Promise<number | null> {
  return migrateLegacyLmdb({
    dir,
    logger,
    marker: clients.meta,
    databases: [
      { name: 'dedupe', into: clients.dedupe },
      { name: 'deliveries', keyEncoding: 'uint32', into: clients.deliveries },
      { name: 'meta', into: clients.meta },
    ],
  });
}

/** Per channel and project: a global channel serves every project, whose suite names may collide. */
function dedupeRecordKey(channelId: string, projectId: string, key: string): string {
  return `${channelId}\u0000${projectId}\u0000${key}`;
}
