// Charged attempts per job message (KV `<prefix>_attempts`, key `<partition>.<seq>`). JetStream
// counts deliveries, but the contract charges neither splits nor out-of-space retries, and a
// partition's consumer is recreated when it changes owner (which resets its delivery counts): the
// owner keeps the count itself, written before a lease is handed out so a crash still counts.
import type { KV } from 'nats';
import { kvGetJson, kvKeys, kvPutJson } from './streams.js';

export interface AttemptRecord {
  n: number;
  firstError?: string;
  /** Committed (or parked as dead) and acked, but the ack was not confirmed: ack it, never process it again. */
  acked?: boolean;
}

export class Attempts {
  /** Records of the partitions this process owns (it is their only writer while it owns them). */
  private readonly cache = new Map<string, AttemptRecord>();

  constructor(private readonly kv: KV) {}

  private static key(partition: number, seq: number): string {
    return `${partition}.${seq}`;
  }

  /** Loads one partition's records (on acquiring it). */
  async load(partition: number): Promise<void> {
    const keys = await kvKeys(this.kv, `${partition}.>`);
    await Promise.all(
      keys.map(async (k) => {
        const rec = await kvGetJson<AttemptRecord>(this.kv, k);
        if (rec) this.cache.set(k, rec);
      }),
    );
  }

  forget(partition: number): void {
    const pre = `${partition}.`;
    for (const k of this.cache.keys()) if (k.startsWith(pre)) this.cache.delete(k);
  }

  get(partition: number, seq: number): AttemptRecord {
    return this.cache.get(Attempts.key(partition, seq)) ?? { n: 0 };
  }

  async set(partition: number, seq: number, rec: AttemptRecord): Promise<void> {
    const k = Attempts.key(partition, seq);
    this.cache.set(k, rec);
    await kvPutJson(this.kv, k, rec);
  }

  /** Puts back in memory what a failed `set` replaced (what KV holds is unknown: the next set or load decides). */
  restore(partition: number, seq: number, rec: AttemptRecord): void {
    const k = Attempts.key(partition, seq);
    if (rec.n === 0 && rec.firstError === undefined && rec.acked === undefined) this.cache.delete(k);
    else this.cache.set(k, rec);
  }

  async remove(partition: number, seq: number): Promise<void> {
    const k = Attempts.key(partition, seq);
    if (!this.cache.delete(k)) return;
    await this.kv.purge(k);
  }
}
