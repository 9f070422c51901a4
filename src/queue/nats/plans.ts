// Frozen leases (KV `<prefix>_plans`): `live.<partition>.<leaseId>` while the lease is queued or
// leased, `dead.<leaseId>` once it died whole (kept so its jobs are requeued as that same lease).
// A live record names its jobs by id and by seq: the owner that meets one of those messages again
// (redelivery, takeover by another worker, a restart) holds it until all of them are in hand and
// hands them out together, under the same lease id, with the plan. A frozen lease requeued from
// the dead carries its lease id in a message header instead (its seqs are new).
import type { KV } from 'nats';
import type { LeasePlan } from '../types.js';
import { kvGetJson, kvKeys, kvPutJson } from './streams.js';

export interface PlanRecord {
  leaseId: string;
  partition: number;
  jobIds: string[];
  seqs: number[];
  plan: LeasePlan;
}

export class Plans {
  constructor(private readonly kv: KV) {}

  private static live(partition: number, leaseId: string): string {
    return `live.${partition}.${leaseId}`;
  }

  async listLive(partition: number): Promise<PlanRecord[]> {
    const keys = await kvKeys(this.kv, `live.${partition}.>`);
    const recs = await Promise.all(keys.map((k) => kvGetJson<PlanRecord>(this.kv, k)));
    return recs.filter((r): r is PlanRecord => r !== undefined);
  }

  getLive(partition: number, leaseId: string): Promise<PlanRecord | undefined> {
    return kvGetJson<PlanRecord>(this.kv, Plans.live(partition, leaseId));
  }

  putLive(rec: PlanRecord): Promise<void> {
    return kvPutJson(this.kv, Plans.live(rec.partition, rec.leaseId), rec);
  }

  async removeLive(partition: number, leaseId: string): Promise<void> {
    await this.kv.purge(Plans.live(partition, leaseId));
  }

  getDead(leaseId: string): Promise<PlanRecord | undefined> {
    return kvGetJson<PlanRecord>(this.kv, `dead.${leaseId}`);
  }

  putDead(rec: PlanRecord): Promise<void> {
    return kvPutJson(this.kv, `dead.${rec.leaseId}`, rec);
  }

  async removeDead(leaseId: string): Promise<void> {
    await this.kv.purge(`dead.${leaseId}`);
  }
}
