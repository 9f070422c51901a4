// The notifier's durable state, in its own LMDB environment under <data dir>/notify:
//  - dedupe: (channel, project, docs/contract.md §9 key) → when it was first queued. Checked and written
//    in the same transaction that queues the deliveries, so an event seen twice (the outbox is
//    at-least-once) or a later event with the same key queues nothing, also after a restart.
//  - deliveries: the messages still to send, in arrival order, with their attempt count and when
//    to try next. A delivery leaves only when it was sent or given up on.
// LMDB rather than a ClickHouse table: dedupe is a check-and-set and the deliveries a work queue,
// neither of which ClickHouse does transactionally; this state is local to the node that runs
// the events pipeline, like the outbox it consumes.
import { mkdirSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { ChannelSpec, Notification } from '../../domain/notifications.js';

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

export class NotifyStore {
  private readonly root: RootDatabase;
  private readonly dedupe: Database<number, string>;
  private readonly deliveries: Database<Delivery, number>;
  private readonly meta: Database<number, string>;

  private constructor(path: string) {
    mkdirSync(path, { recursive: true });
    this.root = open({ path, maxDbs: 4, mapSize: 4 * 1024 * 1024 * 1024 });
    this.dedupe = this.root.openDB<number, string>({ name: 'dedupe', encoding: 'json' });
    this.deliveries = this.root.openDB<Delivery, number>({ name: 'deliveries', keyEncoding: 'uint32', encoding: 'json' });
    this.meta = this.root.openDB<number, string>({ name: 'meta', encoding: 'json' });
  }

  static open(path: string): NotifyStore {
    return new NotifyStore(path);
  }

  /**
   * Queues the notification for every channel that has not had its dedupe key within
   * `windowMs`, recording the keys; durable when it resolves. Returns what was queued.
   */
  async enqueue(n: Notification, channels: readonly ChannelSpec[], now: number, windowMs: number): Promise<Delivery[]> {
    if (channels.length === 0) return [];
    const queued = await this.root.transaction(() => {
      const out: Delivery[] = [];
      let seq = this.meta.get('seq') ?? 0;
      for (const channel of channels) {
        const key = dedupeRecordKey(channel.id, n.projectId, n.dedupeKey);
        const at = this.dedupe.get(key);
        if (at !== undefined && now - at < windowMs) continue;
        void this.dedupe.put(key, now);
        const d: Delivery = { seq: ++seq, channel, notification: n, attempts: 0, nextAt: now, queuedAt: now };
        void this.deliveries.put(d.seq, d);
        out.push(d);
      }
      if (out.length > 0) void this.meta.put('seq', seq);
      return out;
    });
    await this.root.flushed;
    return queued;
  }

  /** Every delivery still to send, oldest first. */
  pending(): Delivery[] {
    return [...this.deliveries.getRange()].map((e) => e.value);
  }

  count(): number {
    return this.deliveries.getCount();
  }

  async done(seq: number): Promise<void> {
    await this.deliveries.remove(seq);
  }

  async reschedule(d: Delivery): Promise<void> {
    await this.deliveries.put(d.seq, d);
  }

  /** Forgets dedupe keys older than the window (they would no longer suppress anything). */
  async purge(olderThan: number): Promise<number> {
    const stale = [...this.dedupe.getRange()].filter((e) => e.value < olderThan).map((e) => e.key);
    if (stale.length === 0) return 0;
    await this.root.transaction(() => {
      for (const k of stale) void this.dedupe.remove(k);
    });
    return stale.length;
  }

  async close(): Promise<void> {
    await this.root.flushed;
    await this.root.close();
  }
}

/** Per channel and project: a global channel serves every project, whose suite names may collide. */
function dedupeRecordKey(channelId: string, projectId: string, key: string): string {
  return `${channelId}\u0000${projectId}\u0000${key}`;
}
