// What the owner of one partition keeps in memory: the job messages it has pulled from the
// partition's consumer and not yet acked (the consumer does not redeliver them while the owner
// heartbeats them with `working()`), in the same shapes the embedded queue keeps its ids: a ready
// list in seq order, split halves and single-job retries to run first, frozen leases ready to run,
// and backoffs. All of it re-forms from the stream when another process (or this one, restarted)
// acquires the partition: the new owner recreates the consumer and gets every unacked message
// again, oldest first.
import type { JsMsg } from 'nats';
import { ReadySets } from '../ready-sets.js';
import type { StoredJob } from '../types.js';
import type { PlanRecord } from './plans.js';

export interface HeldMsg {
  seq: number;
  msg: JsMsg;
  job: StoredJob;
  bytes: number;
  executions: number;
}


export class OwnedPartition {
  readonly held = new Map<number, HeldMsg>();
  readonly byJob = new Map<string, number>();
  /** Held seqs ready, in groups, in frozen leases and in backoffs (../ready-sets.ts), oldest first by seq. */
  readonly sets = new ReadySets<number>((a, b) => a - b);
  /** Live frozen leases of this partition, by lease id. */
  readonly plans = new Map<string, PlanRecord>();
  /** seq → lease id, for messages named by a live plan. */
  readonly seqToPlan = new Map<number, string>();
  /** Frozen leases whose jobs are not all in hand yet: lease id → job ids in hand. */
  readonly gathering = new Map<string, Set<string>>();
  closed = false;
  /** Being handed back: no new leases from it, the ones out may still be acked. */
  draining = false;
  /** Held seqs committed (acked in effect) whose ack is not confirmed yet: never leased, the ack retried. */
  readonly unacked = new Set<number>();
  /** The ack retry in progress (NatsQueue.retryAcks). */
  acking: Promise<void> | undefined;
  /** A pull failed or went unanswered: no new leases until the consumer is recreated (NatsQueue.resetIfIdle). */
  resetPending = false;
  /** Messages may be waiting in the consumer (set when the consumer is created with messages pending, and on every publish seen on p's subject). */
  maybeMore = false;
  /** Publishes seen on p's subject: a fill that came back short clears `maybeMore` only if none arrived meanwhile. */
  arrivals = 0;
  /** The pull in progress: pulls of one partition never overlap (they would admit out of order). */
  filling: Promise<void> | undefined;

  constructor(
    readonly p: number,
    readonly fence: number,
  ) {}

  addPlan(rec: PlanRecord): void {
    this.plans.set(rec.leaseId, rec);
    for (const s of rec.seqs) this.seqToPlan.set(s, rec.leaseId);
  }

  dropPlan(leaseId: string): void {
    const rec = this.plans.get(leaseId);
    if (!rec) return;
    this.plans.delete(leaseId);
    for (const s of rec.seqs) if (this.seqToPlan.get(s) === leaseId) this.seqToPlan.delete(s);
    this.gathering.delete(leaseId);
  }

  hold(h: HeldMsg): void {
    this.held.set(h.seq, h);
    this.byJob.set(h.job.id, h.seq);
  }

  release(seq: number): void {
    const h = this.held.get(seq);
    if (!h) return;
    this.held.delete(seq);
    if (this.byJob.get(h.job.id) === seq) this.byJob.delete(h.job.id);
    this.seqToPlan.delete(seq);
  }

  hasWork(): boolean {
    if (this.resetPending) return false;
    return this.sets.hasWork() || this.maybeMore;
  }

  /** Jobs of p waiting out a backoff. */
  delayedJobs(): number {
    return this.sets.delayedJobs((id) => this.plans.get(id)?.jobIds.length ?? 0);
  }
}
