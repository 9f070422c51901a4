// The lease lifecycle of the queue, written once for every backend: taking a lease from a
// partition's ready sets and charging its attempts, freezing it with a plan, acking it, failing one
// job of it or the whole of it (through the failure policy), and redelivering it when its
// visibility runs out. The embedded engine has one partition (p 0, fence 0); the NATS queue one per
// partition it owns, whose fence a lease carries: a lease of a partition this process lost (or won
// again under a new fence) is nobody's, and acking or failing it does nothing. A backend supplies
// each partition's storage (`LeasePartition`); it keeps no leases of its own.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ReleaseCount, type FailurePolicy, type FailureSink } from './failure-policy.js';
import type { ReadySets } from './ready-sets.js';
import type { LeasePlan, NackOptions } from './types.js';

/** One partition's storage and sets, as the lease engine uses them. `K` is the backend's job key. */
export interface LeasePartition<K> {
  readonly p: number;
  readonly fence: number;
  readonly sets: ReadySets<K>;
  /** Executions in a ready job (to size leases); undefined for a job that is gone. */
  executions(job: K): number | undefined;
  /** A frozen lease's plan and the keys of its jobs still stored; undefined when its plan is gone. */
  frozenLease(leaseId: string): { jobs: K[]; plan: LeasePlan } | undefined;
  /**
   * Charges one attempt to each job (durably), answering each job's attempts so far. On failure
   * nothing stays charged: the partition restores what it changed, then throws.
   */
  charge(jobs: readonly K[]): Promise<number[]>;
  /** Records the plan that freezes a lease (durably). */
  savePlan(leaseId: string, jobs: readonly K[], plan: LeasePlan): Promise<void>;
  /**
   * Commits an acked lease: its jobs go and its plan's events reach the outbox. Throws only when
   * nothing was committed (the lease is then kept for a nack).
   */
  commit(leaseId: string, jobs: readonly K[]): Promise<void>;
  /** The key of a job by its id, when this partition holds it. */
  keyOf(jobId: string): K | undefined;
  /** Where the failure policy's decisions for this lease are carried out. */
  failures(lease: HeldLease<K>): FailureSink<K>;
}

/** A lease in hand. */
export interface HeldLease<K> {
  id: string;
  p: number;
  fence: number;
  jobs: K[];
  deadline: number;
  frozen: boolean;
}

/** A lease just taken: its jobs' keys, with attempts per job, for the backend to hand out. */
export interface TakenLease<K> {
  id: string;
  part: LeasePartition<K>;
  jobs: K[];
  attempt: number;
  /** Attempts per job, in `jobs` order (a frozen lease's jobs all carry the lease's attempt). */
  attempts: number[];
  plan?: LeasePlan;
}

export interface LeaseEngineOptions<K> {
  visibilityMs: number;
  policy: FailurePolicy;
  /** The partition of a lease of (p, fence) while it is still this process's. */
  partition(p: number, fence: number): LeasePartition<K> | undefined;
  /**
   * A frozen lease delivered more times than this (it keeps crashing or hanging its workers before
   * it can fail) is parked as dead whole. Unset: no bound but the policy's attempts.
   */
  maxDeliveries?: number;
  logger?: Logger;
}

export class LeaseEngine<K> {
  private readonly leases = new Map<string, HeldLease<K>>();
  /** Jobs taken off a lease and not yet put back, or being committed: counted in flight. */
  private readonly releasing = new ReleaseCount();

  constructor(private readonly opts: LeaseEngineOptions<K>) {}

  /** Jobs in hand: leased, or on their way back into the sets or out of the queue. */
  inflight(): number {
    let n = this.releasing.value;
    for (const l of this.leases.values()) n += l.jobs.length;
    return n;
  }

  /** Whether a lease of (p, fence) is out (`live`: and within its visibility). */
  holds(p: number, fence: number, live = false): boolean {
    const now = Date.now();
    for (const l of this.leases.values()) if (l.p === p && l.fence === fence && (!live || l.deadline > now)) return true;
    return false;
  }

  /** Whether a job is in a lease still within its visibility (its holder decides its fate). */
  inHand(p: number, job: K): boolean {
    const now = Date.now();
    for (const l of this.leases.values()) if (l.p === p && l.deadline > now && l.jobs.includes(job)) return true;
    return false;
  }

  /** The partition number of a lease in hand. */
  partitionOf(leaseId: string): number | undefined {
    return this.leases.get(leaseId)?.p;
  }

  /** p is no longer this process's: its leases are nobody's. */
  dropPartition(p: number): void {
    for (const l of this.leases.values()) if (l.p === p) this.leases.delete(l.id);
  }

  clear(): void {
    this.leases.clear();
  }

  /** Leases past their visibility go back: a frozen one whole, the others' jobs into the ready list. */
  expire(now: number): void {
    for (const lease of this.leases.values()) {
      if (lease.deadline > now) continue;
      this.leases.delete(lease.id);
      const part = this.opts.partition(lease.p, lease.fence);
      if (!part) continue;
      this.opts.logger?.warn({ leaseId: lease.id, jobs: lease.jobs.length }, 'lease visibility timeout: redelivering');
      if (lease.frozen) part.sets.frozenReady(lease.id);
      else part.sets.putReady(lease.jobs);
    }
  }

  /** The next lease of `part`: a frozen lease due again, a group, or ready jobs within the limits; null when none. */
  async take(part: LeasePartition<K>, limits: { maxJobs: number; maxExecutions: number }): Promise<TakenLease<K> | null> {
    const now = Date.now();
    for (;;) {
      const next = part.sets.take(limits, (k) => part.executions(k));
      if (!next) return null;
      let id: string;
      let jobs: K[];
      let plan: LeasePlan | undefined;
      if (next.kind === 'frozen') {
        const frozen = part.frozenLease(next.id);
        // Its plan is gone (requeued as dead, or dropped): nothing to deliver under that id.
        if (!frozen) continue;
        ({ jobs, plan } = frozen);
        id = next.id;
      } else {
        id = randomUUID();
        jobs = next.jobs;
      }
      // Leased before the await: in between, the jobs would be counted nowhere (depth 0).
      const lease: HeldLease<K> = { id, p: part.p, fence: part.fence, jobs, deadline: now + this.opts.visibilityMs, frozen: plan !== undefined };
      this.leases.set(id, lease);
      let counts: number[];
      try {
        counts = await part.charge(jobs);
      } catch (err) {
        // Never handed out: back where they were, uncharged (left as a lease nobody holds, they
        // would wait out the visibility timeout and let later jobs pass).
        this.leases.delete(id);
        part.sets.untake(next);
        throw err;
      }
      const attempt = Math.max(1, ...counts);
      const max = this.opts.maxDeliveries;
      if (plan && max !== undefined && attempt > max) {
        this.leases.delete(id);
        await this.releasing.during(jobs.length, () => part.failures(lease).bury(jobs, `delivered ${max} times without being acked or failed`, id));
        return null;
      }
      return { id, part, jobs, attempt, attempts: plan ? jobs.map(() => attempt) : counts, ...(plan ? { plan } : {}) };
    }
  }

  private require(leaseId: string): { lease: HeldLease<K>; part: LeasePartition<K> } {
    const lease = this.leases.get(leaseId);
    const part = lease && this.opts.partition(lease.p, lease.fence);
    if (!lease || !part) throw new Error(`unknown or expired lease ${leaseId}`);
    return { lease, part };
  }

  /** Freezes the lease: its composition and plan are stored before its first write. */
  async savePlan(leaseId: string, plan: LeasePlan): Promise<void> {
    const { lease, part } = this.require(leaseId);
    await part.savePlan(leaseId, lease.jobs, plan);
    lease.frozen = true;
  }

  /**
   * Commits the lease. A lease that expired and was handed out again is finished by its new
   * holder; one whose partition was lost is not ours to commit. `confirmOwner` is asked first, while
   * the lease is still counted (the NATS queue checks the partition's fence).
   */
  async ack(leaseId: string, confirmOwner?: (p: number, fence: number) => Promise<void>): Promise<void> {
    const lease = this.leases.get(leaseId);
    if (!lease) return;
    if (confirmOwner) await confirmOwner(lease.p, lease.fence);
    const part = this.opts.partition(lease.p, lease.fence);
    if (!part || !this.leases.has(leaseId)) return;
    this.leases.delete(leaseId);
    try {
      await this.releasing.during(lease.jobs.length, () => part.commit(leaseId, lease.jobs));
    } catch (err) {
      // Nothing committed: still ours and in hand, for the caller's nack.
      if (this.opts.partition(lease.p, lease.fence)) this.leases.set(leaseId, lease);
      throw err;
    }
    this.opts.policy.committed();
  }

  /** One job of an unfrozen lease failed on its own: it leaves the lease (retried or dead), the others stay. */
  async failJob(leaseId: string, jobId: string, error: string): Promise<void> {
    const { lease, part } = this.require(leaseId);
    if (lease.frozen) throw new Error('failJob on a frozen lease: nack the whole lease');
    const job = part.keyOf(jobId);
    if (job === undefined || !lease.jobs.includes(job)) throw new Error(`job ${jobId} is not in lease ${leaseId}`);
    lease.jobs = lease.jobs.filter((j) => j !== job);
    await this.releasing.during(1, () => this.opts.policy.failJob(job, error, part.failures(lease)));
  }

  /** Hands a failed lease back to the failure policy (split, retried, dead). */
  async nack(leaseId: string, error: string, opts: NackOptions = {}): Promise<void> {
    const lease = this.leases.get(leaseId);
    if (!lease) return;
    this.leases.delete(leaseId);
    const part = this.opts.partition(lease.p, lease.fence);
    if (!part) return;
    try {
      await this.releasing.during(lease.jobs.length, () => this.opts.policy.nack({ id: leaseId, jobs: lease.jobs, frozen: lease.frozen }, error, opts, part.failures(lease)));
    } catch (err) {
      // The storage failed mid-way: the lease is still ours and in hand, so the caller's retry
      // finds it (forgotten here, its jobs would wait for a restart or a new owner).
      if (this.opts.partition(lease.p, lease.fence)) this.leases.set(leaseId, lease);
      throw err;
    }
  }

  /** Counts `jobs` in flight while `place` puts them somewhere (outside any lease). */
  during<T>(jobs: number, place: () => Promise<T>): Promise<T> {
    return this.releasing.during(jobs, place);
  }
}
